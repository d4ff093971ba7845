// JSON for every jvmtrace output and input: nlohmann::json (Debian's
// nlohmann-json3-dev), objects keeping their fields in the order set.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace jvmtrace {

using Json = nlohmann::ordered_json;

// j as one line of JSON.  Names the target chose (threads, classes, its
// command line) are bytes, not always UTF-8 (the kernel cuts a thread's name
// at 15 bytes, mid-character or not): what is not UTF-8 becomes U+FFFD.
// Every control character (C0, DEL, C1) is a \u escape: the text holds none
// raw, and a name decodes to itself (docs/decisions.md 127).
// NaN and infinities are written as null, so the line is always JSON.
std::string json_text(const Json& j);

// The member `name` of an object, or null when j is not an object or has no
// such member (reading other tools' output without exceptions).
const nlohmann::json& json_field(const nlohmann::json& j, const char* name);

}  // namespace jvmtrace
