#include "usdt_attach.h"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <csignal>
#include <string>

#include <unistd.h>

namespace jvmtrace {

namespace {
bool g_verbose = false;
int print_libbpf(enum libbpf_print_level level, const char* fmt, va_list ap) {
  if (level == LIBBPF_DEBUG && !g_verbose) return 0;
  return std::vfprintf(stderr, fmt, ap);
}
}  // namespace

void set_libbpf_verbose(bool verbose) {
  g_verbose = verbose;
  libbpf_set_print(print_libbpf);
}

bool is_optional_probe(const std::string& probe) {
  return probe == "gc__pause__start" || probe == "gc__pause__end";
}

bool attach_jvmtrace_usdt(bpf_object* obj, pid_t pid, const std::string& binary, Links* links,
                          std::string* error, std::vector<std::string>* absent) {
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__autoload(prog)) continue;  // left out on purpose (not loaded)
    const char* probe = bpf_program__name(prog);
    bpf_link* l = bpf_program__attach_usdt(prog, pid, binary.c_str(), "jvmtrace", probe, nullptr);
    if (!l) {
      int err = errno;
      if (err == ENOENT && is_optional_probe(probe) && ::kill(pid, 0) == 0 && ::access(binary.c_str(), F_OK) == 0) {
        if (absent) absent->push_back(probe);
        continue;
      }
      *error = std::string("cannot attach to jvmtrace:") + probe + " in " + binary + ": " + std::strerror(err);
      if (err == ENOENT) {
        // ENOENT has three causes; name the one that holds, not always the last.
        if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH)
          *error += " (process " + std::to_string(pid) + " has exited)";
        else if (::access(binary.c_str(), F_OK) != 0)
          *error += " (the file is not there)";
        else
          *error += " (no such probe: not a patched JVM?)";
      }
      return false;
    }
    links->emplace_back(l);
  }
  return true;
}

}  // namespace jvmtrace
