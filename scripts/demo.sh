#!/bin/sh
# The demo command of the README: installs build dependencies (as root),
# builds sbx and runs an agent-style session.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh demo
make -j"$(nproc)" build/bin/sbx > /dev/null
exec examples/demo.sh
