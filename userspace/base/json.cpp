#include "base/json.h"

namespace jvmtrace {

std::string json_text(const Json& j) {
  std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // nlohmann escapes only U+0000..U+001F, as JSON requires: DEL and the C1
  // controls (U+0080..U+009F, c2 80..c2 9f: CSI is one) went out raw.  The
  // text is UTF-8 here, so a c2 byte is a character's lead byte.
  if (text.find_first_of("\x7f\xc2") == std::string::npos) return text;
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size(); i++) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == 0x7f) {
      out += "\\u007f";
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
      out += "\\u00";
      out += kHex[next >> 4];
      out += kHex[next & 15];
      i++;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

const nlohmann::json& json_field(const nlohmann::json& j, const char* name) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(name);
  return it == j.end() ? kNull : *it;
}

}  // namespace jvmtrace
