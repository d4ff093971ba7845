#!/usr/bin/env bash
# Runs the whole test suite on a bare Debian 12 machine (root): installs
# packages, builds (or reuses from /var/cache/jvmtrace) the patched,
# unpatched and fastdebug JDKs, builds the project, then runs pytest against
# the real patched JVM and real eBPF, and the JVM probe tests a second time on
# the fastdebug build (HotSpot's own asserts checking the probe sites).
# Extra arguments go to the first pytest run; JVMTRACE_FASTDEBUG_PASS=0 skips
# the second.
#
#   sudo scripts/test.sh [PYTEST_ARGS...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root (packages, eBPF)" >&2; exit 1; }
"$here/install-deps.sh"
homes=$("$here/build-patched-jdk.sh" --variant all)
cmake -S "$repo" -B "$repo/build" >/dev/null
cmake --build "$repo/build" -j "$(nproc)"
cd "$repo/tests"
# Debian's pytest (python3-pytest) lives with /usr/bin/python3.
rc=0
/usr/bin/python3 -m pytest -ra "$@" || rc=$?
if [ "${JVMTRACE_FASTDEBUG_PASS:-1}" != 0 ]; then
  echo "=== the JVM probe tests again, on the fastdebug HotSpot ==="
  JVMTRACE_PATCHED_HOME=$(sed -n 's/^fastdebug=//p' <<< "$homes") \
  JVMTRACE_UNPATCHED_HOME=$(sed -n 's/^unpatched=//p' <<< "$homes") \
    /usr/bin/python3 -m pytest -ra -q test_jvm_probes.py || rc=$?
fi
exit $rc
