// Attaching a BPF object's SEC("usdt") programs to a process's jvmtrace
// probes, and owning the links (detached when the owner goes).
#pragma once
#include <bpf/libbpf.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace jvmtrace {

struct LinkDelete {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
using Links = std::vector<std::unique_ptr<bpf_link, LinkDelete>>;

// Attaches every program of obj to the probe jvmtrace:<program name> in
// binary for pid (libbpf resolves the note, the semaphore and the address).
// On failure returns false with a reason naming the probe; links made so far
// stay in *links (the caller's owner detaches them).
bool attach_jvmtrace_usdt(bpf_object* obj, pid_t pid, const std::string& binary, Links* links,
                          std::string* error);

// libbpf's messages: warnings always, debug output only when verbose.
void set_libbpf_verbose(bool verbose);

}  // namespace jvmtrace
