#include "daemon/request.h"

#include <sstream>
#include <vector>

#include "base/strings.h"

namespace jvmtrace {

bool parse_request(const std::string& line, Request* r, std::string* error) {
  for (unsigned char c : line) {
    if (c < 0x20 || c > 0x7e) {
      *error = "request holds a control or non-ASCII byte";
      return false;
    }
  }
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string t; in >> t;) w.push_back(t);
  if (w.empty()) {
    *error = "empty request";
    return false;
  }
  const std::string& verb = w[0];
  auto bad = [&](const std::string& why) {
    *error = why;
    return false;
  };
  if (verb == "status" || verb == "list") {
    if (w.size() != 1) return bad(verb + " takes no arguments");
    r->verb = verb == "status" ? Request::kStatus : Request::kList;
    return true;
  }
  if (verb != "attach" && verb != "detach") return bad("unknown request '" + verb.substr(0, 32) + "' (status, list, attach, detach)");
  r->verb = verb == "attach" ? Request::kAttach : Request::kDetach;
  if (w.size() < 2 || !parse_pid(w[1].c_str(), &r->pid)) return bad(verb + " needs a PID (a number from 1 to 4194304)");
  if (r->verb == Request::kAttach) {
    if (w.size() < 3 || (w[2] != "stat" && w[2] != "record")) return bad("attach PID needs stat or record");
    r->what = w[2];
    if (w.size() == 4) {
      if (r->what != "record") return bad("only attach PID record takes SECONDS");
      if (!parse_seconds(w[3].c_str(), &r->seconds) || r->seconds > 86400)
        return bad("SECONDS must be a number from 0 to 86400");
    }
    if (w.size() > 4) return bad("too many arguments");
    return true;
  }
  if (w.size() == 3) {
    if (w[2] != "stat" && w[2] != "record") return bad("detach PID takes stat, record or nothing");
    r->what = w[2];
  }
  if (w.size() > 3) return bad("too many arguments");
  return true;
}

}  // namespace jvmtrace
