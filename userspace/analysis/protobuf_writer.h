// The protocol buffers wire format, written by hand for the few message
// shapes the Perfetto export needs (no generated code, no library): varint,
// 64-bit and length-delimited fields.  A nested message is written into its
// own ProtoMessage and added to its parent whole.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace jvmtrace::analysis {

class ProtoMessage {
 public:
  void varint(uint32_t field, uint64_t v) {
    key(field, 0);
    raw_varint(v);
  }
  void boolean(uint32_t field, bool v) { varint(field, v ? 1 : 0); }
  // int64 fields: two's complement in a varint (negative values take 10 bytes).
  void int64(uint32_t field, int64_t v) { varint(field, static_cast<uint64_t>(v)); }
  void float64(uint32_t field, double v) {
    key(field, 1);
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; i++) buf_.push_back(static_cast<char>(bits >> (8 * i)));
  }
  void bytes(uint32_t field, const std::string& s) {
    key(field, 2);
    raw_varint(s.size());
    buf_ += s;
  }
  void message(uint32_t field, const ProtoMessage& m) { bytes(field, m.buf_); }

  const std::string& data() const { return buf_; }
  bool empty() const { return buf_.empty(); }
  void clear() { buf_.clear(); }

 private:
  void key(uint32_t field, uint32_t wire_type) { raw_varint((static_cast<uint64_t>(field) << 3) | wire_type); }
  void raw_varint(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<char>(v));
  }

  std::string buf_;
};

}  // namespace jvmtrace::analysis
