// Attaching a BPF object's SEC("usdt") programs to a process's jvmtrace
// probes, and owning the links (detached when the owner goes).
#pragma once
#include <bpf/libbpf.h>
#include <sys/types.h>

#include <cstring>
#include <memory>
#include <functional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "process/target_file.h"

namespace jvmtrace {

struct LinkDelete {
  void operator()(bpf_link* l) const { bpf_link__destroy(l); }
};
// The links of one attach, in the order they were made; they go in the
// reverse order (the last made first), so that a probe attached after
// another is detached before it (attach_jvmtrace_usdt's order).
class Links {
 public:
  Links() = default;
  Links(const Links&) = delete;
  Links& operator=(const Links&) = delete;
  ~Links() { clear(); }
  void emplace_back(bpf_link* l) { links_.emplace_back(l); }
  size_t size() const { return links_.size(); }
  bool empty() const { return links_.empty(); }
  void clear() {
    while (!links_.empty()) links_.pop_back();
  }

 private:
  std::vector<std::unique_ptr<bpf_link, LinkDelete>> links_;
};

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

// Per-CPU maps (BPF_MAP_TYPE_PERCPU_*): a lookup returns one copy of the
// value per possible CPU, each padded to 8 bytes.  The CPUs' copies of key's
// value, or an empty vector (no such key, or the lookup failed).
template <typename V>
std::vector<V> lookup_percpu_elem(const bpf_map* map, const void* key, size_t key_size) {
  static_assert(std::is_trivially_copyable_v<V>, "map values are plain bytes");
  const int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return {};
  const size_t stride = (sizeof(V) + 7) & ~size_t{7};
  std::vector<unsigned char> buf(stride * static_cast<size_t>(ncpus));
  if (bpf_map__lookup_elem(map, key, key_size, buf.data(), buf.size(), 0) != 0) return {};
  std::vector<V> out(static_cast<size_t>(ncpus));
  for (int c = 0; c < ncpus; c++) std::memcpy(&out[c], buf.data() + c * stride, sizeof(V));
  return out;
}

// Every (key, value) of a per-CPU hash map, each value the CPUs' copies
// folded by add(V& total, const V& one_cpu) from a zero V.  Not a snapshot,
// as read_hash_map.
template <typename K, typename V, typename Add>
std::vector<std::pair<K, V>> read_percpu_hash_map(const bpf_map* map, Add add) {
  std::vector<std::pair<K, V>> out;
  K key, next;
  const K* prev = nullptr;
  while (bpf_map__get_next_key(map, prev, &next, sizeof next) == 0) {
    std::vector<V> cpus = lookup_percpu_elem<V>(map, &next, sizeof next);
    if (!cpus.empty()) {
      V total{};
      for (const V& v : cpus) add(total, v);
      out.emplace_back(next, total);
    }
    key = next;
    prev = &key;
  }
  return out;
}

// Attaches every loaded program of obj to the probe jvmtrace:<program name> in
// binary (opened and checked) for pid (libbpf resolves the note, the
// semaphore and the address),
// except alloc__drain (drain_alloc_batches() attaches it at the end).
// The order (attach_rank): the probes that report what happens inside a GC,
// pause or safepoint first, then those that end one, then those that begin
// one; Links detaches in the reverse order.  So a GC whose gc__start and
// gc__end are both in a trace had every other probe attached from before it
// began until after it ended: its content is whole (a probe attached between
// the two would see only its later part).
// On failure returns false with a reason naming the probe; links made so far
// stay in *links (the caller's owner detaches them).  Probes added to the
// contract later (is_optional_probe) may be absent from a JVM patched
// before: those are skipped and named in *absent (if given).
bool attach_jvmtrace_usdt(bpf_object* obj, pid_t pid, const TargetFile& binary, Links* links,
                          std::string* error, std::vector<std::string>* absent = nullptr);
// gc__pause__start/end (added with trace format version 2) and alloc__slow,
// plab__batch, alloc__batch, alloc__drain, safepoint__begin/end and
// alloc__sample (added later): JVMs patched earlier lack them.
bool is_optional_probe(const std::string& probe);

// A patched VM reports allocation slow paths and PLABs three ways (see
// usdt/jvmtrace.d):
//   batched:  alloc__batch and plab__batch, one probe hit per batch of a
//             thread's slow paths (up to 128) and of a GC thread's PLAB
//             events; the tool drains the VM's buffers as it ends;
//   combined: alloc__slow and plab__batch, one hit per slow path;
//   separate: the probes of each site (tlab__refill, alloc__slow__enter/exit,
//             plab__alloc/retire, promote__direct: three hits per TLAB
//             refill, two per PLAB).
// stat and record give the same figures and traces whichever they use.
enum class ProbeSet { kBatched, kCombined, kSeparate };
const char* probe_set_name(ProbeSet set);
// --probe-set's value: auto, batched, combined or separate; else prints
// why, false.
bool parse_probe_set(const char* cmd, const char* s, std::string* out);
// The set to attach for wanted given the probes the JVM declares (auto: the
// first of batched, combined, separate the JVM has; combined when
// per_event, for a stack per slow path); false with *error if it lacks the
// one wanted, or if batched is wanted with per_event.
bool choose_probe_set(const std::string& wanted, const std::set<std::string>& available, bool per_event,
                      ProbeSet* set, std::string* error);
// Before load: leaves the other sets' programs of obj out.
void select_probe_set(bpf_object* obj, ProbeSet set);

// The end of a batched session on a live JVM: attaches obj's alloc__drain
// program (which asks the VM for a safepoint if none comes by itself within
// GuaranteedSafepointInterval) and waits until it has reported a flush at
// or after end_ns, i.e. until every alloc__batch record of a slow path that
// ended by end_ns has reached the tracer; calls tick() every 10 ms while it
// waits.  *drained_ns is the program's global.  Returns how it ended.
enum class Drain { kDone, kTargetExited, kTimedOut, kAttachFailed };
Drain drain_alloc_batches(bpf_object* obj, const PinnedPid& target, const TargetFile& binary,
                          const volatile __u64* drained_ns, uint64_t end_ns, double timeout_s,
                          const std::function<void()>& tick, std::string* error);
// What a tool says when the drain did not end with kDone (empty if it did).
std::string drain_note(Drain d, const std::string& error);

// libbpf's messages: warnings always, debug output only when verbose.
void set_libbpf_verbose(bool verbose);

}  // namespace jvmtrace
