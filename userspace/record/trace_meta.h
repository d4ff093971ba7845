// The trace's meta record (docs/trace-format.md): what was recorded, how and
// from when, as key=value lines.  Values the target chooses (its command
// line, paths, the host name) are escaped (trace::meta_escape), and the
// command line is cut so that the record stays below its limit.
//
// It goes out just before the first record after it (an event, a loss, a
// rotation, the end), with G1's region size (for report --check) read then:
// a JVM held at start-up (record -- COMMAND) has not sized its heap yet
// (HeapRegion::GrainBytes is 0 until universe_init), and every event comes
// from a heap that exists.  A short-lived JVM may be gone by then, so the
// size is also read in every housekeeping round until it is known.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "hotspot/g1_region_size.h"
#include "trace/writer.h"

namespace jvmtrace {

class TraceMeta {
 public:
  // Reads the JVM's command line, the host name and both clocks now (the
  // recording's start).  stock: stock mode (no probe set, no pause probes).
  TraceMeta(pid_t pid, const TargetFile& binary, bool stock, uint64_t ring_bytes, const std::string& stacks);

  // USDT mode, once attached: whether the pause probes are there, and the
  // probe set attached.
  // safepoint_probes: the JVM has safepoint__begin/end, which came with
  // the pause probes of ZGC and Shenandoah.
  void set_probes(bool pause_probes, bool safepoint_probes, const char* probe_set) {
    pause_probes_ = pause_probes;
    safepoint_probes_ = safepoint_probes;
    probe_set_ = probe_set;
  }
  // G1's region size while it is not known and the record is not out yet.
  void poll_region_size() {
    if (!region_bytes_ && !written_) {
      region_bytes_ = region_size_.read();
      if (region_bytes_) min_tlab_bytes_ = region_size_.min_tlab();
    }
  }
  // The record, into w, the first time only (a segment after a rotation
  // repeats it by itself).
  void write_once(trace::TraceWriter& w);

 private:
  std::string head_, tail_;
  bool stock_;
  bool pause_probes_ = true, safepoint_probes_ = false;
  const char* probe_set_ = "";
  G1RegionSize region_size_;
  uint64_t region_bytes_ = 0, min_tlab_bytes_ = 0;
  bool written_ = false;
};

}  // namespace jvmtrace
