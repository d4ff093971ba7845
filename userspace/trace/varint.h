// LEB128 varints and zigzag: the trace format's integer encoding.
// Decoding never reads past `end` and rejects over-long or overflowing input.
#pragma once
#include <cstdint>
#include <string>

namespace jvmtrace {

inline void put_varint(std::string* out, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// A difference cur - prev of two u64s, wrapping, as a small unsigned number
// when the two are close in either direction.
inline void put_delta(std::string* out, uint64_t cur, uint64_t prev) {
  put_varint(out, zigzag(static_cast<int64_t>(cur - prev)));
}

// Reads one varint at *p; false (and *p unchanged) if it is cut off by end,
// longer than 10 bytes, or does not fit 64 bits.
inline bool get_varint(const uint8_t** p, const uint8_t* end, uint64_t* v) {
  uint64_t r = 0;
  const uint8_t* q = *p;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q == end) return false;
    const uint8_t b = *q++;
    if (shift == 63 && b > 1) return false;  // bits beyond 64
    r |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *p = q;
      *v = r;
      return true;
    }
  }
  return false;
}

inline bool get_delta(const uint8_t** p, const uint8_t* end, uint64_t prev, uint64_t* v) {
  uint64_t z;
  if (!get_varint(p, end, &z)) return false;
  *v = prev + static_cast<uint64_t>(unzigzag(z));
  return true;
}

}  // namespace jvmtrace
