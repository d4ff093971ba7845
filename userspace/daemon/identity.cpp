#include "daemon/identity.h"

#include <set>

namespace jvmtrace {

std::string application_of(const std::vector<std::string>& argv, bool* set) {
  if (set) *set = false;
  // The launcher's options that take the next argument as their value.
  static const std::set<std::string> kWithValue = {
      "-cp", "-classpath", "--class-path", "-p", "--module-path", "--upgrade-module-path", "--add-modules",
      "--add-reads", "--add-exports", "--add-opens", "--limit-modules", "--patch-module", "--source",
      "--enable-native-access", "-splash"};
  static const std::string kProp = "-Djvmtrace.app=";
  std::string main;
  for (size_t i = 1; i < argv.size(); i++) {
    const std::string& a = argv[i];
    if (a.compare(0, kProp.size(), kProp) == 0) {
      if (set) *set = true;
      return a.substr(kProp.size());
    }
    if (!main.empty()) continue;
    if (a == "-jar" || a == "-m" || a == "--module") {
      if (i + 1 >= argv.size()) break;
      std::string v = argv[i + 1];
      if (a == "-jar") {
        v = v.substr(v.rfind('/') == std::string::npos ? 0 : v.rfind('/') + 1);
        if (v.size() > 4 && v.compare(v.size() - 4, 4, ".jar") == 0) v.resize(v.size() - 4);
      } else if (v.find('/') != std::string::npos) {
        v = v.substr(v.find('/') + 1);
      }
      main = v;
      break;  // what follows is the program's
    }
    if (kWithValue.count(a)) {
      i++;
      continue;
    }
    if (a.empty() || a[0] == '-' || a[0] == '@') continue;
    main = a;
    break;  // the main class: what follows is the program's
  }
  return main;
}

namespace {

bool hex_id(const std::string& s, size_t at, size_t end) {
  if (end - at != 64) return false;
  for (size_t i = at; i < end; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return false;
  return true;
}

// c is prefix + 64 hex digits + suffix: the id, else "".
std::string named(const std::string& c, const std::string& prefix, const std::string& suffix) {
  if (c.size() != prefix.size() + 64 + suffix.size() || c.compare(0, prefix.size(), prefix) != 0 ||
      c.compare(c.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  return hex_id(c, prefix.size(), c.size() - suffix.size()) ? c.substr(prefix.size(), 64) : "";
}

bool ends_with_slice(const std::string& c) { return c.size() > 6 && c.compare(c.size() - 6, 6, ".slice") == 0; }

}  // namespace

std::string container_in_path(const std::string& path) {
  std::vector<std::string> c;
  for (size_t at = 0; at < path.size();) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) c.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  if (path.empty() || path[0] != '/' || c.empty()) return "";
  // systemd's driver: only slices above the scope (only root makes those:
  // systemd never delegates a slice, and whatever it delegates is a unit,
  // below which a slice proves nothing).
  size_t k = 0;
  while (k < c.size() && ends_with_slice(c[k])) k++;
  if (k < c.size())
    for (const char* prefix : {"docker-", "cri-containerd-", "crio-", "libpod-"}) {
      const std::string id = named(c[k], prefix, ".scope");
      if (!id.empty()) return id;
    }
  // cgroupfs' driver: fixed names from the root.
  if (c.size() >= 2 && c[0] == "docker") return named(c[1], "", "");
  if (c.size() >= 2 && c[0] == "libpod_parent") return named(c[1], "libpod-", "");
  if (c[0] == "kubepods") {
    size_t i = 1;
    if (i < c.size() && (c[i] == "burstable" || c[i] == "besteffort")) i++;
    if (i + 1 >= c.size() || c[i].compare(0, 3, "pod") != 0 || c[i].size() == 3 ||
        c[i].find_first_not_of("0123456789abcdef-_", 3) != std::string::npos)
      return "";
    std::string id = named(c[i + 1], "", "");
    if (id.empty()) id = named(c[i + 1], "crio-", "");
    return id;
  }
  return "";
}

std::string container_of(const std::string& cgroup_text) {
  // A line per hierarchy, "ID:CONTROLLERS:PATH" (cgroup v2's: "0::PATH");
  // on cgroup v1 each hierarchy has its path, and only root could have put
  // the process into a runtime's cgroup in any of them.
  std::set<std::string> ids;
  for (size_t at = 0; at < cgroup_text.size();) {
    size_t nl = cgroup_text.find('\n', at);
    if (nl == std::string::npos) nl = cgroup_text.size();
    const std::string line = cgroup_text.substr(at, nl - at);
    at = nl + 1;
    const size_t colon1 = line.find(':');
    const size_t colon2 = colon1 == std::string::npos ? colon1 : line.find(':', colon1 + 1);
    if (colon2 == std::string::npos) continue;
    const std::string id = container_in_path(line.substr(colon2 + 1));
    if (!id.empty()) ids.insert(id);
  }
  return ids.size() == 1 ? ids.begin()->substr(0, 12) : "";
}

}  // namespace jvmtrace
