#!/bin/sh
# An agent-style session with sbx, in about half a minute: an environment and
# its walls, then what only sbx does: snapshot / diff / restore, forks, a traced
# run replayed (MATCH, then a divergence naming the input that changed), and the
# Python SDK. Uses a private store so it leaves nothing behind.
set -eu
SRC=$(cd "$(dirname "$0")/.." && pwd)
SBX=${SBX:-$SRC/build/bin/sbx}
export SBX
export SBX_ROOT=${SBX_ROOT:-$(mktemp -d /tmp/sbx-demo.XXXXXX)}
export SBX_RUN=${SBX_RUN:-$SBX_ROOT/run}
DATA=$SBX_ROOT/data
mkdir -p "$DATA"
trap '$SBX rm demo a b traced > /dev/null 2>&1 || true; $SBX gc > /dev/null 2>&1 || true; rm -rf "$SBX_ROOT"' EXIT

B=$(printf '\033[1m') D=$(printf '\033[2m') N=$(printf '\033[0m')
[ -t 1 ] || B='' D='' N=''
T0=$(date +%s%N)
say() { printf '\n%s%s%s\n' "$B" "$*" "$N"; }
ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
# step LABEL CMD...: one aligned line, "label  result  N ms"; the result is
# the command's output on one line (its first 60 characters).
step() {
	label=$1
	shift
	t=$(date +%s%N)
	out=$("$@" 2>&1 | tr '\n' ' ' | sed 's/  */ /g; s/ $//; s/sbx: [a-z]*: //g; s/\(sha256:[0-9a-f]\{12\}\)[0-9a-f]*/\1/g') || true
	el=$(ms "$t")
	# Long results continue on indented lines (cut at spaces).
	printf '%s\n' "$out" | fold -s -w 70 | {
		read -r first || first=''
		printf '  %-30s %-70s %s%5s ms%s\n' "$label" "$first" "$D" "$el" "$N"
		while read -r more; do printf '  %-30s %s\n' '' "$more"; done
	}
}
sh_in() { id=$1; shift; $SBX exec "$id" -- sh -c "$*"; }

say "1. An environment: the host's OS, read-only, under a private writable layer"
step "create (256 MiB, 128 pids)" $SBX create --name demo --memory 256m --pids 128
$SBX exec -i demo -- sh -c 'cat > /root/fib.py' <<'PY'
import sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
a, b = 0, 1
for _ in range(n):
    a, b = b, a + b
print(f"fib({n}) = {a}")
PY
step "run the agent's code" $SBX exec demo -- python3 /root/fib.py
step "write /etc inside, privately" sh_in demo 'echo agent-was-here >> /etc/motd && tail -n1 /etc/motd'
step "...the host's /etc/motd" sh -c "grep -c agent-was-here /etc/motd || true"

say "2. Walls and limits"
step "network (none by default)" sh_in demo 'python3 -c "import socket; socket.create_connection((\"1.1.1.1\", 80), 2)" 2>&1 | tail -n1'
step "host secrets" sh_in demo 'test -e /etc/shadow && echo /etc/shadow visible || echo /etc/shadow absent; echo "/home: $(ls -A /home | wc -l) entries"'
step "mount (no privileges)" sh_in demo 'mount -t tmpfs x /mnt 2>&1 | sed "s/ dmesg.*//"'
step "timeout 1s: sleep 30" sh -c "$SBX exec --timeout 1s demo -- sleep 30; echo \"(exit \$?)\""
step "1 GiB alloc, 256 MiB limit" sh -c "$SBX exec demo -- python3 -c 'x = bytearray(1 << 30)' 2>&1; echo \"(exit \$?)\""

say "3. Snapshot before a risky change, diff, restore"
step "snapshot --label before" $SBX snapshot demo --label before
step "the risky change" sh_in demo 'rm -f /root/fib.py /usr/bin/python3 /usr/bin/python3.11; echo changed > /etc/hostname; echo "rm python3 and fib.py"'
step "python3 is gone" sh -c "$SBX exec demo -- python3 /root/fib.py 2>&1 | tail -n1"
step "diff demo before" $SBX diff demo before
step "restore demo before" $SBX restore demo before
step "the file is back" $SBX exec demo -- python3 /root/fib.py

say "4. Fork twice: two environments from one snapshot, two results"
step "fork before --name a" $SBX fork before --name a
step "fork before --name b" $SBX fork before --name b
step "a: fib(30)" $SBX exec a -- python3 /root/fib.py 30
step "b: fib(90)" $SBX exec b -- python3 /root/fib.py 90
step "demo itself is unchanged" $SBX exec demo -- python3 /root/fib.py

say "5. A traced run, replayed"
printf 'alpha\nbeta\n' > "$DATA/input.txt"
$SBX create --name traced -v "$DATA:/data:ro" > /dev/null
TRACE=$($SBX exec --trace --json traced -- python3 -c 'print(sorted(open("/data/input.txt").read().split()))' |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["trace_id"])')
step "exec --trace: reads a volume" echo "$TRACE"
step "trace stats" sh -c "$SBX trace stats --json $TRACE | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j[\"records\"], \"events,\", len(j[\"syscalls\"]), \"distinct syscalls,\", j[\"processes\"][\"count\"], \"processes,\", len(j[\"files\"][\"read\"]), \"files read\")'"
step "replay" sh -c "$SBX replay $TRACE; true"
printf 'alpha\ngamma\n' > "$DATA/input.txt"
step "edit input.txt, replay again" sh -c "$SBX replay $TRACE; echo \"(exit \$?)\""
step "trace html --replay" sh -c "$SBX trace html $TRACE --replay -o /tmp/sbx-demo-trace.html 2>&1; echo '(open it in a browser)'"

say "6. The Python SDK: what an agent writes"
cat <<'PY' | sed 's/^/    /'
with Sandbox.create(memory="256m") as sb:
    sb.files.write("/root/main.py", "print(6*7)")
    print(sb.commands.run("python3 /root/main.py").stdout)
PY
t=$(date +%s%N)
out=$(PYTHONPATH=$SRC/sdk/python python3 - <<'PY'
from sbx import Sandbox
with Sandbox.create(memory="256m") as sb:
    sb.files.write("/root/main.py", "print(6*7)")
    print(sb.commands.run("python3 /root/main.py").stdout, end="")
PY
)
printf '  %-30s %-70s %s%5s ms%s\n' "create, write, run, kill" "$out" "$D" "$(ms "$t")" "$N"

say "7. Clean up"
step "rm demo a b traced" $SBX rm demo a b traced
printf '\ndone in %s ms\n' "$(ms "$T0")"
