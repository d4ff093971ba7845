#!/usr/bin/env bash
# Runs the whole test suite on a bare Debian 12 machine (root): installs
# packages, builds (or reuses from /var/cache/jvmtrace) the patched JDK of
# every release line (17, 21, 25; JVMTRACE_JDKS="17,21,25" chooses) and JDK
# 17's fastdebug build, unpacks Debian's own runtime of each line as the
# stock JVM (no build), builds the project, then runs pytest
# against the real patched JVMs and real eBPF, and the JVM probe tests a
# second time on the fastdebug build (HotSpot's own asserts checking the
# probe sites).  Extra arguments go to the first pytest run;
# JVMTRACE_FASTDEBUG_PASS=0 skips the second.  Cold, the JDK builds take
# about 2.5 hours on 2 cores (README); cached, none.
#
#   sudo scripts/test.sh [PYTEST_ARGS...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root (packages, eBPF)" >&2; exit 1; }
"$here/install-deps.sh"
export JVMTRACE_JDKS=${JVMTRACE_JDKS:-17,21,25}
homes=$("$here/build-patched-jdk.sh" --variant tests)
for line in ${JVMTRACE_JDKS//,/ }; do
  [ "$line" = 17 ] || "$here/build-patched-jdk.sh" --jdk "$line" --variant patched,stock >/dev/null
done
cmake -S "$repo" -B "$repo/build" >/dev/null
cmake --build "$repo/build" -j "$(nproc)"
cd "$repo/tests"
# Debian's pytest (python3-pytest) lives with /usr/bin/python3.
rc=0
/usr/bin/python3 -m pytest -ra "$@" || rc=$?
if [ "${JVMTRACE_FASTDEBUG_PASS:-1}" != 0 ]; then
  echo "=== the JVM probe tests again, on the fastdebug HotSpot ==="
  JVMTRACE_JDKS=17 JVMTRACE_PATCHED_HOME=$(sed -n 's/^fastdebug=//p' <<< "$homes") \
  JVMTRACE_STOCK_HOME=$(sed -n 's/^stock=//p' <<< "$homes") \
    /usr/bin/python3 -m pytest -ra -q test_jvm_probes.py || rc=$?
fi
exit $rc
