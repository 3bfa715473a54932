#!/bin/sh
# An agent-style session with sbx: create an environment, write code into it,
# run it, hit the walls on purpose, and clean up. Uses a private store so it
# leaves nothing behind.
set -eu
SBX=${SBX:-$(cd "$(dirname "$0")/.." && pwd)/build/bin/sbx}
export SBX_ROOT=${SBX_ROOT:-$(mktemp -d /tmp/sbx-demo.XXXXXX)}
export SBX_RUN=${SBX_RUN:-$SBX_ROOT/run}
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }

say "1. Create an environment (host OS tree, read-only, under a private writable layer)"
start=$(date +%s%N)
ID=$($SBX create --name demo --memory 256m --pids 128)
echo "environment $ID created in $((($(date +%s%N) - start) / 1000000)) ms"

say "2. The agent writes a program into it and runs it"
$SBX exec -i demo -- sh -c 'cat > /root/fib.py' <<'PY'
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
print([fib(i) for i in range(15)])
PY
run $SBX exec demo -- python3 /root/fib.py

say "3. It can install and change anything inside, privately"
run $SBX exec demo -- sh -c 'echo "agent was here" >> /etc/motd && tail -n 1 /etc/motd'
echo "host /etc/motd untouched: $(grep -c "agent was here" /etc/motd 2>/dev/null || true) matching lines"

say "4. Walls: no network, no host secrets, no privileges"
run $SBX exec demo -- sh -c 'python3 -c "import urllib.request; urllib.request.urlopen(\"http://1.1.1.1\", timeout=2)" 2>&1 | tail -n 1' || true
run $SBX exec demo -- sh -c 'cat /etc/shadow 2>&1; ls -A /root /home' || true
run $SBX exec demo -- sh -c 'mount -t tmpfs x /mnt 2>&1' || true

say "5. Limits have clear results"
run $SBX exec --timeout 1s demo -- sleep 30 || echo "(exit status $?)"
run $SBX exec demo -- python3 -c 'x = bytearray(1 << 30)' || echo "(exit status $?)"
run $SBX exec demo -- echo "the environment is still usable"

say "6. Machine-readable results, as an agent sees them"
run $SBX exec --json demo -- sh -c 'echo out; echo err >&2; exit 3' || true

say "7. Clean up"
run $SBX rm demo
$SBX gc > /dev/null
rm -rf "$SBX_ROOT"
echo "done"
