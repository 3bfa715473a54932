#!/usr/bin/env bash
# Install what bench/run needs to compare sbx against its peers (Debian/Ubuntu, as root).
# bench/run itself never installs anything; it tells you to run this instead.
set -euo pipefail
if [[ $(id -u) -ne 0 ]]; then
	echo "bench/deps.sh: run as root (it calls apt-get install)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends bubblewrap crun busybox-static hyperfine python3 util-linux procps
# bench/load: the official MCP TypeScript SDK (tests/mcp, npm ci) under node. Node.js may come from
# elsewhere (NodeSource ships npm inside nodejs and conflicts with Debian's npm): working commands are enough.
command -v node > /dev/null 2>&1 || apt-get install -y --no-install-recommends nodejs
command -v npm > /dev/null 2>&1 || apt-get install -y --no-install-recommends npm
