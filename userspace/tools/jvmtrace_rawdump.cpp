// jvmtrace-rawdump: attach to every jvmtrace USDT probe of a process with
// libbpf and print each hit with all its arguments, one line per hit.
//
// A low-level tool: it shows exactly what the probes fire (all arguments,
// including those beyond bpftrace 0.17's arg5), for checking a patched JVM or
// the test fixture.  Lines look like
//   gc__start ts=123 tid=4242 args=7,0x7f..,0x7f..,0,123,456 str0="G1New" str1="System.gc()"
// and the last line on stderr is "events N dropped D".  A plab__batch hit is
// followed by one "plab__batch.record" line per record it carries, with
// args=ts_ns,address,bytes,used_bytes,gc_id,tid,kind,dest; an alloc__batch
// hit by "alloc__batch.record" lines, args=start_ns,end_ns,address,
// alloc_bytes,tlab_bytes,retired_waste_bytes,class_name,gcs,tid,
// class_name_len,outcome and str0 the class name.  alloc__drain is not
// attached (it would ask the JVM for safepoints).
#include <bpf/libbpf.h>
#include <errno.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "jvmtrace_raw.h"
#include "jvmtrace_raw.skel.h"
#include "process/target.h"
#include "attach/session.h"
#include "attach/usdt_attach.h"
#include "base/strings.h"

namespace {

const char* const kProbeNames[] = {
    "tlab__refill",     "alloc__slow__enter", "alloc__slow__exit", "gc__start",       "gc__end",
    "plab__alloc",      "plab__retire",       "promote__direct",   "gc__pause__start", "gc__pause__end",
    "safepoint__begin", "safepoint__end",     "alloc__sample"};
// Argument counts, and which argument is the (signed) tid, from
// usdt/jvmtrace.d; every other argument is unsigned.
const int kProbeArgs[] = {7, 4, 5, 6, 6, 5, 7, 5, 6, 6, 4, 8, 12};
const int kTidArg[] = {6, 3, 4, -1, -1, 4, 6, 4, -1, -1, -1, -1, -1};
static_assert(sizeof kProbeNames / sizeof *kProbeNames == JT_PROBE_COUNT, "a name per probe");
static_assert(sizeof kProbeArgs / sizeof *kProbeArgs == JT_PROBE_COUNT, "an argument count per probe");
static_assert(sizeof kTidArg / sizeof *kTidArg == JT_PROBE_COUNT, "a tid position per probe");

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  int pid = 0;
  std::string binary;  // file holding the probes; default: the process's libjvm.so
  long max_events = -1;
  bool verbose = false;
};

[[noreturn]] void usage(int rc) {
  std::fprintf(rc ? stderr : stdout,
               "USAGE: jvmtrace-rawdump -p PID [-b BINARY] [-n COUNT] [-v]\n"
               "Prints every jvmtrace probe hit of process PID with all its arguments.\n"
               "  -p PID     the process (a patched JVM, or the test fixture)\n"
               "  -b BINARY  the ELF file with the probes (default: PID's libjvm.so)\n"
               "  -n COUNT   stop after COUNT events (default: until Ctrl-C or PID exits)\n"
               "  -v         libbpf debug output\n"
               "EXAMPLES:\n"
               "  jvmtrace-rawdump -p 4242                 # a patched JVM\n"
               "  jvmtrace-rawdump -p 77 -b ./usdt_fixture -n 16\n");
  std::exit(rc);
}

struct SkelDelete {
  void operator()(jvmtrace_raw* s) const { jvmtrace_raw__destroy(s); }
};

struct Printer {
  long seen = 0;
  long max = -1;
};

int on_event(void* ctx, void* data, size_t size) {
  auto* p = static_cast<Printer*>(ctx);
  if (size < sizeof(jt_raw_event)) return 0;
  const auto* e = static_cast<const jt_raw_event*>(data);
  const char* name;
  int nargs, tid_arg;
  if (e->probe < JT_PROBE_COUNT) {
    name = kProbeNames[e->probe];
    nargs = kProbeArgs[e->probe];
    tid_arg = kTidArg[e->probe];
  } else if (e->probe == JT_K_ALLOC_SLOW) {
    name = "alloc__slow";
    nargs = 11;
    tid_arg = 10;
  } else if (e->probe == JT_K_PLAB_BATCH) {  // records, count, record_bytes, tid, safepoint_id, last
    name = "plab__batch";
    nargs = 6;
    tid_arg = 3;
  } else if (e->probe == JT_RAW_PLAB_RECORD) {  // ts_ns, address, bytes, used_bytes, gc_id, tid, kind, dest
    name = "plab__batch.record";
    nargs = 8;
    tid_arg = 5;
  } else if (e->probe == JT_K_ALLOC_BATCH) {  // records, count, record_bytes, tid, safepoint_id, last
    name = "alloc__batch";
    nargs = 6;
    tid_arg = 3;
  } else if (e->probe == JT_K_SAMPLE_FATES) {  // records, count, record_bytes, gc_id, level, tracked
    name = "sample__fates";
    nargs = 6;
    tid_arg = -1;
  } else if (e->probe == JT_RAW_FATE_RECORD) {  // sample_id, gc_id, kind, flags
    name = "sample__fates.record";
    nargs = 4;
    tid_arg = -1;
  } else if (e->probe == JT_RAW_ALLOC_RECORD) {  // the record's fields in order
    name = "alloc__batch.record";
    nargs = 11;
    tid_arg = 8;
  } else {
    return 0;
  }
  std::printf("%s ts=%llu tid=%u args=", name, (unsigned long long)e->ts_ns, e->tid);
  for (int i = 0; i < nargs; i++) {
    if (i == tid_arg)
      std::printf("%s%lld", i ? "," : "", (long long)e->args[i]);
    else
      std::printf("%s%llu", i ? "," : "", (unsigned long long)e->args[i]);
  }
  for (int s = 0; s < 2; s++)
    if (e->str[s][0]) std::printf(" str%d=\"%.*s\"", s, JT_RAW_STR_MAX, e->str[s]);
  std::printf("\n");
  p->seen++;
  if (p->max >= 0 && p->seen >= p->max) g_stop = 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int c;
  while ((c = getopt(argc, argv, "p:b:n:vh")) != -1) {
    char* end = nullptr;
    switch (c) {
      case 'p':
        o.pid = static_cast<int>(std::strtol(optarg, &end, 10));
        if (*end || o.pid <= 0) { std::fprintf(stderr, "jvmtrace-rawdump: bad PID '%s'\n", optarg); usage(2); }
        break;
      case 'b': o.binary = optarg; break;
      case 'n':
        o.max_events = std::strtol(optarg, &end, 10);
        if (*end || o.max_events <= 0) { std::fprintf(stderr, "jvmtrace-rawdump: bad COUNT '%s'\n", optarg); usage(2); }
        break;
      case 'v': o.verbose = true; break;
      case 'h': usage(0);
      default: usage(2);
    }
  }
  if (o.pid == 0) { std::fprintf(stderr, "jvmtrace-rawdump: -p PID is required\n"); usage(2); }
  // The target's libjvm.so opened and checked (or -b's file), as stat and record do.
  jvmtrace::Target target;
  if (!jvmtrace::check_target("jvmtrace-rawdump", o.pid, o.binary, &target)) return 1;
  jvmtrace::set_libbpf_verbose(o.verbose);

  std::unique_ptr<jvmtrace_raw, SkelDelete> skel(jvmtrace_raw__open_and_load());
  if (!skel) {
    std::fprintf(stderr, "jvmtrace-rawdump: loading the BPF programs failed: %s%s\n", std::strerror(errno),
                 geteuid() ? " (run as root)" : "");
    return 1;
  }
  jvmtrace::Links links;
  std::string error;
  if (!jvmtrace::attach_jvmtrace_usdt(skel->obj, o.pid, target.binary, &links, &error)) {
    std::fprintf(stderr, "jvmtrace-rawdump: %s\n", error.c_str());
    return 1;
  }
  Printer printer;
  printer.max = o.max_events;
  jvmtrace::RingBuffer rb(
      ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, &printer, nullptr));
  if (!rb) {
    std::fprintf(stderr, "jvmtrace-rawdump: ring buffer: %s\n", std::strerror(errno));
    return 1;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  std::fprintf(stderr, "attached %zu probes in %s of PID %d\n", links.size(),
               jvmtrace::printable(target.binary.shown()).c_str(), o.pid);

  bool target_gone = false;
  while (!g_stop) {
    int n = ring_buffer__poll(rb.get(), 100);
    if (n < 0 && n != -EINTR) {
      std::fprintf(stderr, "jvmtrace-rawdump: polling the ring buffer: %s\n", std::strerror(-n));
      return 1;
    }
    if (n == 0 && !jvmtrace::process_alive(o.pid)) {
      target_gone = true;
      break;
    }
  }
  ring_buffer__consume(rb.get());  // what arrived before the stop
  std::fflush(stdout);
  std::fprintf(stderr, "%sevents %ld dropped %llu\n", target_gone ? "target exited; " : "", printer.seen,
               (unsigned long long)skel->bss->dropped);
  return 0;
}
