#include "daemon/trace_store.h"

#include <algorithm>
#include <ctime>
#include <set>

#include "daemon/log.h"

namespace jvmtrace {

namespace {

// True if a recording already uses this stem (its file or any segment).
bool name_taken(const TraceDir& dir, const Workers& workers, const std::string& stem) {
  for (auto& w : workers)
    if (w->kind() == Worker::kRecord && trace_stem(*w) == stem) return true;
  for (const TraceDir::Entry& e : dir.list())  // any kind of entry: a symlink too
    if (e.name.compare(0, stem.size() + 1, stem + ".") == 0) return true;
  return false;
}

}  // namespace

std::string trace_stem(const Worker& w) {
  const std::string base = w.trace_path.substr(w.trace_path.rfind('/') + 1);
  return base.substr(0, base.size() - 9);
}

std::string new_trace_stem(const TraceDir& dir, const Workers& workers, pid_t pid) {
  char stamp[32];
  std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&t));
  // Unique even for two recordings of one JVM within a second: -2, -3, ...
  std::string stem = "jvm-" + std::to_string(pid) + "-" + stamp;
  for (int n = 2; name_taken(dir, workers, stem); n++)
    stem = "jvm-" + std::to_string(pid) + "-" + stamp + "-" + std::to_string(n);
  return stem;
}

uint64_t enforce_disk_cap(TraceDir& dir, double cap_mb, Workers& workers, double stop_deadline,
                          std::string* stopped_stem, bool for_new_recording) {
  if (for_new_recording) stopped_stem->clear();
  std::vector<TraceDir::Entry> files;
  uint64_t total = 0;
  for (TraceDir::Entry& e : dir.list()) {
    if (!e.regular) continue;
    total += e.size;
    files.push_back(std::move(e));
  }
  const uint64_t cap = static_cast<uint64_t>(cap_mb * (1 << 20));
  if (total <= cap) return total;
  // Oldest first; equal times (file systems keep coarse ones) by name,
  // which orders a recording's zero-padded segment numbers.
  std::sort(files.begin(), files.end(), [](const TraceDir::Entry& a, const TraceDir::Entry& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.name < b.name;
  });
  // A recording writes the highest-numbered file of its name's stem.
  // The recording the cap stopped last is spared too while no other one
  // runs: once one does, the oldest file goes first, as always.
  std::set<std::string> stems;
  bool running = false;
  for (auto& w : workers) {
    if (w->kind() != Worker::kRecord) continue;
    stems.insert(trace_stem(*w));
    running |= !w->stopping;
  }
  if (!running && !stopped_stem->empty()) stems.insert(*stopped_stem);
  std::set<std::string> active;
  for (const std::string& stem : stems) {
    const std::string prefix = stem + ".";  // not "-2": another recording's
    std::string newest;
    for (const TraceDir::Entry& f : files)
      if (f.name.compare(0, prefix.size(), prefix) == 0 && f.name > newest) newest = f.name;
    if (!newest.empty()) active.insert(newest);
  }
  for (const TraceDir::Entry& f : files) {
    if (total <= cap) break;
    if (active.count(f.name)) continue;
    std::string error;
    if (dir.remove(f.name, &error)) {
      total -= f.size;
      log_line("info", "disk cap %.4g MiB: deleted %s/%s", cap_mb, dir.path().c_str(), f.name.c_str());
    } else {
      log_line("warn", "disk cap %.4g MiB: cannot delete %s: %s", cap_mb, f.name.c_str(), error.c_str());
    }
  }
  if (total > cap) {
    Worker* oldest = nullptr;
    for (auto& w : workers)
      if (w->kind() == Worker::kRecord && !w->stopping && (!oldest || w->started_at < oldest->started_at))
        oldest = w.get();
    if (oldest) {
      log_line("warn",
               "disk cap %.4g MiB reached by running recordings: stopping the recording of PID %d "
               "(its trace is kept until a new recording needs the room)",
               cap_mb, oldest->target());
      oldest->stop(stop_deadline);
      *stopped_stem = trace_stem(*oldest);
    }
  }
  return total;
}

}  // namespace jvmtrace
