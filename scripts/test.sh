#!/usr/bin/env bash
# Runs the whole test suite on a bare Debian 12 machine (root): installs
# packages, builds (or reuses from /var/cache/jvmtrace) the patched JDK of
# every release line (17, 21, 25; JVMTRACE_JDKS="17,21,25" chooses) and the
# fastdebug build of the lines in JVMTRACE_FASTDEBUG_JDKS (default all
# three), unpacks Debian's own runtime of
# each line as the stock JVM (no build), builds the project, then runs
# pytest against the real patched JVMs and real eBPF, and then, per
# fastdebug line, the JVM probe tests and every collector's pauses and
# safepoints a second time on the fastdebug build (HotSpot's own asserts
# checking the probe sites).  Extra arguments go to the first pytest run;
# JVMTRACE_FASTDEBUG_PASS=0 skips the second.  Cold, the JDK builds take
# about 4 hours on 2 cores (README, decision 115); cached, none.
#
#   sudo scripts/test.sh [PYTEST_ARGS...]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "test.sh: run as root (packages, eBPF)" >&2; exit 1; }
"$here/install-deps.sh"
export JVMTRACE_JDKS=${JVMTRACE_JDKS:-17,21,25}
export JVMTRACE_FASTDEBUG_JDKS=${JVMTRACE_FASTDEBUG_JDKS:-17,21,25}
declare -A homes
fastdebug_lines=()
for line in ${JVMTRACE_JDKS//,/ }; do
  if [[ ",$JVMTRACE_FASTDEBUG_JDKS," == *",$line,"* ]]; then
    homes[$line]=$("$here/build-patched-jdk.sh" --jdk "$line" --variant tests)
    fastdebug_lines+=("$line")
  else
    homes[$line]=$("$here/build-patched-jdk.sh" --jdk "$line" --variant patched,stock)
  fi
done
cmake -S "$repo" -B "$repo/build" >/dev/null
cmake --build "$repo/build" -j "$(nproc)"
cd "$repo/tests"
# Debian's pytest (python3-pytest) lives with /usr/bin/python3.
rc=0
/usr/bin/python3 -m pytest -ra "$@" || rc=$?
if [ "${JVMTRACE_FASTDEBUG_PASS:-1}" != 0 ]; then
  for line in "${fastdebug_lines[@]}"; do
    echo "=== JDK $line: the JVM probe tests and every collector's pauses again, on the fastdebug HotSpot ==="
    suffix=$([ "$line" = 17 ] || echo "_$line")   # tests/conftest.py: jdk_homes()
    env JVMTRACE_JDKS="$line" \
      "JVMTRACE_PATCHED_HOME$suffix=$(sed -n 's/^fastdebug=//p' <<< "${homes[$line]}")" \
      "JVMTRACE_STOCK_HOME$suffix=$(sed -n 's/^stock=//p' <<< "${homes[$line]}")" \
      /usr/bin/python3 -m pytest -ra -q test_jvm_probes.py test_stop_the_world.py || rc=$?
  done
fi
exit $rc
