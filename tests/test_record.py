"""`jvmtrace record` / `dump` / `report`: exact event streams from the USDT
fixture under several threads, agreement with JFR and -Xlog:gc on the real
patched JVM (G1 and Parallel), clean ends (target exit, recorder killed, disk
full), nothing left attached, and clear errors on bad input."""
import json
import os
import re
import signal
import subprocess
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import (PROBES, SEPARATE, SLOW_OUTSIDE_TLAB, LineReader, contract_probes, exec_argv, go_uptime_s,
                     jfr_events, parse_gc_log, reap, traced_run, wait_until)
from test_jvm_probes import GCS, java_cmd, worker_tid

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
U64 = 0xf7f6f5f4f3f2f1f0
U32 = 0xe3e2e1e0
NAME = "Lsentinel/Klass;"


def jvmtrace(*args, timeout=120):
    return subprocess.run([str(JVMTRACE), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def dump_json(path):
    r = jvmtrace("dump", "--json", path)
    recs = [json.loads(l) for l in r.stdout.splitlines()]
    return r, recs


def record_run(target_cmd, out, *extra):
    run = traced_run(lambda pid: [str(JVMTRACE), "record", "-p", str(pid), "-o", str(out), "-q", *extra],
                     target_cmd, ready=lambda l: l.startswith("Recording PID"), stderr_ready=True)
    return run


# The probes whose events carry the VM's own clock reading (a batch
# record's or alloc__slow's start_ns) rather than BPF's, per probe set.
VM_STAMPED = {"separate": set(),
              "combined": {"alloc__slow__enter", "plab__alloc", "plab__retire", "promote__direct"},
              "batched": {"alloc__slow__enter", "tlab__refill", "alloc__slow__exit", "plab__alloc",
                          "plab__retire", "promote__direct"}}
# docs/trace-format.md, "Time and order": how far the two readers of
# CLOCK_MONOTONIC may disagree, which every reader that compares times of
# the two respects.
CLOCK_SKEW_NS = 10_000


def fixture_round(i, probe_set="separate"):
    """The fixture's round i, per usdt_fixture.cpp's header, as dump prints it.
    separate: every probe's own event; combined: alloc__slow's and
    plab__batch's hits turned back into the events they stand for (a refill
    only for outcomes 1 and 3), after the round's GC events."""
    gc = {"name": "SentinelGC", "cause": "Sentinel cause", "kind": i % 3}
    # the pause's name is copied while the probe fires: the fixture rewrites its buffer after each round
    pause = {"name": f"Pause Sentinel {i % 7}", "cause": "Sentinel cause", "kind": i % 4}
    refill = ("tlab__refill", {"tlab_start": U64, "tlab_bytes": 0x10000 + i, "alloc_bytes": i, "class": NAME,
                               "retired_waste_bytes": U64 - 1})
    enter = ("alloc__slow__enter", {"alloc_bytes": i, "class": NAME})
    exit_ = ("alloc__slow__exit", {"address": U64, "alloc_bytes": i, "outcome": i % 6, "gcs": U32})
    gcs = [("gc__start", {"gc_id": i, **gc, "heap_used": U64, "heap_committed": U64 - 2}),
           ("gc__end", {"gc_id": i, **gc, "heap_used": U64 - 3, "heap_committed": U64 - 4})]
    plabs = [("plab__alloc", {"gc_id": i, "plab_start": U64, "plab_bytes": 0x2000, "dest": i % 2}),
             ("plab__retire", {"gc_id": i, "plab_start": U64, "plab_bytes": 0x2000, "used_bytes": 0x1800,
                               "wasted_bytes": 0x800, "dest": i % 2}),
             ("promote__direct", {"gc_id": i, "address": U64, "bytes": 0x4000 + i, "dest": i % 2})]
    pauses = [("gc__pause__start", {"gc_id": i, **pause, "heap_used": U64, "heap_committed": U64 - 2}),
              ("gc__pause__end", {"gc_id": i, **pause, "heap_used": U64 - 3, "heap_committed": U64 - 4})]
    if probe_set == "separate":
        return [refill, enter, exit_, *gcs, *plabs, *pauses]
    slow = [enter, *([refill] if i % 6 in (1, 3) else []), exit_]
    if probe_set == "batched":  # alloc__batch fires last in a round, after plab__batch
        return [*gcs, *pauses, *plabs, *slow]
    return [*gcs, *pauses, *slow, *plabs]


@pytest.mark.parametrize("probe_set", ["batched", "combined", "separate"])
def test_fixture_stream_is_exact_under_four_threads(usdt_fixture, tmp_path, probe_set):
    """Every event of 4 threads x 3000 rounds, each argument, in each thread's
    order; names read once; report's counts agree.  With either probe set."""
    threads, rounds = 4, 3000
    out = tmp_path / "fx.jvmtrace"
    run = record_run([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--threads", str(threads),
                      "--rounds", str(rounds), "--linger", "300"], out, "-b", usdt_fixture,
                     "--probe-set", probe_set)
    assert run.target_rc == 0, run.target_err
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    events = [x for x in recs if x["type"] == "event"]
    per_thread = defaultdict(list)
    for e in events:
        per_thread[e["tid"]].append(e)
    assert len(per_thread) == threads
    expected = [ev for i in range(rounds) for ev in fixture_round(i, probe_set)]
    for tid, evs in per_thread.items():
        assert [(e["probe"], e["args"]) for e in evs] == expected, f"thread {tid}"
        # Time: each clock's stamps in order; across the two, within the
        # skew bound (docs/trace-format.md, "Time and order"): the VM's
        # records (the fixture's clock_gettime) and BPF's bpf_ktime_get_ns()
        # are two readers of CLOCK_MONOTONIC that are not ordered against
        # each other below it (a gc__start stamped 190 ns before the slow
        # path that preceded it was seen on a machine with the tsc
        # clocksource).  The order is the record order, checked above.
        vm = VM_STAMPED[probe_set]
        for stamped_by_vm in (True, False):
            ts = [e["ts_ns"] for e in evs if (e["probe"] in vm) == stamped_by_vm]
            assert ts == sorted(ts), ("VM" if stamped_by_vm else "BPF", probe_set)
        ts = [e["ts_ns"] for e in evs if e["probe"] != "alloc__slow__enter" or probe_set == "separate"]
        assert all(b >= a - CLOCK_SKEW_NS for a, b in zip(ts, ts[1:])), probe_set
        if probe_set != "separate":  # each start lies before its exit, within the fixture's duration
            starts = [e["ts_ns"] for e in evs if e["probe"] == "alloc__slow__enter"]
            exits = [e["ts_ns"] for e in evs if e["probe"] == "alloc__slow__exit"]
            assert all(0 < x - s < 10**8 for s, x in zip(starts, exits))
        assert {e["thread"] for e in evs} == {"usdt_fixture"}
    meta = next(x for x in recs if x["type"] == "meta")
    assert meta["probe_set"] == probe_set
    end = next(x for x in recs if x["type"] == "end")
    assert (end["events"], end["lost"], end["reason"]) == (threads * len(expected), 0, "target exited")
    assert recs[-1]["status"] == "complete"
    rep = json.loads(jvmtrace("report", "--json", out).stdout)
    # (the probes the fixture fires only with --vm-probes are there with 0)
    assert {p: n for p, n in rep["events_by_probe"].items() if n} == \
        {p: threads * n for p, n in Counter(p for p, _ in expected).items()}
    assert rep["slow_path_outcomes"] == {
        name: threads * sum(1 for i in range(rounds) if i % 6 == o)
        for o, name in enumerate(["failed", "new_tlab", "outside_tlab", "new_tlab_after_gc",
                                  "outside_tlab_after_gc", "current_tlab"])}
    assert [c["class"] for c in rep["classes"]] == [NAME]
    # Compact: the encoding must not regress past what this stream costs now
    # (sentinels are 64-bit extremes, far worse than a JVM's values).
    size = out.stat().st_size
    assert size / len(events) < 16, f"{size / len(events):.2f} bytes per event"


@pytest.fixture(scope="module", params=list(GCS))
def jvm_record(request, jdks, java_classes, tmp_path_factory):
    gc = request.param
    d = tmp_path_factory.mktemp(f"record-{gc}")
    out, jfr, log = d / "jvm.jvmtrace", d / "rec.jfr", d / "gc.log"
    run = record_run(java_cmd(jdks["patched"], java_classes, gc, 64, "AllocWorker", 3_000_000, jfr, gc_log=log),
                     out)
    assert run.target_rc == 0, run.target_err
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    return dict(gc=gc, run=run, out=out, jfr=jfr, log=log, home=jdks["patched"], recs=recs,
                events=[x for x in recs if x["type"] == "event"])


def test_jvm_trace_equals_jfr_and_gc_log(jvm_record):
    """The recorded worker thread's TLAB refills and outside-TLAB allocations
    equal JFR's (class, sizes); new PLABs per GC id equal JFR's; GC ids equal
    -Xlog:gc's; no event lost."""
    x = jvm_record
    tid = worker_tid(x["run"])
    ev = [e for e in x["events"] if e["tid"] == tid]
    assert {e["thread"] for e in ev} == {"alloc-worker"}
    ours = Counter((e["args"]["class"], e["args"]["alloc_bytes"], e["args"]["tlab_bytes"])
                   for e in ev if e["probe"] == "tlab__refill")
    jfr = Counter((v["objectClass"]["name"], v["allocationSize"], v["tlabSize"])
                  for v in (j["values"] for j in jfr_events(x["home"], x["jfr"], "jdk.ObjectAllocationInNewTLAB"))
                  if v["eventThread"]["osThreadId"] == tid)
    assert sum(jfr.values()) > 200 and ours == jfr
    # Outside-TLAB: the enter's class, the exit's size and outcome.
    outside, enter = Counter(), None
    for e in ev:
        if e["probe"] == "alloc__slow__enter":
            enter = e
        elif e["probe"] == "alloc__slow__exit" and e["args"]["outcome"] in SLOW_OUTSIDE_TLAB:
            outside[(enter["args"]["class"], e["args"]["alloc_bytes"])] += 1
    jfr_out = Counter((v["objectClass"]["name"], v["allocationSize"])
                      for v in (j["values"] for j in jfr_events(x["home"], x["jfr"], "jdk.ObjectAllocationOutsideTLAB"))
                      if v["eventThread"]["osThreadId"] == tid)
    assert outside == jfr_out
    starts = [e["args"]["gc_id"] for e in x["events"] if e["probe"] == "gc__start"]
    ends = [e["args"]["gc_id"] for e in x["events"] if e["probe"] == "gc__end"]
    logged = parse_gc_log(x["log"].read_text(), go_uptime_s(x["run"].target_out))
    assert len(logged) >= 5 and sorted(starts) == sorted(ends) == [g for g, _, _ in logged]
    jfr_new = Counter(j["values"]["gcId"] for j in jfr_events(x["home"], x["jfr"], "jdk.PromoteObjectInNewPLAB"))
    ours_new = Counter(e["args"]["gc_id"] for e in x["events"] if e["probe"] == "plab__alloc")
    assert sum(jfr_new.values()) > 20 and ours_new == jfr_new
    end = next(r for r in x["recs"] if r["type"] == "end")
    assert end["lost"] == 0 and end["events"] == len(x["events"]) and end["reason"] == "target exited"


def test_jvm_report_agrees_with_the_dump(jvm_record):
    """report's per-GC rows and totals are the dump's events, summed
    independently here."""
    x = jvm_record
    r = jvmtrace("report", "--json", x["out"])
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    ev = x["events"]
    assert rep["events"] == len(ev) and rep["lost"] == 0
    assert rep["events_by_probe"] == dict(Counter(e["probe"] for e in ev)) | {
        p: 0 for p in rep["events_by_probe"] if p not in {e["probe"] for e in ev}}
    refills = [e["args"]["tlab_bytes"] for e in ev if e["probe"] == "tlab__refill"]
    assert rep["tlab_size"]["count"] == len(refills) and rep["tlab_size"]["sum"] == sum(refills)
    assert rep["tlab_size"]["max"] == max(refills)
    gcs = {g["id"]: g for g in rep["gcs"]}
    for e in ev:
        if e["probe"] == "gc__start":
            assert gcs[e["args"]["gc_id"]]["cause"] == e["args"]["cause"]
            assert gcs[e["args"]["gc_id"]]["heap_used_before"] == e["args"]["heap_used"]
    plabs = Counter(e["args"]["gc_id"] for e in ev if e["probe"] == "plab__alloc")
    assert {g: v["plabs"] for g, v in gcs.items() if v["plabs"]} == dict(plabs)
    alloc = sum(refills) + sum(e["args"]["alloc_bytes"] for e in ev
                               if e["probe"] == "alloc__slow__exit" and e["args"]["outcome"] in SLOW_OUTSIDE_TLAB)
    assert sum(rep["allocation_rate"]["bytes"]) == alloc
    text = jvmtrace("report", x["out"])
    assert text.returncode == 0 and "Collections (" in text.stdout and "alloc-worker" in text.stdout


def start_java(jdks, java_classes, main, *args, gc="G1"):
    proc = subprocess.Popen(java_cmd(jdks["patched"], java_classes, gc, 64, main, *args),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    LineReader(proc.stdout).wait_for(lambda l: l.startswith("ready"), 60, "ready")
    return proc


def start_record(pid, out, *extra):
    rec = subprocess.Popen([str(JVMTRACE), "record", "-p", str(pid), "-o", str(out), "-q", *map(str, extra)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = LineReader(rec.stderr)
    err.wait_for(lambda l: l.startswith("Recording PID"), 60, "record to attach")
    rec.err = err  # the reader owns stderr now: rec.err.drain() gives its lines
    return rec


def finish(rec, timeout=60):
    rec.wait(timeout)
    return "\n".join(rec.err.drain())


def record_then_kill(jdks, java_classes, out, seconds, victim):
    """Records a busy JVM for `seconds`, then SIGKILLs the victim ("target" or
    "recorder"); returns the recorder's exit status and stderr."""
    proc = start_java(jdks, java_classes, "AllocWorker", "forever")
    try:
        rec = start_record(proc.pid, out)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(seconds)
        (proc if victim == "target" else rec).kill()
        err = finish(rec)
        return rec.returncode, err
    finally:
        proc.kill()
        proc.wait(60)


def test_target_killed_mid_record_leaves_a_complete_trace(jdks, java_classes, tmp_path):
    out = tmp_path / "killed.jvmtrace"
    rc, err = record_then_kill(jdks, java_classes, out, 2, "target")
    assert rc == 0, err
    assert "target exited" in err
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    events = [x for x in recs if x["type"] == "event"]
    assert len(events) > 100 and recs[-2]["type"] == "end" and recs[-2]["reason"] == "target exited"


def test_recorder_killed_leaves_a_readable_trace(jdks, java_classes, tmp_path):
    """SIGKILL: no end record, but every block written (one a second at
    least) reads; dump says so with exit status 3."""
    out = tmp_path / "recorder-killed.jvmtrace"
    record_then_kill(jdks, java_classes, out, 3, "recorder")
    r, recs = dump_json(out)
    assert r.returncode == 3, r.stderr
    assert "no end record" in r.stderr or "cut off" in r.stderr
    assert sum(1 for x in recs if x["type"] == "event") > 100


def links_and_uprobes():
    links = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True, check=True)
    progs = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True)
    names = set(contract_probes())  # full names, from BTF
    ours = sorted(p["name"] for p in json.loads(progs.stdout or "[]") if p.get("name", "") in names)
    tracefs = "/sys/kernel/tracing/uprobe_events"
    uprobes = open(tracefs).read() if os.path.exists(tracefs) else ""
    return len(json.loads(links.stdout or "[]")), ours, uprobes


def link_order():
    """Our programs' links in the order they were made (link ids ascend):
    [program name, ...], a name once per link (a probe with several sites
    has a link for each)."""
    links = json.loads(subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True,
                                      check=True).stdout or "[]")
    progs = {p["id"]: p.get("name", "") for p in json.loads(subprocess.run(
        ["bpftool", "-j", "prog", "show"], capture_output=True, text=True, check=True).stdout or "[]")}
    names = set(contract_probes())
    return [progs.get(l.get("prog_id")) for l in sorted(links, key=lambda l: l["id"])
            if progs.get(l.get("prog_id")) in names]


# The attach order (usdt_attach.cpp's attach_rank): what a GC, pause or
# safepoint holds, then what ends one, then what begins one.
BEGINS = {"gc__start", "gc__pause__start", "safepoint__begin"}
ENDS = {"gc__end", "gc__pause__end", "safepoint__end"}


def test_attach_and_detach_leave_nothing_behind(jdks, java_classes, tmp_path):
    """While recording, our programs are loaded; after Ctrl-C the link count,
    the loaded programs and tracefs' uprobe_events are as before, and the
    JVM runs on."""
    before = links_and_uprobes()
    assert not before[1], f"jvmtrace programs already loaded: {before[1]}"
    proc = start_java(jdks, java_classes, "AllocWorker", "forever")
    try:
        rec = start_record(proc.pid, tmp_path / "detach.jvmtrace")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        time.sleep(1)
        # auto: the batched set (alloc__batch, plab__batch; alloc__drain loaded, attached only
        # as the recording ends), the GC and pause probes and the safepoints'
        assert links_and_uprobes()[1] == ["alloc__batch", "alloc__drain", "gc__end", "gc__pause__end",
                                          "gc__pause__start", "gc__start", "plab__batch", "safepoint__begin",
                                          "safepoint__end"], \
            "all the programs loaded while recording"
        # The content's probes go in before any GC's or safepoint's end, the
        # ends before the beginnings: a GC whose start is in the trace had
        # plab__batch attached all through it (a live attach once lost the
        # first 4 of its 26 PLABs, gc__start having gone in first).
        rank = [2 if p in BEGINS else 1 if p in ENDS else 0 for p in link_order()]
        assert set(rank) == {0, 1, 2} and rank == sorted(rank), link_order()
        rec.send_signal(signal.SIGINT)
        err = finish(rec)
        assert rec.returncode == 0 and "interrupted" in err, err
        deadline = time.monotonic() + 5
        while links_and_uprobes() != before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert links_and_uprobes() == before
        assert proc.poll() is None, "the JVM must survive the detach"
    finally:
        proc.kill()
        proc.wait(60)


def test_disk_full_stops_cleanly_and_keeps_complete_blocks(usdt_fixture, tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], check=True)
    try:
        out = mnt / "full.jvmtrace"
        # (lingering until killed, an hour at most: the recording must end by
        # the full disk, never by the target's exit)
        fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "any", "--real-tid", "--rounds", "200000",
                               "--linger", "3600000"], stdout=subprocess.PIPE, text=True)
        try:
            LineReader(fx.stdout).wait_for(lambda l: l.startswith("ready"), 30, "fixture")
            r = subprocess.run([str(JVMTRACE), "record", "-p", str(fx.pid), "-b", str(usdt_fixture), "-o", str(out),
                                "-q", "--block-kb", "16"], capture_output=True, text=True, timeout=60)
        finally:
            reap(fx)
        assert r.returncode == 1, r.stderr
        assert "No space left on device" in r.stderr and "complete blocks" in r.stderr, r.stderr
        d, recs = dump_json(out)
        assert d.returncode == 3 and "no end record" in d.stderr, d.stderr
        events = [x for x in recs if x["type"] == "event"]
        assert len(events) > 1000
        assert recs[-1]["status"] == "no_end"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_bad_input_gets_a_clear_error(jdks, java_classes, tmp_path, usdt_fixture):
    r = jvmtrace("record", "-p", os.getpid(), "-o", tmp_path / "x")
    assert r.returncode == 1 and "is not a JVM" in r.stderr and not (tmp_path / "x").exists()
    p = subprocess.Popen(["true"]); p.wait()
    r = jvmtrace("record", "-p", p.pid, "-o", tmp_path / "x")
    assert r.returncode == 1 and f"no process with PID {p.pid}" in r.stderr
    for bad in (["record"], ["record", "-p", "1"], ["record", "-o", "f"], ["record", "-p", "1", "-o", "f", "-d", "0"],
                ["record", "-p", "1", "-o", "f", "--buffer-mb", "3"], ["dump"], ["dump", "a", "b"], ["report"]):
        r = jvmtrace(*bad)
        assert r.returncode == 2 and "jvmtrace" in r.stderr, (bad, r.stderr)
    for cmd in ("record", "dump", "report"):
        h = jvmtrace(cmd, "--help")
        assert h.returncode == 0 and "USAGE" in h.stdout and "EXAMPLES" in h.stdout
    fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "stdin"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    try:
        LineReader(fx.stdout).wait_for(lambda l: l.startswith("ready"), 30, "fixture")
        r = jvmtrace("record", "-p", fx.pid, "-b", usdt_fixture, "-o", "/proc/no/such/dir/x")
        assert r.returncode == 1 and "cannot create /proc/no/such/dir/x" in r.stderr
    finally:
        fx.stdin.close()
        fx.wait(30)
    # Files that are not traces.
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "text").write_text("hello, this is not a trace at all\n")
    for f, msg in ((tmp_path / "empty", "shorter than the 16-byte file header"),
                   (tmp_path / "text", "does not start with \"JVMTRACE\""),
                   (tmp_path / "missing", "No such file"), (tmp_path, "is a directory")):
        for cmd in ("dump", "report"):
            r = jvmtrace(cmd, f)
            assert r.returncode == 1 and msg in r.stderr, (cmd, f, r.stderr)


def test_segments_rotate_each_reads_alone_and_only_the_newest_are_kept(usdt_fixture, tmp_path):
    """--segment-mb 1 --keep 3: several segments are written, the newest three
    remain, each is a complete trace on its own (tables repeated, an end record
    pointing at the next), and together they hold each thread's events as an
    unbroken tail of what the fixture fired."""
    threads, rounds = 2, 60000
    base = tmp_path / "seg.jvmtrace"
    run = record_run([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--threads", str(threads),
                      "--rounds", str(rounds), "--linger", "300"], base, "-b", usdt_fixture, *SEPARATE, "--segment-mb", "1",
                     "--keep", "3", "--block-kb", "64")
    assert run.target_rc == 0, run.target_err
    files = sorted(tmp_path.glob("seg.*.jvmtrace"))
    assert len(files) == 3, files
    numbers = [int(f.name.split(".")[1]) for f in files]
    assert numbers == list(range(numbers[0], numbers[0] + 3)) and numbers[0] >= 1, numbers  # older ones deleted
    per_thread = defaultdict(list)
    for i, f in enumerate(files):
        r, recs = dump_json(f)
        assert r.returncode == 0, (f, r.stderr)
        end = next(x for x in recs if x["type"] == "end")
        if i < 2:
            assert end["reason"] == f"continued in the next segment: {files[i + 1]}"
        else:
            assert end["reason"] == "target exited" and end["events"] == threads * rounds * PROBES
        for e in recs:
            if e["type"] == "event":
                assert e["thread"] == "usdt_fixture" and e["args"].get("class", NAME) == NAME
                per_thread[e["tid"]].append((e["probe"], e["args"]))
    expected = [ev for i in range(rounds) for ev in fixture_round(i)]
    assert len(per_thread) == threads
    for tid, evs in per_thread.items():
        assert 0 < len(evs) < len(expected)
        assert evs == expected[len(expected) - len(evs):], f"thread {tid}: not an unbroken tail"


# --- the trace file: created safely, meta not forgeable, blocks bounded, losses counted ---

def fixture_record(usdt_fixture, out, *extra, rounds=200):
    """Records the fixture's rounds into out; returns the TraceRun."""
    return record_run([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--rounds", str(rounds),
                       "--linger", "200"], out, "-b", usdt_fixture, *SEPARATE, *map(str, extra))


def test_output_is_never_followed_or_written_through(usdt_fixture, tmp_path):
    """A symlink at -o is refused and its target untouched; a hard link or a
    regular file at -o is replaced by a new file (the other link keeps its
    bytes), as scripts/trace-demo.sh relies on; a segment name that exists,
    before or during the recording, is refused and nothing behind it written."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    ino = victim.stat().st_ino
    link = tmp_path / "link.jvmtrace"
    link.symlink_to(victim)
    fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "stdin"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True)
    try:
        LineReader(fx.stdout).wait_for(lambda l: l.startswith("ready"), 30, "fixture")
        r = jvmtrace("record", "-p", fx.pid, "-b", usdt_fixture, "-o", link, "-q", "-d", "1")
        assert r.returncode == 1 and f"refusing to write {link}: it is a symbolic link" in r.stderr, r.stderr
        assert link.is_symlink() and victim.read_text() == "precious"
        # Segments: an earlier recording's segment (here a symlink) is refused before anything attaches.
        (tmp_path / "seg.000003.jvmtrace").symlink_to(victim)
        r = jvmtrace("record", "-p", fx.pid, "-b", usdt_fixture, "-o", tmp_path / "seg.jvmtrace", "-q", "-d", "1",
                     "--segment-mb", "1")
        assert r.returncode == 1 and "seg.000003.jvmtrace exists" in r.stderr, r.stderr
        assert not (tmp_path / "seg.000000.jvmtrace").exists() and victim.read_text() == "precious"
    finally:
        fx.stdin.close()
        fx.wait(30)
    hard = tmp_path / "hard.jvmtrace"
    os.link(victim, hard)
    for attempt in range(2):  # a hard link, then the trace written the first time: both replaced
        run = fixture_record(usdt_fixture, hard)
        assert run.target_rc == 0 and "target exited" in run.trace_err, run.trace_err
        r, recs = dump_json(hard)
        assert r.returncode == 0 and sum(1 for x in recs if x["type"] == "event") == 200 * PROBES, r.stderr
        assert hard.stat().st_ino != ino and hard.stat().st_nlink == 1
    assert victim.read_text() == "precious" and victim.stat().st_ino == ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.jvmtrace", "link.jvmtrace", "seg.000003.jvmtrace",
                                                          "victim"], "a temporary file was left behind"
    # A symlink planted at the next segment's name during the recording:
    # the rotation fails clearly, the target stays untouched, the finished
    # segment reads.
    (tmp_path / "seg.000003.jvmtrace").unlink()
    # (lingering until killed, an hour at most: the rotation must come while it lives)
    fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--rounds", "1000",
                           "--linger", "3600000"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        LineReader(fx.stdout).wait_for(lambda l: l.startswith("ready"), 30, "fixture")
        base = tmp_path / "rot.jvmtrace"
        rec = subprocess.Popen([str(JVMTRACE), "record", "-p", str(fx.pid), "-b", str(usdt_fixture), "-o",
                                str(base), "-q", "--segment-seconds", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "record to attach")
        (tmp_path / "rot.000001.jvmtrace").symlink_to(victim)
        fx.stdin.write("go\n")
        fx.stdin.flush()
        rec.wait(60)
        text = "\n".join(err.drain())
        assert rec.returncode == 1 and f"refusing to write {tmp_path}/rot.000001.jvmtrace: it is a symbolic link" in text, text
        assert victim.read_text() == "precious"
        r, recs = dump_json(tmp_path / "rot.000000.jvmtrace")
        assert r.returncode == 0 and any(x["type"] == "event" for x in recs), r.stderr
    finally:
        fx.kill()
        fx.wait(30)


EVIL_ARG = "x\nlibjvm=/etc/shadow\npid=1\nstart_monotonic_ns=5\\n"


def test_meta_cannot_be_forged_by_the_targets_command_line(jdks, java_classes, tmp_path):
    """A JVM whose program argument holds newlines and key=value text: dump
    (text and --json) and report show the real pid and libjvm, and the
    argument intact, the same as /proc/PID/cmdline."""
    out = tmp_path / "evil.jvmtrace"
    cmd = java_cmd(jdks["patched"], java_classes, "G1", 64, "SystemGc", 2, EVIL_ARG)
    run = record_run(cmd, out)
    assert run.target_rc == 0, run.target_err
    argv = exec_argv(cmd)  # what /proc/PID/cmdline said (21, 25: the wrapper execs the real java)
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    meta = recs[0]
    assert meta["type"] == "meta" and meta["pid"] == str(run.pid) and meta["binary"].endswith("/libjvm.so"), meta
    assert meta["cmdline"] == " ".join(argv) and EVIL_ARG in meta["cmdline"], meta["cmdline"]
    assert int(meta["start_monotonic_ns"]) > 1000, meta
    text = jvmtrace("dump", out)
    header = text.stdout.splitlines()[:2]
    assert header[0].startswith(f"# PID {run.pid}, ") and header[0].endswith("/libjvm.so"), header
    assert header[1] == "# cmdline: " + " ".join(argv).replace("\\", "\\\\").replace("\n", "\\n"), header
    rep = json.loads(jvmtrace("report", "--json", out).stdout)
    assert rep["pid"] == run.pid and rep["cmdline"] == " ".join(argv)
    assert not any(l.startswith("pid=1") for l in jvmtrace("report", out).stdout.splitlines())
    # A command line longer than the meta record holds is cut, saying so, and
    # every later key is still there (a 64 KiB meta record used to lose them).
    long = tmp_path / "long.jvmtrace"
    cmd = java_cmd(jdks["patched"], java_classes, "G1", 64, "SystemGc", 1, "\\" * 70000)
    run = record_run(cmd, long)
    assert run.target_rc == 0, run.target_err
    argv = exec_argv(cmd)
    r, recs = dump_json(long)
    meta = recs[0]
    assert r.returncode == 0 and meta["cmdline"] == " ".join(argv)[:16384], r.stderr
    assert meta["cmdline_bytes"] == str(len(" ".join(argv))) and int(meta["ring_buffer_bytes"]) > 0, meta.keys()


def test_largest_blocks_with_stacks_on_a_long_run_read_back_complete(jdks, java_classes, tmp_path):
    """--block-kb at its maximum with user stacks for 25 s of an allocating JVM
    and a perf map refreshed every half second: the trace reads complete,
    report --check finds it consistent, and the counts agree.  The JVM runs
    until killed: a fixed amount of work ended before the 25 s on a faster
    machine (the recording then ends by the target's exit, not its duration)."""
    out = tmp_path / "big.jvmtrace"
    java = str(Path(jdks["patched"]) / "bin/java")
    proc = subprocess.Popen([java, "-XX:+UseG1GC", "-Xms64m", "-Xmx64m", "-XX:+PreserveFramePointer", "-cp",
                             str(java_classes), "AllocWorker", "forever"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        LineReader(proc.stdout).wait_for(lambda l: l.startswith("ready"), 60, "ready")
        rec = start_record(proc.pid, out, "--block-kb", 16384, "--stacks-from", "user", "--perfmap-seconds", "0.5",
                           "-d", 25, "-v")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        err = finish(rec, 120)
        assert rec.returncode == 0 and "duration elapsed" in err, err
    finally:
        proc.kill()
        proc.wait(60)
    m = re.search(r"(\d+) blocks in the last file; the largest block payload (\d+) bytes", err)
    assert m and int(m.group(2)) <= 16 << 20, err
    assert int(re.search(r"(\d+) distinct stacks", err).group(1)) > 10, err
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    events = sum(1 for x in recs if x["type"] == "event")
    end = next(x for x in recs if x["type"] == "end")
    assert events > 100000 and end["events"] == events, (events, end)
    c = json.loads(jvmtrace("report", "--check", "--json", out, timeout=300).stdout)
    assert c["violations"] == 0, c["found"][:5]
    assert json.loads(jvmtrace("report", "--json", out, timeout=300).stdout)["events"] == events


def test_option_ranges_are_checked_at_their_edges(usdt_fixture, tmp_path):
    """Every numeric option of record: the largest value works, one more is
    refused naming the option and its range (--buffer-mb 4096 used to wrap
    to 0 and fail with an unrelated error)."""
    refused = {
        ("--buffer-mb", "4096"): "--buffer-mb takes a power of two from 1 to 2048",
        ("--buffer-mb", "0"): "--buffer-mb takes a power of two from 1 to 2048",
        ("--block-kb", "16385"): "--block-kb takes a number from 1 to 16384",
        ("--block-kb", "0"): "--block-kb takes a number from 1 to 16384",
        ("-d", "10000001"): "-d takes a number of seconds above 0, at most 1e7",
        ("--segment-mb", "10000001"): "--segment-mb takes a number of MiB from 0.0625 to 1e7",
        ("--segment-mb", "0.06"): "--segment-mb takes a number of MiB from 0.0625 to 1e7",
        ("--segment-seconds", "1e8"): "--segment-seconds takes a number of seconds above 0, at most 1e7",
        ("--keep", "1000001"): "--keep takes a number from 1 to 1000000",
        ("--perfmap-seconds", "0.1"): "--perfmap-seconds takes a number of seconds from 0.2 to 1e7",
        ("-p", "4194305"): "PID must be a number from 1 to 4194304",
        ("--stacks-from", "kernel"): "--stacks-from takes vm or user, not 'kernel'",
    }
    for (opt, val), msg in refused.items():
        r = jvmtrace("record", "-p", "1", "-o", tmp_path / "r.jvmtrace", opt, val)
        assert r.returncode == 2 and msg in r.stderr, (opt, val, r.stderr)
    assert not (tmp_path / "r.jvmtrace").exists()
    # The largest values at once, on a real recording: it works.
    run = fixture_record(usdt_fixture, tmp_path / "max.jvmtrace", "--buffer-mb", 2048, "--block-kb", 16384,
                         "-d", "1e7", "--segment-mb", "1e7", "--segment-seconds", "1e7", "--keep", 1000000)
    assert run.target_rc == 0, run.target_err
    assert "target exited" in run.trace_err, run.trace_err
    r, recs = dump_json(tmp_path / "max.000000.jvmtrace")
    assert r.returncode == 0 and recs[0]["ring_buffer_bytes"] == str(2048 << 20), r.stderr
    assert sum(1 for x in recs if x["type"] == "event") == 200 * PROBES


LOST_LINE = re.compile(r"(\d+) lost \(ring buffer full (\d+), malformed kernel records (\d+), "
                       r"GC ends without a start (\d+)\)")


def test_every_loss_cause_is_counted_stored_and_shown(usdt_fixture, tmp_path):
    """A clean run: record's end line names every cause of loss with 0, and
    report shows them; a trace holding a loss of another cause (trace_edit
    inserts one) shows it in dump, report and report --json."""
    out = tmp_path / "clean.jvmtrace"
    run = fixture_record(usdt_fixture, out)
    assert run.target_rc == 0, run.target_err
    m = LOST_LINE.search(run.trace_err)
    assert m and m.groups() == ("0", "0", "0", "0"), run.trace_err
    rep = json.loads(jvmtrace("report", "--json", out).stdout)
    assert rep["lost"] == 0 and rep["lost_by_kind"] == {"ring_buffer_full": 0, "malformed_kernel_records": 0,
                                                         "gc_ends_without_start": 0, "name_table_full": 0,
                                                         "left_unread": 0}, rep
    assert "lost by cause: ring buffer full 0, malformed kernel records 0, GC ends without a start 0" in \
        jvmtrace("report", out).stdout
    edited = tmp_path / "edited.jvmtrace"
    for kind, name, words in ((1, "malformed_kernel_records", "malformed kernel records"),
                              (2, "gc_ends_without_start", "GC ends without a start"),
                              (3, "name_table_full", "name tables full"),
                              (4, "left_unread", "records left unread")):
        r = subprocess.run([str(BUILD_DIR / "tests/fixtures/trace_edit"), out, edited, "lost", "100", str(kind), "7"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        d, recs = dump_json(edited)
        assert d.returncode == 0, d.stderr
        lost = [x for x in recs if x["type"] == "lost"]
        assert [(x["kind"], x["count"]) for x in lost] == [(name, 7)], lost
        assert recs[-2]["type"] == "end" and recs[-2]["lost"] == 7
        rep = json.loads(jvmtrace("report", "--json", edited).stdout)
        assert rep["lost"] == 7 and rep["lost_by_kind"][name] == 7 and rep["lost_by_kind"]["ring_buffer_full"] == 0
        assert f"{words} 7" in jvmtrace("report", edited).stdout
        assert f"# LOST 7 events: {words}" in jvmtrace("dump", edited).stdout


def test_stacks_of_a_jvm_whose_tmp_went_with_its_namespace_are_named_from_its_exit_map(jdks17, java_classes,
                                                                                        tmp_path):
    """A JVM in a mount namespace of its own with its own /tmp (a container
    with a tmpfs /tmp), which cannot be attached to (-XX:+DisableAttachMechanism):
    its JIT code is named only by the perf map HotSpot writes at exit
    (-XX:+DumpPerfMapAtExit), in a /tmp that is gone with the namespace by the
    time the recorder reads it.  The recorder holds that directory from the
    start, so the map is read and the work's bytes sit under
    AllocWorker.work.  (Before: not one byte was; seen first as the stock-21
    flame test failing in CI, whose JVMs run in the Debian 13 root.)"""
    import shutil
    import tempfile
    classes = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="jvmtrace-ns-classes-"))  # the JVM's /tmp hides /tmp
    try:
        shutil.copytree(java_classes, classes, dirs_exist_ok=True)
        out = tmp_path / "ns.jvmtrace"
        java = Path(jdks17["patched"]) / "bin/java"
        script = (f"mount -t tmpfs none /tmp && exec {java} -XX:+PreserveFramePointer -XX:+UnlockDiagnosticVMOptions "
                  f"-XX:+DumpPerfMapAtExit -XX:+DisableAttachMechanism -XX:+UseG1GC -Xmx64m -cp {classes} "
                  f"AllocWorker 20000000")
        r = subprocess.run([str(JVMTRACE), "record", "-q", "--stacks", "-o", str(out), "--", "unshare", "-m", "sh",
                            "-c", script], capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stderr[-2000:]
        flame = subprocess.run([str(JVMTRACE), "flame", str(out), "-o", "-", "--collapsed"], capture_output=True,
                               text=True, timeout=60, check=True).stdout
        lines = [l.rsplit(" ", 1) for l in flame.splitlines()]
        total = sum(int(n) for _, n in lines)
        in_work = sum(int(n) for stack, n in lines if "AllocWorker.work_[j]" in stack.split(";"))
        assert total > 100 << 20 and in_work >= 0.7 * total, (in_work, total, r.stderr[-1500:])
    finally:
        shutil.rmtree(classes, ignore_errors=True)


def test_a_thread_gone_before_the_recorder_looks_keeps_its_name(jdks, java_classes, tmp_path):
    """ShortThreads runs 40 threads one after another, each named short-NN,
    allocating 1 MB and gone in a moment.  The recorder is stopped (SIGSTOP:
    a loaded host) from before the first starts until after the last has
    exited, so by the time it reads their events every one is gone from
    /proc.  Each is still named in the trace: its name was read in the
    kernel by the thread itself before its first record (decision 119).
    Before, record read /proc/PID/task/TID/comm at a thread's first event
    and wrote "<exited>" for all 40.  The heap is large enough for no
    collection to run meanwhile: at a safepoint the VM thread flushes every
    thread's batch, and a thread whose records are first seen in the VM
    thread's batch is named from /proc as before (the kernel can only read
    the name of the thread that fires).  A safepoint of another cause may
    still catch one or two: at most 2 of 40 may be unnamed."""
    threads, may_miss = 40, 2
    trace = tmp_path / "short.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    jvm = subprocess.Popen([str(java), "-XX:+UseG1GC", "-Xms1g", "-Xmx1g", "-Xmn800m", "-cp", str(java_classes),
                            "ShortThreads", str(threads)], cwd=tmp_path, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rec = None
    try:
        out = LineReader(jvm.stdout)
        out.wait_for(lambda l: l.startswith("ready "), 60, "ShortThreads to start")
        rec = subprocess.Popen([str(JVMTRACE), "record", "-v", "--buffer-mb", "64", "-p", str(jvm.pid), "-o",
                                str(trace)], stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        os.kill(rec.pid, signal.SIGSTOP)
        try:
            jvm.stdin.write("go\n")
            jvm.stdin.flush()
            out.wait_for(lambda l: l.startswith("done "), 120, "ShortThreads' threads to finish")
            alive = [t for t in os.listdir(f"/proc/{jvm.pid}/task")
                     if open(f"/proc/{jvm.pid}/task/{t}/comm").read().startswith("short-")]
            assert not alive, f"threads still alive while the recorder was stopped: {alive}"
        finally:
            os.kill(rec.pid, signal.SIGCONT)
        jvm.stdin.write("\n")
        jvm.stdin.close()
        assert jvm.wait(120) == 0, jvm.stderr.read()[-2000:]
        assert rec.wait(120) == 0, "\n".join(err.drain())
        rec_err = "\n".join(err.drain())
    finally:
        reap(jvm, rec)
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    events = [x for x in recs if x.get("type") == "event"]
    names = {x["thread"] for x in events if x["thread"].startswith("short-")}
    info = f"{len(names)} of {threads} named: {sorted(names)}; {rec_err[-600:]}"
    print(info)
    assert names <= {f"short-{i:02d}" for i in range(threads)}, info
    assert len(names) >= threads - may_miss, info
    m = re.search(r"threads: (\d+) named by the kernel as they first fired, (\d+) from /proc; (\d+) without a name",
                  rec_err)
    assert m and int(m.group(1)) >= len(names), info
    # A thread that is named is named on every one of its events.
    by_tid = defaultdict(set)
    for x in events:
        by_tid[x["tid"]].add(x["thread"])
    assert all(len(v) == 1 for v in by_tid.values()), {t: v for t, v in by_tid.items() if len(v) > 1}


def process_state(pid):
    """The one-letter state of /proc/PID/stat (T: stopped)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


# What one fixture round sends through the ring buffer, in the unit the
# BPF side counts a loss in (bpf/event_stream.bpf.h, jvmtrace_record.bpf.c):
# an event for a probe of its own, a record for a batch (a batch that finds
# the ring full adds its record count to `dropped`).  Batched, a round is
# four GC and pause events, plab__batch's 3 records and alloc__batch's 1
# (--batch 1); separate, the ten probes of fixture_round.
RING_UNITS_PER_ROUND = {"separate": 10, "batched": 4 + 3 + 1}


def ring_units(events, probe_set):
    """The units of RING_UNITS_PER_ROUND that these decoded events came in:
    batched, a slow path (enter, a refill or not, exit) is one record."""
    if probe_set == "separate":
        return len(events)
    return sum(1 for e in events if e["probe"] not in ("alloc__slow__enter", "tlab__refill"))


def is_subsequence(part, whole):
    it = iter(whole)
    return all(any(x == y for y in it) for x in part)


@pytest.mark.parametrize("probe_set", ["separate", "batched"])
def test_a_full_ring_buffer_loses_exactly_what_it_counts(usdt_fixture, tmp_path, probe_set):
    """A real overflow: the recorder is stopped (SIGSTOP) with a 1 MiB ring
    buffer while 4 fixture threads fire 4 x 6000 rounds (about ten times what
    the buffer holds), then let go.  What the trace holds plus its
    ring_buffer_full count equals what the fixture fired, exactly (the
    fixture's own count, "fired N"); what it holds is, per thread, the
    fixture's stream with events left out, never altered or reordered; no
    other cause of loss."""
    threads, rounds = 4, 6000
    out = tmp_path / "overflow.jvmtrace"
    fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--threads", str(threads),
                           "--rounds", str(rounds), "--linger", "3600000"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rec = None
    try:
        fx_out = LineReader(fx.stdout)
        pid = int(fx_out.wait_for(lambda l: l.startswith("ready "), 60, "the fixture").split()[1])
        rec = start_record(pid, out, "-b", usdt_fixture, "--probe-set", probe_set, "--buffer-mb", "1")
        os.kill(rec.pid, signal.SIGSTOP)
        wait_until(lambda: process_state(rec.pid) == "T", 10, "the recorder to stop")
        fx.stdin.write("go\n")
        fx.stdin.flush()
        fired = int(fx_out.wait_for(lambda l: l.startswith("fired "), 120, "the fixture to fire").split()[1])
        assert fired == threads * rounds
        os.kill(rec.pid, signal.SIGCONT)
        rec.send_signal(signal.SIGINT)
        err = finish(rec)
        assert rec.returncode == 0, err
    finally:
        if rec is not None and rec.poll() is None:
            os.kill(rec.pid, signal.SIGCONT)
        reap(fx, rec)
    r, recs = dump_json(out)
    assert r.returncode == 0, r.stderr
    events = [x for x in recs if x["type"] == "event"]
    lost = Counter()
    for x in recs:
        if x["type"] == "lost":
            lost[x["kind"]] += x["count"]
    sent = RING_UNITS_PER_ROUND[probe_set] * fired
    kept = ring_units(events, probe_set)
    print(f"{probe_set}: {sent} sent, {kept} kept, {lost['ring_buffer_full']} counted as ring_buffer_full")
    assert set(lost) == {"ring_buffer_full"}, lost
    assert kept + lost["ring_buffer_full"] == sent, (kept, dict(lost), sent)
    assert kept < sent // 4, "the buffer did not overflow much: the test lost its point"
    per_thread = defaultdict(list)
    for e in events:
        per_thread[e["tid"]].append((e["probe"], e["args"]))
    expected = [ev for i in range(rounds) for ev in fixture_round(i, probe_set)]
    for tid, evs in per_thread.items():
        assert is_subsequence(evs, expected), f"thread {tid}: events altered or out of order"
    end = next(x for x in recs if x["type"] == "end")
    assert (end["events"], end["lost"]) == (len(events), lost["ring_buffer_full"])
    assert f"ring buffer full {lost['ring_buffer_full']}," in err, err


def test_the_end_collects_the_buffers_without_periodic_safepoints(jdks, java_classes, tmp_path):
    """A batched recording's end asks the VM for a safepoint (alloc__drain)
    to collect the slow paths still in its buffers.  Before decision 147, 17
    and 21 asked through SafepointSynchronize::is_cleanup_needed(), which the
    VM thread consults only every GuaranteedSafepointInterval, and 25
    through the ServiceThread's timer (ServiceThreadCleanupInterval): with
    either set to 0 a quiet JVM took no safepoint, the recorder waited its
    5 s and said the last slow paths were missing.  Now a periodic task of
    jvmtrace's wakes the ServiceThread, which forces one: on a JVM with both
    intervals 0, idle since its work, the end takes well under a second and
    the threads' slow paths are in the trace."""
    trace = tmp_path / "quiet.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:GuaranteedSafepointInterval=0"]
    if int(jdks["line"]) >= 25:
        flags.append("-XX:ServiceThreadCleanupInterval=0")
    jvm = subprocess.Popen([str(java), *flags, "-XX:+UseG1GC", "-Xms1g", "-Xmx1g", "-Xmn800m", "-cp",
                            str(java_classes), "ShortThreads", "8"], cwd=tmp_path, stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rec = None
    try:
        out = LineReader(jvm.stdout)
        out.wait_for(lambda l: l.startswith("ready "), 60, "ShortThreads to start")
        rec = subprocess.Popen([str(JVMTRACE), "record", "-v", "-p", str(jvm.pid), "-o", str(trace)],
                               stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        out.wait_for(lambda l: l.startswith("done "), 120, "ShortThreads' threads to finish")
        os.kill(rec.pid, signal.SIGINT)
        assert rec.wait(60) == 0
        rec_err = "\n".join(err.drain())
        jvm.stdin.write("\n")
        jvm.stdin.close()
        assert jvm.wait(120) == 0, jvm.stderr.read()[-2000:]
    finally:
        reap(jvm, rec)
    assert "reached no safepoint in time" not in rec_err, rec_err[-1500:]
    m = re.search(r"the end: (\d+) ms collecting the JVM's buffers", rec_err)
    assert m, rec_err[-1500:]
    print(f"the end collected the buffers in {m.group(1)} ms")
    assert int(m.group(1)) < 1000, rec_err[-1500:]
    # Each short-lived thread is there (its records went out as it exited).
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    arrays = Counter(x["thread"] for x in recs if x.get("type") == "event" and x.get("probe") == "alloc__slow__exit"
                     and x["thread"].startswith("short-"))
    assert len(arrays) == 8, arrays
