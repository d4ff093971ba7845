#include "cli/histogram.h"

#include <algorithm>

namespace jvmtrace {

namespace {

// Slot k covers [2^k, 2^(k+1) - 1]; slot 0 covers [0, 1].
uint64_t slot_low(int k) { return k == 0 ? 0 : (uint64_t{1} << k); }
uint64_t slot_high(int k) { return (uint64_t{1} << (k + 1)) - 1; }

// Non-empty range [first, last], or first > last when all slots are 0.
void used_range(const __u64* slots, int n, int* first, int* last) {
  *first = n;
  *last = -1;
  for (int k = 0; k < n; k++)
    if (slots[k]) {
      *first = std::min(*first, k);
      *last = k;
    }
}

}  // namespace

uint64_t hist_total(const __u64* slots, int n) {
  uint64_t t = 0;
  for (int k = 0; k < n; k++) t += slots[k];
  return t;
}

void print_log2_hist(FILE* out, const __u64* slots, int n, const char* unit, uint64_t divisor) {
  int first, last;
  used_range(slots, n, &first, &last);
  if (last < 0) {
    std::fprintf(out, "     (no events)\n");
    return;
  }
  uint64_t max = *std::max_element(slots + first, slots + last + 1);
  const int width = 40;
  std::fprintf(out, "%24s : count    distribution\n", unit);
  for (int k = first; k <= last; k++) {
    int stars = max ? static_cast<int>(slots[k] * width / max) : 0;
    std::fprintf(out, "%10llu -> %-10llu : %-8llu |%-*s|\n", (unsigned long long)(slot_low(k) / divisor),
                 (unsigned long long)(slot_high(k) / divisor), (unsigned long long)slots[k], width,
                 std::string(static_cast<size_t>(stars), '*').c_str());
  }
}

Json log2_hist_json(const __u64* slots, int n, const char* unit, uint64_t divisor, uint64_t sum) {
  int first, last;
  used_range(slots, n, &first, &last);
  Json buckets = Json::array();
  for (int k = first; k <= last; k++)
    buckets.push_back({{"low", slot_low(k) / divisor}, {"high", slot_high(k) / divisor}, {"count", slots[k]}});
  return {{"unit", unit}, {"total", hist_total(slots, n)}, {"sum", sum / divisor}, {"buckets", std::move(buckets)}};
}

std::string log2_hist_prometheus(const std::string& name, const std::string& labels, const __u64* slots, int n,
                                 uint64_t sum, bool seconds, const std::vector<int>& cuts) {
  std::string s;
  const std::string sep = labels.empty() ? "" : ",";
  auto bucket = [&](const std::string& le, uint64_t count) {
    s += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(count) + "\n";
  };
  auto le = [&](int k) {
    char b[48];
    if (seconds) std::snprintf(b, sizeof b, "%.9g", static_cast<double>(uint64_t{1} << (k + 1)) / 1e6);
    else std::snprintf(b, sizeof b, "%llu", static_cast<unsigned long long>(slot_high(k)));
    return std::string(b);
  };
  // Every bound, always: a series must not come and go between scrapes.
  uint64_t cum = 0;
  size_t next_cut = 0;
  for (int k = 0; k < n; k++) {
    cum += slots[k];
    if (cuts.empty()) {
      bucket(le(k), cum);
    } else if (next_cut < cuts.size() && cuts[next_cut] == k) {
      bucket(le(k), cum);
      next_cut++;
    }
  }
  const uint64_t total = hist_total(slots, n);
  bucket("+Inf", total);
  char sum_text[48];
  if (seconds) std::snprintf(sum_text, sizeof sum_text, "%.6f", static_cast<double>(sum) / 1e6);
  else std::snprintf(sum_text, sizeof sum_text, "%llu", static_cast<unsigned long long>(sum));
  s += name + "_sum{" + labels + "} " + sum_text + "\n";
  s += name + "_count{" + labels + "} " + std::to_string(total) + "\n";
  return s;
}

}  // namespace jvmtrace
