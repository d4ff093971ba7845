#!/usr/bin/env bash
# How stat's in-kernel aggregation scales with the number of threads firing:
# the USDT fixture, 1, 2 and 4 threads each pinned to a CPU (--pin, round
# robin over the CPUs this may use), every thread firing flat out with
# `jvmtrace stat -b FIXTURE` attached; the cost of one probe hit, in ns, is
# (firing time - the same run detached) x CPUs busy / (threads x rounds x
# hits).  Shared maps make every CPU write the same cache
# lines (a hit gets dearer with each CPU added); per-CPU maps should keep it
# flat.
#
#   bench/percpu_scaling.sh [ROUNDS (default 200000)] [REPEATS (default 3)] [JVMTRACE...]
#
# Each JVMTRACE (default: $JVMTRACE_BUILD_DIR/userspace/jvmtrace, else
# build/userspace/jvmtrace) is measured in turn, e.g. this tree's and an
# older one's, with --probe-set separate when it knows the option (the same
# ten probes either way, so only the maps differ).  Prints one line per
# (jvmtrace, threads): the median ns per hit of REPEATS runs, and the runs.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
build=${JVMTRACE_BUILD_DIR:-$repo/build}
fixture=$build/tests/fixtures/usdt_fixture
rounds=${1:-200000}
repeats=${2:-3}
shift 2 2>/dev/null || shift $# 
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=("$build/userspace/jvmtrace")
[ -x "$fixture" ] || { echo "percpu_scaling: no fixture at $fixture (build first)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "percpu_scaling: needs root (BPF)" >&2; exit 1; }
cpus=$(nproc)
hits_per_round=10  # separate probes: every probe but alloc__slow and plab__batch

# fire THREADS [JVMTRACE]: prints the fixture's firing time in ns.
fire() {
  local threads=$1 tool=${2:-}
  local fifo out ns
  fifo=$(mktemp -u); mkfifo "$fifo"
  out=$(mktemp)
  "$fixture" --wait-for stdin --pin --threads "$threads" --rounds "$rounds" <"$fifo" >/dev/null 2>"$out" &
  local fx=$!
  exec 3>"$fifo"
  local st=""
  if [ -n "$tool" ]; then
    local extra=()
    "$tool" stat --help 2>&1 | grep -q -- --probe-set && extra=(--probe-set separate)
    "$tool" stat -p "$fx" -b "$fixture" --json "${extra[@]}" >/dev/null 2>"$out.stat" &
    st=$!
    for _ in $(seq 300); do grep -q '^Attached' "$out.stat" 2>/dev/null && break; sleep 0.05; done
    grep -q '^Attached' "$out.stat" || { echo "percpu_scaling: stat did not attach: $(cat "$out.stat")" >&2; exit 1; }
  fi
  echo go >&3; exec 3>&-
  wait "$fx"
  [ -n "$st" ] && wait "$st" || true
  ns=$(sed -n 's/^firing took \([0-9]*\) ns$/\1/p' "$out")
  rm -f "$fifo" "$out" "$out.stat"
  echo "$ns"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "rounds $rounds per thread, $repeats runs each, $cpus CPUs, $hits_per_round hits a round"
for threads in 1 2 4; do
  busy=$(( threads < cpus ? threads : cpus ))
  base=$(for _ in $(seq "$repeats"); do fire "$threads"; done | median)
  for tool in "${tools[@]}"; do
    runs=()
    for _ in $(seq "$repeats"); do
      ns=$(fire "$threads" "$tool")
      runs+=("$(awk -v ns="$ns" -v b="$base" -v t="$threads" -v c="$busy" -v r="$rounds" -v h="$hits_per_round" \
                 'BEGIN {printf "%.0f", (ns - b) * c / (t * r * h)}')")
    done
    med=$(printf '%s\n' "${runs[@]}" | median)
    printf '%-60s threads %d  %5s ns/hit  (runs: %s; detached loop %s ns)\n' "$tool" "$threads" "$med" "${runs[*]}" "$base"
  done
done
