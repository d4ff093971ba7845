#include "trace/crc32c.h"

#include <cstring>

namespace jvmtrace {

namespace {

struct Table {
  uint32_t t[256];
  Table() {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & -(c & 1));  // reflected 0x1EDC6F41
      t[i] = c;
    }
  }
};

uint32_t crc_table(uint32_t crc, const uint8_t* p, size_t len) {
  static const Table table;
  while (len--) crc = table.t[(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc_sse42(uint32_t crc, const uint8_t* p, size_t len) {
  uint64_t c = crc;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = __builtin_ia32_crc32di(c, w);
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (len--) c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
#endif

}  // namespace

uint32_t crc32c(uint32_t crc, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  crc = hw ? crc_sse42(crc, p, len) : crc_table(crc, p, len);
#else
  crc = crc_table(crc, p, len);
#endif
  return ~crc;
}

}  // namespace jvmtrace
