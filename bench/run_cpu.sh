#!/usr/bin/env bash
# A cold `sbx run -- /bin/true` (no pool): its CPU over every process it
# starts (bench/run_cpu.c: a subreaper counts the detached supervisor, init,
# the command and the reclaimer) and its wall time, for each sbx binary
# given and for bubblewrap (the issue 12 peer), interleaved ROUNDS times;
# then medians per binary and their ratios to bubblewrap. Private
# SBX_ROOT/SBX_RUN under /tmp. Run as root (as bench/run).
#   bench/run_cpu.sh [-n RUNS] [-r ROUNDS] [SBX ...]   (default: build/bin/sbx)
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)
n=40 rounds=5
while getopts n:r: o; do
	case $o in
	n) n=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- "$top/build/bin/sbx"
command -v bwrap > /dev/null || {
	echo "bench/run_cpu.sh: bwrap is missing (bench/deps.sh installs it)" >&2
	exit 1
}
tmp=$(mktemp -d /tmp/sbx-runcpu.XXXXXX)
chmod 755 "$tmp"
export SBX_ROOT="$tmp/root" SBX_RUN="$tmp/run"
trap 'rm -rf "$tmp"' EXIT
cc -std=gnu11 -O2 -D_GNU_SOURCE -o "$tmp/run_cpu" "$here/run_cpu.c" || exit 1
for s in "$@"; do "$s" run -- /bin/true || exit 1; done # warm the store (mask tree)
bw=(bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc /bin/true)
for ((r = 0; r < rounds; r++)); do
	printf 'bwrap\t%s\n' "$("$tmp/run_cpu" "$n" "${bw[@]}")"
	for s in "$@"; do
		printf '%s\t%s\n' "$s" "$("$tmp/run_cpu" "$n" "$s" run -- /bin/true)"
	done
done | tee "$tmp/all"
python3 - "$tmp/all" << 'PY'
import json, sys, collections, statistics
v = collections.OrderedDict()
for line in open(sys.argv[1]):
    k, j = line.rstrip("\n").split("\t")
    v.setdefault(k, []).append(json.loads(j))
med = {k: (statistics.median(r["cpu_ms_per_run"] for r in rs),
           statistics.median(r["wall_ms_per_run"] for r in rs),
           statistics.median(r["minor_faults_per_run"] for r in rs)) for k, rs in v.items()}
bc, bw, _ = med["bwrap"]
for k, (c, w, f) in med.items():
    print("%s: cpu %.2f ms/run (%.2fx bwrap), wall %.2f ms/run (%.2fx bwrap), %.0f minor faults (%d rounds)" %
          (k, c, c / bc, w, w / bw, f, len(v[k])))
PY
