#!/usr/bin/env bash
# Benchmark: what one probe hit costs while a tracer is attached, for the
# jvmtrace probe site (5-byte nop) and for sys/sdt.h's default 1-byte nop.
# The fixture fires its 8 probes N times per run and times that loop itself;
# attached, bpftrace counts alloc__slow__enter (the other 7 stay detached:
# one semaphore load each).  Prints every run, then medians and the ratio.
# Detached, the cost per site is the whole loop / (8 * N): a semaphore load
# and branch (the nop is never reached).
#
#   sudo bench/probe_hit_cost.sh [ROUNDS] [HITS]      (defaults 5, 1000000)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5} hits=${2:-1000000}
cmake --build "$repo/build" --target usdt_fixture usdt_fixture_nop1 >/dev/null
declare -A t
one() {  # one(binary, attached?) -> seconds the fixture spent firing $hits rounds
  local exe=$1 attached=$2 pid bt
  if [ "$attached" = yes ]; then
    coproc FX { "$exe" --wait-for any --rounds "$hits" --timeout 60 2>/tmp/phc.fx; }
    read -r _ pid <&"${FX[0]}"
    bpftrace -p "$pid" -e "usdt:$exe:jvmtrace:alloc__slow__enter { @n = count(); }" >/tmp/phc.bt 2>&1 &
    bt=$!
    wait "$FX_PID" || { echo "probe_hit_cost: fixture failed: $(cat /tmp/phc.fx)" >&2; exit 1; }
    kill -INT $bt; wait $bt || true
    grep -q "@n: $hits" /tmp/phc.bt || { echo "probe_hit_cost: bpftrace did not count $hits hits:" >&2; cat /tmp/phc.bt >&2; exit 1; }
  else
    "$exe" --rounds "$hits" >/dev/null 2>/tmp/phc.fx
  fi
  awk '/^firing took/ { printf "%.6f\n", $3 / 1e9 }' /tmp/phc.fx
}
for v in usdt_fixture usdt_fixture_nop1; do for a in yes no; do t[$v.$a]=""; done; done
for r in $(seq "$rounds"); do
  for v in usdt_fixture usdt_fixture_nop1; do
    exe=$repo/build/tests/fixtures/$v
    for a in yes no; do
      x=$(one "$exe" $a)
      t[$v.$a]+="$x "
      printf 'round %d %-18s attached=%-3s %8.3f s for %d hits\n' "$r" "$v" "$a" "$x" "$hits"
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p5=$(median <<<"${t[usdt_fixture.yes]}"); p1=$(median <<<"${t[usdt_fixture_nop1.yes]}")
d5=$(median <<<"${t[usdt_fixture.no]}"); d1=$(median <<<"${t[usdt_fixture_nop1.no]}")
echo
echo "| probe site | attached: us per hit (median) | detached: ns per site (median) |"
echo "|---|---|---|"
printf '| 5-byte nop (jvmtrace) | %.2f | %.1f |\n' "$(echo "$p5 * 1000000 / $hits" | bc -l)" "$(echo "$d5 * 1000000000 / $hits / 8" | bc -l)"
printf '| 1-byte nop (sdt.h default) | %.2f | %.1f |\n' "$(echo "$p1 * 1000000 / $hits" | bc -l)" "$(echo "$d1 * 1000000000 / $hits / 8" | bc -l)"
printf 'attached cost ratio 1-byte/5-byte: %.2fx\n' "$(echo "$p1 / $p5" | bc -l)"
