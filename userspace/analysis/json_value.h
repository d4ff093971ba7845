// A small JSON reader, enough for other tools' output (jfr print --json):
// objects, arrays, strings (with escapes), numbers, true/false/null.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace jvmtrace::analysis {

struct JsonValue {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString; kNumber: as written (exact integers beyond 2^53)
  std::vector<JsonValue> items;                 // kArray
  std::vector<std::pair<std::string, JsonValue>> fields;  // kObject, in order

  // The member name of an object, or a shared null value.
  const JsonValue& operator[](const std::string& name) const;
  uint64_t as_u64() const;  // a number (from its text when integral); else 0
};

// Parses text; false with *error (and the byte offset) if it is not JSON.
bool parse_json(const std::string& text, JsonValue* out, std::string* error);

}  // namespace jvmtrace::analysis
