// CRC32C (Castagnoli), the trace format's block checksum: the SSE4.2
// instruction where the CPU has it, a table otherwise (same result).
#pragma once
#include <cstddef>
#include <cstdint>

namespace jvmtrace {

// Continues a CRC: crc32c(crc32c(0, a), b) == crc32c(0, a ++ b).
uint32_t crc32c(uint32_t crc, const void* data, size_t len);

}  // namespace jvmtrace
