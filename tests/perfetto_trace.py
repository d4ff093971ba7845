"""Reads a Perfetto protobuf trace (`jvmtrace export --perfetto -o X.pftrace`)
with a real protobuf decoder: protoc compiles tests/perfetto/perfetto_subset.proto
(the fields of Perfetto's published schema that the export writes) and
python3-protobuf parses the file with it.  Then the packets are replayed the
way Perfetto's trace processor does (interned names per sequence, slices from
begin/end pairs per track) into Trace Event-like dicts, so that the same
checks apply to both export formats."""
import gzip
import importlib
import zlib
import subprocess
import sys
import tempfile
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "perfetto" / "perfetto_subset.proto"
_module = None


def schema():
    """The compiled schema module (perfetto_subset_pb2), built once per process."""
    global _module
    if _module is None:
        out = Path(tempfile.mkdtemp(prefix="jvmtrace-pb-"))
        subprocess.run(["protoc", f"--python_out={out}", f"-I{SCHEMA.parent}", str(SCHEMA)], check=True)
        sys.path.insert(0, str(out))
        _module = importlib.import_module("perfetto_subset_pb2")
    return _module


def parse(path):
    """The Trace message of a .pftrace (or .pftrace.gz) file."""
    data = Path(path).read_bytes()
    if str(path).endswith(".gz"):
        data = gzip.decompress(data)
    return _trace(data)


def _trace(data):
    trace = schema().Trace()
    trace.ParseFromString(data)
    # Nothing in the file that the schema does not know: every field we
    # write has the number, and wire type, of the published one.
    assert not _unknown_fields(trace), "fields outside the published schema"
    return trace


def packets(trace):
    """The trace's packets in order, those of a compressed_packets bundle
    (a Trace, deflated with zlib's header, which trace_processor expands)
    in its place, as trace_processor reads them."""
    for p in trace.packet:
        if p.WhichOneof("data") == "compressed_packets":
            inner = _trace(zlib.decompress(p.compressed_packets))
            assert not any(q.WhichOneof("data") == "compressed_packets" for q in inner.packet), "nested bundles"
            yield from inner.packet
        else:
            yield p


def _unknown_fields(msg):
    """Whether msg or a message in it holds a field its schema does not
    declare (or one of a declared number with another wire type)."""
    if len(msg.UnknownFields()):
        return True
    for field, value in msg.ListFields():
        if field.type == field.TYPE_MESSAGE:
            values = value if field.label == field.LABEL_REPEATED else [value]
            if any(_unknown_fields(v) for v in values):
                return True
    return False


def annotation_value(a, strings):
    kind = a.WhichOneof("value")
    v = getattr(a, kind)
    return f"0x{v:x}" if kind == "pointer_value" else strings[v] if kind == "string_value_iid" else v


def trace_events(path):
    """The timeline as Trace Event-like dicts: {"ph": "X"|"i"|"C"|"M", "name",
    "cat", "pid", "tid", "ts" (µs since the origin), "dur", "args"}; counters
    carry their value in args under their track's name."""
    pb = schema()
    trace = parse(path)
    names = {"cat": {}, "name": {}, "arg": {}, "str": {}}
    tracks = {}   # uuid -> {"tid", "name", "counter"}
    pid = 0
    open_slices = {}  # uuid -> stack of begin events
    events = []
    cleared = False
    # Timestamps as trace_processor resolves them (ClockTracker): a packet's
    # clock is its timestamp_clock_id, else the sequence's default; an
    # incremental clock's timestamp is a delta from the last one on that
    # clock (from its ClockSnapshot value at first); a ClockSnapshot puts
    # its clocks' readings at one instant, and the trace's clock is BOOTTIME.
    BOOTTIME = 6
    default_clock = 0
    snapshot = {}       # clock id -> its reading at the snapshot
    incremental = {}    # clock id -> its last value, for incremental clocks
    for p in packets(trace):
        assert p.trusted_packet_sequence_id == 1, "one sequence"
        if p.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            cleared = True
            for t in names.values():
                t.clear()
            default_clock = 0
        if p.HasField("trace_packet_defaults"):
            default_clock = p.trace_packet_defaults.timestamp_clock_id
        if p.WhichOneof("data") == "clock_snapshot":
            snapshot = {c.clock_id: c.timestamp for c in p.clock_snapshot.clocks}
            assert BOOTTIME in snapshot, "a snapshot without the trace's clock"
            for c in p.clock_snapshot.clocks:
                assert c.unit_multiplier_ns in (0, 1), "ns only"
                assert c.is_incremental == (c.clock_id >= 64), "incremental: the sequence-scoped clocks only"
                if c.is_incremental:
                    incremental[c.clock_id] = c.timestamp
            continue
        if p.HasField("timestamp"):
            clock = p.timestamp_clock_id or default_clock
            if clock in incremental:
                incremental[clock] += p.timestamp
                t_ns = incremental[clock] - snapshot[clock] + snapshot[BOOTTIME]
            else:
                assert clock in (0, BOOTTIME), f"clock {clock} never described"
                t_ns = p.timestamp
        if p.sequence_flags & pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE:
            assert cleared, "interned data used before the sequence was cleared"
        for e in p.interned_data.event_categories:
            names["cat"][e.iid] = e.name
        for e in p.interned_data.event_names:
            names["name"][e.iid] = e.name
        for e in p.interned_data.debug_annotation_names:
            names["arg"][e.iid] = e.name
        for e in p.interned_data.debug_annotation_string_values:
            names["str"][e.iid] = e.str.decode()
        kind = p.WhichOneof("data")
        if kind == "track_descriptor":
            d = p.track_descriptor
            assert d.uuid and d.uuid not in tracks, f"track {d.uuid} described twice or without a uuid"
            if d.HasField("process"):
                pid = d.process.pid
                tracks[d.uuid] = {"tid": 0, "name": d.process.process_name, "counter": False}
                events.append({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": d.process.process_name}})
            elif d.HasField("thread"):
                tracks[d.uuid] = {"tid": d.thread.tid, "name": d.thread.thread_name, "counter": False}
                events.append({"ph": "M", "name": "thread_name", "pid": d.thread.pid, "tid": d.thread.tid,
                               "args": {"name": d.thread.thread_name}})
            else:
                assert d.parent_uuid in tracks, "a child track before its parent"
                tid = d.uuid - (1 << 32) if d.uuid >= (1 << 32) else 0
                tracks[d.uuid] = {"tid": tid, "name": d.name, "counter": d.HasField("counter")}
                if not d.HasField("counter"):
                    events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": d.name}})
        elif kind == "track_event":
            e = p.track_event
            assert e.track_uuid in tracks, f"an event on track {e.track_uuid}, never described"
            track = tracks[e.track_uuid]
            ts = t_ns / 1000
            if e.type == pb.TrackEvent.TYPE_COUNTER:
                assert track["counter"]
                value = getattr(e, e.WhichOneof("counter_value_field"))
                events.append({"ph": "C", "name": track["name"], "pid": pid, "tid": 0, "ts": ts,
                               "args": {track["name"]: value}})
                continue
            assert not track["counter"]
            if e.type == pb.TrackEvent.TYPE_SLICE_END:
                begin = open_slices[e.track_uuid].pop()
                begin["dur"] = ts - begin["ts"]
                assert begin["dur"] >= 0
                continue
            ev = {"name": names["name"][e.name_iid], "cat": ",".join(names["cat"][c] for c in e.category_iids),
                  "pid": pid, "tid": track["tid"], "ts": ts,
                  "args": {names["arg"][a.name_iid]: annotation_value(a, names["str"]) for a in e.debug_annotations}}
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                ev["ph"] = "X"
                open_slices.setdefault(e.track_uuid, []).append(ev)
            else:
                assert e.type == pb.TrackEvent.TYPE_INSTANT
                ev["ph"], ev["s"] = "i", ("p" if e.track_uuid == 1 else "t")
            events.append(ev)
    assert all(not s for s in open_slices.values()), "slices begun and never ended"
    return events
