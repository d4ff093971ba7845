#!/usr/bin/env bash
# Runs the whole test suite on a bare Debian 12 machine (root): installs
# packages, builds (or reuses from /var/cache/jvmtrace) the patched and
# unpatched JDKs, builds the project, then runs pytest against the real
# patched JVM and real eBPF.  Extra arguments go to pytest.
#
#   sudo scripts/test.sh [PYTEST_ARGS...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root (packages, eBPF)" >&2; exit 1; }
"$here/install-deps.sh"
"$here/build-patched-jdk.sh" >/dev/null
cmake -S "$repo" -B "$repo/build" >/dev/null
cmake --build "$repo/build" -j "$(nproc)"
cd "$repo/tests"
# Debian's pytest (python3-pytest) lives with /usr/bin/python3.
exec /usr/bin/python3 -m pytest -ra "$@"
