"""Every stop of the world, on every collector and every release line:
every "Pause ..." line of -Xlog:gc* is one gc__pause__start/end pair with its
GC id, title and duration, and every line of -Xlog:safepoint is one
safepoint__end with its operation and exactly the log's figures, each pause
inside its safepoint; `report --check` is clean.  G1, Parallel and Serial,
ZGC (17; 21 in both modes; 25 generational) and Shenandoah, on PauseMix (the
project's own program, which makes every kind of pause in a second) -- the
corpus of real programs runs the same checks under ZGC and Shenandoah
(test_corpus_stop_the_world.py) and G1, Parallel and Serial (test_corpus_programs.py).

Also the review's defects of the VM side: a G1 PLAB filled to its very end
whose refill fails (an evacuation failure with no alignment reserve) is
retired once, not again at every later refill; and a detached JDK 25 VM
thread sleeps as upstream's does."""
import json
import re
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import BUILD_DIR, JDK_LINES, jdk_homes
from helpers import ABI, LineReader, SchedTrace, parse_all_pauses, parse_safepoints, pause_title, wait_until
from test_pauses import held_record
from test_record import dump_json

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"

# The collectors a user can pick on each line (21: ZGC in both modes).
COLLECTORS = {
    "G1": ["-XX:+UseG1GC", "-XX:+ExplicitGCInvokesConcurrent"],
    "Parallel": ["-XX:+UseParallelGC"],
    "Serial": ["-XX:+UseSerialGC"],
    "ZGC": ["-XX:+UseZGC"],
    "ZGC-generational": ["-XX:+UseZGC", "-XX:+ZGenerational"],
    "Shenandoah": ["-XX:+UseShenandoahGC"],
}


def collectors_of(line):
    # 17 has single-generation ZGC only; 21 both (single-generation the
    # default); 25 generational only (-XX:+ZGenerational is obsolete there).
    names = ["G1", "Parallel", "Serial", "ZGC", "Shenandoah"]
    if line == "21":
        names.append("ZGC-generational")
    return names


CASES = [(line, gc) for line in JDK_LINES for gc in collectors_of(line)]
# The kind a pause's title and collector give (usdt/jvmtrace_abi.h).
CONCURRENT_KINDS = {ABI["JVMTRACE_PAUSE_CONCURRENT"], ABI["JVMTRACE_PAUSE_CONCURRENT_OLD"],
                    ABI["JVMTRACE_PAUSE_DEGENERATED"]}


def expected_kind(gc, title, tag):
    if gc.startswith("ZGC"):
        return ABI["JVMTRACE_PAUSE_CONCURRENT_OLD"] if tag == "O" else ABI["JVMTRACE_PAUSE_CONCURRENT"]
    if gc == "Shenandoah":
        if title.startswith("Pause Full"):
            return ABI["JVMTRACE_PAUSE_FULL"]
        if title.startswith("Pause Degenerated"):
            return ABI["JVMTRACE_PAUSE_DEGENERATED"]
        return ABI["JVMTRACE_PAUSE_CONCURRENT_OLD"] if " (Old)" in title else ABI["JVMTRACE_PAUSE_CONCURRENT"]
    for prefix, kind in (("Pause Young", "YOUNG"), ("Pause Full", "FULL"), ("Pause Remark", "REMARK"),
                         ("Pause Cleanup", "CLEANUP")):
        if title.startswith(prefix):
            return ABI[f"JVMTRACE_PAUSE_{kind}"]
    raise AssertionError(f"{gc}: not a pause title: {title}")


# Pause bounds (check_against_log): ms a pause may read beyond its log line.
STW_SHORT_MS = 0.010  # Serial, Parallel, G1, Shenandoah: shorter, never (the line's 1 us rounding)
STW_SLACK_MS = 1.0    # ... longer: the line's writing (0.010-0.50 ms measured, fastdebug 25 the most)
ZGC_SLACK_MS = 0.1    # ZGC, either way (0.064 ms measured)
STW_MEDIAN_MS = 0.1   # the four: the median pause's excess (0.014-0.036 ms measured)
ZGC_MEDIAN_MS = 0.05  # ZGC: the median's, either way (within 0.002 ms measured)


def check_against_log(events, log, gc, sched=None):
    """Every pause line of the log is one pause pair of the trace (id, title,
    kind, a duration that brackets the log's), every safepoint line one
    safepoint__end with the same figures, in the same order; every pause lies
    inside a safepoint; with sched (helpers.SchedTrace), a pause beyond its
    bounds is accepted only when its VM thread was off its CPU for the
    excess.  Returns (pauses, safepoints) of the log."""
    logged = parse_all_pauses(log)
    safepoints = parse_safepoints(log)
    assert safepoints, "no -Xlog:safepoint line: the run is no test"
    open_pause, open_safepoint, pairs, sp_ends = {}, None, [], []
    for e in events:
        p, a = e["probe"], e["args"]
        if p == "safepoint__begin":
            assert open_safepoint is None, f"safepoint {a} begins inside {open_safepoint}"
            open_safepoint = a
        elif p == "safepoint__end":
            assert open_safepoint is not None and open_safepoint["safepoint_id"] == a["safepoint_id"], (open_safepoint, a)
            open_safepoint = None
            sp_ends.append(a)
        elif p == "gc__pause__start":
            assert open_safepoint is not None, f"pause {a} outside a safepoint"
            open_pause[(a["gc_id"], a["kind"])] = e
        elif p == "gc__pause__end":
            s = open_pause.pop((a["gc_id"], a["kind"]))
            assert open_safepoint is not None, f"pause {a} ends outside a safepoint"
            pairs.append((s, e, len(sp_ends)))  # (the index its safepoint's end will have)
    # Pauses: the log's lines in order, each one pair.
    problems = []
    ours = [(s["args"]["gc_id"], e["args"]["name"], e["args"]["cause"], e["args"]["kind"],
             (e["ts_ns"] - s["ts_ns"]) / 1e6, sp) for s, e, sp in pairs]
    if len(ours) != len(logged):
        problems.append(f"{len(logged)} pause lines, {len(ours)} traced pauses")
    # Where the probes sit decides the bounds (issue 36; each collector's
    # figures measured on PauseMix, 17, product and fastdebug, about 900
    # pauses: docs/testing.md).  Serial, Parallel, G1 and Shenandoah: the start
    # probe fires before the log's start stamp (the GCTraceTime constructor,
    # ShenandoahPausePhase's member before its tracer) and the end probe after
    # its end line (the destructor), so a pause never reads shorter than its
    # line but for the line's rounding to 1 us: -10 us, every pause, no
    # exception.  Above: the log line's writing, measured at 0.010-0.50 ms;
    # 1 ms allowed.  (The PLAB flush that also ran there is gone: decision 172.)  ZGC: each probe fires
    # right after its stamp, read within 0.064 ms of the line; 0.1 ms allowed
    # either way.  A pause beyond these is accepted when the scheduler trace
    # shows its VM thread off its CPU for the excess where the probes and the
    # log disagree (after the patch's own work, measured, is taken off); for
    # ZGC alone, one in twenty that it does not explain is shown, and
    # allowed up to the old bracket (below).
    zgc = gc.startswith("ZGC")
    slack = ZGC_SLACK_MS if zgc else STW_SLACK_MS
    unexplained, beyond, own_all = [], [], []
    for i, (mine, line) in enumerate(zip(ours, logged)):
        gc_id, name, cause, kind, ms, sp = mine
        s_ev, e_ev = pairs[i][0], pairs[i][1]
        title_ok = line["title"] in (name, pause_title(name, cause))
        kind_ok = kind == expected_kind(gc, line["title"], line["tag"])
        raw = ms - line["ms"]
        # The patch's own work after the line (from jvmtrace_pause_end's
        # entry to the end probe; ZGC: after its end stamp), measured by the
        # scheduler trace's uprobe, whose own trap is most of it: the VM's
        # time, not the probes' places.
        own = (sched.own_end_ms(s_ev["tid"], s_ev["ts_ns"], e_ev["ts_ns"]) if sched is not None else None) or 0.0
        own_all.append(own)
        delta = raw - own if raw > 0 else raw
        beyond.append(delta)
        what = (f"#{i}: log GC({line['gc_id']}) {line['tag'] or ''} {line['title']!r} {line['ms']} ms; "
                f"traced GC({gc_id}) {name!r} ({cause!r}) kind {kind} {ms:.3f} ms, of which {own:.3f} ms "
                f"the patch's own work after the line")
        if not (gc_id == line["gc_id"] and title_ok and kind_ok):
            problems.append(what)
            continue
        if not zgc and delta < -STW_SHORT_MS:
            problems.append(f"{what}: shorter than its line, which the probes' places rule out")
            continue
        if -slack <= delta <= slack:
            continue
        # Where the excess lies: after the line (and between the start probe
        # and the line's start stamp) when longer; before the start probe
        # (ZGC's start stamp comes first) when shorter.
        excess = abs(delta) - slack
        t0, t1 = s_ev["ts_ns"], e_ev["ts_ns"] - int(own * 1e6)  # (to the patch's own work)
        if delta > 0:
            a, b = t0 + int(delta * 1e6), t0 + int(line["ms"] * 1e6)
            windows = [(t0, a), (b, t1)] if a < b else [(t0, t1)]
        else:
            windows = [(t0 - int((abs(delta) + slack) * 1e6), t0)]
        if sched is None:
            problems.append(f"{what}: {delta:+.3f} ms beyond the {slack} ms the probes allow (no scheduler trace)")
            continue
        off = [sched.off_cpu(s_ev["tid"], a, b) for a, b in windows]
        off_ms = sum(o[0] for o in off)
        if off_ms < excess:
            # Not the scheduler: a defect, for the four (none in two full
            # passes of 17, 21 and 25 since Shenandoah's Init Mark on 25,
            # +1.0 to +1.9 ms on its CPU, was found to be the recorder's own
            # wake-up at the start probe: decision 170).  ZGC: one Pause Mark
            # Start of 0.428 ms by the log read 0.050 ms, on its CPU (the
            # time between ZGC's start stamp and the start probe, where
            # nothing of ours but the probe's arguments runs; not found).
            # For ZGC alone, one in twenty (at least one) is allowed and
            # shown, within the time the log says the VM spent at its
            # safepoint (+ 1 ms); more is a defect.
            at_safepoint_ms = safepoints[sp]["at_safepoint_ns"] / 1e6 if sp < len(safepoints) else 0.0
            mm = [c for a, b in windows for c in sched.mm_calls(a, b)]
            note = (f"{what}: {delta:+.3f} ms beyond the {slack} ms the probes allow, and its VM thread was off "
                    f"its CPU for only {off_ms:.3f} ms there (intervals: ms from the window's start, length, "
                    f"prev_state: {[o[2] for o in off]}); address-space calls in flight there (call, thread, "
                    f"tid, ms from the window's start, length): {mm[:10]}{' ...' if len(mm) > 10 else ''}")
            print(f"{gc}: UNEXPLAINED {note}")
            if not zgc or not 0.0 < ms <= max(line["ms"] * 1.1 + 2.0, at_safepoint_ms + 1.0):
                problems.append(note)
            else:
                unexplained.append(note)
        else:
            print(f"{gc}: {what}: {delta:+.3f} ms, the VM thread off its CPU {off_ms:.3f} ms there "
                  f"(preempted {sum(o[1] for o in off):.3f})")
    # A probe moved, not a pause preempted, moves every pause: the median
    # excess is 0.014-0.036 ms for the four (product and fastdebug, 17, 21,
    # 25) and within 0.002 ms for ZGC, so a probe 0.5 ms off fails here
    # whichever way it moved.
    if ours:
        excess = sorted(beyond)
        mid = excess[len(excess) // 2]
        if not (-ZGC_MEDIAN_MS <= mid <= ZGC_MEDIAN_MS if zgc else mid <= STW_MEDIAN_MS):
            problems.append(f"the median pause reads {mid:+.3f} ms against its line: a probe out of place")
    if len(unexplained) > max(1, len(logged) // 20):
        problems.extend(f"{u} (one of {len(unexplained)} the scheduler does not explain)" for u in unexplained)
    for label, values in (("traced - logged", [m[4] - l["ms"] for m, l in zip(ours, logged)]),
                          ("the patch's own work after the line", own_all), ("the rest", beyond)):
        v = sorted(values)
        if v:
            q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
            print(f"{gc}: {len(v)} pauses, {label} (ms): min {v[0]:.4f} p50 {q(0.5):.4f} "
                  f"p90 {q(0.9):.4f} p99 {q(0.99):.4f} max {v[-1]:.4f}")
    # Safepoints: the same lines, the same figures.
    if len(sp_ends) != len(safepoints):
        problems.append(f"{len(safepoints)} safepoint lines, {len(sp_ends)} traced safepoints")
    for i, (a, line) in enumerate(zip(sp_ends, safepoints)):
        want = (line["operation"], line["reaching_ns"], line["at_safepoint_ns"], line["total_ns"],
                line["cleanup_ns"] or 0)
        got = (a["operation"], a["reaching_ns"], a["at_safepoint_ns"], a["total_ns"], a["cleanup_ns"])
        if want != got:
            problems.append(f"safepoint #{i}: log {want}, traced {got}")
        if line["threads"] is not None and (line["threads"], line["running"]) != (a["threads"], a["running"]):
            problems.append(f"safepoint #{i}: log threads {line['threads']}/{line['running']}, traced "
                            f"{a['threads']}/{a['running']}")
        leaving = a["total_ns"] - a["reaching_ns"] - a["cleanup_ns"] - a["at_safepoint_ns"]
        if line["leaving_ns"] is not None and leaving != line["leaving_ns"]:
            problems.append(f"safepoint #{i}: log leaving {line['leaving_ns']}, traced {leaving}")
    assert not problems, f"{len(problems)} difference(s):\n  " + "\n  ".join(problems[:30])
    return logged, safepoints


def check_report(trace, logged, safepoints):
    """`report --check` finds nothing and checked every pause and safepoint;
    `report` shows every pause, no "pauses not seen" note, and the log's
    safepoints by operation."""
    check = subprocess.run([str(JVMTRACE), "report", "--check", "--json", str(trace)], capture_output=True,
                           text=True, timeout=600)
    c = json.loads(check.stdout)
    assert check.returncode == 0 and c["violations"] == 0, c["found"][:5]
    assert c["checks"]["pause.in_safepoint"] == len(logged) and c["checks"]["safepoint.figures"] == len(safepoints)
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(trace)], capture_output=True,
                                    text=True, timeout=600, check=True).stdout)
    assert rep["pauses_not_seen"] is None, rep["pauses_not_seen"]
    assert len(rep["pauses"]) == len(logged)
    assert sum(1 for s in rep["safepoints"] if s["total_ns"] is not None) == len(safepoints)
    ops = Counter(s["operation"] for s in safepoints)
    assert {o["operation"]: o["total_ns"]["count"] for o in rep["safepoints_by_operation"]} == dict(ops)
    return ops


@pytest.mark.parametrize("line,gc", CASES, ids=[f"jdk{l}-{g}" for l, g in CASES])
def test_every_pause_and_safepoint_of_the_log_is_traced(java_classes, tmp_path, line, gc):
    trace = tmp_path / "stw.jvmtrace"
    with SchedTrace(Path(jdk_homes(line)["patched"]) / "lib/server/libjvm.so") as sched:
        out, rec_err, log = held_record(jdk_homes(line)["patched"], java_classes, tmp_path, COLLECTORS[gc], [2, 40],
                                        trace, "gc*,safepoint")
    assert "checksum " in out
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    assert not [x for x in recs if x["type"] == "lost"]
    meta = next(x for x in recs if x["type"] == "meta")
    assert meta["safepoint_probes"] == "1", meta
    events = [x for x in recs if x["type"] == "event"]
    logged, safepoints = check_against_log(events, log, gc, sched)
    assert logged, f"{gc}: no pause in the run: the test lost its point"
    if gc.startswith("ZGC"):
        assert {p["title"].split(" (")[0] for p in logged} >= {"Pause Mark Start", "Pause Mark End",
                                                                "Pause Relocate Start"}
    if gc == "Shenandoah":
        assert {p["title"].split(" (")[0] for p in logged} >= {"Pause Init Mark", "Pause Final Mark"}
    # Safepoints that are no collection are there too (PauseMix dumps its threads each round).
    assert "ThreadDump" in {s["operation"] for s in safepoints}, Counter(s["operation"] for s in safepoints)

    check_report(trace, logged, safepoints)


def test_a_plab_full_to_its_end_whose_refill_fails_is_retired_once(jdks, java_classes, tmp_path):
    """G1, a young live set that fills the heap: to-space runs out during the
    pauses (evacuation failure).  With -XX:ObjectAlignmentInBytes=16 there is
    no alignment reserve, so PLABs get filled to their very end; the patch
    used to report such a PLAB retired again at every later refill attempt
    and at the pause's end.  Every PLAB handed out is retired exactly once."""
    trace = tmp_path / "evac.jvmtrace"
    flags = ["-XX:+UseG1GC", "-XX:ObjectAlignmentInBytes=16", "-XX:G1ReservePercent=0"]
    log = tmp_path / "gc.log"
    java = Path(jdks["patched"]) / "bin/java"
    cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", *flags, "-Xms64m", "-Xmx64m",
           f"-Xlog:gc*:file={log}", "-cp", str(java_classes), "EvacFailure", "3"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    rec = None
    try:
        hold = tmp_path / f"vm.paused.{proc.pid}"
        wait_until(lambda: hold.exists() or proc.poll() is not None, 60, "the JVM to hold at start-up")
        rec = subprocess.Popen([str(JVMTRACE), "record", "-q", "-p", str(proc.pid), "-o", str(trace)],
                               stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "the recorder to attach")
        hold.unlink()
        out, jerr = proc.communicate("go\n", timeout=300)
        assert proc.returncode == 0, jerr[-2000:]
        assert rec.wait(60) == 0
    finally:
        for p in (proc, rec):
            if p and p.poll() is None:
                p.kill()
                p.wait(30)
    text = log.read_text()
    assert re.search(r"To-space exhausted|Evacuation Failure", text), "no evacuation failure: the test lost its point"
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    allocs, retires = defaultdict(Counter), defaultdict(Counter)
    for x in recs:
        if x["type"] != "event":
            continue
        a = x["args"]
        if x["probe"] == "plab__alloc":
            allocs[a["gc_id"]][a["plab_start"]] += 1
        elif x["probe"] == "plab__retire":
            retires[a["gc_id"]][a["plab_start"]] += 1
    assert allocs, "no PLAB at all"
    twice = {g: [hex(s) for s, n in c.items() if n > 1] for g, c in retires.items() if any(n > 1 for n in c.values())}
    assert not twice, f"PLABs retired more than once, by GC id: {twice}"
    for g in allocs:
        assert sum(retires[g].values()) == sum(allocs[g].values()), (g, allocs[g], retires[g])
    check = subprocess.run([str(JVMTRACE), "report", "--check", str(trace)], capture_output=True, text=True,
                           timeout=300)
    assert check.returncode == 0, check.stdout[-3000:]


def voluntary_switches(pid, comm):
    for task in Path(f"/proc/{pid}/task").iterdir():
        if (task / "comm").read_text().strip() == comm:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    return int(line.split()[1])
    raise AssertionError(f"PID {pid} has no thread {comm!r}")


@pytest.mark.jdk_line("25")  # (only 25's VM thread sleeps until an operation comes: 17 and 21 wake every second)
def test_a_detached_jdk25_vm_thread_sleeps_as_upstream(java_classes, tmp_path):
    """JDK 25's VM thread sleeps until an operation arrives (no periodic
    safepoint).  The patch once woke it every second, tracer or not.  Idle
    JVMs, nothing attached: the patched VM thread wakes no more often than
    Debian's own."""
    homes = jdk_homes("25")
    procs = {}
    try:
        for v in ("patched", "stock"):
            procs[v] = subprocess.Popen([str(Path(homes[v]) / "bin/java"), "-Xmx32m", "-cp", str(java_classes),
                                         "Launched", "wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        for v, p in procs.items():
            assert p.stdout.readline().startswith("waiting"), p.stderr.read()
        time.sleep(2)  # start-up's compilations and safepoints behind us
        before = {v: voluntary_switches(p.pid, "VM Thread") for v, p in procs.items()}
        time.sleep(8)
        after = {v: voluntary_switches(p.pid, "VM Thread") for v, p in procs.items()}
    finally:
        for p in procs.values():
            p.kill()
            p.wait(30)
    woke = {v: after[v] - before[v] for v in procs}
    assert woke["patched"] <= woke["stock"] + 2, woke
