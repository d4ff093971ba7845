#!/usr/bin/env bash
# The main job: set up everything on a bare Debian 12 machine (root), then
# trace a real Java program under the patched HotSpot and print what was seen.
#
#   sudo scripts/trace-demo.sh [--gc G1|Parallel] [--iterations N]
#
# Steps: apt packages; the patched/unpatched JDK (built once, cached under
# /var/cache/jvmtrace, ~25 min cold); the project (cmake); the Java test
# programs; then AllocWorker runs under the patched JVM while two tracers
# attach to it by PID: `jvmtrace stat` (libbpf, in-kernel histograms),
# `jvmtrace record --stacks` (every event and its stack into
# build/demo.jvmtrace, then `jvmtrace report`, `report --check`, `report
# --html`, `export --perfetto` and `flame` on it, into build/demo.*) and the
# jvmmem bpftrace tool (scripts/jvmtrace-bt).  Then a real program from
# Debian, Saxon-HE transforming a 24 MB document under G1 (concurrent cycles
# with their Remark and Cleanup pauses), recorded from its first allocation
# with `jvmtrace record -- java ...`: its pauses beside -Xlog:gc, and
# `report --check`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
gc=G1 iterations=5000000
while [ $# -gt 0 ]; do
  case "$1" in
    --gc) gc=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "trace-demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$gc" in G1|Parallel) ;; *) echo "trace-demo: --gc takes G1 or Parallel" >&2; exit 2 ;; esac
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "trace-demo: --iterations takes a positive number" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "trace-demo: run as root (installs packages, attaches eBPF)" >&2; exit 1; }

say() { echo "[demo] $*" >&2; }
"$here/install-deps.sh"
java_home=$("$here/build-patched-jdk.sh" --variant patched | sed -n 's/^patched=//p')
say "patched JDK: $java_home"
cmake -S "$repo" -B "$repo/build" >/dev/null
cmake --build "$repo/build" -j "$(nproc)" >/dev/null
classes=$repo/build/java
mkdir -p "$classes"
"$java_home/bin/javac" -d "$classes" "$repo"/tests/java/*.java

tmp=$(mktemp -d)
trap 'kill "${jpid:-}" "${btpid:-}" "${statpid:-}" "${recpid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
mkfifo "$tmp/go"
"$java_home/bin/java" "-XX:+Use${gc}GC" -Xms128m -Xmx128m -XX:+PreserveFramePointer -Xlog:gc:file="$tmp/gc.log" \
  -cp "$classes" AllocWorker "$iterations" < "$tmp/go" > "$tmp/java.out" &
jpid=$!
exec 3>"$tmp/go"
until grep -q '^ready' "$tmp/java.out"; do sleep 0.1; kill -0 $jpid || exit 1; done
say "AllocWorker is PID $jpid ($gc GC); attaching: scripts/jvmtrace-bt jvmmem $jpid"
"$here/jvmtrace-bt" jvmmem "$jpid" > "$tmp/bt.out" 2> "$tmp/bt.err" &
btpid=$!
"$repo/build/userspace/jvmtrace" stat -p "$jpid" > "$tmp/stat.out" 2> "$tmp/stat.err" &
statpid=$!
trace=$repo/build/demo.jvmtrace
"$repo/build/userspace/jvmtrace" record -q --stacks -p "$jpid" -o "$trace" 2> "$tmp/rec.err" &
recpid=$!
until grep -q 'Hit Ctrl-C' "$tmp/bt.out" && grep -q 'Hit Ctrl-C' "$tmp/stat.err" &&
      grep -q 'Hit Ctrl-C' "$tmp/rec.err"; do
  sleep 0.1
  kill -0 $btpid 2>/dev/null || { cat "$tmp/bt.err" >&2; exit 1; }
  kill -0 $statpid 2>/dev/null || { cat "$tmp/stat.err" >&2; exit 1; }
  kill -0 $recpid 2>/dev/null || { cat "$tmp/rec.err" >&2; exit 1; }
done
say "attached; letting the program run"
echo go >&3
exec 3>&-
wait $jpid
sleep 0.5
kill -INT $btpid
wait $btpid || true
wait $statpid   # both end by themselves when the JVM exits
wait $recpid
echo "=== jvmtrace stat -p $jpid ==="
cat "$tmp/stat.out"
echo "=== jvmtrace record --stacks -p $jpid -o $trace ==="
cat "$tmp/rec.err"
echo "=== jvmtrace report $trace (jvmtrace dump $trace: every event) ==="
"$repo/build/userspace/jvmtrace" report "$trace"
echo "=== jvmtrace report --check $trace (the replay against HotSpot's invariants) ==="
"$repo/build/userspace/jvmtrace" report --check "$trace"
echo "=== pictures of the same trace ==="
demo=$repo/build/demo
"$repo/build/userspace/jvmtrace" report --html "$trace" -o "$demo.html"
"$repo/build/userspace/jvmtrace" export --perfetto "$trace" -o "$demo.perfetto.json.gz"
"$repo/build/userspace/jvmtrace" flame "$trace" -o "$demo-alloc.svg"
echo "open $demo.html (plots), $demo-alloc.svg (allocation flame graph) in a browser;"
echo "load $demo.perfetto.json.gz at https://ui.perfetto.dev (a timeline)"
echo "=== jvmtrace-bt jvmmem $jpid ==="
cat "$tmp/bt.out"
echo "=== the program said ==="
grep -v '^ready' "$tmp/java.out"
echo "=== -Xlog:gc (independent truth: same GC ids and causes as above) ==="
cat "$tmp/gc.log"

# A real program from Debian (tests/corpus.py prepares its input and checks
# its output), held at start-up and recorded from its first allocation.
work=$tmp/saxon
mkdir -p "$work"
corpus() { (cd "$repo/tests" && /usr/bin/python3 -c "import sys, corpus; $1" "$work" "$java_home"); }
corpus 'corpus.SAXON.prepare(sys.argv[1], sys.argv[2])'
mapfile -d '' saxon < <(corpus 'sys.stdout.write("\0".join(corpus.SAXON.command(sys.argv[2],
    corpus.SAXON.gc["G1"] + ["-Xlog:gc:file=gc.log"])))')
strace=$repo/build/saxon.jvmtrace
echo "=== jvmtrace record -o $strace -- java ${saxon[*]:1} ==="
(cd "$work" && "$repo/build/userspace/jvmtrace" record -q -o "$strace" -- "${saxon[@]}")
corpus 'corpus.SAXON.check(sys.argv[1], sys.argv[2])' && echo "(Saxon's output checked: the same sums as computed from its input)"
echo "=== jvmtrace report $strace: its stop-the-world pauses ==="
"$repo/build/userspace/jvmtrace" report "$strace" | sed -n '/^Stop-the-world pauses/,/^$/p'
echo "=== -Xlog:gc of the same run: the same pauses ==="
grep ' Pause ' "$work/gc.log"
echo "=== jvmtrace report --check $strace ==="
"$repo/build/userspace/jvmtrace" report --check "$strace"
