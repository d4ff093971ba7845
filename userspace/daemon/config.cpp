#include "daemon/config.h"

#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/strings.h"

namespace jvmtrace {

// One option, from the command line or the config file (the same names).
bool apply_option(Config* c, const std::string& name, const std::string& v, std::string* error) {
  const char* val = v.c_str();
  auto bad = [&](const std::string& why) {
    *error = "--" + name + " " + why + ", not '" + v + "'";
    return false;
  };
  auto boolean = [&](bool* out) {
    if (v.empty() || v == "true" || v == "yes" || v == "1") *out = true;
    else if (v == "false" || v == "no" || v == "0") *out = false;
    else return bad("takes true or false");
    return true;
  };
  if (name == "socket") c->socket_path = v;
  else if (name == "group") c->group = v;
  else if (name == "trace-dir") c->trace_dir = v;
  else if (name == "metrics-address") c->metrics_address = v;
  else if (name == "jvmtrace") c->jvmtrace = v;
  else if (name == "metrics-port") { if (!parse_long(val, 0, 65535, &c->metrics_port)) return bad("takes 0..65535"); }
  else if (name == "auto-stat") return boolean(&c->auto_stat);
  else if (name == "metrics-full") return boolean(&c->metrics_full);
  else if (name == "stat-live") return boolean(&c->stat_live);
  else if (name == "metrics-linger") {
    if (v == "0") c->metrics_linger = 0;
    else if (!parse_seconds(val, &c->metrics_linger) || c->metrics_linger > 3600) return bad("takes 0 to 3600 seconds");
  }
  else if (name == "application") {
    if (v.empty() || v.size() > 128 || printable(v) != v) return bad("takes a name of 1 to 128 printable bytes");
    c->application = v;
  }
  else if (name == "verbose") return boolean(&c->verbose);
  else if (name == "stat-interval") { if (!parse_seconds(val, &c->stat_interval)) return bad("takes a positive number of seconds"); }
  else if (name == "segment-mb") {
    double mb;
    if (!parse_seconds(val, &mb) || mb < 0.0625) return bad("takes a number of MiB from 0.0625");
    c->segment_mb = v;
  } else if (name == "segment-seconds") {
    double sec;
    if (!parse_seconds(val, &sec)) return bad("takes a positive number of seconds");
    c->segment_seconds = v;
  } else if (name == "max-disk-mb") {
    if (!parse_seconds(val, &c->max_disk_mb) || c->max_disk_mb < 0.0625) return bad("takes a number of MiB from 0.0625");
  } else if (name == "keep") { if (!parse_long(val, 1, 1000000, &c->keep)) return bad("takes a positive number"); }
  else if (name == "max-workers") { if (!parse_long(val, 1, 4096, &c->max_workers)) return bad("takes 1..4096"); }
  else {
    *error = "unknown option '" + name + "'";
    return false;
  }
  return true;
}

namespace {

// The jvmtrace binary next to this jvmtraced.
std::string default_jvmtrace() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "jvmtrace";
  self[n] = 0;
  std::string s(self);
  return s.substr(0, s.rfind('/') + 1) + "jvmtrace";
}

}  // namespace

bool ConfigSource::load(Config* c, std::string* error) const {
  *c = Config();
  c->jvmtrace = default_jvmtrace();
  if (!file.empty()) {
    std::ifstream f(file);
    if (!f) {
      *error = "cannot read the config file " + file + ": " + std::strerror(errno);
      return false;
    }
    std::string line;
    for (int n = 1; std::getline(f, line); n++) {
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      const size_t a = line.find_first_not_of(" \t"), b = line.find_last_not_of(" \t");
      if (a == std::string::npos) continue;
      line = line.substr(a, b - a + 1);
      const size_t eq = line.find('=');
      std::string key = line.substr(0, eq), value = eq == std::string::npos ? "" : line.substr(eq + 1);
      key.erase(key.find_last_not_of(" \t") + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (!apply_option(c, key, value, error)) {
        *error = file + ":" + std::to_string(n) + ": " + *error;
        return false;
      }
    }
  }
  for (const auto& [name, value] : cli)
    if (!apply_option(c, name, value, error)) return false;
  if (c->keep && c->segment_mb.empty() && c->segment_seconds.empty()) {
    *error = "--keep goes with --segment-mb or --segment-seconds";
    return false;
  }
  return true;
}

}  // namespace jvmtrace
