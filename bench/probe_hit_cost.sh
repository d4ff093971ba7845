#!/usr/bin/env bash
# Benchmark: what one probe hit costs while a tracer is attached, for three
# kinds of probe site in the USDT fixture (tests/fixtures/usdt_fixture.cpp):
#   - the jvmtrace probe site, a 5-byte nop (the kernel turns it into a call
#     to a uprobe trampoline after the first hit);
#   - sys/sdt.h's default 1-byte nop (stays an int3 trap);
#   - a function entry, jvmtrace_fixture_entry (out of line, starts with
#     push %rbp like HotSpot's AllocTracer functions): an int3 uprobe, what
#     stock mode (`record`/`stat --mode stock`) pays per event.
# The fixture fires its probes N times per run and times that loop itself;
# attached, bpftrace counts one site with count(): alloc__slow__enter (the
# other USDT probes stay detached: one semaphore load each), or the entry
# uprobe (run with --entry-calls: one call per round, no USDT probe enabled).
# Prints every run, then medians:
#   attached us per hit   the whole loop / N (what earlier tables quoted)
#   detached ns per round the same loop with nothing attached / N: ten
#                         semaphore loads and branches, the pause-name
#                         snprintf every round does, and with --entry-calls
#                         the call
#   net us per hit        (attached - detached) / N: the hit alone
#
#   sudo bench/probe_hit_cost.sh [ROUNDS] [HITS]      (defaults 5, 1000000)
#
# The fixture is built in $JVMTRACE_BUILD_DIR (default: build/ of this tree).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${JVMTRACE_BUILD_DIR:-$repo/build}
rounds=${1:-5} hits=${2:-1000000}
cmake --build "$build" --target usdt_fixture usdt_fixture_nop1 >/dev/null
tmp=$(mktemp -d /tmp/phc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
declare -A t

# one(case, attached?) -> seconds the fixture spent firing $hits rounds
#   case: usdt5 | usdt1 | entry
one() {
  local case=$1 attached=$2 exe=$build/tests/fixtures/usdt_fixture extra=() pid bt probe wait_for=any
  case $case in
    usdt5) probe="usdt:$exe:jvmtrace:alloc__slow__enter" ;;
    usdt1) exe=$build/tests/fixtures/usdt_fixture_nop1; probe="usdt:$exe:jvmtrace:alloc__slow__enter" ;;
    entry) probe="uprobe:$exe:jvmtrace_fixture_entry"; extra=(--entry-calls); wait_for=stdin ;;
  esac
  if [ "$attached" = yes ]; then
    # USDT: the fixture starts once a semaphore is set.  A uprobe sets none:
    # the fixture waits for a line, sent once bpftrace's BEGIN has run (it
    # runs after every probe is attached).
    coproc FX { "$exe" --wait-for "$wait_for" --rounds "$hits" --timeout 60 "${extra[@]}" 2>"$tmp/fx"; }
    read -r _ pid <&"${FX[0]}"
    bpftrace -p "$pid" -e "BEGIN { printf(\"@@attached\\n\"); } $probe { @n = count(); }" >"$tmp/bt" 2>&1 &
    bt=$!
    if [ "$wait_for" = stdin ]; then
      local deadline=$((SECONDS + 60))
      until grep -q '^@@attached' "$tmp/bt"; do
        if ! kill -0 $bt 2>/dev/null || [ $SECONDS -gt $deadline ]; then
          echo "probe_hit_cost: bpftrace did not attach to $probe:" >&2; cat "$tmp/bt" >&2; exit 1
        fi
        sleep 0.05
      done
      echo go >&"${FX[1]}"
    fi
    wait "$FX_PID" || { echo "probe_hit_cost: fixture failed: $(cat "$tmp/fx")" >&2; exit 1; }
    kill -INT $bt; wait $bt || true
    grep -q "@n: $hits\$" "$tmp/bt" || { echo "probe_hit_cost: bpftrace did not count $hits hits:" >&2; cat "$tmp/bt" >&2; exit 1; }
  else
    "$exe" --rounds "$hits" "${extra[@]}" >/dev/null 2>"$tmp/fx"
  fi
  awk '/^firing took/ { printf "%.6f\n", $3 / 1e9 }' "$tmp/fx"
}
cases="usdt5 usdt1 entry"
for c in $cases; do for a in yes no; do t[$c.$a]=""; done; done
for r in $(seq "$rounds"); do
  for c in $cases; do
    for a in yes no; do
      x=$(one $c $a)
      t[$c.$a]+="$x "
      printf 'round %d %-6s attached=%-3s %8.3f s for %d hits\n' "$r" "$c" "$a" "$x" "$hits"
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A label=([usdt5]="5-byte nop (jvmtrace USDT)" [usdt1]="1-byte nop (sdt.h default USDT)"
                  [entry]="function entry (int3 uprobe)")
declare -A net
echo
echo "| probe site | attached: us per hit (median) | detached: ns per round (median) | net: us per hit |"
echo "|---|---|---|---|"
for c in $cases; do
  p=$(median <<<"${t[$c.yes]}"); d=$(median <<<"${t[$c.no]}")
  net[$c]=$(echo "($p - $d) * 1000000 / $hits" | bc -l)
  printf '| %s | %.2f | %.1f | %.2f |\n' "${label[$c]}" "$(echo "$p * 1000000 / $hits" | bc -l)" \
    "$(echo "$d * 1000000000 / $hits" | bc -l)" "${net[$c]}"
done
printf 'net cost ratio 1-byte nop / 5-byte nop: %.2fx; function entry / 5-byte nop: %.2fx\n' \
  "$(echo "${net[usdt1]} / ${net[usdt5]}" | bc -l)" "$(echo "${net[entry]} / ${net[usdt5]}" | bc -l)"
