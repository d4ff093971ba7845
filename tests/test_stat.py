"""`jvmtrace stat`: exact counts and histogram slots from the USDT fixture
(several threads at once), agreement with JFR and -Xlog:gc on the real
patched JVM, and clear errors on bad input."""
import json
import math
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from collections import Counter

from conftest import BUILD_DIR, JDK_LINES, jdk_homes, on_line
from helpers import REPO, LineReader, go_uptime_s, jfr_events, parse_gc_log, parse_safepoints, traced_run
from test_jvm_probes import java_cmd, worker_tid

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
U64 = 0xf7f6f5f4f3f2f1f0
M64 = (1 << 64) - 1


def stat_run(target_cmd, *extra, attached="Attached "):
    run = traced_run(lambda pid: [str(JVMTRACE), "stat", "-p", str(pid), "--json", *extra], target_cmd,
                     ready=lambda l: l.startswith(attached), stderr_ready=True)
    reports = [json.loads(l) for l in run.trace_out if l.startswith("{")]
    assert reports, run.trace_err
    return run, reports[-1]


def slot(v):
    return 0 if v < 2 else int(math.log2(v))


def hist_slots(h):
    return {slot(b["low"]) if b["low"] else 0: b["count"] for b in h["buckets"] if b["count"]}


@pytest.mark.parametrize("probe_set,batch", [("batched", 1), ("batched", 100), ("combined", 1), ("separate", 1)])
def test_fixture_counts_and_histograms_are_exact_under_four_threads(usdt_fixture, probe_set, batch):
    """Every probe set: separate (the fixture fires tlab__refill every round,
    whatever alloc__slow__exit's outcome), combined (alloc__slow: a refill
    for outcomes 1 and 3 only; plab__batch: three records a round) and
    batched (alloc__batch, one record a round, in batches of 1 or 100)."""
    threads, rounds = 4, 5000
    banner = {"batched": "Attached 7 probes (batched", "combined": "Attached 7 probes (combined",
              "separate": "Attached 11 probes (separate"}[probe_set]
    run, r = stat_run([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--threads", str(threads),
                       "--rounds", str(rounds), "--batch", str(batch)], "-b", str(usdt_fixture),
                      "--probe-set", probe_set, attached=banner)
    assert run.target_rc == 0, run.target_err
    assert r["probe_set"] == probe_set
    c, n = r["counters"], threads * rounds
    rng = range(rounds)
    refilled = [i for i in rng if probe_set == "separate" or i % 6 in (1, 3)]
    n_refills = threads * len(refilled)
    exp = {
        "tlab_refills": n_refills, "tlab_bytes": threads * sum(0x10000 + i for i in refilled),
        "tlab_waste_bytes": (n_refills * (U64 - 1)) & M64,
        "plab_batches": n if probe_set != "separate" else 0, "plab_records_lost": 0,
        "alloc_batches": threads * -(-rounds // batch) if probe_set == "batched" else 0,
        "alloc_records_lost": 0, "alloc_records_outside_window": 0,
        "slow_paths": n, "slow_failed": threads * sum(i % 6 == 0 for i in rng),
        "slow_after_gc": threads * sum(i % 6 in (3, 4) for i in rng),
        "outside_allocs": threads * sum(i % 6 in (2, 4) for i in rng),
        "outside_bytes": threads * sum(i for i in rng if i % 6 in (2, 4)),
        "plabs": n, "plab_bytes": n * 0x2000, "plab_waste_bytes": n * 0x800,
        "promoted_direct": n, "promoted_direct_bytes": threads * sum(0x4000 + i for i in rng),
        "map_full_drops": 0, "names_lost": 0,
    }
    for k, v in exp.items():
        assert c[k] == v, k
    # gc ids repeat across the fixture's threads, so starts/ends are exact but
    # pause pairing is by id: every thread fires start then end back to back.
    assert c["gc_starts"] == c["gc_ends"] == n
    h = r["histograms"]
    assert hist_slots(h["tlab_size"]) == {16: n_refills}              # 0x10000 + i < 2^17
    assert hist_slots(h["plab_size"]) == {13: n}                      # 0x2000
    assert hist_slots(h["outside_tlab_size"]) == dict(
        Counter(slot(i) for i in rng if i % 6 in (2, 4) for _ in range(threads)))
    assert h["slow_path_latency"]["total"] == n
    if probe_set != "separate":  # the VM-measured 0x500 + i % 256 ns: 1 us each
        assert hist_slots(h["slow_path_latency"]) == {0: n}
    # Every gc__pause__end is measured or counted as unpaired (ids repeat
    # across the threads, so one thread's start can replace another's); every
    # pause kind in its histogram; no other loss.
    assert r["pause_probes"] is True
    kinds = ("gc_pause_young", "gc_pause_full", "gc_pause_remark", "gc_pause_cleanup")
    pauses = sum(h[k]["total"] for k in kinds)
    assert pauses + c["gc_pause_ends_without_start"] == c["gc_pauses"] == n, (pauses, c["gc_pause_ends_without_start"])
    for kind, k in enumerate(kinds):
        assert h[k]["total"] <= threads * sum(i % 4 == kind for i in rng), k
    assert h["gc_concurrent_cycle"]["total"] <= threads * sum(i % 3 == 2 for i in rng)
    assert (c["gc_inflight_full_drops"], c["slow_exits_without_enter"], c["malformed_notices"]) == (0, 0, 0), c
    # One class (the sentinel name), four threads with a quarter each.
    assert [(x["class"], x["tlab_refills"], x["outside_allocs"]) for x in r["classes"]] == \
        [("Lsentinel/Klass;", n_refills, exp["outside_allocs"])]
    assert sorted(t["tlab_refills"] for t in r["threads"]) == [len(refilled)] * threads
    # Named through the new-key notices, while the threads ran (they are gone now).
    assert {t["comm"] for t in r["threads"]} == {"usdt_fixture"}


@pytest.mark.parametrize("probe_set", ["separate", "combined"])
def test_a_thread_gone_before_user_space_looks_keeps_its_name(usdt_fixture, probe_set):
    """Eight threads, each named, each firing two rounds and exiting within
    microseconds: long before stat's loop (50 ms) can read /proc.  Each still
    has its own name, read in the kernel by the thread itself at its first
    event.  (Before, /proc was read when the notice arrived: "<exited>".)"""
    threads = 8
    run, r = stat_run([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--threads", str(threads),
                       "--rounds", "2", "--name-threads"], "-b", str(usdt_fixture), "--probe-set", probe_set)
    assert run.target_rc == 0, run.target_err
    assert sorted(t["comm"] for t in r["threads"]) == sorted(f"fx-t{t}" for t in range(threads)), r["threads"]


def test_safepoint_operations_are_named_though_the_jvm_has_exited(usdt_fixture):
    """The fixture fires safepoint__end ("SentinelOperation") every round and
    exits; stat reports after that.  The operation's name came with the
    notice of its first safepoint, copied in the kernel at the probe
    (issue 32: stat read it at the report, from a process gone by then,
    and printed "<unreadable>" for every operation of a JVM it saw exit)."""
    rounds = 50
    run, r = stat_run([str(usdt_fixture), "--wait-for", "stdin", "--vm-probes", "--rounds", str(rounds)],
                      "-b", str(usdt_fixture))
    assert run.target_rc == 0, run.target_err
    assert [(o["operation"], o["count"]) for o in r["safepoints_by_operation"]] == [("SentinelOperation", rounds)], \
        r["safepoints_by_operation"]
    assert (r["counters"]["names_lost"], r["counters"]["malformed_notices"]) == (0, 0), r["counters"]


def test_stat_names_every_safepoint_operation_of_the_log(jdks, java_classes, tmp_path):
    """A real JVM, stat attached until it exits: every operation stat
    counts is named as -Xlog:safepoint names it, with no more safepoints
    than the log has, and at least those after the program's go (stat was
    attached before it).  PauseMix makes collections and thread dumps."""
    log = tmp_path / "sp.log"
    cmd = java_cmd(jdks["patched"], java_classes, "G1", 64, "PauseMix", 2, 40)
    cmd[1:1] = [f"-Xlog:safepoint:file={log}"]
    run, r = stat_run(cmd)
    assert run.target_rc == 0, run.target_err
    logged = parse_safepoints(log.read_text())
    since_go = Counter(s["operation"] for s in logged if s["uptime"] >= go_uptime_s(run.target_out))
    ops = {o["operation"]: o["count"] for o in r["safepoints_by_operation"]}
    info = f"stat {ops}, the log since go {dict(since_go)}"
    assert "<unreadable>" not in ops and set(ops) <= {s["operation"] for s in logged}, info
    assert sum(ops.values()) <= len(logged) and all(ops.get(k, 0) >= n for k, n in since_go.items()), info
    assert "ThreadDump" in ops, info


def bpf_maps_of(pid):
    """map_id of each BPF map process pid holds, by (map_type, value_size, max_entries)."""
    maps = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}") if ":" in l)
        except OSError:
            continue
        if "map_id" in info:
            maps[tuple(int(info[k]) for k in ("map_type", "value_size", "max_entries"))] = int(info["map_id"])
    return maps


def percpu_values(map_id, key):
    """Each possible CPU's copy of key's value (bytes) in a per-CPU map."""
    out = subprocess.run(["bpftool", "-j", "map", "lookup", "id", str(map_id), "key", *map(str, key)],
                         capture_output=True, text=True, check=True).stdout
    return [bytes(int(b, 16) for b in v["value"]) for v in json.loads(out)["values"]]


def test_per_cpu_copies_are_summed(usdt_fixture):
    """counters, hists and classes are per-CPU maps: with one fixture thread
    pinned to each CPU, every CPU's copy holds exactly its thread's share
    (read with bpftool while stat is attached), and stat reports their sum;
    the class name's length is in the creating CPU's copy only."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs: one fixture thread pinned to each, to see each CPU's copy (CI has 2)")
    threads, rounds = min(len(cpus), 8), 4000
    # (--linger at its most, an hour: the fixture stays until the test kills
    # it, whatever the reads of stat's maps below take)
    fx = subprocess.Popen([str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--pin", "--threads",
                           str(threads), "--rounds", str(rounds), "--linger", "3600000"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stat = None
    try:
        fx_out, fx_err = LineReader(fx.stdout), LineReader(fx.stderr)
        pid = int(fx_out.wait_for(lambda l: l.startswith("ready "), 60, "ready").split()[1])
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(pid), "--json", "-b", str(usdt_fixture),
                                 "--probe-set", "separate"],  # a refill every round
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        LineReader(stat.stderr).wait_for(lambda l: l.startswith("Attached 11 probes"), 60, "attach")
        fx.stdin.write("go\n")
        fx.stdin.close()
        fx_out.wait_for(lambda l: l.startswith("fired"), 120, "the fixture to fire")
        ran_on = sorted(int(l.split()[-1]) for l in fx_err.drain() if l.startswith("thread "))
        assert ran_on == cpus[:threads], ran_on
        # The fixture lingers (stat stays attached): the maps hold their final figures.
        maps = bpf_maps_of(stat.pid)
        counters = maps[(6, 8, 30)]     # BPF_MAP_TYPE_PERCPU_ARRAY, u64, JT_COUNTER_COUNT
        classes = maps[(5, 40, 16384)]  # BPF_MAP_TYPE_PERCPU_HASH, jt_class_val
        refills = [int.from_bytes(v, "little") for v in percpu_values(counters, [0, 0, 0, 0])]
        assert [refills[c] for c in cpus[:threads]] == [rounds] * threads, refills
        key = list(json.loads(subprocess.run(["bpftool", "-j", "map", "dump", "id", str(classes)],
                                             capture_output=True, text=True, check=True).stdout)[0]["key"])
        per_cpu = [(int.from_bytes(v[0:8], "little"), int.from_bytes(v[32:36], "little"))
                   for v in percpu_values(classes, [int(b, 16) for b in key])]
        assert [per_cpu[c][0] for c in cpus[:threads]] == [rounds] * threads, per_cpu
        assert sorted(n for _, n in per_cpu if n) == [16], per_cpu
        stat.send_signal(signal.SIGINT)
        out, err = stat.communicate(timeout=60)
    finally:
        for p in (fx, stat):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    r = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    n, c, h = threads * rounds, r["counters"], r["histograms"]
    assert (c["tlab_refills"], c["slow_paths"], c["plabs"], c["gc_starts"], c["promoted_direct"]) == (n,) * 5, c
    assert c["tlab_bytes"] == threads * sum(0x10000 + i for i in range(rounds))
    assert c["plab_bytes"] == n * 0x2000 and c["map_full_drops"] == 0
    assert h["tlab_size"]["total"] == h["plab_size"]["total"] == h["slow_path_latency"]["total"] == n
    assert h["tlab_size"]["sum"] == c["tlab_bytes"]
    outside = threads * sum(i % 6 in (2, 4) for i in range(rounds))
    assert [(x["class"], x["tlab_refills"], x["tlab_bytes"], x["outside_allocs"]) for x in r["classes"]] == \
        [("Lsentinel/Klass;", n, c["tlab_bytes"], outside)]


def test_jvm_counts_equal_jfr_and_gc_log(jdks, java_classes, tmp_path):
    jfr, log = tmp_path / "rec.jfr", tmp_path / "gc.log"
    run, r = stat_run(java_cmd(jdks["patched"], java_classes, "G1", 64, "AllocWorker", 2_000_000, jfr,
                               gc_log=log))
    assert run.target_rc == 0, run.target_err
    tid = worker_tid(run)
    worker = next(t for t in r["threads"] if t["tid"] == tid)
    assert worker["comm"] == "alloc-worker"
    home = jdks["patched"]
    jfr_refills = [e for e in jfr_events(home, jfr, "jdk.ObjectAllocationInNewTLAB")
                   if e["values"]["eventThread"]["osThreadId"] == tid]
    assert worker["tlab_refills"] == len(jfr_refills) > 100
    assert worker["tlab_bytes"] == sum(e["values"]["tlabSize"] for e in jfr_refills)
    logged = parse_gc_log(log.read_text(), go_uptime_s(run.target_out))
    assert r["counters"]["gc_starts"] == r["counters"]["gc_ends"] == len(logged)
    pauses = sum(1 for _, what, _ in logged if what.startswith("Pause"))
    assert r["histograms"]["gc_pause_young"]["total"] + r["histograms"]["gc_pause_full"]["total"] == pauses
    assert r["counters"]["plabs"] == len(jfr_events(home, jfr, "jdk.PromoteObjectInNewPLAB"))
    top = [x["class"] for x in r["classes"][:2]]
    assert set(top) == {"AllocWorker$Node", "[B"}, r["classes"][:4]


def jvmtrace(*args):
    return subprocess.run([str(JVMTRACE), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_bad_input_gets_a_clear_error(jdks, java_classes):
    r = jvmtrace("stat", "-p", os.getpid())
    assert r.returncode == 1 and "is not a JVM: no libjvm.so mapped" in r.stderr
    p = subprocess.Popen(["true"]); p.wait()
    r = jvmtrace("stat", "-p", p.pid)
    assert r.returncode == 1 and f"no process with PID {p.pid}" in r.stderr
    for bad in (["stat"], ["stat", "-p", "x"], ["stat", "-p", "1", "-d", "-3"], ["stat", "-p", "1", "extra"],
                ["nosuchcommand"]):
        r = jvmtrace(*bad)
        assert r.returncode == 2 and "USAGE" in r.stderr, (bad, r.stderr)
    assert jvmtrace("--help").returncode == 0 and "EXAMPLES" in jvmtrace("stat", "--help").stdout
    # An unpatched JVM with --mode usdt: no probes, and the message says what to use instead
    # (--mode auto, the default, would attach in stock mode: tests/test_stock_mode.py).
    proc = subprocess.Popen(java_cmd(jdks["stock"], java_classes, "G1", 64, "SystemGc", 1),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        LineReader(proc.stdout).wait_for(lambda l: l.startswith("ready"), 60, "ready")
        r = jvmtrace("stat", "-p", proc.pid, "-d", "1", "--mode", "usdt")
        assert r.returncode == 1 and "has no jvmtrace probes" in r.stderr and "--mode stock" in r.stderr
        assert "tlabstat_stock" in r.stderr
    finally:
        proc.stdin.write("go\n")
        proc.stdin.close()
        proc.wait(60)


def test_no_slow_path_attaches_only_the_other_probes(usdt_fixture):
    """--no-slow-path: nine probes attached; slow-path figures stay empty while
    everything else is counted exactly as before."""
    rounds = 3000
    run = traced_run(lambda pid: [str(JVMTRACE), "stat", "-p", str(pid), "--json", "--no-slow-path",
                                  "--probe-set", "separate", "-b", str(usdt_fixture)],
                     [str(usdt_fixture), "--wait-for", "stdin", "--rounds", str(rounds)],
                     ready=lambda l: l.startswith("Attached 9 probes") and "slow-path probes left detached" in l,
                     stderr_ready=True)
    r = json.loads([l for l in run.trace_out if l.startswith("{")][-1])
    assert r["slow_path_probes"] is False
    c = r["counters"]
    assert (c["tlab_refills"], c["gc_starts"], c["plabs"], c["promoted_direct"], c["gc_pauses"]) == (rounds,) * 5
    assert (c["slow_paths"], c["outside_allocs"], c["slow_exits_without_enter"]) == (0, 0, 0)
    assert r["histograms"]["slow_path_latency"]["total"] == 0


def test_interval_reports_grow_and_duration_stops_it(jdks, java_classes):
    """-i 1 -d 2.5 on a program that runs longer: two interval reports and a
    final one, time and counters never going back, and stat ends by itself
    while the JVM still runs."""
    import time
    proc = subprocess.Popen(java_cmd(jdks["patched"], java_classes, "G1", 64, "AllocWorker", "forever"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        LineReader(proc.stdout).wait_for(lambda l: l.startswith("ready"), 60, "ready")
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(proc.pid), "--json", "-i", "1", "-d", "2.5"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # (the GC, pause and safepoint probes and the batched set)
        LineReader(stat.stderr).wait_for(lambda l: l.startswith("Attached 7 probes (batched"), 60, "attach")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        t0 = time.monotonic()
        out, _ = stat.communicate(timeout=60)
        took = time.monotonic() - t0
        assert proc.poll() is None, "the JVM should still be running: stat must have stopped at -d"
        assert 2.0 < took < 10, took
        reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        assert len(reports) == 3, [r["seconds"] for r in reports]
        secs = [r["seconds"] for r in reports]
        assert secs == sorted(secs) and 0.9 < secs[0] < 1.6 and 2.4 < secs[-1] < 3.5, secs
        for a, b in zip(reports, reports[1:]):
            assert all(b["counters"][k] >= a["counters"][k] for k in a["counters"])
        assert reports[-1]["counters"]["tlab_refills"] > reports[0]["counters"]["tlab_refills"] > 0
    finally:
        proc.kill()
        proc.wait(60)


LOSS_COUNTERS = ("map_full_drops", "names_lost", "gc_inflight_full_drops", "gc_ends_without_start",
                 "slow_exits_without_enter", "gc_pause_ends_without_start", "malformed_notices")


def test_loss_counters_in_text_json_and_prometheus(usdt_fixture):
    """Every loss counter is shown, with 0 on a clean single-threaded run, in
    each output format; one start and end per GC id, so every pause is measured."""
    rounds = 500
    target = [str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--rounds", str(rounds)]
    run, r = stat_run(target, "-b", str(usdt_fixture))
    c, h = r["counters"], r["histograms"]
    assert {k: c[k] for k in LOSS_COUNTERS} == dict.fromkeys(LOSS_COUNTERS, 0), c
    # Each kind of pause in its histogram (the fixture's kind is i % 4), each
    # concurrent cycle (gc__end kind 2: i % 3 == 2) in its own.
    for kind, k in enumerate(("gc_pause_young", "gc_pause_full", "gc_pause_remark", "gc_pause_cleanup")):
        assert h[k]["total"] == sum(i % 4 == kind for i in range(rounds)), k
    assert h["gc_concurrent_cycle"]["total"] == sum(i % 3 == 2 for i in range(rounds))
    assert h["slow_path_latency"]["total"] == c["slow_paths"] == rounds
    for fmt, line in (("--prometheus-full", lambda k: f'jvmtrace_{k}_total{{pid="{{pid}}",mode="usdt"}} 0'),
                      ("--prometheus", lambda k: 'jvmtrace_losses_total{pid="{pid}",mode="usdt"} 0'),
                      (None, lambda k: f"  {k:<24} 0")):
        run = traced_run(lambda pid: [str(JVMTRACE), "stat", "-p", str(pid), "-b", str(usdt_fixture),
                                      *([fmt] if fmt else [])], target,
                         ready=lambda l: re.match(r"Attached \d+ probes", l), stderr_ready=True)
        for k in LOSS_COUNTERS:
            assert line(k).replace("{pid}", str(run.pid)) in run.trace_out, (fmt, k, run.trace_out[:30])


def test_numeric_options_at_their_edges(usdt_fixture):
    """The largest --top, -i and -d work; one more is refused naming the range."""
    for opt, val, msg in (("--top", "100001", "--top takes a number from 1 to 100000"),
                          ("--top", "0", "--top takes a number from 1 to 100000"),
                          ("-i", "10000001", "-i/--interval takes a number of seconds above 0, at most 1e7"),
                          ("-d", "1e8", "-d/--duration takes a number of seconds above 0, at most 1e7")):
        r = jvmtrace("stat", "-p", "1", opt, val)
        assert r.returncode == 2 and msg in r.stderr, (opt, val, r.stderr)
    run, r = stat_run([str(usdt_fixture), "--wait-for", "stdin", "--rounds", "10"], "-b", str(usdt_fixture),
                      "--top", "100000", "-i", "1e7", "-d", "1e7")
    assert run.target_rc == 0 and r["counters"]["slow_paths"] == 10, run.trace_err


# How a container runtime that chroots (instead of pivot_root) enters its
# root: a private mount namespace, bind mounts into the directory, chroot.
CHROOT_ENTER = '''r=$1 c=$2 d=$3; shift 3
mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" && mount --rbind /tmp "$r/tmp" &&
mount --bind "$c" "$r$c" || exit 125
exec chroot "$r" /bin/sh -c 'cd "$0" && exec "$@"' "$d" "$@"'''


# (a line run in the Debian 13 root: the first of JVMTRACE_JDKS that is not
# 17; with none, 21, and then the test is not collected: conftest.on_line)
@pytest.mark.parametrize("line", [on_line(next((l for l in JDK_LINES if l != "17"), "21"))])
def test_a_jvm_chrooted_inside_its_own_mount_namespace_is_traced(line, java_classes, tmp_path):
    """A JVM that chrooted into a directory of bind mounts inside its own mount
    namespace maps libjvm.so through a mount /proc/PID/maps names from the
    namespace's root, which /proc/PID/root does not lead back to.  stat and
    record --stacks still attach (every file a target names is opened through
    /proc/PID/map_files, decision 76; the banner shows the target's own path
    for it), and count and name what JFR sees.  Before map_files both failed
    ("cannot read /proc/PID/root/.../libjvm.so")."""
    root = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print-root"], capture_output=True,
                          text=True).stdout.strip()
    assert root, "the Debian 13 root is not made: scripts/build-patched-jdk.sh --jdk 21"
    cache = os.environ.get("JVMTRACE_CACHE", "/var/cache/jvmtrace")
    home = jdk_homes(line)["patched"]
    real_java = str((Path(home) / "lib").resolve().parent / "bin/java")
    jfr = tmp_path / "rec.jfr"
    inner = java_cmd(home, java_classes, "G1", 64, "AllocWorker", 2_000_000, jfr)
    cmd = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", CHROOT_ENTER, "chroot-entry",
           root, cache, str(tmp_path), real_java, *inner[1:]]
    run, r = stat_run(cmd)
    assert run.target_rc == 0, run.target_err
    assert re.search(r"^Attached \d+ probes .*/libjvm\.so\)", run.trace_err, re.M), run.trace_err
    tid = worker_tid(run)
    worker = next(t for t in r["threads"] if t["tid"] == tid)
    jfr_refills = [e for e in jfr_events(home, jfr, "jdk.ObjectAllocationInNewTLAB")
                   if e["values"]["eventThread"]["osThreadId"] == tid]
    assert worker["tlab_refills"] == len(jfr_refills) > 100
    # record --stacks names HotSpot's frames from the mapped file's symbols.
    out = tmp_path / "k.jvmtrace"
    rec = traced_run(lambda pid: [str(JVMTRACE), "record", "--stacks", "-p", str(pid), "-o", str(out)], cmd,
                     ready=lambda l: l.startswith("Recording PID"), stderr_ready=True)
    assert rec.target_rc == 0, rec.target_err
    folded = tmp_path / "k.folded"
    flame = subprocess.run([str(JVMTRACE), "flame", str(out), "-o", str(folded)], capture_output=True, text=True,
                           timeout=120)
    assert flame.returncode == 0, flame.stderr
    assert "MemAllocator::" in folded.read_text(), folded.read_text()[:2000]
