"""Every jvmtrace probe argument decodes exactly, independent of the JVM: the
fixture fires known sentinel values (see tests/fixtures/usdt_fixture.cpp) and
bpftrace, attached by PID like on a live JVM, prints them back."""
from helpers import READY_MARK, bpftrace_run

U64 = 0xf7f6f5f4f3f2f1f0
U32 = 0xe3e2e1e0
NAME = "Lsentinel/Klass;"             # the fixture's buffer continues with "OVERREAD"


def script(exe):
    p = f"usdt:{exe}:jvmtrace:"
    return f"""
BEGIN {{ printf("{READY_MARK}\\n"); }}
{p}tlab__refill {{ printf("tlab__refill %lu %lu %lu %s %u %lu %d\\n",
    arg0, arg1, arg2, str(arg3, arg4), arg4, arg5, tid); }}
{p}alloc__slow__enter {{ printf("alloc__slow__enter %lu %s %u %d\\n", arg0, str(arg1, arg2), arg2, arg3); }}
{p}alloc__slow__exit {{ printf("alloc__slow__exit %lu %lu %u %u %d\\n", arg0, arg1, arg2, arg3, arg4); }}
{p}gc__start {{ printf("gc__start %u %s|%s %u %lu %lu\\n", arg0, str(arg1), str(arg2), arg3, arg4, arg5); }}
{p}gc__end {{ printf("gc__end %u %s|%s %u %lu %lu\\n", arg0, str(arg1), str(arg2), arg3, arg4, arg5); }}
{p}plab__alloc {{ printf("plab__alloc %u %lu %lu %u %d\\n", arg0, arg1, arg2, arg3, arg4); }}
{p}plab__retire {{ printf("plab__retire %u %lu %lu %lu %lu %u %d\\n", arg0, arg1, arg2, arg3, arg4, arg5, tid); }}
{p}promote__direct {{ printf("promote__direct %u %lu %lu %u %d\\n", arg0, arg1, arg2, arg3, arg4); }}
{p}gc__pause__start {{ printf("gc__pause__start %u %s|%s %u %lu %lu\\n", arg0, str(arg1), str(arg2), arg3, arg4, arg5); }}
{p}gc__pause__end {{ printf("gc__pause__end %u %s|%s %u %lu %lu\\n", arg0, str(arg1), str(arg2), arg3, arg4, arg5); }}
{p}alloc__slow {{ printf("alloc__slow %lu %s %u %u %lu %lu\\n", arg0, str(arg1, arg2), arg2, arg3, arg4, arg5); }}
{p}plab__batch {{ printf("plab__batch %u %u %d %lu %u\\n", arg1, arg2, arg3, arg4, arg5); }}
"""


def expected(rounds, tid):
    out = []
    for i in range(rounds):
        out += [
            f"tlab__refill {U64} {0x10000 + i} {i} {NAME} 16 {U64 - 1} {tid}",
            f"alloc__slow__enter {i} {NAME} 16 {tid}",
            f"alloc__slow__exit {U64} {i} {i % 6} {U32} {tid}",
            f"gc__start {i} SentinelGC|Sentinel cause {i % 3} {U64} {U64 - 2}",
            f"gc__end {i} SentinelGC|Sentinel cause {i % 3} {U64 - 3} {U64 - 4}",
            f"plab__alloc {i} {U64} {0x2000} {i % 2} {tid}",
            f"plab__retire {i} {U64} {0x2000} {0x1800} {0x800} {i % 2} {tid}",
            f"promote__direct {i} {U64} {0x4000 + i} {i % 2} {tid}",
            f"gc__pause__start {i} Pause Sentinel {i % 7}|Sentinel cause {i % 4} {U64} {U64 - 2}",
            f"gc__pause__end {i} Pause Sentinel {i % 7}|Sentinel cause {i % 4} {U64 - 3} {U64 - 4}",
            f"alloc__slow {i} {NAME} 16 {i % 6} {0x10000 + i if i % 6 in (1, 3) else 0} {0x500 + i % 256}",
            f"plab__batch 3 48 {tid} 0 0",
        ]
    return out


def test_every_argument_decodes_exactly(usdt_fixture):
    """--real-tid: the fixture passes its firing thread's kernel tid as `tid`,
    which must equal bpftrace's `tid` builtin (HotSpot's contract).  Where
    `tid` is arg6 (out of bpftrace 0.17's reach) the builtin is printed."""
    rounds = 40
    run = bpftrace_run(script(usdt_fixture), [str(usdt_fixture), "--wait-for", "stdin",
                                              "--real-tid", "--rounds", str(rounds)])
    assert run.target_rc == 0, run.target_err
    assert run.target_out[-1] == f"fired {rounds}"
    assert run.trace_out, "no probe fired"
    tid = int(run.trace_out[0].split()[-1])   # tlab__refill's last column: the builtin
    assert tid != run.pid, "the fixture fires from a worker thread, not the main thread"
    assert run.trace_out == expected(rounds, tid)


def test_detached_probes_do_not_fire_and_cost_no_arguments(usdt_fixture):
    """With nothing attached every semaphore stays 0: the fixture's gated
    probe bodies never run (it would not notice otherwise, so check the
    semaphore-wait mode times out instead of firing)."""
    import subprocess
    r = subprocess.run([str(usdt_fixture), "--wait-for", "any", "--timeout", "1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 3, (r.stdout, r.stderr)
    assert "no tracer enabled the probes" in r.stderr


def test_every_argument_decodes_exactly_with_libbpf(usdt_fixture):
    """All arguments, arg6 included (out of bpftrace 0.17's reach), through
    libbpf's bpf_program__attach_usdt: the sentinel tid must come back as the
    negative int32 it is, every u64 bit-exact, strings cut at their length."""
    from conftest import BUILD_DIR
    from helpers import traced_run
    rawdump = BUILD_DIR / "userspace/jvmtrace-rawdump"
    rounds = 25
    run = traced_run(lambda pid: [str(rawdump), "-p", str(pid), "-b", str(usdt_fixture)],
                     [str(usdt_fixture), "--wait-for", "stdin", "--rounds", str(rounds)],
                     ready=lambda l: l.startswith("attached 17 probes"), stderr_ready=True)
    assert run.target_rc == 0, run.target_err
    tid = 0xf3f2f1f0 - (1 << 32)
    got, stamps = [], []
    for line in run.trace_out:
        name, ts, _tid, args, *strs = line.split(" ", 4)
        vals = args.split("=", 1)[1].split(",")
        got.append((name, vals, " ".join(strs)))
        stamps.append(int(ts.split("=")[1]))
    exp = []
    for i in range(rounds):
        cls = 'str0="Lsentinel/Klass;"'
        gcs = 'str0="SentinelGC" str1="Sentinel cause"'
        exp += [
            ("tlab__refill", [U64, 0x10000 + i, i, None, 16, U64 - 1, tid], cls),
            ("alloc__slow__enter", [i, None, 16, tid], cls),
            ("alloc__slow__exit", [U64, i, i % 6, U32, tid], ""),
            ("gc__start", [i, None, None, i % 3, U64, U64 - 2], gcs),
            ("gc__end", [i, None, None, i % 3, U64 - 3, U64 - 4], gcs),
            ("plab__alloc", [i, U64, 0x2000, i % 2, tid], ""),
            ("plab__retire", [i, U64, 0x2000, 0x1800, 0x800, i % 2, tid], ""),
            ("promote__direct", [i, U64, 0x4000 + i, i % 2, tid], ""),
            ("gc__pause__start", [i, None, None, i % 4, U64, U64 - 2],
             f'str0="Pause Sentinel {i % 7}" str1="Sentinel cause"'),
            ("gc__pause__end", [i, None, None, i % 4, U64 - 3, U64 - 4],
             f'str0="Pause Sentinel {i % 7}" str1="Sentinel cause"'),
            # duration (5) and start_ns (9) are checked against the clock below
            ("alloc__slow", [i, None, 16, i % 6, 0x10000 + i if i % 6 in (1, 3) else 0, 0x500 + i % 256, U64,
                             U64 - 1 if i % 6 in (1, 3) else 0, U32, None, tid], cls),
            ("plab__batch", [None, 3, 48, tid, 0, 0], ""),
            # records: ts_ns, address, bytes, used_bytes, gc_id, tid, kind, dest
            ("plab__batch.record", [None, U64, 0x2000, 0, i, tid, 0, i % 2], ""),
            ("plab__batch.record", [None, U64, 0x2000, 0x1800, i, tid, 1, i % 2], ""),
            ("plab__batch.record", [None, U64, 0x4000 + i, 0x4000 + i, i, tid, 2, i % 2], ""),
            ("alloc__batch", [None, 1, 72, tid, 0, 0], ""),
            # record: start_ns, end_ns (checked below), address, alloc_bytes, tlab_bytes,
            # retired_waste_bytes, class_name, gcs, tid, class_name_len, outcome
            ("alloc__batch.record", [None, None, U64, i, 0x10000 + i if i % 6 in (1, 3) else 0,
                                     U64 - 1 if i % 6 in (1, 3) else 0, None, U32, tid, 16, i % 6], cls),
        ]
    assert len(got) == len(exp)
    for (gname, gvals, gstr), (ename, evals, estr) in zip(got, exp):
        assert gname == ename and gstr == estr, (gname, gstr)
        assert len(gvals) == len(evals), gname
        for g, e in zip(gvals, evals):
            if e is not None:          # None: a pointer, checked through its string
                assert int(g) == e, (gname, gvals, evals)
    # The VM's clock is BPF's: alloc__slow's start lies before its hit, and a
    # batch record's time before its batch's hit.
    for k, ((gname, gvals, _), ts) in enumerate(zip(got, stamps)):
        if gname == "alloc__slow":
            start, duration = int(gvals[9]), int(gvals[5])
            assert 0 < start and start + duration <= ts < start + 10**9, (start, duration, ts)
        if gname == "plab__batch.record":
            batch_ts = stamps[k - 1 - int(gvals[6])]
            assert 0 < int(gvals[0]) <= batch_ts < int(gvals[0]) + 10**9
        if gname == "alloc__batch.record":
            start, end = int(gvals[0]), int(gvals[1])
            assert 0 < start and end == start + 0x500 + int(gvals[3]) % 256 and start <= stamps[k - 1], (start, end)
