#!/usr/bin/env python3
"""The layering of src/api, checked from the built objects (docs/layout.md).

From build/src/api/*.o: which file defines each global symbol
(`nm -g --defined-only`) and which symbols each file uses (`nm -u`) give
the file-level call graph inside src/api (an edge a -> b: a calls or reads
something b defines). It fails, listing them, on

  - a cycle: a strongly connected component of more than one file, with the
    calls that close it;
  - a call up: a file calling a file of a higher layer (LAYERS below);
  - a file of src/api that LAYERS does not place, or a name in LAYERS with
    no object (a new or renamed file is placed on purpose).

Calls between files of one layer are allowed as long as they form no cycle.

  scripts/check-layers.py [--build DIR] [--src DIR] [--graph]

--graph prints every edge (a -> b: symbols) and the layer of each file.
Exit 0 clean, 1 on a violation, 2 if it cannot run (no objects, no nm).
Standard library only; `make check-layers` builds the objects and runs it.
"""
import argparse
import os
import subprocess
import sys

# The layers of src/api, lowest first (docs/layout.md has the picture). A
# file may call files of its own layer (without a cycle) or of a lower one,
# never of a higher one. Each layer's internal header is named after it.
LAYERS = [
    # 0, the bottom (base.h and the per-file headers it names): the context,
    # the record and the control socket, and what a create is made of.
    "ctx env_state limits host_dirs readset_io reclaim snap_base devices"
    " policy_spec phase_plan secrets policy_apply oci publish",
    # 1, the core (core.h): start, wake, stop and removal of an environment,
    # its states, and a create without the warm pool.
    "env_core env_start env_wake env_create",
    # 2, the features (api.h).
    "exec files env_fs port process pause phase egress pool pool_files pool_admin pool_owned snap packages copy diff diff_entry store_admin registry"
    " code code_conn code_events",
    # 3, features over features (trace_api.h): a traced run execs,
    # snapshots, reads files and diffs.
    "trace",
    # 4, the entry points on top that compose the rest: a create that takes
    # a pool's entry, an exec that may be traced, gc; replay, build, attest.
    "env replay traces trace_page attest build build_copy build_env",
]


def nm(args, path):
    try:
        out = subprocess.run(["nm"] + args + [path], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("check-layers: nm not found (binutils)")
    except subprocess.CalledProcessError as e:
        sys.exit(f"check-layers: nm {' '.join(args)} {path}: {e.stderr.strip()}")
    return out.splitlines()


def symbols(path):
    """(defined globals, undefined) of one object file."""
    defined = set()
    for line in nm(["-g", "--defined-only"], path):
        parts = line.split()
        if len(parts) >= 3:
            defined.add(parts[2])
    used = set()
    for line in nm(["-u"], path):
        parts = line.split()
        if parts:
            used.add(parts[-1])
    return defined, used


def sccs(nodes, edges):
    """Tarjan's strongly connected components (iterative), each a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser(description="fail on cycles and calls up between the files of src/api")
    ap.add_argument("--build", default=os.environ.get("SBX_BUILD", "build"), help="build directory (default: build)")
    ap.add_argument("--src", default=os.path.join("src", "api"), help="the sources (default: src/api)")
    ap.add_argument("--graph", action="store_true", help="print every edge and each file's layer")
    a = ap.parse_args()

    objdir = os.path.join(a.build, "src", "api")
    try:
        objs = sorted(f for f in os.listdir(objdir) if f.endswith(".o"))
    except OSError as e:
        print(f"check-layers: {objdir}: {e.strerror} (run make first)", file=sys.stderr)
        return 2
    if not objs:
        print(f"check-layers: no objects in {objdir} (run make first)", file=sys.stderr)
        return 2
    # Only files that still have a source: a stale object of a removed or
    # renamed file must not keep an old edge alive.
    files = [o[:-2] for o in objs if os.path.exists(os.path.join(a.src, o[:-2] + ".c"))]

    owner, uses = {}, {}
    for f in files:
        defined, used = symbols(os.path.join(objdir, f + ".o"))
        for s in defined:
            owner[s] = f
        uses[f] = used
    edges, why = {}, {}
    for f in files:
        for s in uses[f]:
            g = owner.get(s)
            if g and g != f:
                edges.setdefault(f, set()).add(g)
                why.setdefault((f, g), set()).add(s)

    layer = {}
    for i, names in enumerate(LAYERS):
        for n in names.split():
            layer[n] = i

    if a.graph:
        for f in files:
            where = f"layer {layer[f]}" if f in layer else "no layer"
            print(f"{f} ({where})")
            for g in sorted(edges.get(f, ())):
                print(f"  -> {g}: {' '.join(sorted(why[(f, g)]))}")

    bad = 0
    for comp in sccs(files, edges):
        if len(comp) < 2:
            continue
        bad += 1
        print(f"check-layers: cycle among {len(comp)} files of src/api: {' '.join(comp)}")
        members = set(comp)
        for f in comp:
            for g in sorted(edges.get(f, set()) & members):
                print(f"  {f} -> {g}: {' '.join(sorted(why[(f, g)]))}")

    if LAYERS:
        for f in files:
            if f not in layer:
                bad += 1
                print(f"check-layers: src/api/{f}.c has no layer (place it in LAYERS, scripts/check-layers.py)")
        for n in sorted(set(layer) - set(files)):
            bad += 1
            print(f"check-layers: LAYERS names {n}, which has no src/api/{n}.c (or no object in {objdir})")
        for f in files:
            for g in sorted(edges.get(f, ())):
                if f in layer and g in layer and layer[g] > layer[f]:
                    bad += 1
                    print(f"check-layers: call up: {f} (layer {layer[f]}) -> {g} (layer {layer[g]}): "
                          f"{' '.join(sorted(why[(f, g)]))}")

    if bad:
        print(f"check-layers: {bad} violation(s) in {len(files)} files of src/api")
        return 1
    print(f"check-layers: {len(files)} files of src/api, {sum(len(e) for e in edges.values())} calls between them,"
          f" no cycle{', in layer order' if LAYERS else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
