// Printing log2 histograms from the kernel, the one place that does it.
#pragma once
#include <linux/types.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/json.h"

namespace jvmtrace {

// libbpf-tools' layout: "     value range      : count    |*****   |".
// slots[k] counts values in [2^k, 2^(k+1)) (slot 0 also counts 0); values are
// divided by `divisor` for display (e.g. ns -> us) and labelled `unit`.
void print_log2_hist(FILE* out, const __u64* slots, int n, const char* unit, uint64_t divisor = 1);

// {"unit": ..., "total": N, "sum": S, "buckets": [{"low": L, "high": H, "count": N}, ...]} for
// the non-empty range; sum is the values' sum (divided by divisor).
Json log2_hist_json(const __u64* slots, int n, const char* unit, uint64_t divisor = 1, uint64_t sum = 0);

// The Prometheus text exposition of a log2 histogram as family `name`:
// cumulative _bucket lines, then +Inf, _sum and _count, each with `labels`
// ("k=\"v\",...").  Bucket bounds are the upper ends of the slots in `cuts`
// (ascending slot numbers; every slot when empty).  seconds: the values are
// microseconds, shown in seconds, the base unit (le = 2^(k+1) us: a value
// counted in slot k was under it before it was truncated to whole us);
// else they are integers shown as they are (le = 2^(k+1) - 1).
std::string log2_hist_prometheus(const std::string& name, const std::string& labels, const __u64* slots, int n,
                                 uint64_t sum, bool seconds, const std::vector<int>& cuts = {});

uint64_t hist_total(const __u64* slots, int n);

}  // namespace jvmtrace
