"""The jvmtrace probes in a real patched HotSpot, attached with real eBPF
(bpftrace -p PID), checked against independent truth from the same run:
-Xlog:gc, JFR events (matched per kernel thread id and per GC id) and the
known behaviour of the test programs in tests/java/.

Windows are aligned, not bounded: bpftrace attaches before the program does
any measured work (the program waits for "go"), and JFR records from
before the worker thread starts to after it ends, so per-thread and per-GC
comparisons are exact."""
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from helpers import READY_MARK, bpftrace_run, go_uptime_s, jfr_events, parse_gc_log

GCS = {"G1": "-XX:+UseG1GC", "Parallel": "-XX:+UseParallelGC"}


def java_cmd(home, classes, gc, heap_mb, main, *args, gc_log=None):
    cmd = [str(Path(home) / "bin/java"), GCS[gc], f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m"]
    if gc_log:
        cmd.append(f"-Xlog:gc:file={gc_log}")
    return cmd + ["-cp", str(classes), main, *map(str, args)]


def all_probes_script(lib):
    p = f"usdt:{lib}:jvmtrace:"
    return f"""
BEGIN {{ printf("{READY_MARK}\\n"); }}
{p}tlab__refill {{ printf("R %lu %d %lu %lu %lu %s %lu\\n", nsecs, tid, arg0, arg1, arg2, str(arg3, arg4), arg5); }}
{p}alloc__slow__enter {{ printf("N %lu %d %lu %s\\n", nsecs, arg3, arg0, str(arg1, arg2)); }}
{p}alloc__slow__exit {{ printf("O %lu %d %lu %lu %u %u\\n", nsecs, arg4, arg0, arg1, arg2, arg3); }}
{p}gc__start {{ printf("S %lu %u %s|%s %u %lu %lu %d\\n", nsecs, arg0, str(arg1), str(arg2), arg3, arg4, arg5, tid); }}
{p}gc__end {{ printf("E %lu %u %s|%s %u %lu %lu %d\\n", nsecs, arg0, str(arg1), str(arg2), arg3, arg4, arg5, tid); }}
{p}plab__alloc {{ printf("P %lu %u %lu %lu %u %d\\n", nsecs, arg0, arg1, arg2, arg3, arg4); }}
{p}plab__retire {{ printf("X %lu %u %lu %lu %lu %lu %u %d\\n", nsecs, arg0, arg1, arg2, arg3, arg4, arg5, tid); }}
{p}promote__direct {{ printf("D %lu %u %lu %lu %u %d\\n", nsecs, arg0, arg1, arg2, arg3, arg4); }}
"""


def timeline(run):
    """[(kind, fields_text)] of every event, in time order.  bpftrace prints
    each CPU's buffer in turn, so lines of threads on different CPUs come out
    of order; every event carries nsecs right after its kind letter."""
    evs = []
    for l in run.trace_out:
        kind, ts, rest = l.split(" ", 2)
        evs.append((int(ts), kind, rest))
    evs.sort(key=lambda e: e[0])
    return [(k, r) for _, k, r in evs]


def events(run, kind):
    return [r for k, r in timeline(run) if k == kind]


def gc_events(run):
    """{gc_id: {'S': (name, cause, kind, used, committed, tid), 'E': ...}}"""
    out = defaultdict(dict)
    for k in "SE":
        for e in events(run, k):
            gid, names, kind, used, comm, tid = e.split(" ", 1)[0], *e.split(" ", 1)[1].rsplit(" ", 4)
            name, cause = names.split("|", 1)
            assert k not in out[int(gid)], f"two gc__{'start' if k == 'S' else 'end'} for GC {gid}"
            out[int(gid)][k] = (name, cause, int(kind), int(used), int(comm), int(tid))
    return out


def worker_tid(run):
    return int(next(l for l in run.target_out if l.startswith("worker tid ")).split()[2])


@pytest.mark.parametrize("gc", GCS)
def test_system_gc_gives_exact_start_end_pairs(jdks, patched_libjvm, java_classes, tmp_path, gc):
    n = 6
    log = tmp_path / "gc.log"
    run = bpftrace_run(all_probes_script(patched_libjvm),
                       java_cmd(jdks["patched"], java_classes, gc, 256, "SystemGc", n, gc_log=log))
    assert run.target_rc == 0, run.target_err
    gcs = gc_events(run)
    logged = parse_gc_log(log.read_text(), go_uptime_s(run.target_out))
    assert logged, "no GC in -Xlog:gc"
    # Every GC of the log, and nothing else, with a start and an end.
    assert sorted(gcs) == [g for g, _, _ in logged]
    for gid, se in gcs.items():
        assert set(se) == {"S", "E"}, f"GC {gid}: {se}"
        assert se["S"][:3] == se["E"][:3], f"GC {gid}: start/end disagree {se}"
        assert se["S"][5] == se["E"][5], f"GC {gid}: start and end on different threads"
        assert se["S"][4] > 0 and se["S"][3] <= se["S"][4], f"GC {gid}: heap used/committed {se['S']}"
    # Causes equal the log's (pauses carry one).
    for gid, what, cause in logged:
        if cause is not None:
            assert gcs[gid]["S"][1] == cause, f"GC {gid} ({what}): probe cause {gcs[gid]['S'][1]!r}"
    # Exactly n full collections caused by System.gc().
    full = [g for g, se in gcs.items() if se["S"][1] == "System.gc()" and se["S"][2] == 1]
    assert len(full) == n, gcs
    # A full GC leaves no more heap used than it found (the program keeps little).
    for g in full:
        assert gcs[g]["E"][3] <= gcs[g]["S"][3]


@pytest.mark.parametrize("gc", GCS)
def test_large_array_takes_the_slow_path_with_exact_size_and_class(jdks, patched_libjvm,
                                                                     java_classes, gc):
    count, length = 3, 1 << 20
    run = bpftrace_run(all_probes_script(patched_libjvm),
                       java_cmd(jdks["patched"], java_classes, gc, 256, "BigArrays", count, length))
    assert run.target_rc == 0, run.target_err
    tid = worker_tid(run)
    size = 16 + 8 * length                      # array header (compressed class pointers) + data
    enters = [e.split() for e in events(run, "N") if int(e.split()[0]) == tid]
    big = [e for e in enters if int(e[1]) == size]
    assert len(big) == count, enters
    assert all(e[2] == "[J" for e in big)
    # Each enter has its exit on the same thread, outside any TLAB, at a real address.
    exits = [e.split() for e in events(run, "O") if int(e.split()[0]) == tid and int(e.split()[2]) == size]
    assert len(exits) == count
    for e in exits:
        assert int(e[1]) != 0 and int(e[3]) in (2, 4), e    # outside TLAB (after a GC: 4)
    # Enter/exit strictly alternate per thread (what a latency histogram pairs).
    seq = [k for k, r in timeline(run) if k in "NO" and int(r.split()[0]) == tid]
    assert "".join(seq) == "NO" * (len(seq) // 2), seq


@pytest.fixture(scope="module", params=list(GCS))
def alloc_run(request, jdks, patched_libjvm, java_classes, tmp_path_factory):
    """AllocWorker traced with every probe, JFR recording in the program."""
    gc = request.param
    d = tmp_path_factory.mktemp(f"alloc-{gc}")
    jfr = d / "rec.jfr"
    run = bpftrace_run(all_probes_script(patched_libjvm),
                       java_cmd(jdks["patched"], java_classes, gc, 64, "AllocWorker", 3_000_000, jfr,
                                gc_log=d / "gc.log"))
    assert run.target_rc == 0, run.target_err
    run.extra.update(gc=gc, jfr=jfr, gc_log=d / "gc.log", home=jdks["patched"])
    return run


def test_tlab_refills_equal_jfr_per_thread(alloc_run):
    """Same refills, same sizes and classes as JFR's jdk.ObjectAllocationInNewTLAB
    on the worker thread, which lives entirely inside both windows."""
    tid = worker_tid(alloc_run)
    ours = Counter()
    for e in events(alloc_run, "R"):
        t, _start, tlab, size, cls, _waste = e.split()
        if int(t) == tid:
            ours[(cls, int(size), int(tlab))] += 1
    jfr = Counter()
    for ev in jfr_events(alloc_run.extra["home"], alloc_run.extra["jfr"], "jdk.ObjectAllocationInNewTLAB"):
        v = ev["values"]
        if v["eventThread"]["osThreadId"] == tid:
            jfr[(v["objectClass"]["name"], v["allocationSize"], v["tlabSize"])] += 1
    assert sum(jfr.values()) > 200, f"workload too small to compare: {sum(jfr.values())} JFR refills"
    assert ours == jfr


def test_outside_tlab_allocations_equal_jfr_per_thread(alloc_run):
    tid = worker_tid(alloc_run)
    enters = [e.split() for e in events(alloc_run, "N") if int(e.split()[0]) == tid]
    exits = [e.split() for e in events(alloc_run, "O") if int(e.split()[0]) == tid]
    assert len(enters) == len(exits)
    ours = Counter((n[2], int(n[1])) for n, x in zip(enters, exits) if int(x[3]) in (2, 4))
    jfr = Counter()
    for ev in jfr_events(alloc_run.extra["home"], alloc_run.extra["jfr"], "jdk.ObjectAllocationOutsideTLAB"):
        v = ev["values"]
        if v["eventThread"]["osThreadId"] == tid:
            jfr[(v["objectClass"]["name"], v["allocationSize"])] += 1
    assert ours == jfr


def test_gc_ids_and_causes_equal_gc_log(alloc_run):
    gcs = gc_events(alloc_run)
    logged = parse_gc_log(alloc_run.extra["gc_log"].read_text(), go_uptime_s(alloc_run.target_out))
    assert len(logged) >= 5, "the workload should collect several times"
    assert sorted(gcs) == [g for g, _, _ in logged]
    for gid, what, cause in logged:
        assert set(gcs[gid]) == {"S", "E"}
        if cause is not None:
            assert gcs[gid]["S"][1] == cause, (gid, what)


def test_plabs_equal_jfr_per_gc(alloc_run):
    """One jdk.PromoteObjectInNewPLAB per new PLAB and one
    jdk.PromoteObjectOutsidePLAB per direct copy, per GC id, for the GCs
    inside JFR's window."""
    home, jfr = alloc_run.extra["home"], alloc_run.extra["jfr"]
    jfr_gcs = {ev["values"]["gcId"] for ev in jfr_events(home, jfr, "jdk.GarbageCollection")}
    # The same collections on both sides: JFR was initialised before "go"
    # (AllocWorker), so it misses none of those the probes saw.
    assert jfr_gcs == set(gc_events(alloc_run)), "JFR and the probes saw different GCs"
    ours_new = Counter(int(e.split()[0]) for e in events(alloc_run, "P"))
    ours_direct = Counter(int(e.split()[0]) for e in events(alloc_run, "D"))
    jfr_new = Counter(ev["values"]["gcId"] for ev in jfr_events(home, jfr, "jdk.PromoteObjectInNewPLAB"))
    jfr_direct = Counter(ev["values"]["gcId"] for ev in jfr_events(home, jfr, "jdk.PromoteObjectOutsidePLAB"))
    assert sum(jfr_new.values()) > 20, "workload should promote through PLABs"
    for g in sorted(jfr_gcs):
        assert ours_new[g] == jfr_new[g], f"GC {g}: {ours_new[g]} plab__alloc vs {jfr_new[g]} JFR"
        assert ours_direct[g] == jfr_direct[g], f"GC {g}: {ours_direct[g]} direct vs {jfr_direct[g]} JFR"
    if alloc_run.extra["gc"] == "G1":
        # G1 reports the PLAB's real size to JFR: compare sizes too.
        ours_sizes = Counter((int(e.split()[0]), int(e.split()[2])) for e in events(alloc_run, "P"))
        jfr_sizes = Counter((ev["values"]["gcId"], ev["values"]["plabSize"])
                            for ev in jfr_events(home, jfr, "jdk.PromoteObjectInNewPLAB"))
        for (g, size), n in jfr_sizes.items():
            assert ours_sizes[(g, size)] == n, f"GC {g}: PLAB size {size}"


def test_plab_retire_accounts_for_every_byte(alloc_run):
    """Every PLAB a worker got is retired in the same GC, with used + wasted
    == size.  (The retiring thread is the owner when a PLAB is replaced, and
    the VM thread for PLABs still held when the collection ends.)"""
    alive, retired = {}, 0
    for kind, rest in timeline(alloc_run):
        if kind == "P":
            g, start, size, dest, tid = map(int, rest.split())
            assert start not in alive, f"PLAB {start:#x} handed out twice: {rest}"
            alive[start] = (g, size, dest)
        elif kind == "X":
            g, start, size, used, waste, dest, tid = map(int, rest.split())
            assert used + waste == size, rest
            assert alive.pop(start, None) == (g, size, dest), f"retire without its plab__alloc: {rest}"
            retired += 1
    assert retired > 20
    assert not alive, f"PLABs never retired: {list(alive.items())[:5]}"
