// Tests of the compressed line table decoder (userspace/hotspot/
// method_names.h) without root or a JVM.  Run by tests/test_hostile_target.py;
// exit status 0 = all passed.
//
//   line_table_test [--seed N]   seeded random tables in both UNSIGNED5
//                                forms (17's, and 21's that excludes 0),
//                                decoded whole and fed in random chunks
//                                as the recorder reads them: the same
//                                pairs and the terminator seen; cut
//                                tables, capped ones, and a byte no
//                                table holds
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "check.h"
#include "hotspot/method_names.h"

using jvmtrace::decode_line_table;
using jvmtrace::LineTableDecoder;
using jvmtrace_test::failures;
using Pairs = std::vector<std::pair<int32_t, int32_t>>;

namespace {

// HotSpot's writer (CompressedLineNumberWriteStream): a short pair in one
// byte, else 0xFF and two signed UNSIGNED5 numbers; 0 ends the table.
void u5(std::vector<uint8_t>* out, uint32_t v, int x) {
  const uint32_t L = 192 - static_cast<uint32_t>(x);
  for (int i = 0; i < 4 && v >= L; i++) {
    v -= L;
    out->push_back(static_cast<uint8_t>(x + L + (v & 63)));
    v >>= 6;
  }
  out->push_back(static_cast<uint8_t>(x + v));
}
uint32_t zig(int32_t v) { return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31); }

std::vector<uint8_t> encode(const Pairs& pairs, int x) {
  std::vector<uint8_t> out;
  int32_t bci = 0, line = 0;
  for (const auto& [b, l] : pairs) {
    const int32_t db = b - bci, dl = l - line;
    if (db >= 0 && db < 32 && dl >= 0 && dl < 8 && (db << 3 | dl) != 0 && (db << 3 | dl) != 0xFF) {
      out.push_back(static_cast<uint8_t>(db << 3 | dl));
    } else {
      out.push_back(0xFF);
      u5(&out, zig(db), x);
      u5(&out, zig(dl), x);
    }
    bci = b, line = l;
  }
  out.push_back(0);
  return out;
}

Pairs random_pairs(std::mt19937_64& rng, size_t n) {
  Pairs p;
  int32_t bci = 0, line = 1 + static_cast<int32_t>(rng() % 5000);
  for (size_t i = 0; i < n; i++) {
    // mostly short steps, some long or backward (a loop's condition)
    const int kind = static_cast<int>(rng() % 10);
    bci += kind < 7 ? 1 + static_cast<int32_t>(rng() % 20) : 1 + static_cast<int32_t>(rng() % 70000);
    line += kind < 6 ? static_cast<int32_t>(rng() % 5) : static_cast<int32_t>(rng() % 20001) - 10000;
    p.emplace_back(bci, line);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t seed = 1;
  for (int i = 1; i + 1 < argc; i++)
    if (!std::strcmp(argv[i], "--seed")) seed = std::strtoull(argv[++i], nullptr, 10);
  std::mt19937_64 rng(seed);
  size_t tables = 0;
  for (int round = 0; round < 2000; round++) {
    const int x = round & 1;
    const Pairs want = random_pairs(rng, 1 + rng() % (round % 50 == 0 ? 20000 : 300));
    const std::vector<uint8_t> bytes = encode(want, x);
    bool ended = false;
    const Pairs whole = decode_line_table(bytes.data(), bytes.size(), x, 1 << 20, &ended);
    CHECK(whole == want && ended, "round %d (x %d): whole table: %zu pairs of %zu, ended %d", round, x,
          whole.size(), want.size(), ended);
    // Fed as the recorder reads: the bytes from the start, in chunks that
    // cut entries anywhere.
    LineTableDecoder d(x);
    Pairs fed;
    size_t have = 0;
    bool done = false;
    while (!done && have < bytes.size()) {
      have = std::min(bytes.size(), have + 1 + rng() % 600);
      done = d.feed(bytes.data(), have, &fed, 1 << 20);
    }
    CHECK(fed == want && done && d.ended(), "round %d (x %d): fed in chunks: %zu pairs of %zu, done %d", round, x,
          fed.size(), want.size(), done);
    // A table cut before its end (unreadable memory): what it held.
    const size_t cut = rng() % bytes.size();
    const Pairs part = decode_line_table(bytes.data(), cut, x, 1 << 20, &ended);
    CHECK(!ended && part.size() <= want.size() && std::equal(part.begin(), part.end(), want.begin()),
          "round %d: a table cut at %zu of %zu: %zu pairs, not a prefix", round, cut, bytes.size(), part.size());
    // At most max_pairs.
    const Pairs capped = decode_line_table(bytes.data(), bytes.size(), x, 7);
    CHECK(capped.size() == std::min<size_t>(7, want.size()), "round %d: max_pairs 7 gave %zu", round,
          capped.size());
    tables++;
  }
  // 17's form has no excluded byte; 21's stops at a 0 inside a number
  // (not a table) without reading further.
  {
    const uint8_t bad[] = {0x09, 0xFF, 0x00, 0x05, 0x11};
    LineTableDecoder d(1);
    Pairs out;
    CHECK(d.feed(bad, sizeof bad, &out, 100) && !d.ended() && out.size() == 1,
          "an excluded byte: done %d, %zu pairs", d.ended(), out.size());
  }
  std::printf("%zu random tables (seed %llu) decoded whole, in chunks, cut and capped: %s\n", tables,
              static_cast<unsigned long long>(seed), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
