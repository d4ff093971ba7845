#include "cli.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "target.h"

namespace jvmtrace {

namespace {
volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }
}  // namespace

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

std::string json_escape(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {  // keep the output ASCII: names are bytes, not UTF-8
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += static_cast<char>(c);
    }
  }
  return o;
}

bool check_target(const char* cmd, pid_t pid, const std::string& binary, Target* t) {
  if (!process_alive(pid)) {
    std::fprintf(stderr, "%s: no process with PID %d\n", cmd, pid);
    return false;
  }
  t->pid = pid;
  t->binary = binary.empty() ? find_libjvm(pid) : binary;
  if (t->binary.empty()) {
    std::fprintf(stderr, "%s: PID %d is not a JVM: no libjvm.so mapped%s\n", cmd, pid,
                 geteuid() ? " (or /proc/PID/maps is not readable: run as root)" : "");
    return false;
  }
  if (access(t->binary.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "%s: cannot read %s: %s\n", cmd, t->binary.c_str(), std::strerror(errno));
    return false;
  }
  t->probes = usdt_probe_names(t->binary, "jvmtrace");
  t->has_probes = !t->probes.empty();
  return true;
}

void print_no_probes(const char* cmd, const Target& t, const char* alternative) {
  std::fprintf(stderr,
               "%s: %s in PID %d has no jvmtrace probes (an unpatched HotSpot).\n"
               "  %s\n"
               "  The bpftrace tools also work on it: scripts/jvmtrace-bt tlabstat_stock %d\n"
               "  (and gcpause_stock, allocslow_stock, plabstat_stock, allocbyclass_stock).\n",
               cmd, t.binary.c_str(), t.pid, alternative, t.pid);
}

bool parse_mode(const char* cmd, const char* s, std::string* mode) {
  if (std::strcmp(s, "auto") && std::strcmp(s, "usdt") && std::strcmp(s, "stock")) {
    std::fprintf(stderr, "%s: --mode takes auto, usdt or stock, not '%s'\n", cmd, s);
    return false;
  }
  *mode = s;
  return true;
}

void install_stop_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop != 0; }

std::string bpf_load_hint(int err) {
  std::string s = std::strerror(err);
  if (geteuid() != 0 || err == EPERM) s += " (run as root, or with CAP_BPF and CAP_PERFMON)";
  return s;
}

}  // namespace jvmtrace
