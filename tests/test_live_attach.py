"""`jvmtrace record` on JVMs it did not start with: attached to a JVM that is
already working and detached while it goes on working, and two JVMs of one
JDK recorded at once (their probes are uprobes on the same libjvm.so).

Every other accuracy test attaches before the workload starts, so that the
trace and JFR cover the same work.  Here the windows differ by design, and
the truth is taken where it is still exact:
- a thread that lives wholly inside the recording's window (MidRun's
  window-worker) has the same TLAB refills and outside-TLAB allocations as
  JFR records for it;
- a thread that works across both edges (MidRun's steady-worker) has, in the
  trace, an unbroken stretch of JFR's sequence of its refills: nothing left
  out or added in the middle, and JFR has its refills on both sides;
- GC ids form an unbroken run of -Xlog:gc's; each GC whose start and end are
  both in the trace has JFR's new PLABs;
- after the detach, nothing of jvmtrace is loaded or attached, and the JVM
  works on.
Two JVMs at once: each trace equals its own JVM's JFR and -Xlog:gc, and no
thread is in both traces."""
import bisect
import re
import signal
import subprocess
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

from helpers import (SLOW_OUTSIDE_TLAB, LineReader, go_uptime_s, jfr_events, parse_gc_log, reap,
                     wait_until)
from test_jvm_probes import java_cmd
from test_record import dump_json, finish, links_and_uprobes, start_record


# How far JFR's stamps (its ticks converted to wall-clock time) may lie from
# the wall clock read in the same moment: measured by the run's own mark (JFR's
# stamp of an allocation against Instant.now() just after it) at 0.06 to 0.16
# ms over 5 runs on JDK 17 (to 0.24 on 21), that span including the 512 KiB array's zeroing;
# the test asserts its own run's figure against this bound too.
SKEW_NS = 1_000_000


def jfr_time_ns(stamp):
    """JFR's printed startTime ("2026-11-28T01:02:03.123456789Z", or with an
    offset) as integer nanoseconds, keeping all nine digits."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", stamp)
    assert m, stamp
    tz = timezone.utc if m.group(3) == "Z" else datetime.strptime(m.group(3).replace(":", ""), "%z").tzinfo
    whole = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=tz)
    return int(whole.timestamp()) * 10**9 + int((m.group(2) or "0").ljust(9, "0")[:9])


def jfr_class_name(name):
    """A class as the trace names it: JFR prints a hidden class (a lambda's)
    dotted, with "/" and a number after it
    ("java.util.stream.MatchOps$$Lambda$132+0x00007f8ea00cb358/1947185929"),
    where the VM's own name is "java/util/stream/MatchOps$$Lambda$132+0x...";
    every other class the VM's way."""
    if "." in name:
        name = re.sub(r"/\d+$", "", name).replace(".", "/")
    return name


def jfr_allocations(home, jfr, times=None):
    """{tid: [refill (class, alloc, tlab), ...] in time order}, and the same
    of outside-TLAB allocations (class, alloc); with times (a dict), also
    times[tid]: the refills' startTimes (wall-clock ns).  An event whose
    thread JFR did not write has tid None."""
    refills, outside = defaultdict(list), defaultdict(list)
    for event, into, key in (("jdk.ObjectAllocationInNewTLAB", refills,
                              lambda v: (jfr_class_name(v["objectClass"]["name"]), v["allocationSize"],
                                         v["tlabSize"])),
                             ("jdk.ObjectAllocationOutsideTLAB", outside,
                              lambda v: (jfr_class_name(v["objectClass"]["name"]), v["allocationSize"]))):
        evs = [j["values"] for j in jfr_events(home, jfr, event)]
        evs.sort(key=lambda v: jfr_time_ns(v["startTime"]))  # (stable: file order among equal stamps)
        for v in evs:
            tid = v["eventThread"]["osThreadId"] if v["eventThread"] else None
            into[tid].append(key(v))
            if times is not None and into is refills:
                times.setdefault(tid, []).append(jfr_time_ns(v["startTime"]))
    return refills, outside


def trace_allocations(events):
    """The trace's {tid: [refill ...]} and {tid: [outside ...]}, in each
    thread's order, keyed as jfr_allocations.  A slow path under way at the
    attach has no enter (docs/research-fewer-hits.md: the VM's record has no
    start), so its outside-TLAB allocation has no class (None); only a
    thread's first slow path may be such (asserted)."""
    refills, outside, enter, seen = defaultdict(list), defaultdict(list), {}, set()
    for e in events:
        a, tid = e["args"], e["tid"]
        if e["probe"] == "tlab__refill":
            refills[tid].append((a["class"], a["alloc_bytes"], a["tlab_bytes"]))
        elif e["probe"] == "alloc__slow__enter":
            enter[tid] = a["class"]
        elif e["probe"] == "alloc__slow__exit":
            assert tid in enter or tid not in seen, f"thread {tid}: a slow path's exit without its enter, mid-trace"
            seen.add(tid)
            if a["outcome"] in SLOW_OUTSIDE_TLAB:
                outside[tid].append((enter.get(tid), a["alloc_bytes"]))
            enter.pop(tid, None)
    return refills, outside


def slices_at(part, whole):
    """Where part occurs in whole as an unbroken stretch: [i, ...].  A class
    of None in part (a slow path under way at the attach) matches any."""
    n = len(part)

    def same(x, y):
        return x == y or (x[0] is None and x[1:] == y[1:])
    return [i for i in range(len(whole) - n + 1) if all(same(x, y) for x, y in zip(part, whole[i:i + n]))]


def read_trace(out):
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    events = [x for x in recs if x["type"] == "event"]
    lost = Counter()
    for x in recs:
        if x["type"] == "lost":
            lost[x["kind"]] += x["count"]
    return events, lost, next(x for x in recs if x["type"] == "end")


def plabs_by_gc(home, jfr):
    return Counter(j["values"]["gcId"] for j in jfr_events(home, jfr, "jdk.PromoteObjectInNewPLAB"))


def test_attach_to_a_working_jvm_and_detach_while_it_works(jdks, java_classes, tmp_path):
    """MidRun works from its start; record attaches after its steady worker's
    first round, records a window in which a new thread works and calls
    System.gc() twice, and detaches (Ctrl-C) while the steady worker goes on.
    See the module's docstring for what is compared."""
    before = links_and_uprobes()
    assert not before[1], f"jvmtrace programs already loaded: {before[1]}"
    home = jdks["patched"]
    jfr, log, out = tmp_path / "midrun.jfr", tmp_path / "gc.log", tmp_path / "midrun.jvmtrace"
    jvm = subprocess.Popen(java_cmd(home, java_classes, "G1", 64, "MidRun", jfr, 1_000_000, gc_log=log),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rec = None
    try:
        jvm_out = LineReader(jvm.stdout)
        steady = int(jvm_out.wait_for(lambda l: l.startswith("steady tid "), 60, "the steady worker").split()[2])
        jvm_out.wait_for(lambda l: l == "working", 60, "the steady worker's first round")
        t_attaching = time.time_ns()
        rec = start_record(jvm.pid, out)
        t_attached = time.time_ns()
        jvm.stdin.write("window\n")
        jvm.stdin.flush()
        window = int(jvm_out.wait_for(lambda l: l.startswith("window tid "), 60, "the window's thread").split()[2])
        jvm_out.wait_for(lambda l: l == "window done", 120, "the window's work")
        # Ctrl-C while the steady worker allocates, not while the window's
        # System.gc() has it stopped: after it finished another round.
        jvm.stdin.write("next\n")
        jvm.stdin.flush()
        mark = jvm_out.wait_for(lambda l: l.startswith("round "), 60, "another round of the steady worker").split()
        mark_bytes, mark_ns = 16 + 8 * ((1 << 16) + int(mark[1])), int(mark[3])
        t_stopping = time.time_ns()
        rec.send_signal(signal.SIGINT)
        err = finish(rec)
        t_stopped = time.time_ns()
        assert rec.returncode == 0 and "interrupted" in err, err
        # Detached: nothing of ours loaded or attached (uprobes go one at a
        # time: wait for the count to come back, up to 5 s) ...
        try:
            wait_until(lambda: links_and_uprobes() == before, 5, "the detach to complete")
        except AssertionError:
            assert links_and_uprobes() == before  # (shows the difference)
        # ... and the JVM works on: its steady worker finishes two more rounds.
        assert jvm.poll() is None, "the JVM must survive the detach"
        jvm.stdin.write("end\n")
        jvm.stdin.close()
        assert jvm.wait(120) == 0
    finally:
        reap(jvm, rec)
    events, lost, end = read_trace(out)
    assert end["events"] == len(events) and end["reason"] == "interrupted", end
    assert sum(lost.values()) == 0, lost
    ours_r, ours_o = trace_allocations(events)
    times = {}
    jfr_r, jfr_o = jfr_allocations(home, jfr, times)

    # The window's thread: exactly JFR's.
    assert len(jfr_r[window]) > 200, "the window's thread refilled little: the test lost its point"
    assert Counter(ours_r[window]) == Counter(jfr_r[window])
    assert Counter(ours_o[window]) == Counter(jfr_o[window])
    # The steady worker: an unbroken stretch of JFR's sequence, with JFR's
    # refills on both sides of it (the trace began and ended while it worked).
    mine = ours_r[steady]
    assert len(mine) > 20, f"{len(mine)} refills of the steady worker in the trace"
    at = slices_at(mine, jfr_r[steady])
    assert at, (f"the steady worker's {len(mine)} refills in the trace are not an unbroken stretch of JFR's "
                f"{len(jfr_r[steady])}")
    assert any(i > 0 and i + len(mine) < len(jfr_r[steady]) for i in at), \
        f"JFR has no refills of the steady worker before or after the trace's (at {at} of {len(jfr_r[steady])})"
    # Where it lies, by JFR's stamps and the test's clock (both CLOCK_REALTIME):
    # every refill from the banner (the probes are in) to Ctrl-C (the drain
    # hands over every slow path ended by then) is in it; none from before
    # record started or after it ended.  SKEW_NS is JFR's conversion of its
    # ticks to wall time (measured: see docs/testing.md).
    t = times[steady]
    first_in = bisect.bisect_left(t, t_attached + SKEW_NS)      # the first that must be in
    last_in = bisect.bisect_right(t, t_stopping - SKEW_NS)      # one past the last that must be in
    first_may = bisect.bisect_left(t, t_attaching - SKEW_NS)    # the first that may be in
    last_may = bisect.bisect_right(t, t_stopped + SKEW_NS)      # one past the last that may be in
    fits = [i for i in at if first_may <= i <= first_in and last_in <= i + len(mine) <= last_may]
    assert fits, (f"the trace's stretch of the steady worker's refills, JFR's [{at[0]}, {at[0] + len(mine)}), "
                  f"must hold [{first_in}, {last_in}) (attached .. Ctrl-C) and lie within [{first_may}, {last_may}) "
                  f"(record started .. ended)")
    i = fits[0]
    print(f"steady worker's trace: its first refill {(t[i] - t_attached) / 1e6:+.3f} ms from the banner "
          f"({(t[i] - t_attaching) / 1e6:+.3f} ms from starting record), its last {(t[i + len(mine) - 1] - t_stopping) / 1e6:+.3f} ms "
          f"from Ctrl-C; JFR's next {(t[i + len(mine)] - t_stopping) / 1e6:+.3f} ms from Ctrl-C, "
          f"{(t[i + len(mine)] - t_stopped) / 1e6:+.3f} ms from the recorder's exit")
    assert slices_at(ours_o[steady], jfr_o[steady]), "the steady worker's outside-TLAB allocations"
    # The mark, allocated just before Ctrl-C (by the main thread, which then
    # waits: its slow path is handed over by the drain, unless a safepoint
    # came first): in the trace, and where JFR has it.
    marks = [j["values"] for j in jfr_events(home, jfr, "jdk.ObjectAllocationOutsideTLAB")
             if j["values"]["allocationSize"] == mark_bytes and j["values"]["objectClass"]["name"] == "[J"]
    assert len(marks) == 1, marks
    main = marks[0]["eventThread"]["osThreadId"]
    assert ("[J", mark_bytes) in ours_o[main], "the mark allocated before Ctrl-C is not in the trace"
    skew = jfr_time_ns(marks[0]["startTime"]) - mark_ns
    print(f"the mark: JFR's stamp {skew / 1e6:+.3f} ms from the wall clock read just after it")
    assert abs(skew) <= SKEW_NS, f"JFR's clock is {skew / 1e6:+.3f} ms from the wall clock's: SKEW_NS is too small"
    assert set(ours_r) | set(ours_o) <= set(jfr_r) | set(jfr_o), "allocating threads JFR does not know"
    print(f"steady worker: {len(mine)} of JFR's {len(jfr_r[steady])} refills, from the {at[0]}th; "
          f"window worker: {len(jfr_r[window])} refills")

    # GCs: an unbroken run of the log's ids; the window's two System.gc() in
    # it, the exit's not.
    logged = {g: (what, cause) for g, what, cause in parse_gc_log(log.read_text())}
    starts = [e["args"]["gc_id"] for e in events if e["probe"] == "gc__start"]
    ends = [e["args"]["gc_id"] for e in events if e["probe"] == "gc__end"]
    assert starts and starts == list(range(starts[0], starts[0] + len(starts))), starts
    assert set(starts) <= set(logged), sorted(set(starts) - set(logged))
    # (a GC under way at the attach ends in the trace without its start; one
    # under way at the detach starts in it without its end)
    assert set(ends) - set(starts) <= {starts[0] - 1} and set(starts) - set(ends) <= {starts[-1]}, (starts, ends)
    assert sum(1 for g in starts if logged[g][1] == "System.gc()") == 2, [logged[g] for g in starts]
    assert max(logged) > starts[-1], "no GC after the detach: the JVM did not work on"
    whole = set(starts) & set(ends)
    ours_plabs = Counter(e["args"]["gc_id"] for e in events if e["probe"] == "plab__alloc")
    truth = plabs_by_gc(home, jfr)
    assert {g: ours_plabs[g] for g in whole} == {g: truth[g] for g in whole}
    assert sum(truth[g] for g in whole) > 20, "few PLABs in the window's GCs: the test lost its point"


def start_working_jvm(home, java_classes, d, iterations):
    jvm = subprocess.Popen(java_cmd(home, java_classes, "G1", 64, "AllocWorker", iterations, d / "rec.jfr",
                                    gc_log=d / "gc.log"),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    jvm.lines = LineReader(jvm.stdout)
    jvm.lines.wait_for(lambda l: l.startswith("ready "), 60, "the JVM's ready line")
    return jvm


def test_two_jvms_of_one_jdk_recorded_at_once(jdks, java_classes, tmp_path):
    """Two JVMs of the same JDK (one libjvm.so: the kernel keeps one uprobe
    per probe site, shared by both recorders' links) run AllocWorker at the
    same time, each with its own recorder.  Each trace holds only its own
    JVM's threads, and equals its own JFR (per-thread refills and
    outside-TLAB allocations, new PLABs per GC id) and -Xlog:gc (GC ids)."""
    home = jdks["patched"]
    runs = []
    try:
        for name, iterations in (("a", 2_000_000), ("b", 3_000_000)):
            d = tmp_path / name
            d.mkdir()
            jvm = start_working_jvm(home, java_classes, d, iterations)
            runs.append({"d": d, "jvm": jvm, "rec": None})
        for r in runs:
            r["rec"] = start_record(r["jvm"].pid, r["d"] / "trace.jvmtrace")
        for r in runs:
            r["jvm"].stdin.write("go\n")
            r["jvm"].stdin.flush()
        for r in runs:
            r["tid"] = int(r["jvm"].lines.wait_for(lambda l: l.startswith("worker tid "), 60,
                                                   "the worker's tid").split()[2])
        for r in runs:
            r["jvm"].stdin.close()
            assert r["jvm"].wait(300) == 0
            r["err"] = finish(r["rec"])
            assert r["rec"].returncode == 0, r["err"]
    finally:
        reap(*[r["jvm"] for r in runs], *[r["rec"] for r in runs])
    for r in runs:
        r["events"], r["lost"], r["end"] = read_trace(r["d"] / "trace.jvmtrace")
        r["tids"] = {e["tid"] for e in r["events"]}
    a, b = runs
    assert not a["tids"] & b["tids"], f"threads in both traces: {sorted(a['tids'] & b['tids'])[:10]}"
    for r, other in ((a, b), (b, a)):
        assert other["tid"] not in r["tids"], "the other JVM's worker is in this trace"
        assert sum(r["lost"].values()) == 0 and r["end"]["reason"] == "target exited", (r["lost"], r["end"])
        ours_r, ours_o = trace_allocations(r["events"])
        jfr_r, jfr_o = jfr_allocations(home, r["d"] / "rec.jfr")
        tid = r["tid"]
        assert len(jfr_r[tid]) > 200
        assert Counter(ours_r[tid]) == Counter(jfr_r[tid]), r["d"]
        assert Counter(ours_o[tid]) == Counter(jfr_o[tid]), r["d"]
        logged = parse_gc_log((r["d"] / "gc.log").read_text(), go_uptime_s(r["jvm"].lines.drain()))
        starts = [e["args"]["gc_id"] for e in r["events"] if e["probe"] == "gc__start"]
        ends = [e["args"]["gc_id"] for e in r["events"] if e["probe"] == "gc__end"]
        assert len(logged) >= 5 and sorted(starts) == sorted(ends) == [g for g, _, _ in logged], r["d"]
        ours_plabs = Counter(e["args"]["gc_id"] for e in r["events"] if e["probe"] == "plab__alloc")
        truth = plabs_by_gc(home, r["d"] / "rec.jfr")
        assert sum(truth.values()) > 20 and ours_plabs == truth, r["d"]
        print(f"{r['d'].name}: {len(r['events'])} events, {len(jfr_r[tid])} refills of the worker, "
              f"{len(logged)} GCs, {sum(truth.values())} PLABs, {len(r['tids'])} threads")
