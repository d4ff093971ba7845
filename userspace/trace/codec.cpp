#include "trace/codec.h"

#include <algorithm>
#include <cstdlib>

#include "trace/varint.h"

namespace jvmtrace::trace {

namespace {

// alloc__slow__exit's flags byte: the outcome (7: a varint follows) and
// which fields are stored rather than implied by the thread's slow path.
constexpr uint8_t kExitOutcomeMask = 0x07;
constexpr uint8_t kExitBytes = 0x08;    // else: the thread's last alloc__slow__enter size
constexpr uint8_t kExitAddress = 0x10;  // else: the new TLAB's start (outcomes 1, 3) or 0
constexpr uint8_t kExitGcs = 0x20;      // else: 0

// tlab__refill's flags byte: which fields differ from what the thread's
// slow path implies (the refill follows the thread's alloc__slow__enter).
constexpr uint8_t kRefillStart = 0x01;  // else: the end of the previous TLAB handed out
constexpr uint8_t kRefillBytes = 0x02;  // else: the thread's previous TLAB size
constexpr uint8_t kRefillAlloc = 0x04;  // else: the enter's alloc_bytes
constexpr uint8_t kRefillClass = 0x08;  // else: the enter's class
constexpr uint8_t kRefillWaste = 0x10;  // else: 0

// The PLAB and promotion probes' first byte: the destination (3: a varint
// follows) and whether the GC id differs from the previous record's.
constexpr uint8_t kDestMask = 0x03;
constexpr uint8_t kGcIdDiffers = 0x04;

uint64_t implied_exit_address(uint64_t outcome, uint64_t refill_start) {
  return jvmtrace_slow_new_tlab(outcome) ? refill_start : 0;
}

void put_text(std::string* out, const std::string& s, uint64_t max) {
  const size_t n = s.size() < max ? s.size() : max;
  put_varint(out, n);
  out->append(s, 0, n);
}

bool get_text(const uint8_t** p, const uint8_t* end, uint64_t max, std::string* s) {
  uint64_t n;
  const uint8_t* q = *p;
  if (!get_varint(&q, end, &n) || n > max || n > static_cast<uint64_t>(end - q)) return false;
  s->assign(reinterpret_cast<const char*>(q), n);
  *p = q + n;
  return true;
}

}  // namespace

const char* end_reason_name(uint8_t reason) {
  static const char* const names[kEndReasonCount] = {"interrupted", "duration elapsed", "target exited",
                                                     "error", "continued in the next segment"};
  return reason < kEndReasonCount ? names[reason] : "unknown";
}

const char* lost_kind_name(uint8_t kind) {
  static const char* const names[kLostKindCount] = {"ring_buffer_full", "malformed_kernel_records",
                                                    "gc_ends_without_start", "name_table_full", "left_unread"};
  return kind < kLostKindCount ? names[kind] : "unknown_kind";
}

const char* lost_kind_text(uint8_t kind) {
  static const char* const names[kLostKindCount] = {"ring buffer full", "malformed kernel records",
                                                    "GC ends without a start", "name tables full",
                                                    "records left unread"};
  return kind < kLostKindCount ? names[kind] : "a cause unknown to this jvmtrace";
}

std::string meta_escape(const std::string& value) {
  std::string o;
  o.reserve(value.size());
  for (char c : value) {
    if (c == '\\') o += "\\\\";
    else if (c == '\n') o += "\\n";
    else o += c;
  }
  return o;
}

std::string meta_unescape(const std::string& value) {
  std::string o;
  o.reserve(value.size());
  for (size_t i = 0; i < value.size(); i++) {
    if (value[i] == '\\' && i + 1 < value.size() && (value[i + 1] == '\\' || value[i + 1] == 'n')) {
      o += value[i + 1] == 'n' ? '\n' : '\\';
      i++;
    } else {
      o += value[i];  // anything else stands for itself, a lone backslash too
    }
  }
  return o;
}

std::vector<std::pair<std::string, std::string>> parse_meta(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> kv;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    const size_t eq = text.find('=', pos);
    if (eq != std::string::npos && eq < nl) kv.emplace_back(text.substr(pos, eq - pos), text.substr(eq + 1, nl - eq - 1));
    pos = nl + 1;
  }
  // The first line says whether values are escaped; it cannot be forged, as
  // every value before it would have to be.
  static const std::string kVersionKey = "jvmtrace_version";
  if (!kv.empty() && kv[0].first == kVersionKey && std::strtol(kv[0].second.c_str(), nullptr, 10) >= kMetaVersion)
    for (auto& p : kv) p.second = meta_unescape(p.second);
  return kv;
}

void BlockCodec::reset() {
  ++gen_;
  have_ts_ = false;
  base_ts_ = prev_ts_ = 0;
  tlab_end_ = gc_id_ = heap_used_ = heap_committed_ = promote_end_ = safepoint_id_ = 0;
}

const char* frame_kind_name(uint8_t kind) {
  static const char* const names[kFrameKindCount] = {"interpreted", "c1", "jit", "inlined", "native", "vm"};
  return kind < kFrameKindCount ? names[kind] : "unknown";
}

const char* frame_kind_suffix(uint8_t kind) {
  static const char* const suffixes[kFrameKindCount] = {"_[0]", "_[1]", "_[j]", "_[i]", "", ""};
  return kind < kFrameKindCount ? suffixes[kind] : "";
}

BlockCodec::ThreadState& BlockCodec::thread(uint32_t index) {
  if (index >= threads_.size()) threads_.resize(index + 1);
  ThreadState& t = threads_[index];
  if (t.gen != gen_) {
    t = ThreadState();
    t.gen = gen_;
  }
  return t;
}

void BlockCodec::put_ts(std::string* out, uint64_t ts) {
  if (!have_ts_) set_base_ts(ts);
  put_delta(out, ts, prev_ts_);
  prev_ts_ = ts;
}

void BlockCodec::put_event(std::string* out, const Event& e) {
  const uint64_t* a = e.a;
  if (e.probe == JT_ALLOC_SAMPLE) {  // the stack tag, kind kStackSample: the thread always follows
    out->push_back(static_cast<char>(tag_of(kStack) | kStackSample << 4));
    put_varint(out, e.thread);
    put_ts(out, e.ts_ns);
    for (int i = 0; i < 6; i++) put_varint(out, a[i]);  // weight, class, alloc_bytes, outcome, stack + 1, sample id
    return;
  }
  const bool pause = e.probe == JT_GC_PAUSE_START || e.probe == JT_GC_PAUSE_END;
  const bool safepoint = e.probe == JT_SAFEPOINT_BEGIN || e.probe == JT_SAFEPOINT_END;
  const bool begins = e.probe == JT_GC_PAUSE_START || e.probe == JT_SAFEPOINT_BEGIN;
  const uint8_t probe =
      static_cast<uint8_t>(pause || safepoint ? (begins ? +JT_GC_START : +JT_GC_END) : e.probe);
  out->push_back(static_cast<char>(probe | (e.thread < 15 ? (e.thread + 1) << 4 : 0)));
  if (e.thread >= 15) put_varint(out, e.thread);
  put_ts(out, e.ts_ns);
  ThreadState& t = thread(e.thread);
  if (safepoint) {
    out->push_back(static_cast<char>(kGcRecordSafepoint));
    put_varint(out, a[0]);  // operation
    if (e.probe == JT_SAFEPOINT_BEGIN) {  // safepoint_id, begin_ns (the VM's, near the event's), since_last_ns
      put_delta(out, a[1], safepoint_id_);
      safepoint_id_ = a[1];
      put_delta(out, a[2], e.ts_ns);
      put_varint(out, a[3]);
    } else {  // reaching, at, total, threads, running, cleanup, safepoint_id
      for (int i = 1; i < 7; i++) put_varint(out, a[i]);
      put_delta(out, a[7], safepoint_id_);
      safepoint_id_ = a[7];
    }
    return;
  }
  switch (probe) {
    case JT_TLAB_REFILL: {  // start, bytes, alloc_bytes, class, (len), waste
      uint8_t flags = 0;
      if (a[0] != tlab_end_) flags |= kRefillStart;
      if (a[1] != t.tlab_bytes) flags |= kRefillBytes;
      if (a[2] != t.enter_bytes) flags |= kRefillAlloc;
      if (a[3] != t.enter_class) flags |= kRefillClass;
      if (a[5] != 0) flags |= kRefillWaste;
      out->push_back(static_cast<char>(flags));
      if (flags & kRefillStart) put_delta(out, a[0], tlab_end_);
      if (flags & kRefillBytes) put_delta(out, a[1], t.tlab_bytes);
      if (flags & kRefillAlloc) put_varint(out, a[2]);
      if (flags & kRefillClass) put_varint(out, a[3]);
      if (flags & kRefillWaste) put_varint(out, a[5]);
      tlab_end_ = a[0] + a[1];
      t.tlab_bytes = a[1];
      t.refill_start = a[0];
      break;
    }
    case JT_ALLOC_SLOW_ENTER:  // alloc_bytes, class, (len)
      put_varint(out, a[0]);
      put_varint(out, a[1]);
      t.enter_bytes = a[0];
      t.enter_class = a[1];
      break;
    case JT_ALLOC_SLOW_EXIT: {  // address, alloc_bytes, outcome, gcs
      uint8_t flags = static_cast<uint8_t>(a[2] < kExitOutcomeMask ? a[2] : kExitOutcomeMask);
      if (a[1] != t.enter_bytes) flags |= kExitBytes;
      if (a[0] != implied_exit_address(a[2], t.refill_start)) flags |= kExitAddress;
      if (a[3] != 0) flags |= kExitGcs;
      out->push_back(static_cast<char>(flags));
      if ((flags & kExitOutcomeMask) == kExitOutcomeMask) put_varint(out, a[2]);
      if (flags & kExitBytes) put_varint(out, a[1]);
      if (flags & kExitAddress) put_varint(out, a[0]);
      if (flags & kExitGcs) put_varint(out, a[3]);
      break;
    }
    case JT_GC_START:
    case JT_GC_END:  // gc_id, name, cause, kind, heap_used, heap_committed
      if (version_ >= 2) out->push_back(static_cast<char>(pause ? kGcRecordPause : kGcRecordCollection));
      put_delta(out, a[0], gc_id_);
      put_varint(out, a[1]);
      put_varint(out, a[2]);
      put_varint(out, a[3]);
      put_delta(out, a[4], heap_used_);
      put_delta(out, a[5], heap_committed_);
      gc_id_ = a[0];
      heap_used_ = a[4];
      heap_committed_ = a[5];
      break;
    case JT_PLAB_ALLOC: {  // gc_id, start, bytes, dest
      const int d = a[3] & 1;
      put_gc_dest(out, a[0], a[3]);
      put_delta(out, a[1], t.plab_end[d]);
      put_delta(out, a[2], t.plab_bytes[d]);
      gc_id_ = a[0];
      t.plab_start[d] = a[1];
      t.plab_end[d] = a[1] + a[2];
      t.plab_bytes[d] = a[2];
      break;
    }
    case JT_PLAB_RETIRE: {  // gc_id, start, bytes, used, wasted, dest
      const int d = a[5] & 1;
      put_gc_dest(out, a[0], a[5]);
      put_delta(out, a[1], t.plab_start[d]);
      put_delta(out, a[2], t.plab_bytes[d]);
      put_delta(out, a[3], a[2]);
      put_varint(out, a[4]);
      gc_id_ = a[0];
      break;
    }
    case JT_PROMOTE_DIRECT:  // gc_id, address, bytes, dest
      put_gc_dest(out, a[0], a[3]);
      put_delta(out, a[1], promote_end_);
      put_varint(out, a[2]);
      gc_id_ = a[0];
      promote_end_ = a[1] + a[2];
      break;
  }
}

void BlockCodec::put_gc_dest(std::string* out, uint64_t gc_id, uint64_t dest) {
  uint8_t b = static_cast<uint8_t>(dest < kDestMask ? dest : kDestMask);
  if (gc_id != gc_id_) b |= kGcIdDiffers;
  out->push_back(static_cast<char>(b));
  if (b & kGcIdDiffers) put_delta(out, gc_id, gc_id_);
  if ((b & kDestMask) == kDestMask) put_varint(out, dest);
}

bool BlockCodec::get_gc_dest(const uint8_t** pp, const uint8_t* end, uint64_t* gc_id, uint64_t* dest) {
  const uint8_t* p = *pp;
  if (p == end) return false;
  const uint8_t b = *p++;
  if (b & ~(kDestMask | kGcIdDiffers)) return false;
  *gc_id = gc_id_;
  if ((b & kGcIdDiffers) && !get_delta(&p, end, gc_id_, gc_id)) return false;
  *dest = b & kDestMask;
  if (*dest == kDestMask && !get_varint(&p, end, dest)) return false;
  *pp = p;
  return true;
}

void BlockCodec::put_lost(std::string* out, uint64_t ts_ns, uint64_t count, uint8_t kind) {
  out->push_back(static_cast<char>(tag_of(kLost) | (kind & 0x0f) << 4));
  put_ts(out, ts_ns);
  put_varint(out, count);
}

void BlockCodec::put_end(std::string* out, uint64_t ts_ns, uint8_t reason, uint64_t events, uint64_t lost,
                         const std::string& text) {
  out->push_back(static_cast<char>(tag_of(kEnd)));
  put_ts(out, ts_ns);
  put_varint(out, reason);
  put_varint(out, events);
  put_varint(out, lost);
  put_text(out, text, kMaxNameLen);
}

void BlockCodec::put_thread(std::string* out, uint32_t index, uint32_t tid, const std::string& name) {
  out->push_back(static_cast<char>(tag_of(kThread)));
  put_varint(out, index);
  put_varint(out, tid);
  put_text(out, name, kMaxNameLen);
}

void BlockCodec::put_name(std::string* out, RecordType type, uint64_t id, const std::string& name) {
  out->push_back(static_cast<char>(tag_of(type)));
  put_varint(out, id);
  put_text(out, name, kMaxNameLen);
}

void BlockCodec::put_meta(std::string* out, const std::string& lines) {
  out->push_back(static_cast<char>(tag_of(kMeta)));
  put_text(out, lines, kMaxMetaLen);
}

void BlockCodec::put_stack(std::string* out, uint64_t id, const std::vector<uint64_t>& frames) {
  out->push_back(static_cast<char>(tag_of(kStack)));
  put_varint(out, id);
  put_varint(out, frames.size());
  for (uint64_t f : frames) put_varint(out, f);
}

void BlockCodec::put_event_stack(std::string* out, uint64_t stack_plus_one) {
  out->push_back(static_cast<char>(tag_of(kEventStack)));
  put_varint(out, stack_plus_one);
}

void BlockCodec::put_method(std::string* out, uint64_t id, const Method& m) {
  out->push_back(static_cast<char>(tag_of(kMethod) | kStackMethod << 4));
  put_varint(out, id);
  put_varint(out, m.klass);
  put_varint(out, m.name);
  put_varint(out, m.signature);
  put_varint(out, m.file);
}

void BlockCodec::put_java_stack(std::string* out, uint64_t id, const std::vector<Frame>& frames) {
  out->push_back(static_cast<char>(tag_of(kJavaStack) | kStackJava << 4));
  put_varint(out, id);
  put_varint(out, frames.size());
  for (const Frame& f : frames) {
    put_varint(out, f.method);
    put_varint(out, f.line);
    out->push_back(static_cast<char>(f.kind));
  }
}

void BlockCodec::put_fates(std::string* out, const Fates& f) {
  out->push_back(static_cast<char>(tag_of(kFates) | kStackFates << 4));
  put_ts(out, f.ts_ns);
  put_varint(out, f.gc_id);
  put_varint(out, f.level);
  put_varint(out, f.tracked);
  const size_t n = std::min<size_t>(f.records.size(), kMaxFatesPerRecord);
  put_varint(out, n);
  for (size_t i = 0; i < n; i++) {
    const Fate& r = f.records[i];
    put_varint(out, r.sample_id);
    out->push_back(static_cast<char>(r.kind));
    out->push_back(static_cast<char>(r.flags));
    put_varint(out, r.gc_id);
  }
}

bool BlockCodec::get(const uint8_t** pp, const uint8_t* end, Record* r, const char** why) {
  const uint8_t* p = *pp;
  uint64_t v[6];
  auto fail = [&](const char* reason) {
    *why = reason;
    return false;
  };
  auto ts = [&](uint64_t* out) {
    if (!get_delta(&p, end, have_ts_ ? prev_ts_ : base_ts_, out)) return false;
    have_ts_ = true;
    prev_ts_ = *out;
    return true;
  };
#define GET(x) \
  if (!get_varint(&p, end, &(x))) return fail("a number is cut off or too long")
#define DELTA(x, prev) \
  if (!get_delta(&p, end, (prev), &(x))) return fail("a number is cut off or too long")

  if (p == end) return fail("empty record");
  const uint8_t tag = *p++;
  r->type = tag & 0x0f;
  if (r->type >= kTagEvents) r->type |= 0x10;
  if (r->type == kStack && version_ >= 3 && (tag >> 4) != kStackOfNames) {
    switch (tag >> 4) {
      case kStackSample: {
        Event& e = r->event;
        e = Event();
        e.probe = JT_ALLOC_SAMPLE;
        r->type = JT_ALLOC_SAMPLE;
        GET(v[0]);
        if (v[0] > UINT32_MAX - 1) return fail("bad thread index");
        e.thread = static_cast<uint32_t>(v[0]);
        if (e.thread >= threads_defined_) return fail("an event of an undefined thread");
        if (!ts(&e.ts_ns)) return fail("a timestamp is cut off");
        r->ts_ns = e.ts_ns;
        for (int i = 0; i < 5; i++) GET(e.a[i]);
        if (version_ >= 4) GET(e.a[5]);  // the sample id
        break;
      }
      case kStackFates: {
        if (version_ < 4) return fail("unknown kind of stack record");
        uint64_t n;
        r->type = kFates;
        if (!ts(&r->ts_ns)) return fail("a timestamp is cut off");
        r->fates.ts_ns = r->ts_ns;
        GET(r->fates.gc_id);
        GET(r->fates.level);
        GET(r->fates.tracked);
        GET(n);
        if (n > kMaxFatesPerRecord) return fail("fates record: too many records");
        r->fates.records.resize(n);
        for (Fate& f : r->fates.records) {
          uint64_t g;
          GET(f.sample_id);
          if (end - p < 2) return fail("fates record: a record is cut off");
          f.kind = *p++;
          f.flags = *p++;
          GET(g);
          if (g > UINT32_MAX) return fail("fates record: bad GC id");
          f.gc_id = static_cast<uint32_t>(g);
        }
        break;
      }
      case kStackMethod:
        r->type = kMethod;
        GET(r->id);
        GET(r->method.klass);
        GET(r->method.name);
        GET(r->method.signature);
        GET(r->method.file);
        break;
      case kStackJava: {
        uint64_t n;
        r->type = kJavaStack;
        GET(r->id);
        GET(n);
        if (n > kMaxJavaFrames) return fail("Java stack record: too many frames");
        r->java_frames.resize(n);
        for (Frame& f : r->java_frames) {
          GET(f.method);
          GET(f.line);
          if (p == end) return fail("Java stack record: a frame's kind is cut off");
          f.kind = *p++;
          if (f.kind >= kFrameKindCount) return fail("Java stack record: a frame of unknown kind");
        }
        break;
      }
      default:
        return fail("unknown kind of stack record");
    }
    *pp = p;
    return true;
  }
  if (r->type < kTagEvents) {
    Event& e = r->event;
    e = Event();
    e.probe = r->type;
    if (tag >> 4) {
      e.thread = (tag >> 4) - 1;
    } else {
      GET(v[0]);
      if (v[0] < 15 || v[0] > UINT32_MAX - 1) return fail("bad thread index");
      e.thread = static_cast<uint32_t>(v[0]);
    }
    if (e.thread >= threads_defined_) return fail("an event of an undefined thread");
    if (!ts(&e.ts_ns)) return fail("a timestamp is cut off");
    r->ts_ns = e.ts_ns;
    ThreadState& t = thread(e.thread);
    uint64_t* a = e.a;
    switch (e.probe) {
      case JT_TLAB_REFILL: {
        if (p == end) return fail("tlab__refill flags cut off");
        const uint8_t flags = *p++;
        if (flags & 0xe0) return fail("tlab__refill: unknown flags");
        a[0] = tlab_end_;
        if (flags & kRefillStart) DELTA(a[0], tlab_end_);
        a[1] = t.tlab_bytes;
        if (flags & kRefillBytes) DELTA(a[1], t.tlab_bytes);
        a[2] = t.enter_bytes;
        if (flags & kRefillAlloc) GET(a[2]);
        a[3] = t.enter_class;
        if (flags & kRefillClass) GET(a[3]);
        if (flags & kRefillWaste) GET(a[5]);
        tlab_end_ = a[0] + a[1];
        t.tlab_bytes = a[1];
        t.refill_start = a[0];
        break;
      }
      case JT_ALLOC_SLOW_ENTER:
        GET(a[0]);
        GET(a[1]);
        t.enter_bytes = a[0];
        t.enter_class = a[1];
        break;
      case JT_ALLOC_SLOW_EXIT: {
        if (p == end) return fail("alloc__slow__exit flags cut off");
        const uint8_t flags = *p++;
        if (flags & 0xc0) return fail("alloc__slow__exit: unknown flags");
        a[2] = flags & kExitOutcomeMask;
        if (a[2] == kExitOutcomeMask) GET(a[2]);
        a[1] = t.enter_bytes;
        if (flags & kExitBytes) GET(a[1]);
        a[0] = implied_exit_address(a[2], t.refill_start);
        if (flags & kExitAddress) GET(a[0]);
        if (flags & kExitGcs) GET(a[3]);
        break;
      }
      case JT_GC_START:
      case JT_GC_END:
        if (version_ >= 2) {
          if (p == end) return fail("a GC record's first byte is cut off");
          const uint8_t what = *p++;
          if (what == kGcRecordPause) {
            e.probe = e.probe == JT_GC_START ? JT_GC_PAUSE_START : JT_GC_PAUSE_END;
            r->type = static_cast<uint8_t>(e.probe);
          } else if (what == kGcRecordSafepoint && version_ >= 3) {
            e.probe = e.probe == JT_GC_START ? JT_SAFEPOINT_BEGIN : JT_SAFEPOINT_END;
            r->type = static_cast<uint8_t>(e.probe);
            GET(a[0]);
            if (e.probe == JT_SAFEPOINT_BEGIN) {
              DELTA(a[1], safepoint_id_);
              safepoint_id_ = a[1];
              DELTA(a[2], e.ts_ns);
              GET(a[3]);
            } else {
              for (int i = 1; i < 7; i++) GET(a[i]);
              DELTA(a[7], safepoint_id_);
              safepoint_id_ = a[7];
            }
            break;
          } else if (what != kGcRecordCollection) {
            return fail("a GC record is neither a collection, a pause nor a safepoint");
          }
        }
        DELTA(a[0], gc_id_);
        GET(a[1]);
        GET(a[2]);
        GET(a[3]);
        DELTA(a[4], heap_used_);
        DELTA(a[5], heap_committed_);
        gc_id_ = a[0];
        heap_used_ = a[4];
        heap_committed_ = a[5];
        break;
      case JT_PLAB_ALLOC: {
        if (!get_gc_dest(&p, end, &a[0], &a[3])) return fail("a PLAB record's GC id or destination is cut off");
        const int d = a[3] & 1;
        DELTA(a[1], t.plab_end[d]);
        DELTA(a[2], t.plab_bytes[d]);
        gc_id_ = a[0];
        t.plab_start[d] = a[1];
        t.plab_end[d] = a[1] + a[2];
        t.plab_bytes[d] = a[2];
        break;
      }
      case JT_PLAB_RETIRE: {
        if (!get_gc_dest(&p, end, &a[0], &a[5])) return fail("a PLAB record's GC id or destination is cut off");
        const int d = a[5] & 1;
        DELTA(a[1], t.plab_start[d]);
        DELTA(a[2], t.plab_bytes[d]);
        DELTA(a[3], a[2]);
        GET(a[4]);
        gc_id_ = a[0];
        break;
      }
      case JT_PROMOTE_DIRECT:
        if (!get_gc_dest(&p, end, &a[0], &a[3])) return fail("a promotion record's GC id or destination is cut off");
        DELTA(a[1], promote_end_);
        GET(a[2]);
        gc_id_ = a[0];
        promote_end_ = a[1] + a[2];
        break;
    }
    *pp = p;
    return true;
  }
  switch (r->type) {
    case kThread:
      GET(r->id);
      GET(r->tid);
      if (r->tid > UINT32_MAX || r->id > UINT32_MAX - 1) return fail("thread record: value out of range");
      if (!get_text(&p, end, kMaxNameLen, &r->text)) return fail("thread record: name cut off or too long");
      break;
    case kClass:
    case kString:
      GET(r->id);
      if (!get_text(&p, end, kMaxNameLen, &r->text)) return fail("name record: name cut off or too long");
      break;
    case kLost:
      r->id = tag >> 4;  // enum LostKind
      if (!ts(&r->ts_ns)) return fail("lost record: timestamp cut off");
      GET(r->count);
      break;
    case kMeta:
      if (!get_text(&p, end, kMaxMetaLen, &r->text)) return fail("meta record cut off or too long");
      break;
    case kEnd:
      if (!ts(&r->ts_ns)) return fail("end record: timestamp cut off");
      GET(r->id);
      GET(r->count);
      GET(r->lost);
      if (!get_text(&p, end, kMaxNameLen, &r->text)) return fail("end record: text cut off");
      break;
    case kStack: {
      uint64_t n;
      GET(r->id);
      GET(n);
      if (n > kMaxStackFrames) return fail("stack record: too many frames");
      r->frames.resize(n);
      for (uint64_t i = 0; i < n; i++) GET(r->frames[i]);
      break;
    }
    case kEventStack:
      GET(r->id);
      break;
    default:
      return fail("unknown record type");
  }
#undef GET
#undef DELTA
  *pp = p;
  return true;
}

const ProbeInfo& probe_info(uint16_t probe) {
  static const ProbeInfo kInfo[JT_PROBE_COUNT] = {
      {"tlab__refill", 6,
       {"tlab_start", "tlab_bytes", "alloc_bytes", "class", "", "retired_waste_bytes"},
       {kHex, kNum, kNum, kClassId, kUnused, kNum}},
      {"alloc__slow__enter", 3, {"alloc_bytes", "class", ""}, {kNum, kClassId, kUnused}},
      {"alloc__slow__exit", 4, {"address", "alloc_bytes", "outcome", "gcs"}, {kHex, kNum, kNum, kNum}},
      {"gc__start", 6,
       {"gc_id", "name", "cause", "kind", "heap_used", "heap_committed"},
       {kNum, kStringId, kStringId, kNum, kNum, kNum}},
      {"gc__end", 6,
       {"gc_id", "name", "cause", "kind", "heap_used", "heap_committed"},
       {kNum, kStringId, kStringId, kNum, kNum, kNum}},
      {"plab__alloc", 4, {"gc_id", "plab_start", "plab_bytes", "dest"}, {kNum, kHex, kNum, kNum}},
      {"plab__retire", 6,
       {"gc_id", "plab_start", "plab_bytes", "used_bytes", "wasted_bytes", "dest"},
       {kNum, kHex, kNum, kNum, kNum, kNum}},
      {"promote__direct", 4, {"gc_id", "address", "bytes", "dest"}, {kNum, kHex, kNum, kNum}},
      {"gc__pause__start", 6,
       {"gc_id", "name", "cause", "kind", "heap_used", "heap_committed"},
       {kNum, kStringId, kStringId, kNum, kNum, kNum}},
      {"gc__pause__end", 6,
       {"gc_id", "name", "cause", "kind", "heap_used", "heap_committed"},
       {kNum, kStringId, kStringId, kNum, kNum, kNum}},
      {"safepoint__begin", 4, {"operation", "safepoint_id", "begin_ns", "since_last_ns"},
       {kStringId, kNum, kNum, kNum}},
      {"safepoint__end", 8,
       {"operation", "reaching_ns", "at_safepoint_ns", "total_ns", "threads", "running", "cleanup_ns",
        "safepoint_id"},
       {kStringId, kNum, kNum, kNum, kNum, kNum, kNum, kNum}},
      {"alloc__sample", 6,
       {"weight_bytes", "class", "alloc_bytes", "outcome", "stack", "sample_id"},
       {kNum, kClassId, kNum, kNum, kJavaStackId, kNum}},
  };
  static const ProbeInfo kUnknown = {"unknown", 0, {}, {}};
  return probe < JT_PROBE_COUNT ? kInfo[probe] : kUnknown;
}

}  // namespace jvmtrace::trace
