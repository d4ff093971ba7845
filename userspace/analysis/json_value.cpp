#include "analysis/json_value.h"

#include <cctype>
#include <cstdlib>

namespace jvmtrace::analysis {

namespace {

class Parser {
 public:
  explicit Parser(const std::string& s) : s_(s) {}

  bool parse(JsonValue* v, std::string* error) {
    if (!value(v, 0) || (skip(), pos_ != s_.size())) {
      *error = "not JSON at byte " + std::to_string(pos_) + (why_.empty() ? "" : ": " + why_);
      return false;
    }
    return true;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) pos_++;
  }
  bool fail(const char* why) {
    why_ = why;
    return false;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return fail("unknown literal");
    pos_ += w.size();
    return true;
  }
  static void utf8(uint32_t c, std::string* out) {
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xe0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
    }
  }
  bool string(std::string* out) {
    if (s_[pos_] != '"') return fail("expected a string");
    pos_++;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return fail("cut-off escape");
      c = s_[pos_++];
      switch (c) {
        case 'n': out->push_back('\n'); break;
        case 't': out->push_back('\t'); break;
        case 'r': out->push_back('\r'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return fail("cut-off \\u escape");
          utf8(static_cast<uint32_t>(std::strtoul(s_.substr(pos_, 4).c_str(), nullptr, 16)), out);
          pos_ += 4;
          break;
        }
        default: out->push_back(c);  // \" \\ \/
      }
    }
    if (pos_ >= s_.size()) return fail("unterminated string");
    pos_++;
    return true;
  }
  bool value(JsonValue* v, int depth) {
    if (depth > 200) return fail("nested too deeply");
    skip();
    if (pos_ >= s_.size()) return fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') {
      v->kind = JsonValue::kObject;
      pos_++;
      skip();
      if (pos_ < s_.size() && s_[pos_] == '}') return pos_++, true;
      for (;;) {
        skip();
        std::string name;
        if (pos_ >= s_.size() || !string(&name)) return fail("expected a member name");
        skip();
        if (pos_ >= s_.size() || s_[pos_++] != ':') return fail("expected ':'");
        v->fields.emplace_back(std::move(name), JsonValue());
        if (!value(&v->fields.back().second, depth + 1)) return false;
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { pos_++; continue; }
        if (pos_ < s_.size() && s_[pos_] == '}') return pos_++, true;
        return fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v->kind = JsonValue::kArray;
      pos_++;
      skip();
      if (pos_ < s_.size() && s_[pos_] == ']') return pos_++, true;
      for (;;) {
        v->items.emplace_back();
        if (!value(&v->items.back(), depth + 1)) return false;
        skip();
        if (pos_ < s_.size() && s_[pos_] == ',') { pos_++; continue; }
        if (pos_ < s_.size() && s_[pos_] == ']') return pos_++, true;
        return fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v->kind = JsonValue::kString;
      return string(&v->text);
    }
    if (c == 't' || c == 'f') {
      v->kind = JsonValue::kBool;
      v->boolean = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return literal("null");
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      pos_++;
    if (pos_ == start) return fail("unexpected character");
    v->kind = JsonValue::kNumber;
    v->text = s_.substr(start, pos_ - start);
    v->number = std::strtod(v->text.c_str(), nullptr);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string why_;
};

}  // namespace

const JsonValue& JsonValue::operator[](const std::string& name) const {
  static const JsonValue null;
  for (const auto& [k, v] : fields)
    if (k == name) return v;
  return null;
}

uint64_t JsonValue::as_u64() const {
  if (kind != kNumber || number < 0) return 0;
  if (text.find_first_of(".eE") == std::string::npos) return std::strtoull(text.c_str(), nullptr, 10);
  return static_cast<uint64_t>(number);
}

bool parse_json(const std::string& text, JsonValue* out, std::string* error) {
  *out = JsonValue();
  return Parser(text).parse(out, error);
}

}  // namespace jvmtrace::analysis
