"""The combined probes (alloc__slow, plab__batch) and the batched ones
(alloc__batch, plab__batch) report exactly what the separate ones report, on
the real patched JVM: one hit per slow path, or per batch of a thread's slow
paths, and one per batch of PLAB events, instead of three per refill and two
per PLAB.

Both sets fire in the same run (each has its own semaphores), so the
comparisons are event for event, not statistical."""
import json
import signal
import subprocess
import time
from collections import Counter, defaultdict

import pytest

from conftest import BUILD_DIR
from helpers import SLOW_FAILED, SLOW_NEW_TLAB, LineReader
from test_jvm_probes import GCS, java_cmd

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
RAWDUMP = BUILD_DIR / "userspace/jvmtrace-rawdump"
PLAB_KINDS = {"plab__alloc": 0, "plab__retire": 1, "promote__direct": 2}
PROBE_SETS = ("batched", "combined", "separate")


def held_jvm(jdks, java_classes, gc, main, *args, heap_mb=64, flags=()):
    """An AllocWorker-style JVM waiting for "go" on stdin (ready printed)."""
    cmd = java_cmd(jdks["patched"], java_classes, gc, heap_mb, main, *args)
    cmd[1:1] = flags
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = LineReader(proc.stdout)
    out.wait_for(lambda l: l.startswith("ready"), 60, "the JVM's ready line")
    return proc, out


def record_cmd(pid, path, probe_set):
    return [str(JVMTRACE), "record", "-p", str(pid), "-o", str(path), "-q", "--probe-set", probe_set]


def dump_events(path):
    """The trace's events, as `jvmtrace dump --json` gives them."""
    d = subprocess.run([str(JVMTRACE), "dump", "--json", str(path)], capture_output=True, text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    return [e for e in map(json.loads, d.stdout.splitlines()) if e["type"] == "event"]


def release_and_wait(proc, out, timeout=180):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    proc.stdin.close()
    assert proc.wait(timeout) == 0, proc.stderr.read()[-2000:]
    return next(int(l.split()[2]) for l in out.drain(30) if l.startswith("worker tid "))


def attach(cmd, banner):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err = LineReader(p.stderr)
    err.wait_for(lambda l: l.startswith(banner), 60, f"{cmd[1]} to attach")
    return p, err


def parse_raw(lines):
    """[(name, ts, tid, [int args], strings)] from jvmtrace-rawdump's lines."""
    out = []
    for line in lines:
        name, ts, tid, args, *rest = line.split(" ", 4)
        vals = [int(v) for v in args.split("=", 1)[1].split(",")]
        out.append((name, int(ts.split("=")[1]), int(tid.split("=")[1]), vals, " ".join(rest)))
    return out


@pytest.mark.parametrize("gc", GCS)
def test_each_combined_hit_equals_the_separate_hits_it_stands_for(jdks, java_classes, gc):
    """jvmtrace-rawdump on every probe at once.  Per thread, each alloc__slow
    follows its alloc__slow__enter, tlab__refill (new-TLAB outcomes) and
    alloc__slow__exit, with the same values; its VM-measured start and
    duration lie inside the enter and exit hits.  Each collection's batch
    records are exactly its plab__alloc, plab__retire and promote__direct
    hits (thread, address, sizes, destination), made before its gc__end;
    every batch is fired after the safepoint its pause ran in (none while
    the world is stopped) and carries that safepoint's id."""
    proc, out = held_jvm(jdks, java_classes, gc, "AllocWorker", 5_000_000)
    dump, derr = attach([str(RAWDUMP), "-p", str(proc.pid)], "attached 17 probes")
    try:
        release_and_wait(proc, out)
    finally:
        dump_out = dump.stdout.read()  # ends with the JVM (stderr is derr's)
        dump.wait(120)
        dump_err = "\n".join(derr.drain(30))
    assert dump.returncode == 0 and "dropped 0" in dump_err, dump_err[-500:]
    events = parse_raw(dump_out.splitlines())

    # Mutator slow paths, thread by thread.
    per_thread = defaultdict(list)
    for e in events:
        if e[0] in ("alloc__slow__enter", "tlab__refill", "alloc__slow__exit", "alloc__slow"):
            per_thread[e[2]].append(e)
    checked = 0
    for tid, evs in per_thread.items():
        for k, (name, ts, _, a, cls) in enumerate(evs):
            if name != "alloc__slow":
                continue
            alloc_bytes, _, _, outcome, tlab_bytes, duration, address, waste, gcs, start, _ = a
            exit_ = evs[k - 1]
            assert exit_[0] == "alloc__slow__exit", (tid, evs[max(0, k - 3):k + 1])
            assert exit_[3][:4] == [address, alloc_bytes, outcome, gcs]
            new_tlab = outcome in SLOW_NEW_TLAB
            refill = evs[k - 2] if new_tlab else None
            enter = evs[k - 3] if new_tlab else evs[k - 2]
            if enter[0] != "alloc__slow__enter":  # attached mid-slow-path: neither saw its entry
                assert start == 0 and duration == 0 and checked == 0
                continue
            assert enter[3][0] == alloc_bytes and enter[4] == cls
            if new_tlab:
                assert refill[0] == "tlab__refill"
                assert refill[3][:3] == [address, tlab_bytes, alloc_bytes] and refill[3][5] == waste
            else:
                assert tlab_bytes == 0 and waste == 0
            # The VM's clock is BPF's: the slow path starts after the enter's hit
            # and ends before the exit's (the VM reads its end before any
            # probe at the end fires).
            assert enter[1] <= start and start + duration <= exit_[1] < ts, (enter[1], start, duration, exit_[1])
            checked += 1
    assert checked > 500, checked

    # PLAB events: the records of each collection equal its separate hits.
    records, separate, batch_seen, ended = Counter(), Counter(), defaultdict(int), {}
    safepoints_ended, safepoints_begun, early, handed_over, lasts = set(), set(), set(), 0, Counter()
    for name, ts, tid, a, _ in events:
        if name in PLAB_KINDS:
            if name == "plab__retire":  # gc_id, start, bytes, used, wasted, dest, tid
                key = (a[0], tid, 1, a[1], a[2], a[3], a[5])
            elif name == "plab__alloc":  # gc_id, start, bytes, dest, tid
                key = (a[0], tid, 0, a[1], a[2], 0, a[3])
            else:  # gc_id, address, bytes, dest, tid
                key = (a[0], tid, 2, a[1], a[2], a[2], a[3])
            separate[key] += 1
        elif name == "plab__batch.record":  # ts_ns, address, bytes, used, gc_id, tid, kind, dest
            rts, address, size, used, gc_id, rtid, kind, dest = a
            assert gc_id in ended, f"a record of GC {gc_id} fired before its gc__end: inside the pause"
            assert rts < ended[gc_id], f"a record of GC {gc_id} made after its gc__end"
            records[(gc_id, rtid, kind, address, size, used, dest)] += 1
            batch_seen[gc_id] += 1
            assert rts <= ts
        elif name == "plab__batch":  # records, count, record_bytes, tid, safepoint_id, last
            if a[4] not in safepoints_ended:  # (only the safepoint that ends the VM, checked below)
                early.add(a[4])
            handed_over += 1
            lasts[a[4]] += a[5]
        elif name == "safepoint__end":
            safepoints_ended.add(a[7])
        elif name == "safepoint__begin":
            safepoints_begun.add(a[1])
        elif name == "gc__end":
            ended[a[0]] = ts
    assert sum(separate.values()) > 200, sum(separate.values())
    assert records == separate
    assert handed_over > 0
    # Fired before its safepoint's end: only the one that ends the VM (it has no end).
    assert early <= {max(safepoints_begun)} and max(safepoints_begun) not in safepoints_ended, early
    # One last plab__batch after every safepoint while attached (the one that ends the VM aside).
    assert set(lasts.values()) == {1} and len(safepoints_ended - set(lasts)) <= 1, (lasts, safepoints_ended)
    # Fewer hits: a batch carries up to 256 records.
    batches = sum(1 for e in events if e[0] == "plab__batch")
    assert batches * 4 < sum(records.values()), (batches, sum(records.values()))

    # alloc__batch: per allocating thread, its records are its alloc__slow
    # hits, field for field and in order (one end time read for both).
    slow_hits, batch_recs = defaultdict(list), defaultdict(list)
    for name, ts, tid, a, cls in events:
        if name == "alloc__slow":
            alloc_bytes, _, _, outcome, tlab_bytes, duration, address, waste, gcs, start, _ = a
            slow_hits[tid].append((start, start + duration if start else None, address, alloc_bytes, tlab_bytes,
                                   waste, gcs, outcome, cls))
        elif name == "alloc__batch.record":
            start, end, address, alloc_bytes, tlab_bytes, waste, _, gcs, rtid, _, outcome = a
            assert end <= ts  # handed over after its end
            batch_recs[rtid].append((start, end if start else None, address, alloc_bytes, tlab_bytes, waste, gcs,
                                     outcome, cls))
    assert set(batch_recs) == set(slow_hits)
    for tid in slow_hits:
        assert batch_recs[tid] == slow_hits[tid], tid
    n_recs = sum(map(len, batch_recs.values()))
    assert n_recs > 1000, n_recs
    # Fewer hits: a thread hands over up to 128 records a hit.
    alloc_batches = sum(1 for e in events if e[0] == "alloc__batch")
    assert alloc_batches * 8 < n_recs, (alloc_batches, n_recs)
    # A safepoint takes every buffer while the threads are stopped and the VM
    # thread fires them once it has ended (nothing of it inside the pause):
    # its batches come after its safepoint__end, and by its last batch every
    # slow path that ended before it began has arrived.
    begun, ended_at, seen_ends, checked = {}, {}, [], 0
    for name, ts, tid, a, _ in events:
        if name == "safepoint__begin":
            begun[a[1]] = ts
        elif name == "safepoint__end":
            ended_at[a[7]] = ts
        elif name == "alloc__batch.record":
            seen_ends.append(a[1])
        elif name == "alloc__batch" and a[4] != 0:
            sp = a[4]
            # (the safepoint that ends the VM never ends: its records go out inside it)
            vm_exit = sp not in ended_at and sp == max(begun)
            assert vm_exit or (sp in ended_at and ts > ended_at[sp]), f"safepoint {sp}'s records fired inside it"
            if a[5] == 1 and sp in begun:
                checked += 1
                total_before = sum(1 for e in events if e[0] == "alloc__batch.record" and e[3][1] < begun[sp])
                arrived_before = sum(1 for end in seen_ends if end < begun[sp])
                # (the records of this batch are the lines after it)
                assert arrived_before + a[1] >= total_before, (sp, arrived_before, a[1], total_before)
    assert checked > 0, "no safepoint's last batch was seen"


@pytest.mark.parametrize("gc", GCS)
def test_record_and_stat_give_the_same_with_either_probe_set(jdks, java_classes, gc, tmp_path):
    """Two recorders and two stats on one JVM, one of each per probe set,
    all attached before the worker starts: the worker's events are the same
    event for event (probe, arguments, order), every collection's PLAB
    events are the same thread by thread, and stat's figures for the worker
    and for PLABs are equal."""
    proc, out = held_jvm(jdks, java_classes, gc, "AllocWorker", 5_000_000)
    tools = {}
    for ps in PROBE_SETS:
        path = tmp_path / f"{ps}.jvmtrace"
        tools[("record", ps)] = (attach([str(JVMTRACE), "record", "-p", str(proc.pid), "-o", str(path), "-q",
                                         "--probe-set", ps], "Recording PID")[0], path)
        tools[("stat", ps)] = (attach([str(JVMTRACE), "stat", "-p", str(proc.pid), "--json", "--probe-set", ps],
                                      "Attached ")[0], None)
    try:
        worker = release_and_wait(proc, out)
    finally:
        results = {k: ((p.stdout.read(), p.wait(120)), path) for k, (p, path) in tools.items()}

    traces = {}
    for ps in PROBE_SETS:
        (o, e), path = results[("record", ps)]
        d = subprocess.run([str(JVMTRACE), "dump", "--json", str(path)], capture_output=True, text=True, timeout=120)
        assert d.returncode == 0, d.stderr
        recs = [json.loads(l) for l in d.stdout.splitlines()]
        assert next(r for r in recs if r["type"] == "meta")["probe_set"] == ps
        traces[ps] = [r for r in recs if r["type"] == "event"]

    def worker_events(evs):
        return [(e["probe"], e["args"]) for e in evs if e["tid"] == worker]

    def plab_events(evs):
        started = {e["args"]["gc_id"] for e in evs if e["probe"] == "gc__start"}
        by = defaultdict(list)
        for e in evs:
            if e["probe"] in PLAB_KINDS and e["args"]["gc_id"] in started:
                by[(e["args"]["gc_id"], e["tid"])].append((e["probe"], e["args"]))
        return by

    ws = worker_events(traces["separate"])
    assert len(ws) > 1500
    for ps in ("batched", "combined"):
        assert worker_events(traces[ps]) == ws, ps
    pc, ps_ = plab_events(traces["combined"]), plab_events(traces["separate"])
    common = set(pc) & set(ps_)
    assert sum(len(pc[k]) for k in common) > 200
    for k in common:
        assert pc[k] == ps_[k], k
    pb = plab_events(traces["batched"])
    for k in set(pb) & set(ps_):
        assert pb[k] == ps_[k], k

    stats = {}
    for ps in PROBE_SETS:
        (o, e), _ = results[("stat", ps)]
        stats[ps] = json.loads([l for l in o.splitlines() if l.startswith("{")][-1])
        assert stats[ps]["probe_set"] == ps
    ts = next(t for t in stats["separate"]["threads"] if t["tid"] == worker)
    assert ts["tlab_refills"] > 500
    s = stats["separate"]["counters"]
    assert s["plab_batches"] == 0 and s["alloc_batches"] == 0
    for ps in ("batched", "combined"):
        assert next(t for t in stats[ps]["threads"] if t["tid"] == worker) == ts, ps
        # PLAB counters: the same collections seen by all (attached before the worker started).
        c = stats[ps]["counters"]
        for k in ("plabs", "plab_bytes", "plab_waste_bytes", "promoted_direct", "promoted_direct_bytes", "gc_starts"):
            assert c[k] == s[k], (ps, k)
        assert c["plab_batches"] > 0 and c["plab_records_lost"] == 0
    b = stats["batched"]["counters"]
    assert b["alloc_records_lost"] == 0 and 0 < b["alloc_batches"] * 8 < b["slow_paths"], b


def test_batched_tools_that_end_on_a_live_jvm_drain_its_buffers(jdks, java_classes, tmp_path):
    """A thread allocates, then idles (alive) with its last slow paths still
    in the VM's buffer.  A batched stat and record stopped now must wait for
    the VM to hand those over (alloc__drain) and so count exactly what a
    combined stat and record attached over the same time count (one hit per
    slow path, nothing buffered).  Without the drain the batched tools miss
    the idle thread's last records, and this fails."""
    proc, out = held_jvm(jdks, java_classes, "G1", "BurstThenIdle", 3_000_000, heap_mb=256)
    tools = {}
    try:
        for ps in ("batched", "combined"):
            path = tmp_path / f"{ps}.jvmtrace"
            tools[("record", ps)] = (attach(record_cmd(proc.pid, path, ps), "Recording PID"), path)
            tools[("stat", ps)] = (attach([str(JVMTRACE), "stat", "-p", str(proc.pid), "--json", "--probe-set", ps],
                                          "Attached "), None)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        burst = int(out.wait_for(lambda l: l.startswith("idle "), 120, "the burst's end").split()[1])
        results, waited = {}, {}
        for k, ((p, err), path) in tools.items():
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            o = p.stdout.read()
            rc = p.wait(30)
            waited[k] = time.monotonic() - t0
            results[k] = (o, rc, "\n".join(err.drain(5)), path)
    finally:
        for (p, _), _ in tools.values():
            if p.poll() is None:
                p.kill()
        proc.stdin.close()
        proc.wait(60)
    for k, (o, rc, err, _) in results.items():
        assert rc == 0 and "missing" not in err, (k, err)
    print("seconds from Ctrl-C to exit:", {f"{a} {b}": round(w, 2) for (a, b), w in waited.items()})
    # The drain waits for one safepoint: about GuaranteedSafepointInterval.
    assert waited[("stat", "batched")] < 6

    def burst_events(path):
        return [(e["probe"], e["args"]) for e in dump_events(path) if e["tid"] == burst]

    batched, combined = burst_events(results[("record", "batched")][3]), burst_events(results[("record", "combined")][3])
    assert len(combined) > 1500 and batched == combined

    def burst_row(ps):
        r = json.loads([l for l in results[("stat", ps)][0].splitlines() if l.startswith("{")][-1])
        return next(t for t in r["threads"] if t["tid"] == burst), r["counters"]

    (rb, cb), (rc_, _) = burst_row("batched"), burst_row("combined")
    assert rb == rc_ and rb["tlab_refills"] > 500
    assert cb["alloc_records_lost"] == 0


def test_a_failed_allocation_that_ends_the_jvm_is_recorded(jdks, java_classes, tmp_path):
    """-XX:+ExitOnOutOfMemoryError: the JVM exits from the failed allocation
    itself, with no safepoint to hand the buffers over.  The VM flushes the
    failing thread's records at once, so a batched recording has its failed
    slow path (outcome 0) as a combined one does."""
    proc, out = held_jvm(jdks, java_classes, "G1", "OutOfMemory", flags=["-XX:+ExitOnOutOfMemoryError"])
    recs = {}
    try:
        for ps in ("batched", "combined"):
            path = tmp_path / f"{ps}.jvmtrace"
            recs[ps] = (attach(record_cmd(proc.pid, path, ps), "Recording PID")[0], path)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert proc.wait(120) == 3, proc.stderr.read()[-2000:]  # ExitOnOutOfMemoryError's status
        oom = int(next(l for l in out.drain(10) if l.startswith("oom tid ")).split()[2])
    finally:
        if proc.poll() is None:
            proc.kill()
        for p, _ in recs.values():
            p.wait(60)

    def failed(path):
        return [e["args"] for e in dump_events(path)
                if e["tid"] == oom and e["probe"] == "alloc__slow__exit" and e["args"]["outcome"] == SLOW_FAILED]

    combined, batched = failed(recs["combined"][1]), failed(recs["batched"][1])
    assert combined and batched == combined, (batched, combined)
