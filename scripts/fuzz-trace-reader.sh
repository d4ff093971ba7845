#!/usr/bin/env bash
# Builds the trace reader's libFuzzer target (clang, ASan + UBSan) and runs it
# for a bounded time, seeded with real traces.  Exit status 0: no crash found.
#
#   scripts/fuzz-trace-reader.sh [SECONDS (default 30)] [SEED_TRACE...]
# Crashing inputs are kept in $FUZZ_DIR (default build/fuzz) as crash-*.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
seconds=${1:-30}
shift || true
dir=${FUZZ_DIR:-$repo/build/fuzz}
mkdir -p "$dir/corpus"
for seed in "$@"; do cp "$seed" "$dir/corpus/"; done
u=$repo/userspace
clang++-14 -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$u" -I"$repo/bpf" -I"$repo/usdt" -I"$repo/tests" "$repo/tests/fuzz/trace_reader_fuzz.cpp" \
  "$u/trace/crc32c.cpp" "$u/trace/codec.cpp" "$u/trace/reader.cpp" -o "$dir/trace_reader_fuzz"
cd "$dir"
echo "fuzzing the trace reader for ${seconds}s ($(ls corpus | wc -l) seeds)" >&2
# A single allocation above 2 GiB is a finding (hostile input must not make
# the reader allocate it); the process's total RSS is not: it grows with
# ASan's quarantine and the fuzzer's own corpus, and once crossed libFuzzer's
# default 2 GiB limit on an empty input (notes.md, session 6).
exec ./trace_reader_fuzz -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 \
  -rss_limit_mb=0 -malloc_limit_mb=2048 corpus
