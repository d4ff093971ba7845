// Setting a patched VM's manageable flags for as long as a tool is attached.
#pragma once
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/strings.h"
#include "hotspot/jvm_attach.h"
#include "process/target.h"

namespace jvmtrace {

// Manageable flags of the patched VM set for a tool's attach (record's
// --sample-rate and --live-samples, stat's --live-samples) through
// jvmtrace's attach client, on the pinned target, and the values they had
// put back after.  One attach operation at a time, polled: the tool's loop
// never waits for one.  A JVM held at start-up
// cannot be attached to: it is tried again every 200 ms, for 30 s.
class VmFlags {
 public:
  struct Flag {
    const char* name;
    long value;          // what the tool wants
    long default_value;  // the VM's default: what VM.flags leaves out
    long old = -1;       // what it was; -1: not set by us
  };
  // cmd: the prefix of its messages ("jvmtrace record").
  VmFlags(const char* cmd, const PinnedPid& target, std::vector<Flag> flags)
      : cmd_(cmd), target_(target), flags_(std::move(flags)) {}
  bool pending() const { return next_ < flags_.size(); }
  // Moves on without blocking (wait: until the operation running ends);
  // false once an operation failed this round (tried again later).
  bool step(bool wait) {
    if (!pending() || clock_ns(CLOCK_MONOTONIC) < retry_ns_) return true;
    if (!op_) {  // (a new operation each time: one object runs one)
      const std::string cmd = !have_olds_ ? std::string("VM.flags")
                                          : std::string("VM.set_flag ") + flags_[next_].name + " " +
                                                std::to_string(flags_[next_].value);
      op_.emplace();
      if (!op_->start(target_.pid(), cmd, 10, target_.fd())) return failed();
    }
    if (!op_->poll(wait)) return true;
    if (op_->status() != AttachStatus::kOk) return failed();
    const std::string answer = op_->message();
    op_.reset();
    if (!have_olds_) {
      for (Flag& f : flags_) olds_.push_back(listed(answer, f.name, f.default_value));
      have_olds_ = true;
    } else {
      flags_[next_].old = olds_[next_];
      next_++;
    }
    return true;
  }
  // The tool's last moment to set them: say which could not be.
  void give_up() {
    for (size_t i = next_; i < flags_.size(); i++)
      std::fprintf(stderr, "%s: could not set %s=%ld through the attach mechanism (%s): the JVM "
                   "keeps its own\n", cmd_, flags_[i].name, flags_[i].value, printable(why_).c_str());
    next_ = flags_.size();
  }
  bool expired() const { return clock_ns(CLOCK_MONOTONIC) >= deadline_ns_; }
  // Puts back what was set (blocking: the probes are detached by then).
  void restore() {
    for (const Flag& f : flags_) {
      if (f.old < 0 || f.old == f.value || !target_.alive()) continue;
      AttachOperation op;
      if (op.start(target_.pid(), std::string("VM.set_flag ") + f.name + " " + std::to_string(f.old), 10,
                   target_.fd()))
        op.poll(true);
      if (op.status() != AttachStatus::kOk)
        std::fprintf(stderr, "%s: could not put %s back to %ld: %s\n", cmd_, f.name, f.old,
                     printable(op.message()).c_str());
    }
  }

 private:
  bool failed() {
    why_ = op_->message();
    op_.reset();
    retry_ns_ = clock_ns(CLOCK_MONOTONIC) + 200'000'000;
    return false;
  }
  // The value of -XX:NAME=V in VM.flags' output (it lists only flags not at
  // their default), or def.
  static long listed(const std::string& flags, const char* name, long def) {
    const std::string key = std::string("-XX:") + name + "=";
    const size_t at = flags.find(key);
    if (at == std::string::npos) return def;
    char* end = nullptr;
    const long v = std::strtol(flags.c_str() + at + key.size(), &end, 10);
    return end && end != flags.c_str() + at + key.size() ? v : def;
  }

  const char* cmd_;
  const PinnedPid& target_;
  std::vector<Flag> flags_;
  std::vector<long> olds_;
  bool have_olds_ = false;
  size_t next_ = 0;
  std::optional<AttachOperation> op_;
  std::string why_;
  uint64_t retry_ns_ = 0, deadline_ns_ = clock_ns(CLOCK_MONOTONIC) + 30'000'000'000ull;
};

}  // namespace jvmtrace
