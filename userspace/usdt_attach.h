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

struct RingDelete {
  void operator()(ring_buffer* r) const { ring_buffer__free(r); }
};
using RingBuffer = std::unique_ptr<ring_buffer, RingDelete>;

// Every (key, value) of a BPF hash map, read from user space.  The map may
// change meanwhile (a walk is not a snapshot): entries may be missed or seen
// with newer values, never torn.
template <typename K, typename V>
std::vector<std::pair<K, V>> read_hash_map(const bpf_map* map) {
  std::vector<std::pair<K, V>> out;
  K key, next;
  const K* prev = nullptr;
  while (bpf_map__get_next_key(map, prev, &next, sizeof next) == 0) {
    V v;
    if (bpf_map__lookup_elem(map, &next, sizeof next, &v, sizeof v, 0) == 0) out.emplace_back(next, v);
    key = next;
    prev = &key;
  }
  return out;
}

// Attaches every loaded program of obj to the probe jvmtrace:<program name> in
// binary for pid (libbpf resolves the note, the semaphore and the address).
// On failure returns false with a reason naming the probe; links made so far
// stay in *links (the caller's owner detaches them).  Probes added to the
// contract later (is_optional_probe) may be absent from a JVM patched
// before: those are skipped and named in *absent (if given).
bool attach_jvmtrace_usdt(bpf_object* obj, pid_t pid, const std::string& binary, Links* links,
                          std::string* error, std::vector<std::string>* absent = nullptr);
// gc__pause__start/end (added with trace format version 2): JVMs patched
// earlier lack them.
bool is_optional_probe(const std::string& probe);

// libbpf's messages: warnings always, debug output only when verbose.
void set_libbpf_verbose(bool verbose);

}  // namespace jvmtrace
