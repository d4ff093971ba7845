"""Real Java programs from Debian packages (tests/corpus.py), each under G1,
Parallel and Serial, traced from their first instruction: the JVM is held at
start-up (-XX:+PauseAtStartup) while `jvmtrace record` and `jvmtrace stat`
attach to it, then released.  From that one run:

- the program's own output is right (tracing changed nothing it does);
- nothing was lost, and `report --check` finds no violation;
- every GC id of -Xlog:gc has a gc__start and a gc__end, and nothing else does;
- the trace holds at least as many TLAB refills as JFR's
  jdk.ObjectAllocationInNewTLAB (JFR starts after VM initialisation, the
  tracer before it: docs/validation.md, "Aligning the windows");
- `stat`'s in-kernel counters equal the same sums over `record`'s events
  (both attached before the release, so both saw every probe hit);
- every "GC(n) Pause ..." line of -Xlog:gc is one gc__pause__end event with the
  same id, name, cause and heap figures (check_pauses; needs a JDK patched
  with the pause probes).

These programs start G1 concurrent cycles, mixed collections, humongous
allocations and Full GCs, which the project's own test programs do not.
What each run exercised is in docs/validation.md, "The corpus"."""
import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from corpus import STDOUT, corpus_runs, packages as corpus_packages
import perfetto_trace
from test_analysis import check_perfetto_compact, check_timeline_against_dump
from test_live_attach import jfr_allocations, slices_at
from helpers import ABI, REPO, SLOW_AFTER_GC, SLOW_FAILED, SLOW_OUTSIDE_TLAB, LineReader, parse_gc_log

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
M = 1 << 20

# JFR: only the event compared here, without stacks (cheap, and nothing else
# of JFR's is needed).
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmtrace corpus" description="TLAB refills only">
  <event name="jdk.ObjectAllocationInNewTLAB">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">false</setting>
  </event>
</configuration>
"""

RUNS = list(corpus_runs())

# stat counter -> how to compute it from record's events (bpf/jvmtrace_stat.bpf.c).
OUTSIDE = SLOW_OUTSIDE_TLAB  # alloc__slow__exit outcomes: outside any TLAB (before or after a GC)
STAT_FROM_EVENTS = {
    "tlab_refills": ("tlab__refill", lambda a: 1),
    "tlab_bytes": ("tlab__refill", lambda a: a["tlab_bytes"]),
    "tlab_waste_bytes": ("tlab__refill", lambda a: a["retired_waste_bytes"]),
    "slow_paths": ("alloc__slow__exit", lambda a: 1),
    "slow_failed": ("alloc__slow__exit", lambda a: a["outcome"] == SLOW_FAILED),
    "slow_after_gc": ("alloc__slow__exit", lambda a: a["outcome"] in SLOW_AFTER_GC),
    "outside_allocs": ("alloc__slow__exit", lambda a: a["outcome"] in OUTSIDE),
    "outside_bytes": ("alloc__slow__exit", lambda a: a["alloc_bytes"] if a["outcome"] in OUTSIDE else 0),
    "gc_starts": ("gc__start", lambda a: 1),
    "gc_ends": ("gc__end", lambda a: 1),
    "gc_pauses": ("gc__pause__end", lambda a: 1),
    "plabs": ("plab__alloc", lambda a: 1),
    "plab_bytes": ("plab__alloc", lambda a: a["plab_bytes"]),
    "plab_waste_bytes": ("plab__retire", lambda a: a["wasted_bytes"]),
    "promoted_direct": ("promote__direct", lambda a: 1),
    "promoted_direct_bytes": ("promote__direct", lambda a: a["bytes"]),
}
STAT_LOSSES = ("map_full_drops", "names_lost", "gc_inflight_full_drops", "gc_ends_without_start",
               "slow_exits_without_enter", "gc_pause_ends_without_start", "malformed_notices")
PAUSE_PROBES = ("gc__pause__start", "gc__pause__end")
GC_FIELDS = ("gc_id", "name", "cause", "kind", "heap_used", "heap_committed")


@dataclass
class Trace:
    """What the tests need from `jvmtrace dump --json FILE`, gathered in one
    pass (a run holds up to a few hundred thousand events)."""
    events: int = 0
    by_probe: Counter = field(default_factory=Counter)
    sums: Counter = field(default_factory=Counter)           # STAT_FROM_EVENTS keys
    refills_by_tid: Counter = field(default_factory=Counter)
    refills_seq: dict = field(default_factory=lambda: defaultdict(list))  # tid -> [(class, alloc, tlab)] in order
    gc_starts: list = field(default_factory=list)            # dicts with GC_FIELDS, in file order
    gc_ends: list = field(default_factory=list)
    pauses: list = field(default_factory=list)               # gc__pause__start/end events, whole
    humongous_outside: int = 0                               # outside-TLAB objects >= half a G1 region
    lost: list = field(default_factory=list)
    end: dict = None
    status: dict = None
    meta: dict = None
    dump_rc: int = None
    dump_err: str = ""


def read_trace(path, region_bytes):
    t = Trace()
    dump = subprocess.Popen([str(JVMTRACE), "dump", "--json", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    by_probe = defaultdict(list)
    for name, (probe, f) in STAT_FROM_EVENTS.items():
        by_probe[probe].append((name, f))
    for line in dump.stdout:
        r = json.loads(line)
        kind = r["type"]
        if kind == "event":
            t.events += 1
            probe, a = r["probe"], r["args"]
            t.by_probe[probe] += 1
            for name, f in by_probe.get(probe, ()):
                t.sums[name] += f(a)
            if probe == "tlab__refill":
                t.refills_by_tid[r["tid"]] += 1
                t.refills_seq[r["tid"]].append((a["class"], a["alloc_bytes"], a["tlab_bytes"]))
            elif probe == "alloc__slow__exit" and a["outcome"] in OUTSIDE and a["alloc_bytes"] >= region_bytes // 2:
                t.humongous_outside += 1
            elif probe in ("gc__start", "gc__end"):
                (t.gc_starts if probe == "gc__start" else t.gc_ends).append({k: a[k] for k in GC_FIELDS})
            elif probe in PAUSE_PROBES:
                t.pauses.append(r)
        elif kind == "lost":
            t.lost.append(r)
        elif kind == "end":
            t.end = r
        elif kind == "status":
            t.status = r
        elif kind == "meta":
            t.meta = r
    t.dump_err = dump.stderr.read()
    t.dump_rc = dump.wait(60)
    return t


# --- the pause check (issue 11's probes) ----------------------------------------

PAUSE_LOG_RE = re.compile(r"\bGC\((\d+)\) (Pause .*) (\d+)M->(\d+)M\((\d+)M\) [\d.]+ms$")
PAUSE_KINDS = {"Pause Young": 0, "Pause Full": 1, "Pause Remark": 2, "Pause Cleanup": 3}


def logged_pauses(gc_log_text):
    """[(gc_id, text, before_M, after_M, committed_M)] of every "GC(n) Pause
    ..." line, in order; text is the name and the cause as the log prints
    them: "Pause Young (Normal) (G1 Evacuation Pause)", "Pause Remark"."""
    out = []
    for line in gc_log_text.splitlines():
        m = PAUSE_LOG_RE.search(line)
        if m:
            out.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5))))
    return out


def pause_text(args):
    """How -Xlog:gc prints a pause probe's name and cause (HotSpot's
    GCTraceTimeLoggerImpl: the title, then " (cause)" unless there is none)."""
    return args["name"] + (f" ({args['cause']})" if args["cause"] else "")


def check_pauses(pause_events, gc_log_text):
    """Every "GC(n) <name>[ (<cause>)] aM->bM(cM)" line of -Xlog:gc is exactly
    one gc__pause__end event (and one gc__pause__start) with the same gc_id,
    name and cause, a kind that matches the name (0 young, 1 full, 2 remark,
    3 cleanup), heap_used/M at the start == a, heap_used/M at the end == b and
    heap_committed/M at the end == c; and no pause event has no line.
    pause_events: the gc__pause__start/end records of `jvmtrace dump --json`
    (the whole trace's dump records may be passed: others are ignored).
    Raises AssertionError naming every difference."""
    starts = [e["args"] for e in pause_events if e.get("probe") == "gc__pause__start"]
    ends = [e["args"] for e in pause_events if e.get("probe") == "gc__pause__end"]
    logged = logged_pauses(gc_log_text)
    assert logged, "no 'GC(n) Pause ...' line in -Xlog:gc"
    assert ends, ("no gc__pause__end events: is this JDK patched with the pause probes? "
                  f"(-Xlog:gc has {len(logged)} pauses)")
    key = lambda a: (a["gc_id"], pause_text(a))
    by_key_end, by_key_start = defaultdict(list), defaultdict(list)
    for a in ends:
        by_key_end[key(a)].append(a)
    for a in starts:
        by_key_start[key(a)].append(a)
    want = Counter((g, text) for g, text, *_ in logged)
    problems = []
    for k in sorted(set(want) | set(by_key_end) | set(by_key_start)):
        if not (want[k] == len(by_key_end[k]) == len(by_key_start[k])):
            problems.append(f"GC({k[0]}) {k[1]!r}: {want[k]} log line(s), {len(by_key_end[k])} gc__pause__end, "
                            f"{len(by_key_start[k])} gc__pause__start")
    for g, text, before, after, committed in logged:
        k = (g, text)
        if want[k] != 1 or len(by_key_end[k]) != 1 or len(by_key_start[k]) != 1:
            continue  # reported above
        s, e = by_key_start[k][0], by_key_end[k][0]
        kind = next((v for p, v in PAUSE_KINDS.items() if text.startswith(p)), None)
        got = (s["heap_used"] // M, e["heap_used"] // M, e["heap_committed"] // M, s["kind"], e["kind"])
        if got != (before, after, committed, kind, kind):
            problems.append(f"GC({g}) {text!r}: log {before}M->{after}M({committed}M) kind {kind}; probes "
                            f"{got[0]}M->{got[1]}M({got[2]}M) kinds {got[3]}/{got[4]} "
                            f"(bytes: start {s['heap_used']}, end {e['heap_used']}/{e['heap_committed']})")
    assert not problems, (f"{len(problems)} pause(s) differ between -Xlog:gc ({len(logged)} pauses) and the "
                          f"pause probes ({len(ends)} ends):\n  " + "\n  ".join(problems[:25]))


def check_pauses_in_files(trace_path, gc_log_path):
    """check_pauses on a trace file and a -Xlog:gc file."""
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    recs = (json.loads(l) for l in r.stdout.splitlines())
    check_pauses([x for x in recs if x.get("probe") in PAUSE_PROBES], Path(gc_log_path).read_text())


# --- the run ------------------------------------------------------------------------

@dataclass(repr=False)
class CorpusRun:
    program: object
    gc: str
    home: str
    work: Path
    rc: int
    seconds: float              # from the release to the JVM's exit
    record_rc: int
    record_err: str
    stat: dict
    stat_rc: int
    stat_err: str
    trace: Trace
    gc_log: str
    jfr_refills: int
    jfr_refills_seq: dict       # tid -> [(class, alloc, tlab)] in time order (test_live_attach.jfr_allocations)

    def __repr__(self):  # pytest prints it with every failure: the run, not its contents
        return f"CorpusRun({self.program.name}, {self.gc}, {self.work})"


def wait_until(pred, timeout, what, proc=None):
    """Polls pred every 10 ms until it holds; fails after timeout seconds, or
    at once if proc exits first."""
    deadline = time.monotonic() + timeout
    while not pred():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the JVM exited first (status {proc.returncode})")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def start_tracer(argv, banner, what):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.out, p.err = LineReader(p.stdout), LineReader(p.stderr)
    try:
        p.err.wait_for(lambda l: l.startswith(banner), 60, f"{what} to attach")
    except AssertionError:
        p.kill()
        raise
    return p


def jfr_count(home, recording, event):
    """How many `event`s a JFR recording holds (`jfr summary`)."""
    out = subprocess.run([str(Path(home) / "bin/jfr"), "summary", str(recording)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, f"jfr summary {recording}: {out.stderr}"
    for line in out.stdout.splitlines():
        f = line.split()
        if f and f[0] == event:
            return int(f[1])
    raise AssertionError(f"jfr summary of {recording} has no {event} line:\n{out.stdout}")


def g1_region_bytes(gc_init_log):
    """G1's region size, from -Xlog:gc+init ("Heap Region Size: 1M")."""
    m = re.search(r"Heap Region Size: (\d+)M", gc_init_log)
    assert m, f"no 'Heap Region Size' line in -Xlog:gc+init: {gc_init_log[:500]}"
    return int(m.group(1)) * M


def run_traced(program, gc, home, work):
    """Runs program under collector gc held at start-up, attaches `record` and
    `stat`, releases it, waits for all three to end, and gathers what the
    tests compare."""
    (work / "corpus.jfc").write_text(JFC)
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-Xlog:gc+init=info:file=gc-init.log",
             "-Xlog:gc:file=gc.log", "-XX:StartFlightRecording=filename=rec.jfr,settings=corpus.jfc,dumponexit=true",
             *program.gc[gc]]
    with open(work / STDOUT, "w") as out, open(work / "stderr.txt", "w") as err:
        jvm = subprocess.Popen(program.command(home, flags), cwd=work, stdout=out, stderr=err,
                               stdin=subprocess.DEVNULL)
    tracers = []
    try:
        held = work / f"vm.paused.{jvm.pid}"
        wait_until(held.exists, 60, f"HotSpot to create {held} (-XX:+PauseAtStartup)", jvm)
        trace_path = work / "trace.jvmtrace"
        tracers.append(start_tracer([str(JVMTRACE), "record", "-q", "-p", str(jvm.pid), "-o", str(trace_path)],
                                    "Recording PID", "jvmtrace record"))
        tracers.append(start_tracer([str(JVMTRACE), "stat", "-p", str(jvm.pid), "--json"],
                                    "Attached ", "jvmtrace stat"))
        assert jvm.poll() is None, "the JVM did not wait at start-up"
        held.unlink()                       # releases the JVM (os::pause polls for the file)
        t0 = time.monotonic()
        rc = jvm.wait(300)
        seconds = time.monotonic() - t0
        record, stat = tracers
        record.wait(60)                     # both end by themselves when the target exits
        stat.wait(60)
    finally:
        for p in [jvm, *tracers]:
            if p.poll() is None:
                p.kill()
                p.wait()
    stat_lines = [l for l in stat.out.drain() if l.startswith("{")]
    gc_log = (work / "gc.log").read_text()
    record_err, stat_err = "\n".join(record.err.drain()), "\n".join(stat.err.drain())
    (work / "record.stderr").write_text(record_err)   # kept with the run's files, for a failure's post-mortem
    (work / "stat.stderr").write_text(stat_err)
    return CorpusRun(
        program=program, gc=gc, home=home, work=work, rc=rc, seconds=seconds,
        record_rc=record.returncode, record_err=record_err,
        stat=json.loads(stat_lines[-1]) if stat_lines else None, stat_rc=stat.returncode, stat_err=stat_err,
        trace=read_trace(trace_path, g1_region_bytes((work / "gc-init.log").read_text()) if gc == "G1" else 1 << 62),
        gc_log=gc_log,
        jfr_refills=jfr_count(home, work / "rec.jfr", "jdk.ObjectAllocationInNewTLAB"),
        jfr_refills_seq=jfr_allocations(home, work / "rec.jfr")[0])


def summary(r):
    """What one run exercised, from its -Xlog:gc and trace (the figures of
    docs/validation.md's corpus table)."""
    kinds = Counter()
    for _, text, *_ in logged_pauses(r.gc_log):
        kinds[re.sub(r" \((?!Normal|Concurrent Start|Prepare Mixed|Mixed)[^()]*\)$", "", text)] += 1
    cycles = len(re.findall(r"\) Concurrent (?:Mark|Undo) Cycle [\d.]+ms$", r.gc_log, re.M))
    evac_failed = len(re.findall(r"To-space exhausted", r.gc_log))
    humongous = r.trace.humongous_outside if r.gc == "G1" else None
    return (f"{r.seconds:.1f} s, {r.trace.events} events, {len(parse_gc_log(r.gc_log))} GC ids; pauses "
            f"{dict(sorted(kinds.items()))}; concurrent cycles {cycles}; humongous allocations {humongous}; "
            f"to-space exhausted {evac_failed}; tlab refills {r.trace.by_probe['tlab__refill']} "
            f"(JFR {r.jfr_refills}) on {len(r.trace.refills_by_tid)} threads; outside-TLAB objects "
            f"{r.trace.sums['outside_allocs']}; PLABs {r.trace.sums['plabs']}")


@pytest.fixture(scope="module", params=RUNS, ids=[f"{p.name}-{gc}" for p, gc in RUNS])
def run(request, jdks17, corpus_inputs, tmp_path_factory):
    program, gc = request.param
    work = tmp_path_factory.mktemp(f"{program.name}-{gc}")
    # Inputs hard-linked, not regenerated: the programs only read them.
    shutil.copytree(corpus_inputs(program), work, copy_function=os.link, dirs_exist_ok=True)
    r = run_traced(program, gc, jdks17["patched"], work)
    print(f"\n{program.name} {gc}: {summary(r)}")
    return r


# --- the checks ---------------------------------------------------------------------

def test_program_output_is_right(run):
    assert run.rc == 0, f"{run.program} exited {run.rc}: {(run.work / 'stderr.txt').read_text()[-2000:]}"
    run.program.check(run.work, run.home)


def test_record_lost_nothing(run):
    t = run.trace
    assert run.record_rc == 0, f"record exited {run.record_rc}: {run.record_err}"
    assert t.dump_rc == 0 and t.status and t.status["status"] == "complete", \
        f"dump exited {t.dump_rc}: {t.dump_err} (status {t.status}); record said: {run.record_err}"
    assert t.end, "the trace has no end record"
    assert (t.end["reason"], t.end["lost"], t.lost) == ("target exited", 0, []), (t.end, t.lost[:5])
    assert t.end["events"] == t.events, f"end record counts {t.end['events']} events, the file holds {t.events}"
    assert t.events > 1000, f"only {t.events} events: did the probes fire?"


def test_perfetto_timelines_equal_the_dump(run, tmp_path):
    # The export's event-by-event check (test_analysis.py) on real programs,
    # in both formats: Trace Event JSON and Perfetto's protobuf trace.
    trace = run.work / "trace.jvmtrace"
    for name in ("t.json", "t.pftrace"):
        r = subprocess.run([str(JVMTRACE), "export", "--perfetto", str(trace), "-o", str(tmp_path / name)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    check_timeline_against_dump(json.loads((tmp_path / "t.json").read_text())["traceEvents"], trace, floors=False)
    check_timeline_against_dump(perfetto_trace.trace_events(tmp_path / "t.pftrace"), trace, floors=False)
    check_perfetto_compact(tmp_path / "t.pftrace")


def test_report_check_passes(run):
    r = subprocess.run([str(JVMTRACE), "report", "--check", str(run.work / "trace.jvmtrace")],
                       capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "OK: no violations" in out, \
        f"report --check exited {r.returncode}:\n" + "\n".join(out.splitlines()[-40:])
    # Beyond the check's allowance: the heap grew between pauses by exactly
    # what the trace allocated, G1's filled region tails counted (decision
    # 122; before them Lucene's G1 stretches differed by up to 218,832 bytes).
    j = subprocess.run([str(JVMTRACE), "report", "--check", "--json", str(run.work / "trace.jvmtrace")],
                       capture_output=True, text=True, timeout=300)
    stretches = [s for s in json.loads(j.stdout)["stretches"] if s["checked"]]
    assert stretches, j.stdout[:2000]
    off = [s for s in stretches if s["growth"] != s["allocated"] + s["filled"]]
    # (the trace stays in pytest's basetemp, kept for its last three runs: issue 38
    # asks for the next one that fails, to replay; 30 Lucene runs here did not)
    assert not off, (f"{run.work / 'trace.jvmtrace'}: {len(off)} of {len(stretches)} stretches off by "
                     f"{[s['growth'] - s['allocated'] - s['filled'] for s in off]} bytes", off)


def abandoned_young_ids(gc_log):
    """Serial's young collections that JDK 17 logs but does not run: the
    young generation found promotion unsafe (DefNewGeneration::collect
    returns at once) and a Pause Full with the next id follows in the same
    safepoint.  The log shows a "Pause Young" that changed nothing:
    "GC(7) Pause Young (Allocation Failure) 99M->99M(108M) 0.034ms", then
    "GC(8) Pause Full ...".  Such a collection has no gc__start/gc__end
    (docs/research-pause-probes.md, section 3), only its pause."""
    p = logged_pauses(gc_log)
    return {g for (g, text, before, after, _), nxt in zip(p, p[1:])
            if text.startswith("Pause Young") and before == after and nxt[0] == g + 1
            and nxt[1].startswith("Pause Full")}


def test_trace_names_the_g1_region_size(run):
    """report --check counts a G1 humongous object as the whole regions it
    takes, with the region size record puts in the trace's meta
    (heap_region_bytes); without it the check counts the object's own bytes
    and finds the heap growing by more than was allocated.  Under Parallel
    and Serial the heap has no regions (-Xlog:gc+init prints no region size)
    and the meta must name none (nor G1's minimum TLAB size, read with it):
    a region size there would make the check count a large object as whole
    regions the heap never took."""
    init = (run.work / "gc-init.log").read_text()
    if run.gc != "G1":
        assert "Region Size" not in init, f"-Xlog:gc+init names a region size under {run.gc}: {init[:500]}"
        assert "heap_region_bytes" not in run.trace.meta and "min_tlab_bytes" not in run.trace.meta, \
            f"the meta of a {run.gc} run names {run.trace.meta.get('heap_region_bytes')!r} region bytes"
        return
    want = g1_region_bytes(init)
    assert run.trace.meta.get("heap_region_bytes") == str(want), \
        f"trace meta heap_region_bytes {run.trace.meta.get('heap_region_bytes')!r}, -Xlog:gc+init region size {want}"


def test_gc_ids_equal_gc_log(run):
    """Every GC id of -Xlog:gc starts in the trace (but Serial's abandoned
    young collections), and every one the log closes (a line with its
    duration) ends in it; the trace has no other id."""
    logged = parse_gc_log(run.gc_log)
    ids = [g for g, _, _ in logged]
    assert len(ids) >= 5, f"only {len(ids)} GCs: the workload or the heap settings changed"
    closed = {int(m.group(1)) for m in re.finditer(r"\bGC\((\d+)\) [A-Z][^\n]* [\d.]+ms$", run.gc_log, re.M)}
    exempt = abandoned_young_ids(run.gc_log) if run.gc == "Serial" else set()
    starts = Counter(s["gc_id"] for s in run.trace.gc_starts)
    ends = Counter(e["gc_id"] for e in run.trace.gc_ends)
    assert [g for g, n in starts.items() if n > 1] == [], "GC ids with two gc__start"
    assert [g for g, n in ends.items() if n > 1] == [], "GC ids with two gc__end"
    assert set(starts) <= set(ids), f"gc__start ids not in the log: {sorted(set(starts) - set(ids))}"
    missing = sorted(set(ids) - exempt - set(starts))
    assert not missing, f"log ids with no gc__start: {[(g, w, c) for g, w, c in logged if g in missing]}" + \
        (f" (Serial's abandoned young collections, allowed: {sorted(exempt)})" if exempt else "")
    unended = [(g, w, c) for g, w, c in logged if g in closed and g in starts and g not in ends]
    assert sorted(ends) == sorted(closed & set(starts)), \
        f"gc__end ids the log does not close: {sorted(set(ends) - closed)}; GCs the log closes with a " \
        f"gc__start but no gc__end: {unended}"
    # Causes: a pause's is the log's last parenthesised group.
    cause = {s["gc_id"]: s["cause"] for s in run.trace.gc_starts}
    wrong = [(g, what, c, cause[g]) for g, what, c in logged if c is not None and g in cause and cause[g] != c]
    assert not wrong, f"causes differ (id, log, log cause, probe cause): {wrong[:10]}"


def test_tlab_refills_equal_jfrs_inside_its_window(run):
    """JFR records from after VM initialisation until its dump at exit, the
    tracer from before the VM started to its end: each thread's refills
    that JFR recorded (class, object size, TLAB size, in time order) are an
    unbroken stretch of that thread's refills in the trace.  Two-sided
    (issue 36): a refill missing inside JFR's window, or one counted twice,
    breaks the stretch; the trace's others lie before or after it, where
    JFR was not recording."""
    assert run.jfr_refills > 100, f"JFR recorded {run.jfr_refills} jdk.ObjectAllocationInNewTLAB"
    assert sum(map(len, run.jfr_refills_seq.values())) == run.jfr_refills
    problems, outside, left = [], 0, Counter()  # (left: the trace's refills outside the stretches)
    for tid, jfr in sorted(run.jfr_refills_seq.items(), key=lambda kv: kv[0] or 0):
        if tid is None:
            continue  # (below)
        mine = run.trace.refills_seq.get(tid, [])
        at = next(iter(slices_at(jfr, mine)), -1)
        if at < 0:
            # (where they part, aligned at their ends: JFR stops at exit)
            k = next((k for k in range(1, min(len(jfr), len(mine)) + 1) if jfr[-k] != mine[-k]), None)
            part = (f"; from the end, #{k} differs: JFR {jfr[-k]}, trace {mine[-k]}, around it JFR "
                    f"{jfr[-k - 2:len(jfr) - k + 3]}, trace {mine[-k - 2:len(mine) - k + 3]}" if k else "")
            problems.append(f"thread {tid}: JFR's {len(jfr)} refills are not an unbroken stretch of the trace's "
                            f"{len(mine)}{part}")
        else:
            outside += len(mine) - len(jfr)
            left.update(mine[:at] + mine[at + len(jfr):])
    # Events whose thread JFR did not write (one a run, a Thread allocated at
    # exit): each among the trace's refills outside the stretches.
    unnamed = Counter(run.jfr_refills_seq.get(None, []))
    left.update(x for k, v in run.trace.refills_seq.items() if k not in run.jfr_refills_seq for x in v)
    if unnamed - left:
        problems.append(f"{sum(unnamed.values())} JFR refills of no thread, of which {sum((unnamed - left).values())} "
                        f"are nowhere else in the trace: {list((unnamed - left).items())[:5]}")
    seen = sum(len(v) for k, v in run.trace.refills_seq.items() if k not in run.jfr_refills_seq)
    print(f"{run.program.name} {run.gc}: {run.jfr_refills} refills in JFR's window, all in the trace in order; "
          f"{outside} before or after it in the same threads, {seen} in threads JFR did not see "
          f"({sum(unnamed.values())} of JFR's have no thread)")
    assert not problems, "\n".join(problems)


def test_stat_counters_equal_record(run):
    """Both tracers were attached before the JVM ran, so both saw every probe
    hit: stat's in-kernel sums equal the same sums over record's events."""
    assert run.stat_rc == 0 and run.stat, f"stat exited {run.stat_rc}: {run.stat_err}"
    c = run.stat["counters"]
    mine = {k: run.trace.sums[k] for k in STAT_FROM_EVENTS}
    assert {k: c[k] for k in STAT_FROM_EVENTS} == mine
    assert {k: c[k] for k in STAT_LOSSES} == dict.fromkeys(STAT_LOSSES, 0)
    # Per thread, the refills (threads' tids are the kernel's, as record's).
    per_tid = {t["tid"]: t["tlab_refills"] for t in run.stat["threads"] if t["tlab_refills"]}
    assert per_tid == dict(run.trace.refills_by_tid)
    # Each stop-the-world pause's length went to its kind's histogram, and
    # every pause line of the log was counted; each concurrent cycle to its own.
    h = run.stat["histograms"]
    assert run.stat["pause_probes"] is True
    kinds = ("gc_pause_young", "gc_pause_full", "gc_pause_remark", "gc_pause_cleanup")
    assert sum(h[k]["total"] for k in kinds) == c["gc_pauses"] == len(logged_pauses(run.gc_log))
    assert h["gc_concurrent_cycle"]["total"] == sum(1 for a in run.trace.gc_ends if a["kind"] == ABI["JVMTRACE_GC_CONCURRENT"])


def test_run_exercises_what_the_corpus_is_for(run):
    """The heap settings still give what the corpus is there for: under G1
    concurrent cycles with their Remark and Cleanup pauses (and humongous
    objects where the program makes them), under Parallel and Serial Full
    GCs; the program's own threads allocate where it has some."""
    pauses = Counter(text.split(" (")[0] for _, text, *_ in logged_pauses(run.gc_log))
    if run.gc == "G1":
        assert pauses["Pause Remark"] and pauses["Pause Cleanup"], f"no concurrent cycle's pauses: {pauses}"
        if run.program.humongous:
            assert run.trace.humongous_outside > 0, "no humongous allocation traced"
    else:
        assert pauses["Pause Full"], f"no Full GC: {pauses}"
    named = {t["comm"] for t in run.stat["threads"] if t["tlab_refills"]}
    assert set(run.program.threads) <= named, f"threads that refilled TLABs: {sorted(named)}"


def test_install_deps_installs_the_corpus():
    """scripts/install-deps.sh (which the test command runs) installs every
    package the corpus needs."""
    script = (REPO / "scripts/install-deps.sh").read_text()
    m = re.search(r"^corpus=\(([^)]*)\)", script, re.M)
    assert m, "install-deps.sh has no corpus=(...) list"
    assert sorted(m.group(1).split()) == corpus_packages()


PAUSE_LOG = """\
[1.000s][info][gc] Using G1
[1.100s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->2M(128M) 15.045ms
[1.200s][info][gc] GC(1) Pause Young (Concurrent Start) (G1 Humongous Allocation) 99M->51M(128M) 29.3ms
[1.200s][info][gc] GC(2) Concurrent Mark Cycle
[1.300s][info][gc] GC(2) Pause Remark 88M->87M(128M) 2.898ms
[1.400s][info][gc] GC(2) Pause Cleanup 87M->87M(128M) 0.107ms
[1.500s][info][gc] GC(2) Concurrent Mark Cycle 39.758ms
[1.600s][info][gc] GC(3) Pause Full (System.gc()) 90M->3M(64M) 20.1ms
"""


def pause_events(log=PAUSE_LOG):
    """The gc__pause__start/end events a correct probe gives for log: each
    figure a few bytes above the log's megabytes (the log divides down)."""
    evs = []
    for g, text, before, after, committed in logged_pauses(log):
        name, cause = (text, "") if text in ("Pause Remark", "Pause Cleanup") else text.rsplit(" (", 1)
        kind = next(v for p, v in PAUSE_KINDS.items() if text.startswith(p))
        base = {"gc_id": g, "name": name, "cause": cause[:-1] if cause else "", "kind": kind}
        evs.append({"type": "event", "probe": "gc__pause__start",
                    "args": {**base, "heap_used": before * M + 12345, "heap_committed": 128 * M}})
        evs.append({"type": "event", "probe": "gc__pause__end",
                    "args": {**base, "heap_used": after * M + 7, "heap_committed": committed * M}})
    return evs


def test_check_pauses_finds_each_difference():
    """check_pauses (which cannot run green until the pause probes are
    recorded) passes the events a correct probe gives, and names each kind
    of difference."""
    check_pauses(pause_events(), PAUSE_LOG)
    with pytest.raises(AssertionError, match="no gc__pause__end events: is this JDK patched with the pause probes"):
        check_pauses([], PAUSE_LOG)

    def fails(edit, message):
        evs = pause_events()
        edit(evs)
        with pytest.raises(AssertionError, match=message):
            check_pauses(evs, PAUSE_LOG)
    ends = lambda evs: [e for e in evs if e["probe"] == "gc__pause__end"]
    fails(lambda evs: evs.remove(ends(evs)[2]), r"GC\(2\) 'Pause Remark': 1 log line\(s\), 0 gc__pause__end")
    fails(lambda evs: evs.append(ends(evs)[0]), r"GC\(0\) .*: 1 log line\(s\), 2 gc__pause__end")
    fails(lambda evs: ends(evs)[3]["args"].update(cause="G1 Evacuation Pause"),
          r"GC\(2\) 'Pause Cleanup \(G1 Evacuation Pause\)': 0 log line")
    fails(lambda evs: ends(evs)[1]["args"].update(gc_id=7), r"GC\(7\) .*: 0 log line\(s\), 1 gc__pause__end")
    fails(lambda evs: ends(evs)[4]["args"].update(heap_used=4 * M), r"GC\(3\) .* log 90M->3M\(64M\) kind 1; probes 90M->4M")
    fails(lambda evs: ends(evs)[4]["args"].update(heap_committed=65 * M), r"probes 90M->3M\(65M\)")
    fails(lambda evs: evs[0]["args"].update(heap_used=5 * M), r"GC\(0\) .* probes 5M->2M")
    fails(lambda evs: ends(evs)[2]["args"].update(kind=3), r"GC\(2\) 'Pause Remark': .* kinds 2/3")


def test_every_pause_is_one_gc_pause_end(run):
    check_pauses(run.trace.pauses, run.gc_log)
