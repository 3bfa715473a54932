#!/usr/bin/env bash
# The CPU of one create -> exec /bin/true -> remove cycle over all the
# processes it starts (bench/cycle_cpu.c), for each libsbx.a given (A/B,
# interleaved ROUNDS times). Private SBX_ROOT/SBX_RUN under /tmp.
#   bench/cycle_cpu.sh [-n CYCLES] [-r ROUNDS] [-m HEAP_MB] [LIBSBX.a ...]   (default: build/lib/libsbx.a)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
n=40 rounds=3 heap=0
while getopts n:r:m: o; do
	case $o in
	n) n=$OPTARG ;;
	r) rounds=$OPTARG ;;
	m) heap=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- "$top/build/lib/libsbx.a"
tmp=$(mktemp -d /tmp/sbx-cyclecpu.XXXXXX)
chmod 755 "$tmp"
export SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run"
trap 'rm -rf "$tmp"' EXIT
k=0
for lib in "$@"; do
	cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$top/include" -o "$tmp/cycle$k" "$here/cycle_cpu.c" "$lib" \
		-lseccomp -ljansson -lyaml -lcrypto -lz -lzstd -lm -lbpf -lelf || exit 1
	k=$((k + 1))
done
for ((r = 0; r < rounds; r++)); do
	k=0
	for lib in "$@"; do
		printf '%s\t%s\n' "$lib" "$("$tmp/cycle$k" "$n" "$heap")"
		k=$((k + 1))
	done
done | tee "$tmp/all"
# Per library: the median and the lowest of the rounds (the machine is shared).
python3 - "$tmp/all" << 'PY'
import json, sys, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    lib, j = line.rstrip("\n").split("\t")
    v[lib].append(json.loads(j))
for lib, rs in v.items():
    cpu = sorted(r["cpu_ms_per_cycle"] for r in rs)
    wall = sorted(r["wall_ms_per_cycle"] for r in rs)
    print("%s: cpu ms/cycle median %.2f min %.2f; wall ms/cycle median %.1f min %.1f (%d rounds)" %
          (lib, cpu[len(cpu) // 2], cpu[0], wall[len(wall) // 2], wall[0], len(rs)))
PY
