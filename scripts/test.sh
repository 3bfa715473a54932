#!/bin/sh
# The test command of the README: installs what the suite needs (as root),
# builds, and runs every test. Ends with "N passed, N failed, N skipped".
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh test
# The rootless tests run as this unprivileged user.
if [ "$(id -u)" = 0 ] && ! id sbxtest > /dev/null 2>&1; then
	useradd --create-home --shell /bin/sh sbxtest
fi
make -j"$(nproc)" all
exec tests/run "$@"
