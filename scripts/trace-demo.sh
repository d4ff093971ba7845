#!/usr/bin/env bash
# The main job: set up everything on a bare Debian 12 machine (root), then
# trace real Java programs and print what was seen, in three steps.
#
#   scripts/trace-demo.sh [--gc G1|Parallel] [--iterations N]
#                         [--first-look-only | --no-first-look]
#
# 1. A first look, in under three minutes on a bare machine: the jvmtrace
#    program is built first (the bpftrace tools read the JVM's libjvm.so
#    through `jvmtrace target`); then Saxon-HE (an XSLT processor from
#    Debian) transforms a 24 MB document on Debian's own JDK 17, held at
#    start-up, with two bpftrace stock tools attached (GC pauses, TLAB
#    refills: uprobes on HotSpot's own functions, no patch); then `jvmtrace
#    stat` in stock mode on the same program.  Meanwhile the patched JDK
#    builds in the background (build/demo-setup.log).
# 2. Waits for the patched JDK (about 23 minutes cold on 2 cores; seconds
#    when cached under /var/cache/jvmtrace).
# 3. The whole picture on the patched JVM: AllocWorker with `jvmtrace stat`,
#    `jvmtrace record --stacks` and the jvmmem bpftrace tool attached by PID
#    (then report, report --check, the HTML page, a Perfetto timeline and a
#    flame graph into build/demo.*), and Saxon-HE recorded from its first
#    allocation with `jvmtrace record --stacks -- java ...`: where it
#    allocates (the VM's own stacks, inlined frames included, no JVM flag),
#    its pauses beside -Xlog:gc, a flame graph and a pprof profile; then
#    what stays alive: a program that leaks (tests/java/Leaky.java)
#    recorded with `jvmtrace record --live`, and `report --live` naming the
#    leak first among the growing sites (build/leaky.html plots it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
gc=G1 iterations=5000000 first_look=1 patched=1
while [ $# -gt 0 ]; do
  case "$1" in
    --gc) gc=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --first-look-only) patched=0; shift ;;
    --no-first-look) first_look=0; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "trace-demo: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$gc" in G1|Parallel) ;; *) echo "trace-demo: --gc takes G1 or Parallel" >&2; exit 2 ;; esac
[[ "$iterations" =~ ^[1-9][0-9]*$ ]] || { echo "trace-demo: --iterations takes a positive number" >&2; exit 2; }
[ $first_look = 1 ] || [ $patched = 1 ] || { echo "trace-demo: --first-look-only and --no-first-look exclude each other" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "trace-demo: run as root (installs packages, attaches eBPF)" >&2; exit 1; }

start=$SECONDS
say() { printf '[demo %d:%02d] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }
tmp=$(mktemp -d)
setup_pid=
# On exit (an error, Ctrl-C): the background set-up's whole process group
# (apt, a HotSpot build), then this script's jobs still running; never a PID
# that was already waited for (it may be another process's by then).
cleanup() {
  if [ -n "$setup_pid" ] && kill -0 "$setup_pid" 2>/dev/null; then kill -- -"$setup_pid" 2>/dev/null || true; fi
  local running
  running=$(jobs -pr)
  [ -z "$running" ] || kill $running 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$repo/build"
setup_log=$repo/build/demo-setup.log
jvmtrace=$repo/build/userspace/jvmtrace

# Everything else (build tools, the corpus, HotSpot's build dependencies),
# then the patched JDK: in the background, niced, while the first look runs.
setup_done=$tmp/setup.done
# Its own process group (setsid), so that an exit stops all of it; the JDK's
# home goes to a file of ours, not through the log.
start_setup() {
  setsid -w bash -c '
    set -e
    "$1/install-deps.sh" --tools
    "$1/install-deps.sh" --jdk-build
    [ "$3" = 1 ] || exit 0
    nice -n 10 "$1/build-patched-jdk.sh" --variant patched > "$2/homes"
    touch "$2/setup.done"' setup "$here" "$tmp" "$patched" > "$setup_log" 2>&1 &
  setup_pid=$!
}

# build_jvmtrace [TARGET]: the whole build tree, or one target of it (the
# first look needs only the jvmtrace program).  Quiet unless it fails.
build_jvmtrace() {
  local log=$repo/build/demo-build.log
  if ! { cmake -S "$repo" -B "$repo/build" && cmake --build "$repo/build" -j "$(nproc)" ${1:+--target "$1"}; } \
      > "$log" 2>&1; then
    say "building jvmtrace failed; the end of $log:"
    tail -n 30 "$log" >&2
    exit 1
  fi
}
# The corpus's Saxon-HE run (tests/corpus.py prepares its input and checks
# its output): saxon_cmd JAVA_HOME EXTRA_FLAGS... -> the command in ${saxon[@]}
# (run in the work directory saxon_prepare filled).
saxon_cmd() {
  local home=$1
  shift
  local flags
  flags=$(printf '%s\n' "$@")
  mapfile -d '' saxon < <(cd "$repo/tests" && FLAGS="$flags" /usr/bin/python3 -c '
import os, sys, corpus
flags = corpus.SAXON.gc["G1"] + [f for f in os.environ["FLAGS"].split("\n") if f]
sys.stdout.write("\0".join(corpus.SAXON.command(sys.argv[1], flags)))' "$home")
}
saxon_prepare() { (cd "$repo/tests" && /usr/bin/python3 -c "import sys, corpus; corpus.SAXON.prepare(sys.argv[1], sys.argv[2])" "$2" "$1"); }
saxon_check() { (cd "$repo/tests" && /usr/bin/python3 -c "import sys, corpus; corpus.SAXON.check(sys.argv[1], sys.argv[2])" "$2" "$1"); }

if [ $first_look = 1 ]; then
  say "step 1 of 3: a first look, on Debian's own JDK 17 (stock mode: no patch)"
  # The jvmtrace program first (jvmtrace-bt reads the JVM's libjvm.so
  # through `jvmtrace target`): the compilers and libraries it builds with,
  # then its build, while bpftrace, Debian's JDK 17 and Saxon-HE install;
  # the background set-up only after it, so as not to take its CPUs.
  "$here/install-deps.sh" --build
  say "building the jvmtrace program (build/demo-build.log) while bpftrace, Debian's JDK 17 and Saxon-HE install"
  build_jvmtrace jvmtrace &
  build_pid=$!
  "$here/install-deps.sh" --first
  wait $build_pid || exit 1   # (it said why)
  start_setup
  debian_home=/usr/lib/jvm/java-17-openjdk-amd64
  work=$tmp/first
  mkdir -p "$work"
  saxon_prepare "$debian_home" "$work"
  # Held at start-up (the JVM waits while vm.paused.PID exists in its
  # working directory), so the tools see it from its first allocation.
  saxon_cmd "$debian_home" -Xlog:gc:file=gc.log -XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup
  (cd "$work" && exec "${saxon[@]}" > saxon.out 2>&1) &
  spid=$!
  until [ -e "$work/vm.paused.$spid" ] && grep -q libjvm.so "/proc/$spid/maps" 2>/dev/null; do
    kill -0 $spid 2>/dev/null || { cat "$work/saxon.out" >&2; exit 1; }
    sleep 0.1
  done
  say "Saxon-HE is PID $spid, held at start-up; attaching: scripts/jvmtrace-bt gcpause_stock $spid, tlabstat_stock $spid"
  "$here/jvmtrace-bt" gcpause_stock "$spid" > "$tmp/gcpause.out" 2>&1 &
  gpid=$!
  "$here/jvmtrace-bt" tlabstat_stock "$spid" > "$tmp/tlabstat.out" 2>&1 &
  tpid=$!
  until grep -q 'Hit Ctrl-C' "$tmp/gcpause.out" && grep -q 'Hit Ctrl-C' "$tmp/tlabstat.out"; do
    kill -0 $gpid 2>/dev/null || { cat "$tmp/gcpause.out" >&2; exit 1; }
    kill -0 $tpid 2>/dev/null || { cat "$tmp/tlabstat.out" >&2; exit 1; }
    sleep 0.1
  done
  say "attached; letting Saxon-HE run"
  rm -f "$work/vm.paused.$spid"
  wait $spid || true
  kill -INT $gpid $tpid 2>/dev/null || true   # (one may have ended with its target)
  wait $gpid $tpid || true
  echo "=== scripts/jvmtrace-bt gcpause_stock $spid (bpftrace, stock mode: every collection of the run) ==="
  cat "$tmp/gcpause.out"
  echo "=== scripts/jvmtrace-bt tlabstat_stock $spid (bpftrace, stock mode: TLAB refills) ==="
  cat "$tmp/tlabstat.out"
  echo "=== -Xlog:gc of the same run (the JVM's own account: the same GC ids; stock mode sees a G1"
  echo "    concurrent cycle, with its Remark and Cleanup pauses, as one long collection) ==="
  grep -E ' Pause |Concurrent Mark Cycle [0-9]' "$work/gc.log" || true
  saxon_check "$debian_home" "$work" && echo "(Saxon's output checked: the same sums as computed from its input)"
  say "first result shown; now jvmtrace itself on the same program"
  work=$tmp/first-stat
  mkdir -p "$work"
  saxon_prepare "$debian_home" "$work"
  saxon_cmd "$debian_home"
  echo "=== jvmtrace stat -- java ... Saxon (stock mode on Debian's JDK: held at start-up, a report at its exit) ==="
  (cd "$work" && "$jvmtrace" stat -- "${saxon[@]}")
  echo "(stock mode sees TLAB refills, allocations outside TLABs and collections; the patched JVM below adds"
  echo " the slow path's outcome and time, waste, PLABs, heap sizes and every pause by kind: docs/stock-mode.md)"
  [ $patched = 1 ] || { say "done (--first-look-only)"; exit 0; }
fi

[ $first_look = 1 ] || start_setup
say "step 2 of 3: the patched JDK 17 (building in the background since the start: $setup_log)"
while [ ! -e "$setup_done" ]; do
  if ! kill -0 $setup_pid 2>/dev/null; then
    wait $setup_pid && [ -e "$setup_done" ] && break
    say "setting up failed; the end of $setup_log:"
    tail -n 20 "$setup_log" >&2
    exit 1
  fi
  last=$(grep -a '^\[jdk' "$setup_log" | tail -n 1 || true)
  [ -z "$last" ] || say "  ${last#*] }"
  sleep 60
done
java_home=$(sed -n 's/^patched=//p' "$tmp/homes")
[ -n "$java_home" ] && [ -x "$java_home/bin/java" ] || { say "the patched JDK's build gave no JAVA_HOME: see $setup_log"; exit 1; }
say "patched JDK: $java_home"
say "step 3 of 3: the whole picture on the patched JVM"
build_jvmtrace
classes=$repo/build/java
mkdir -p "$classes"
"$java_home/bin/javac" -d "$classes" "$repo"/tests/java/*.java

mkfifo "$tmp/go"
"$java_home/bin/java" "-XX:+Use${gc}GC" -Xms128m -Xmx128m -Xlog:gc:file="$tmp/gc.log" \
  -cp "$classes" AllocWorker "$iterations" < "$tmp/go" > "$tmp/java.out" &
jpid=$!
exec 3>"$tmp/go"
until grep -q '^ready' "$tmp/java.out"; do sleep 0.1; kill -0 $jpid || exit 1; done
say "AllocWorker is PID $jpid ($gc GC); attaching: scripts/jvmtrace-bt jvmmem $jpid"
"$here/jvmtrace-bt" jvmmem "$jpid" > "$tmp/bt.out" 2> "$tmp/bt.err" &
btpid=$!
"$jvmtrace" stat -p "$jpid" > "$tmp/stat.out" 2> "$tmp/stat.err" &
statpid=$!
trace=$repo/build/demo.jvmtrace
"$jvmtrace" record -q --stacks -p "$jpid" -o "$trace" 2> "$tmp/rec.err" &
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
kill -INT $btpid 2>/dev/null || true
wait $btpid || true
wait $statpid   # both end by themselves when the JVM exits
wait $recpid
echo "=== jvmtrace stat -p $jpid ==="
cat "$tmp/stat.out"
echo "=== jvmtrace record --stacks -p $jpid -o $trace ==="
cat "$tmp/rec.err"
echo "=== jvmtrace report $trace (jvmtrace dump $trace: every event) ==="
"$jvmtrace" report "$trace"
echo "=== jvmtrace report --check $trace (the replay against HotSpot's invariants) ==="
"$jvmtrace" report --check "$trace"
echo "=== pictures of the same trace ==="
demo=$repo/build/demo
"$jvmtrace" report --html "$trace" -o "$demo.html"
"$jvmtrace" export --perfetto "$trace" -o "$demo.pftrace"
"$jvmtrace" flame "$trace" -o "$demo-alloc.svg"
echo "open $demo.html (plots), $demo-alloc.svg (allocation flame graph) in a browser;"
echo "load $demo.pftrace at https://ui.perfetto.dev (a timeline)"
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
saxon_prepare "$java_home" "$work"
saxon_cmd "$java_home" -Xlog:gc:file=gc.log
strace=$repo/build/saxon.jvmtrace
echo "=== jvmtrace record --stacks -o $strace -- java ${saxon[*]:1} ==="
(cd "$work" && "$jvmtrace" record -q --stacks -o "$strace" -- "${saxon[@]}")
saxon_check "$java_home" "$work" && echo "(Saxon's output checked: the same sums as computed from its input)"
echo "=== jvmtrace report $strace: where Saxon allocates (the VM's own stacks, no JVM flag) ==="
"$jvmtrace" report "$strace" | sed -n '/^Allocation sites/,/^$/p'
echo "=== its heaviest stack, root first (_[0] interpreted, _[1] C1, _[j] C2, _[i] inlined into the frame above) ==="
# The collapsed line with the most bytes, a frame a line; its last element is
# not a frame but the class allocated (async-profiler's convention: "_[i]" in
# new TLABs, "_[k]" outside them), shown as such, by its Java name.
"$jvmtrace" flame "$strace" -o - --collapsed | /usr/bin/python3 -c '
import sys
lines = [l.rstrip("\n").rsplit(" ", 1) for l in sys.stdin if l.strip()]
stack, n = max(lines, key=lambda x: int(x[1]))
*frames, leaf = stack.split(";")
for f in frames:
    print("  " + f)
name, where = leaf[:-4], "outside TLABs" if leaf.endswith("_[k]") else "in new TLABs"
dims = len(name) - len(name.lstrip("["))
base = name[dims:]
prim = {"B": "byte", "C": "char", "D": "double", "F": "float", "I": "int", "J": "long", "S": "short", "Z": "boolean"}
if dims:
    # (an object array is "[Lpkg/Name;": the flame graph writes its ";" as ":")
    base = prim.get(base) or (base[1:-1] if base[:1] == "L" and base[-1:] in ":;" else base)
java = base.replace("/", ".") + "[]" * dims
print(f"  => allocates {java} {where}: {n} bytes")
'
echo "=== the same as a flame graph and a pprof profile ==="
"$jvmtrace" flame "$strace" -o "$repo/build/saxon-alloc.svg"
"$jvmtrace" export --pprof "$strace" -o "$repo/build/saxon-alloc.pb.gz"
echo "open $repo/build/saxon-alloc.svg; go tool pprof -top $repo/build/saxon-alloc.pb.gz (or Pyroscope, Grafana)"
echo "=== jvmtrace report $strace: its stop-the-world pauses ==="
"$jvmtrace" report "$strace" | sed -n '/^Stop-the-world pauses/,/^$/p'
echo "=== -Xlog:gc of the same run: the same pauses ==="
grep ' Pause ' "$work/gc.log"
echo "=== jvmtrace report --check $strace ==="
"$jvmtrace" report --check "$strace"

# What stays alive: a program with one leak among churning, medium- and
# long-lived objects (tests/java/Leaky.java), recorded with --live from its
# first allocation at the default sampling rate: report --live estimates
# each site's live bytes after every collection and names the leak first
# among the growing sites (docs/analysis.md, "What stays alive").
ltrace=$repo/build/leaky.jvmtrace
echo "=== jvmtrace record --live -o $ltrace -- java -Xmx768m Leaky 5 512 (5 units of 512 MiB of allocation, a System.gc() after each) ==="
printf 'go\n' | "$jvmtrace" record -q --live -o "$ltrace" -- "$java_home/bin/java" -Xmx768m -cp "$classes" Leaky 5 512 1 \
  2> "$tmp/leaky.err" | grep '^done' || { cat "$tmp/leaky.err"; exit 1; }
echo "=== jvmtrace report --live $ltrace: what stays alive, and whose live bytes grow ==="
"$jvmtrace" report --live --top 5 "$ltrace"
"$jvmtrace" report --html "$ltrace" -o "$repo/build/leaky.html"
"$jvmtrace" export --perfetto "$ltrace" -o "$repo/build/leaky.pftrace"
echo "open $repo/build/leaky.html (the live heap by site over time); ui.perfetto.dev: $repo/build/leaky.pftrace (its 'live:' counters)"
