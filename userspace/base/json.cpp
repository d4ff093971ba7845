#include "base/json.h"

namespace jvmtrace {

std::string json_text(const Json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

const nlohmann::json& json_field(const nlohmann::json& j, const char* name) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(name);
  return it == j.end() ? kNull : *it;
}

}  // namespace jvmtrace
