#include "base/strings.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace jvmtrace {

bool parse_long(const char* s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool parse_pid(const char* s, pid_t* out) {
  long v;
  if (!parse_long(s, 1, 4194304, &v)) return false;
  *out = static_cast<pid_t>(v);
  return true;
}

bool parse_seconds(const char* s, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (errno || end == s || *end || !(v > 0) || v > 1e7) return false;
  *out = v;
  return true;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string printable(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [&](unsigned char c) {
    static const char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      hex(c);
      i++;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      i++;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, then continuations.
    const size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; k++) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    // U+0080..U+009F (C1 controls) are c2 80..c2 9f.
    if (ok && c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) ok = false;
    if (!ok) {
      hex(c);
      i++;
      continue;
    }
    out.append(s, i, n);
    i += n;
  }
  return out;
}

}  // namespace jvmtrace

namespace jvmtrace {

std::string prometheus_label_value(const std::string& s) {
  std::string out;
  for (char c : printable(s)) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else out += c;  // printable() left no newline
  }
  return out;
}

}  // namespace jvmtrace
