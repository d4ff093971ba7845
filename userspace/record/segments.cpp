#include "record/segments.h"

#include <dirent.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jvmtrace {

std::string segment_path(const std::string& base, uint64_t n) {
  char num[32];
  std::snprintf(num, sizeof num, ".%06llu", (unsigned long long)n);
  static const std::string kExt = ".jvmtrace";
  if (base.size() > kExt.size() && base.compare(base.size() - kExt.size(), kExt.size(), kExt) == 0)
    return base.substr(0, base.size() - kExt.size()) + num + kExt;
  return base + num;
}

Segments::Segments(const std::string& base, double max_mb, double max_seconds, long keep)
    : base_(base), max_mb_(max_mb), max_seconds_(max_seconds), keep_(keep) {
  files_.push_back(enabled() ? segment_path(base, 0) : base);
}

bool Segments::check_none_exist(std::string* error) const {
  if (!enabled()) return true;
  const std::string first = segment_path(base_, 0);
  const size_t slash = first.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : first.substr(0, slash);
  const std::string name0 = slash == std::string::npos ? first : first.substr(slash + 1);
  // name0 is PREFIX.000000SUFFIX; a segment is PREFIX, six or more digits, SUFFIX.
  const size_t digits = name0.rfind(".000000") + 1;
  const std::string prefix = name0.substr(0, digits), suffix = name0.substr(digits + 6);
  DIR* d = opendir(dir.c_str());
  if (!d) {
    *error = "cannot read the directory " + dir + ": " + std::strerror(errno);
    return false;
  }
  std::string found;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() < prefix.size() + 6 + suffix.size() || n.compare(0, prefix.size(), prefix) != 0 ||
        n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string mid = n.substr(prefix.size(), n.size() - prefix.size() - suffix.size());
    if (mid.size() >= 6 && mid.find_first_not_of("0123456789") == std::string::npos) {
      found = n;
      break;
    }
  }
  closedir(d);
  if (!found.empty()) {
    *error = "refusing to record into segments of " + base_ + ": " + (dir == "." ? "" : dir + "/") + found +
             " exists (an earlier recording's?); segments are never written over: remove them, or name another file";
    return false;
  }
  return true;
}

bool Segments::due(const trace::TraceWriter& w, Clock::time_point now) const {
  const bool full = max_mb_ > 0 && w.bytes_on_disk() >= max_mb_ * (1 << 20);
  const bool old = max_seconds_ > 0 && now - started_ >= std::chrono::duration<double>(max_seconds_);
  return (full || old) && !w.failed();
}

bool Segments::rotate(trace::TraceWriter& w, Clock::time_point now, uint64_t now_ns) {
  started_ = now;
  const std::string next = segment_path(base_, ++index_);
  if (!w.rotate(next, now_ns)) return false;
  files_.push_back(next);
  // The current one is never removed: --keep is at least 1.
  while (keep_ && files_.size() > static_cast<size_t>(keep_)) {
    if (!w.remove_file(files_.front()))
      std::fprintf(stderr, "jvmtrace record: cannot remove the old segment %s: %s\n", files_.front().c_str(),
                   std::strerror(errno));
    files_.pop_front();
  }
  return true;
}

}  // namespace jvmtrace
