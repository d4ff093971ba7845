// jvmtrace target: what the shell tools (scripts/jvmtrace-bt,
// scripts/hotspot-vmstructs) need from a JVM's libjvm.so, read through the
// checked route every C++ reader takes (process/target_file.h), so that no
// script opens, runs nm or readelf on, or hands bpftrace a name the target
// controls.  Every value it prints is checked against a strict pattern
// first: the scripts put them into a bpftrace program that runs as root.
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/common.h"
#include "hotspot/elf_symbols.h"
#include "hotspot/gc_causes.h"
#include "hotspot/vmstructs.h"
#include "process/target.h"
#include "process/target_file.h"

namespace jvmtrace {

namespace {

constexpr const char* kCmd = "jvmtrace target";

void usage(FILE* out) {
  std::fprintf(out,
               "USAGE: jvmtrace target PID [--probes] [--function CLASS::METHOD]... [--field TYPE::FIELD]...\n"
               "                           [--all-fields] [--gc-causes]\n"
               "       jvmtrace target PID --exec-fd N --same-file DEV:INO -- COMMAND [ARGS...]\n"
               "What the bpftrace tools need from PID's libjvm.so, read from the file the JVM maps (never\n"
               "a path its container controls), one line each:\n"
               "  file DEV:INO                 the mapped file (a regular file; nothing else is read)\n"
               "  path PATH                    what a bpftrace program started by --exec-fd 3 names it:\n"
               "                               /proc/self/fd/3 (that file), or, for a JVM in another mount\n"
               "                               namespace (bpftrace reads it through /proc/PID/root then),\n"
               "                               /proc/PID/root/... once that path is checked to lead, with\n"
               "                               no symbolic link, to the mapped file itself\n"
               "  probes jvmtrace|none         whether it declares the jvmtrace USDT probes\n"
               "  function CLASS::METHOD SYM   the mangled symbol of that C++ function\n"
               "  field TYPE::FIELD OFFSET     a field's offset, from the JVM's gHotSpotVMStructs\n"
               "  gccause N NAME               with --gc-causes: GC cause N's name, as this libjvm.so's own\n"
               "                               GCCause::to_string returns it (one line per cause); or\n"
               "  gccauses unknown             when that function is not of the shape jvmtrace reads\n"
               "                               (said on stderr; the tools then show causes by number)\n"
               "A symbol that is not [A-Za-z0-9_]+ is refused (exit 1): a library that names its\n"
               "functions so is not HotSpot's, and its text must not reach a bpftrace program.\n"
               "With --exec-fd, runs COMMAND with that file open as descriptor N (so /proc/self/fd/N\n"
               "is it), once it is checked to be the file DEV:INO named before.\n"
               "Exit status: 0, 1 (not a JVM, not readable, refused), 2 (usage).\n"
               "EXAMPLES:\n"
               "  sudo jvmtrace target 4242 --function GCTracer::report_gc_start --field Klass::_name\n");
}

// What may go into a bpftrace program: a mangled C++ name, a field name.
bool plain_symbol(const std::string& s) { return !s.empty() && std::regex_match(s, std::regex("[A-Za-z0-9_]+")); }
bool plain_path(const std::string& s) { return std::regex_match(s, std::regex("(/[A-Za-z0-9._+~-]+)+")); }
bool plain_qualified(const std::string& s) {
  return !s.empty() && std::regex_match(s, std::regex("[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+"));
}

}  // namespace

int target_command(int argc, char** argv) {
  std::vector<std::string> functions, fields;
  bool all_fields = false, probes = false, gc_causes = false;
  long exec_fd = -1;
  std::string same_file;
  static const option longopts[] = {{"function", required_argument, nullptr, 'f'},
                                    {"field", required_argument, nullptr, 'F'},
                                    {"all-fields", no_argument, nullptr, 'A'},
                                    {"probes", no_argument, nullptr, 'P'},
                                    {"gc-causes", no_argument, nullptr, 'G'},
                                    {"exec-fd", required_argument, nullptr, 'e'},
                                    {"same-file", required_argument, nullptr, 's'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  // A C++ name the tool asks for: Class::method or Type::field, nothing else.
  auto qualified = [](const char* option, const char* form, std::vector<std::string>* to) {
    if (!plain_qualified(optarg)) {
      std::fprintf(stderr, "%s: %s takes %s, not '%s'\n", kCmd, option, form, printable(optarg).c_str());
      return false;
    }
    to->push_back(optarg);
    return true;
  };
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'f':
        if (!qualified("--function", "Class::method", &functions)) return 2;
        break;
      case 'F':
        if (!qualified("--field", "Type::field", &fields)) return 2;
        break;
      case 'A': all_fields = true; break;
      case 'P': probes = true; break;
      case 'G': gc_causes = true; break;
      case 'e':
        if (!parse_long(optarg, 3, 255, &exec_fd)) {
          std::fprintf(stderr, "%s: --exec-fd takes a descriptor number from 3 to 255, not '%s'\n", kCmd,
                       printable(optarg).c_str());
          return 2;
        }
        break;
      case 's': same_file = optarg; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  pid_t pid = 0;
  if (optind >= argc || !parse_pid(argv[optind], &pid)) {
    std::fprintf(stderr, "%s: the first argument must be a PID\n", kCmd);
    usage(stderr);
    return 2;
  }
  optind++;
  if ((exec_fd >= 0) != (optind < argc) || (exec_fd >= 0 && same_file.empty())) {
    std::fprintf(stderr, "%s: --exec-fd, --same-file and a COMMAND go together\n", kCmd);
    usage(stderr);
    return 2;
  }

  TargetFile lib;
  std::string error;
  if (!open_libjvm(pid, &lib, &error)) {
    if (error.empty())
      std::fprintf(stderr, "%s: PID %d is not a JVM: no libjvm.so mapped%s\n", kCmd, pid,
                   process_alive(pid) ? "" : " (no such process)");
    else
      std::fprintf(stderr, "%s: %s\n", kCmd, printable(error).c_str());
    return 1;
  }
  char id[64];
  std::snprintf(id, sizeof id, "%ju:%ju", static_cast<uintmax_t>(lib.dev()), static_cast<uintmax_t>(lib.ino()));

  if (exec_fd >= 0) {
    // The file the values were read from, and no other, under that number.
    if (same_file != id) {
      std::fprintf(stderr, "%s: PID %d maps another libjvm.so (%s) than the one read before (%s): not run\n", kCmd,
                   pid, id, printable(same_file).c_str());
      return 1;
    }
    if (lib.fd() == exec_fd ? fcntl(lib.fd(), F_SETFD, 0) != 0 : dup2(lib.fd(), static_cast<int>(exec_fd)) < 0) {
      std::fprintf(stderr, "%s: dup2: %s\n", kCmd, std::strerror(errno));
      return 1;
    }
    execvp(argv[optind], argv + optind);
    std::fprintf(stderr, "%s: cannot run %s: %s\n", kCmd, printable(argv[optind]).c_str(), std::strerror(errno));
    return 1;
  }

  std::printf("file %s\n", id);
  // bpftrace, given -p PID of a process in another mount namespace, reads
  // every path through /proc/PID/root (its own rule): /proc/self/fd/3 would
  // not reach the checked file there.  Then it is given the target's path,
  // checked now to lead inside the target's root, through no symbolic link,
  // to the very file the JVM maps.  (Left: the container could change the
  // path after this check and before bpftrace opens it: docs/security.md.)
  struct stat ours, theirs;
  const std::string proc = "/proc/" + std::to_string(pid);
  const bool same_ns = stat("/proc/self/ns/mnt", &ours) == 0 && stat((proc + "/ns/mnt").c_str(), &theirs) == 0 &&
                       ours.st_ino == theirs.st_ino && ours.st_dev == theirs.st_dev;
  if (same_ns) {
    std::printf("path /proc/self/fd/3\n");
  } else {
    const std::string inner = lib.shown().substr(lib.shown().find("/root") + 5);  // the maps text
    if (!plain_path(inner)) {
      std::fprintf(stderr, "%s: PID %d (in another mount namespace) maps libjvm.so from a path with characters "
                   "other than letters, digits and ._+~-: refused (it would go into a bpftrace program)\n", kCmd, pid);
      return 1;
    }
    const int root = open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    std::string why;
    const int fd = root < 0 ? -1 : open_target_file(root, inner.substr(1), static_cast<uid_t>(-1), kMaxElfBytes,
                                                    &why, proc + "/root");
    struct stat st;
    const bool same = fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == lib.dev() && st.st_ino == lib.ino();
    if (fd >= 0) close(fd);
    if (root >= 0) close(root);
    if (!same) {
      std::fprintf(stderr, "%s: PID %d is in another mount namespace, and its libjvm.so's path there does not lead "
                   "to the file it maps without a symbolic link (%s): refused; bpftrace reads it by that path\n",
                   kCmd, pid, why.empty() ? "another file" : printable(why).c_str());
      return 1;
    }
    std::printf("path %s\n", (proc + "/root" + inner).c_str());
  }
  if (probes) std::printf("probes %s\n", has_usdt_provider(lib.path(), "jvmtrace") ? "jvmtrace" : "none");
  const std::string shown = printable(lib.shown());
  ElfSymbols syms;
  if ((!functions.empty() || !fields.empty() || all_fields || gc_causes) && !syms.load(lib.path(), &error, true, shown)) {
    std::fprintf(stderr, "%s: %s\n", kCmd, error.c_str());
    return 1;
  }
  for (const std::string& f : functions) {
    const std::string mangled = syms.function(f, &error);
    if (mangled.empty()) {
      std::fprintf(stderr, "%s: %s: %s\n", kCmd, shown.c_str(), error.c_str());
      return 1;
    }
    if (!plain_symbol(mangled)) {
      std::fprintf(stderr,
                   "%s: %s names %s with a symbol of characters other than letters, digits and '_' (%s): refused; "
                   "it is not a HotSpot this tool knows, and its text will not go into a bpftrace program\n",
                   kCmd, shown.c_str(), f.c_str(), printable(mangled).c_str());
      return 1;
    }
    std::printf("function %s %s\n", f.c_str(), mangled.c_str());
  }
  if (!fields.empty() || all_fields) {
    const uint64_t start = libjvm_map_start(pid);
    std::map<std::string, uint64_t> offsets;
    if (!start || !read_vmstructs(pid, syms, syms.load_bias(start), &offsets, &error)) {
      std::fprintf(stderr, "%s: %s\n", kCmd, start ? error.c_str() : "cannot find where libjvm.so is mapped");
      return 1;
    }
    if (all_fields)
      for (const auto& [name, off] : offsets)
        if (plain_qualified(name)) fields.push_back(name);  // (the table's names are the JVM's memory)
    for (const std::string& f : fields) {
      auto it = offsets.find(f);
      if (it == offsets.end()) {
        std::fprintf(stderr, "%s: PID %d's HotSpot exports no field %s\n", kCmd, pid, f.c_str());
        return 1;
      }
      std::printf("field %s %" PRIu64 "\n", f.c_str(), it->second);
    }
  }
  if (gc_causes) {
    std::vector<std::string> names;
    if (gc_cause_names(lib.path(), syms, &names, &error)) {
      for (size_t n = 0; n < names.size(); n++) std::printf("gccause %zu %s\n", n, names[n].c_str());
    } else {
      std::fprintf(stderr, "%s: %s: %s; GC causes are shown by number\n", kCmd, shown.c_str(), error.c_str());
      std::printf("gccauses unknown\n");
    }
  }
  return 0;
}

}  // namespace jvmtrace
