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
  return probe == "gc__pause__start" || probe == "gc__pause__end" || probe == "alloc__slow" ||
         probe == "plab__batch";
}

namespace {
const char* const kCombinedProbes[] = {"alloc__slow", "plab__batch"};
const char* const kSeparateProbes[] = {"tlab__refill", "alloc__slow__enter", "alloc__slow__exit",
                                       "plab__alloc",  "plab__retire",       "promote__direct"};
}  // namespace

const char* probe_set_name(ProbeSet set) { return set == ProbeSet::kCombined ? "combined" : "separate"; }

bool parse_probe_set(const char* cmd, const char* s, std::string* out) {
  const std::string v = s;
  if (v != "auto" && v != "combined" && v != "separate") {
    std::fprintf(stderr, "%s: --probe-set takes auto, combined or separate, not '%s'\n", cmd, s);
    return false;
  }
  *out = v;
  return true;
}

bool choose_probe_set(const std::string& wanted, const std::set<std::string>& available, ProbeSet* set,
                      std::string* error) {
  bool combined = true;
  for (const char* p : kCombinedProbes) combined = combined && available.count(p);
  if (wanted == "combined" && !combined) {
    *error = "--probe-set combined: this JVM's patch predates alloc__slow and plab__batch; rebuild it with "
             "scripts/build-patched-jdk.sh, or use --probe-set separate";
    return false;
  }
  *set = wanted == "separate" || !combined ? ProbeSet::kSeparate : ProbeSet::kCombined;
  return true;
}

void select_probe_set(bpf_object* obj, ProbeSet set) {
  auto leave_out = [obj](const char* name) {
    if (bpf_program* p = bpf_object__find_program_by_name(obj, name)) bpf_program__set_autoload(p, false);
  };
  if (set == ProbeSet::kCombined)
    for (const char* name : kSeparateProbes) leave_out(name);
  else
    for (const char* name : kCombinedProbes) leave_out(name);
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
