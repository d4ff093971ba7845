// Property tests of the trace format without root or BPF: random events with
// edge values are written, read back and compared field by field; then the
// file is cut at every byte and damaged at random bytes, and each time the
// reader must hand out exactly a prefix of what was written and say why it
// stopped.  Run by tests/test_trace_format.py; exit status 0 = all passed.
//
//   trace_format_test [--seed N] [--events N]
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fixtures/trace_checksums.h"
#include "trace/reader.h"
#include "check.h"
#include "trace/writer.h"

using namespace jvmtrace::trace;

namespace {

using jvmtrace_test::failures;

// What the reader should hand back, record by record.
struct Expected {
  Expected(uint8_t type_, Event e_, uint64_t ts_, uint64_t count_, std::string text_)
      : type(type_), e(e_), ts(ts_), count(count_), text(std::move(text_)) {}
  uint8_t type;
  Event e;
  uint64_t ts = 0, count = 0;
  std::string text;
  std::vector<uint64_t> frames;  // kStack
  uint64_t id = 0;               // kEventStack: stack id + 1; kLost: its kind; kMethod, kJavaStack: its id
  Method method;                 // kMethod
  std::vector<Frame> java_frames;  // kJavaStack
};

bool same(const Record& r, const Expected& x, const TraceReader& rd) {
  if (r.type != x.type) return false;
  if (r.type < JT_PROBE_COUNT) {
    if (r.event.ts_ns != x.e.ts_ns || r.event.thread != x.e.thread || r.event.probe != x.e.probe) return false;
    for (int i = 0; i < JT_EVENT_MAX_ARGS; i++)
      if (r.event.a[i] != x.e.a[i]) return false;
    return true;
  }
  if (r.type == kLost) return r.ts_ns == x.ts && r.count == x.count && r.id == x.id;
  if (r.type == kEnd) return r.ts_ns == x.ts && r.text == x.text;
  if (r.type == kClass) return rd.classes()[r.id] == x.text;
  if (r.type == kThread) return rd.threads()[r.id].name == x.text;
  if (r.type == kString) return rd.strings()[r.id] == x.text;
  if (r.type == kMeta) return r.text == x.text;
  // (The table may already hold a later rename from the same block.)
  if (r.type == kStack) return r.id == x.id && r.frames == x.frames && r.id < rd.stacks().size();
  if (r.type == kEventStack) return r.id == x.id;
  if (r.type == kMethod) return r.id == x.id && r.method == x.method;
  if (r.type == kJavaStack) return r.id == x.id && r.java_frames == x.java_frames;
  return false;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Reads bytes; returns how many records matched expected in order (all that
// were handed out must match) and the status.
size_t read_prefix(const std::string& bytes, const std::vector<Expected>& expected, ReadStatus* st, bool* opened) {
  TraceReader rd;
  std::string err;
  *opened = rd.open_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &err);
  if (!*opened) return 0;
  size_t n = 0;
  bool diverged = false;
  *st = rd.read([&](const Record& r, uint64_t) {
    if (diverged) return;
    if (n >= expected.size() || !same(r, expected[n], rd)) {
      diverged = true;
      return;
    }
    n++;
  });
  CHECK(!diverged, "record %zu differs from what was written (file of %zu bytes)", n, bytes.size());
  return n;
}

// Reads the file at path: its status, blocks, largest payload and records.
struct FileSummary {
  ReadStatus st;
  uint64_t blocks = 0, records = 0, events = 0;
  size_t classes = 0, stacks = 0;
  uint32_t largest = 0;
  std::string meta_pid;
};
FileSummary summarize(const std::string& path) {
  FileSummary f;
  const std::string bytes = slurp(path);
  for (size_t off = kFileHeaderSize; off + kBlockHeaderSize <= bytes.size();) {  // the block headers themselves
    uint32_t len;
    std::memcpy(&len, bytes.data() + off + 8, 4);
    if (len > f.largest) f.largest = len;
    off += kBlockHeaderSize + len;
  }
  TraceReader rd;
  std::string err;
  if (!rd.open(path, &err)) {
    f.st = {ReadStatus::kCorrupt, 0, err};
    return f;
  }
  f.st = rd.read([&](const Record& r, uint64_t) {
    f.records++;
    if (r.type < JT_PROBE_COUNT) f.events++;
  });
  f.blocks = rd.blocks();
  f.classes = rd.classes().size();
  f.stacks = rd.stacks().size();
  f.meta_pid = rd.meta_value("pid");
  return f;
}

// The biggest tables a recording can make, with the largest --block-kb: more
// class names of the longest length, and stacks of the most frames, than fit
// one block, a meta record of the largest size, then a rotation that repeats
// them all in the new segment.  Every block must stay within the reader's
// limit and both files read complete.
void big_tables() {
  char dir[] = "/tmp/jvmtrace-big-XXXXXX";
  if (!mkdtemp(dir)) return;
  const std::string a = std::string(dir) + "/a.jvmtrace", b = std::string(dir) + "/b.jvmtrace";
  const size_t nclasses = (kMaxPayload / kMaxNameLen) * 3 / 2, nstacks = 2000;  // ~24 MiB of names, ~20 MiB of stacks
  {
    TraceWriter w;
    std::string err;
    CHECK(w.open(a, &err), "open: %s", err.c_str());
    w.block_bytes = static_cast<uint64_t>(kMaxBlockKb) << 10;
    w.max_age_ns = UINT64_MAX;
    w.meta("pid=7\n" + std::string(kMaxMetaLen - 6, 'm'));
    for (size_t i = 0; i < nclasses; i++) w.define_class(std::to_string(i) + std::string(kMaxNameLen, 'c'));
    const uint32_t s = w.define_string(std::string(kMaxNameLen, 's'));
    for (size_t i = 0; i < nstacks; i++) w.define_stack(std::vector<uint64_t>(kMaxStackFrames, s));
    w.define_thread(1, "t");
    Event e;
    e.ts_ns = 5;
    e.probe = JT_TLAB_REFILL;
    e.a[3] = nclasses - 1;
    w.event(e);
    w.event_stack(static_cast<int64_t>(nstacks - 1));
    CHECK(w.rotate(b, 6), "rotate: %s", w.error().c_str());
    w.end(7, kEndUser, "interrupted");
    CHECK(w.close(), "close: %s", w.error().c_str());
    CHECK(w.largest_payload() <= kMaxPayload, "the writer wrote a payload of %zu bytes", w.largest_payload());
  }
  for (const std::string& f : {a, b}) {
    const FileSummary s = summarize(f);
    CHECK(s.st.kind == ReadStatus::kComplete, "%s: %s", f.c_str(), s.st.describe().c_str());
    CHECK(s.largest <= kMaxPayload && s.blocks >= 2, "%s: %" PRIu64 " blocks, the largest %u bytes", f.c_str(),
          s.blocks, s.largest);
    CHECK(s.classes == nclasses && s.stacks == nstacks && s.meta_pid == "7", "%s: %zu classes, %zu stacks, pid '%s'",
          f.c_str(), s.classes, s.stacks, s.meta_pid.c_str());
    std::printf("trace_format_test: big tables: %s: %" PRIu64 " blocks, the largest payload %u bytes\n", f.c_str(),
                s.blocks, s.largest);
  }
  unlink(a.c_str());
  unlink(b.c_str());
  rmdir(dir);
}

// Meta values with newlines, backslashes and key=value text round-trip and
// forge nothing; an old (version 1) meta record reads as written.
void meta_escaping() {
  const std::string evil = "java x\nlibjvm=/etc/shadow\npid=1\\n\\\\ =\\";
  const std::string text = "jvmtrace_version=" + std::to_string(kMetaVersion) + "\npid=42\ncmdline=" +
                           meta_escape(evil) + "\nbinary=/lib/libjvm.so\n";
  const auto kv = parse_meta(text);
  CHECK(kv.size() == 4, "%zu meta keys from an escaped command line", kv.size());
  if (kv.size() == 4) {
    CHECK(kv[1].second == "42" && kv[2].first == "cmdline" && kv[2].second == evil && kv[3].second == "/lib/libjvm.so",
          "escaped meta: cmdline '%s'", kv[2].second.c_str());
  }
  // A trace written before escaping: values stand as written, backslashes too.
  const auto old = parse_meta("jvmtrace_version=1\ncmdline=a\\nb c:\\x\npid=5\n");
  CHECK(old.size() == 3 && old[1].second == "a\\nb c:\\x" && old[2].second == "5", "old meta changed on reading");
  CHECK(meta_unescape("\\") == "\\" && meta_unescape("a\\qb") == "a\\qb" && meta_escape("") == "",
        "a lone or unknown escape must stand for itself");
  for (int i = 0; i < 2000; i++) {  // random bytes round-trip
    std::string v;
    for (int k = i % 17; k > 0; k--) v += "\\n=a\n"[(i * 7 + k * 13) % 5];
    CHECK(meta_unescape(meta_escape(v)) == v && meta_escape(v).find('\n') == std::string::npos, "round trip %d", i);
  }
}

// Files are created, never followed or written through.
void safe_files() {
  char dir[] = "/tmp/jvmtrace-safe-XXXXXX";
  if (!mkdtemp(dir)) return;
  const std::string d = dir, victim = d + "/victim", link = d + "/link.jvmtrace", hard = d + "/hard.jvmtrace";
  std::ofstream(victim) << "precious";
  CHECK(symlink(victim.c_str(), link.c_str()) == 0, "symlink");
  CHECK(::link(victim.c_str(), hard.c_str()) == 0, "link");
  for (bool replace : {false, true}) {
    TraceWriter w;
    std::string err;
    CHECK(!w.open(link, &err, replace) && err.find("symbolic link") != std::string::npos, "symlink: '%s'", err.c_str());
    TraceWriter h;
    err.clear();
    const bool opened = h.open(hard, &err, replace);
    CHECK(opened == replace, "an existing file: opened %d with replace %d (%s)", opened, replace, err.c_str());
    if (!replace) CHECK(err.find("exists") != std::string::npos, "existing file: '%s'", err.c_str());
    if (opened) {
      h.meta("pid=1\n");
      CHECK(slurp(hard) == "precious", "the old file changed before commit");
      CHECK(h.commit(&err), "commit: %s", err.c_str());
      CHECK(h.close(), "close");
      CHECK(summarize(hard).st.kind == ReadStatus::kNoEnd, "the replacement does not read");
    }
    CHECK(slurp(victim) == "precious", "the file behind a link was written (replace %d)", replace);
  }
  {  // a segment name (no replace) that is taken: an error, and rotate says so
    TraceWriter w;
    std::string err;
    CHECK(w.open(d + "/s.000000.jvmtrace", &err), "open: %s", err.c_str());
    CHECK(symlink(victim.c_str(), (d + "/s.000001.jvmtrace").c_str()) == 0, "symlink");
    CHECK(!w.rotate(d + "/s.000001.jvmtrace", 1) && w.error().find("symbolic link") != std::string::npos,
          "rotate onto a symlink: '%s'", w.error().c_str());
    CHECK(summarize(d + "/s.000000.jvmtrace").st.kind == ReadStatus::kComplete, "the finished segment");
    unlink((d + "/s.000000.jvmtrace").c_str());
    unlink((d + "/s.000001.jvmtrace").c_str());
  }
  {  // discard before commit: the old file stays, no temporary is left
    TraceWriter w;
    std::string err;
    CHECK(w.open(hard, &err, true), "open: %s", err.c_str());
    w.discard();
    CHECK(summarize(hard).st.kind == ReadStatus::kNoEnd, "discard changed the committed file");
  }
  CHECK(slurp(victim) == "precious", "the victim changed");
  unlink(victim.c_str());
  unlink(link.c_str());
  unlink(hard.c_str());
  CHECK(rmdir(dir) == 0, "files left behind in %s (a temporary?)", dir);
}

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  long nevents = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--seed")) seed = static_cast<unsigned>(std::atol(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--events")) nevents = std::atol(argv[i + 1]);
  }
  std::mt19937_64 rng(seed);
  const uint64_t edges[] = {0, 1, 7, 8, 0x7f, 0x80, 0x3fff, 0x4000, UINT32_MAX, 0xf7f6f5f4f3f2f1f0ull,
                            UINT64_MAX, UINT64_MAX - 1, 1ull << 63, (1ull << 63) - 1};
  auto value = [&]() -> uint64_t {
    switch (rng() % 4) {
      case 0: return edges[rng() % (sizeof edges / sizeof *edges)];
      case 1: return rng();
      case 2: return rng() % 100000 * 8;
      default: return 0x7f0000000000ull + (rng() % 4096) * 4096;
    }
  };

  char path[] = "/tmp/jvmtrace-format-test-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::vector<Expected> expected;
  std::vector<std::vector<uint64_t>> final_stacks;  // each stack's last definition
  uint32_t methods = 0, java_stacks = 0;
  uint64_t ts = 1000000;
  {
    TraceWriter w;
    std::string err;
    if (!w.open(path, &err, true) || !w.commit(&err)) {  // mkstemp made it: replaced
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    w.block_bytes = 512;  // many blocks
    const std::string meta = "pid=42\nmode=usdt\n";
    w.meta(meta);
    expected.push_back({kMeta, {}, 0, 0, meta});
    uint32_t threads = 0, classes = 0, strings = 0, stacks = 0;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> last_enter;  // thread -> alloc bytes, class
    uint64_t tlab_end = 0, last_gc = 0;
    for (long i = 0; i < nevents; i++) {
      const int what = static_cast<int>(rng() % 100);
      ts += (rng() % 8 == 0) ? -(rng() % 5000) : rng() % 200000;  // sometimes backwards (CPUs differ)
      if (what < 3 || threads == 0) {
        std::string name = "thread-" + std::to_string(threads) + std::string(rng() % 20, 'x');
        w.define_thread(static_cast<uint32_t>(rng()), name);
        expected.push_back({kThread, {}, 0, 0, name});
        threads++;
      } else if (what < 6 || classes == 0) {
        std::string name = "Lcls" + std::to_string(classes) + ";";
        w.define_class(name);
        expected.push_back({kClass, {}, 0, 0, name});
        classes++;
      } else if (what < 8 || strings == 0) {
        std::string name = "str" + std::to_string(strings);
        w.define_string(name);
        expected.push_back({kString, {}, 0, 0, name});
        strings++;
      } else if (what < 11) {  // a stack of 0..80 frames (more than the kernel keeps: any length round-trips)
        std::vector<uint64_t> frames(rng() % 81);
        for (auto& f : frames) f = rng() % strings;
        // Now and then a rename of an existing stack instead (the recorder
        // names JIT frames better later); the last frames hold.
        const bool rename = stacks && rng() % 3 == 0;
        const uint32_t id = rename ? static_cast<uint32_t>(rng() % stacks) : stacks;
        if (rename) w.redefine_stack(id, frames);
        else w.define_stack(frames);
        Expected x{kStack, {}, 0, 0, ""};
        x.frames = frames;
        x.id = id;
        expected.push_back(x);
        if (!rename) stacks++;
        final_stacks.resize(stacks);
        final_stacks[id] = frames;
      } else if (what < 12 && strings > 0) {  // a method: VM code (no class) or Java
        Method m;
        m.klass = rng() % 3 ? rng() % (classes + 1) : 0;
        m.name = rng() % strings;
        m.signature = rng() % (strings + 1);
        m.file = rng() % (strings + 1);
        CHECK(w.define_method(m) == methods, "method ids count up");
        Expected x{kMethod, {}, 0, 0, ""};
        x.method = m;
        x.id = methods++;
        expected.push_back(x);
      } else if (what < 13 && methods > 0) {  // a Java stack of 0..150 frames of every kind
        std::vector<Frame> frames(rng() % 151);
        for (Frame& f : frames) {
          f.method = rng() % methods;
          f.line = rng() % 3 ? rng() % 70000 : value();
          f.kind = static_cast<uint8_t>(rng() % kFrameKindCount);
        }
        CHECK(w.define_java_stack(frames) == java_stacks, "Java stack ids count up");
        Expected x{kJavaStack, {}, 0, 0, ""};
        x.java_frames = frames;
        x.id = java_stacks++;
        expected.push_back(x);
      } else if (what < 14) {
        const uint64_t count = 1 + rng() % 1000;
        const uint8_t kind = static_cast<uint8_t>(rng() % 4 ? uint64_t{kLostRingBuffer} : rng() % 16);  // any 4 bits
        w.lost(ts, count, kind);
        Expected x{kLost, {}, ts, count, ""};
        x.id = kind;
        expected.push_back(x);
      } else {
        Event e;
        e.ts_ns = ts;
        e.probe = static_cast<uint16_t>(rng() % JT_PROBE_COUNT);
        e.thread = static_cast<uint32_t>(rng() % threads);
        const ProbeInfo& info = probe_info(e.probe);
        for (int k = 0; k < info.nargs; k++) {
          switch (info.kinds[k]) {
            case kClassId: e.a[k] = rng() % classes; break;
            case kStringId: e.a[k] = rng() % strings; break;
            case kUnused: e.a[k] = 0; break;
            case kJavaStackId: e.a[k] = rng() % (java_stacks + 1); break;  // 0: none
            default: e.a[k] = value();
          }
        }
        // Half the time, the patterns the codec predicts, so both paths of
        // every prediction are taken.
        if (rng() % 2) {
          auto& last = last_enter[e.thread];
          switch (e.probe) {
            case JT_ALLOC_SLOW_EXIT: e.a[2] = rng() % 6; e.a[3] = 0; e.a[1] = last.first; break;
            case JT_TLAB_REFILL: e.a[0] = tlab_end; e.a[2] = last.first; e.a[3] = last.second; break;
            case JT_PLAB_ALLOC: case JT_PROMOTE_DIRECT: e.a[0] = last_gc; e.a[3] = rng() % 2; break;
            case JT_PLAB_RETIRE: e.a[0] = last_gc; e.a[5] = rng() % 2; break;
          }
        }
        if (e.probe == JT_ALLOC_SLOW_ENTER) last_enter[e.thread] = {e.a[0], e.a[1]};
        if (e.probe == JT_TLAB_REFILL) tlab_end = e.a[0] + e.a[1];
        if (e.probe >= JT_GC_START) last_gc = e.a[0];
        w.event(e);
        expected.push_back({static_cast<uint8_t>(e.probe), e, 0, 0, ""});
        if (stacks && e.probe != JT_ALLOC_SAMPLE && rng() % 3 == 0) {  // its stack, or "none captured"
          const int64_t id = rng() % 4 ? static_cast<int64_t>(rng() % stacks) : -1;
          w.event_stack(id);
          Expected x{kEventStack, {}, 0, 0, ""};
          x.id = static_cast<uint64_t>(id + 1);
          expected.push_back(x);
        }
      }
    }
    w.end(ts, kEndUser, "interrupted");
    expected.push_back({kEnd, {}, ts, 0, "interrupted"});
    CHECK(w.close(), "close: %s", w.error().c_str());
  }
  const std::string bytes = slurp(path);
  unlink(path);

  // 1. Everything back, in order, exactly; the stack table ends with each
  //    stack's last definition.
  ReadStatus st;
  bool opened;
  size_t n = read_prefix(bytes, expected, &st, &opened);
  CHECK(opened && n == expected.size() && st.kind == ReadStatus::kComplete,
        "full read: %zu of %zu records, status %s", n, expected.size(), st.describe().c_str());
  {
    TraceReader rd;
    std::string err;
    rd.open_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), &err);
    rd.read([](const Record&, uint64_t) {});
    CHECK(rd.stacks() == final_stacks, "the stack table after reading is not the last definitions");
    CHECK(rd.methods().size() == methods && rd.java_stacks().size() == java_stacks,
          "%zu methods and %zu Java stacks read back of %u and %u", rd.methods().size(), rd.java_stacks().size(),
          methods, java_stacks);
  }

  // 2. Cut at every byte: a prefix, never more than the complete blocks hold,
  //    and never fewer; the status says cut off (or no end record).
  std::vector<size_t> records_before;  // records in complete blocks, by byte
  size_t prev = 0;
  for (size_t len = 0; len <= bytes.size(); len++) {
    ReadStatus s;
    size_t got = read_prefix(bytes.substr(0, len), expected, &s, &opened);
    if (len < kFileHeaderSize) {
      CHECK(!opened, "a %zu-byte file opened", len);
      continue;
    }
    CHECK(got >= prev, "cut at %zu: %zu records, fewer than the %zu of a shorter cut", len, got, prev);
    if (len < bytes.size())
      CHECK(s.kind == ReadStatus::kTruncated || s.kind == ReadStatus::kNoEnd,
            "cut at %zu: status %s", len, s.describe().c_str());
    if (s.kind == ReadStatus::kTruncated) CHECK(s.offset <= len, "cut at %zu: offset %" PRIu64, len, s.offset);
    prev = got;
  }
  CHECK(prev == expected.size(), "the whole file gave %zu records", prev);

  // 3. Damage: one random byte changed after the file header.  The reader
  //    must stop at or before the damaged block, report corrupt (or cut off,
  //    if a length grew), and hand out only records written.
  int detected = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; t++) {
    std::string bad = bytes;
    const size_t pos = kFileHeaderSize + rng() % (bytes.size() - kFileHeaderSize);
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    ReadStatus s;
    read_prefix(bad, expected, &s, &opened);
    CHECK(opened, "damage at %zu: the file header check failed", pos);
    if (s.kind == ReadStatus::kCorrupt || s.kind == ReadStatus::kTruncated) {
      detected++;
      CHECK(s.offset <= pos, "damage at %zu reported later, at %" PRIu64, pos, s.offset);
    }
  }
  CHECK(detected == trials, "%d of %d single-byte damages went unnoticed", trials - detected, trials);

  // 4. Damage below the checksum: one random payload byte changed and every
  //    block's CRC made valid again, so the change reaches the block decoder.
  //    The reader hands out the blocks before the damaged one exactly, never
  //    reports the damage before its block, and whatever it hands out from
  //    the damaged block on refers only to table entries that exist (checked
  //    by looking each up).  How often the decoder itself noticed is printed.
  int decoder_caught = 0, decoded_other = 0;
  const int deep_trials = 2000;
  for (int t = 0; t < deep_trials; t++) {
    std::string bad = bytes;
    const size_t pos = kFileHeaderSize + rng() % (bytes.size() - kFileHeaderSize);
    // The block holding pos: damage only its payload (its header is part 3's).
    size_t block = kFileHeaderSize;
    for (size_t at = kFileHeaderSize; at < pos;) {
      block = at;
      at += kBlockHeaderSize + testing::le32_at(bytes, at + 8);
    }
    if (pos < block + kBlockHeaderSize) continue;
    bad[pos] = static_cast<char>(bad[pos] ^ (1 + rng() % 255));
    CHECK(testing::fix_block_checksums(&bad) > 0, "damage at %zu: no block framed", pos);
    TraceReader rd;
    std::string err;
    CHECK(rd.open_memory(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), &err), "damage at %zu: open", pos);
    size_t n = 0;
    bool before_ok = true;
    const ReadStatus s = rd.read([&](const Record& r, uint64_t offset) {
      if (offset < block && (n >= expected.size() || !same(r, expected[n], rd))) before_ok = false;
      if (r.type < JT_PROBE_COUNT) {
        (void)rd.threads().at(r.event.thread);
        const ProbeInfo& info = probe_info(r.event.probe);
        for (int i = 0; i < info.nargs; i++) {
          if (info.kinds[i] == kClassId) (void)rd.classes().at(r.event.a[i]);
          if (info.kinds[i] == kStringId) (void)rd.strings().at(r.event.a[i]);
        }
      }
      n++;
    });
    CHECK(before_ok, "damage at %zu: a record before its block changed", pos);
    CHECK(s.kind != ReadStatus::kCorrupt || s.offset >= block, "damage at %zu reported at %" PRIu64 ", before its block",
          pos, s.offset);
    CHECK(s.describe().find("CRC32C") == std::string::npos, "damage at %zu stopped at the checksum", pos);
    if (s.kind == ReadStatus::kCorrupt) decoder_caught++;
    else decoded_other++;
  }
  CHECK(decoder_caught > 0 && decoded_other > 0, "below the checksum: %d caught by the decoder, %d decoded",
        decoder_caught, decoded_other);

  big_tables();
  meta_escaping();
  safe_files();

  std::printf("trace_format_test: seed %u, %zu records, %zu bytes (%.2f per record), %d damaged copies; "
              "below the checksum %d caught by the decoder, %d decoded as other values: %s\n", seed,
              expected.size(), bytes.size(), double(bytes.size()) / expected.size(), trials, decoder_caught,
              decoded_other, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
