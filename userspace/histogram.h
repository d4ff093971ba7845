// Printing log2 histograms from the kernel, the one place that does it.
#pragma once
#include <linux/types.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace jvmtrace {

// libbpf-tools' layout: "     value range      : count    |*****   |".
// slots[k] counts values in [2^k, 2^(k+1)) (slot 0 also counts 0); values are
// divided by `divisor` for display (e.g. ns -> us) and labelled `unit`.
void print_log2_hist(FILE* out, const __u64* slots, int n, const char* unit, uint64_t divisor = 1);

// {"unit": ..., "buckets": [{"low": L, "high": H, "count": N}, ...]} for the non-empty range.
std::string log2_hist_json(const __u64* slots, int n, const char* unit, uint64_t divisor = 1);

uint64_t hist_total(const __u64* slots, int n);

}  // namespace jvmtrace
