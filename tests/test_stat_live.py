"""stat --live (issue 34: "the daemon offers a live-heap estimate per JVM with
bounded cardinality"): the kernel keeps each tracked sample's weight until its
fate comes, and at each fates batch takes the estimate report --live makes
from a recording.  Checked on a JVM that keeps a known number of bytes alive
(tests/java/LiveKeep.java), with `record --live` attached to the same JVM at
the same time: the gauge equals report --live's figure, and both hold the
kept bytes within a bound derived from how the VM weighs its samples.  And
through jvmtraced: the gauge per JVM with the daemon's labels, with
--stat-live and not without it."""
import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import LineReader, reap, traced_run
from test_daemon import Daemon, parse_exposition
from test_fleet import need_prometheus, promtool_check_metrics, series_of, wait_until

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"

KEEP_MB, CHURN_MB, YOUNG_MB = 32, 64, 4
ARRAY = 64 * 1024 + 16                  # a byte[65536]: 16 bytes of header (compressed class pointers)
KEPT = KEEP_MB * 16 * ARRAY             # LiveKeep's kept arrays
HOLDER = 16 + KEEP_MB * 16 * 4          # the byte[][] holding them (compressed oops)
CHURN_SAMPLES = CHURN_MB * 16           # the arrays that die before the full collection
TLAB = 2048
# Every slow path sampled, each weighing its own bytes (docs/probes.md,
# alloc__sample: JvmtraceSampleRate=0), and TLABs of a fixed 2 KiB (no
# resizing), so that no 64 KiB array ever fits in a TLAB another object
# started: each is a slow path of its own.
JVM_FLAGS = ["-XX:JvmtraceSampleRate=0", "-XX:-ResizeTLAB", f"-XX:TLABSize={TLAB}", "-Xms256m", "-Xmx256m"]
COLLECTORS = {
    "G1": ["-XX:+UseG1GC"],
    "Parallel": ["-XX:+UseParallelGC"],
    "Serial": ["-XX:+UseSerialGC"],
    "ZGC": ["-XX:+UseZGC"],  # 17 and 21: one generation; 25: generational
    "Shenandoah": ["-XX:+UseShenandoahGC"],
}


def bounds(tlab_refills):
    """What the estimate may be, derived rather than guessed.  Each sample
    weighs the bytes of its slow path: an object allocated outside TLABs
    weighs its own size; one that starts a TLAB weighs the TLAB, which
    HotSpot sizes desired + object (ThreadLocalAllocBuffer::compute_size),
    desired fixed at TLABSize, plus the alignment reserve (under 1 KiB: the
    filler's header and C2's allocation prefetch lines).  So:
    - no kept array is ever left out: one needs 64 KiB, and a TLAB has at
      most desired + reserve bytes left beside the object that started it;
    - each refill adds at most TLABSize + 1 KiB beyond its own object (the
      small objects the JVM itself allocates after "go", the holder too,
      are each inside a TLAB or start one: also within that, or their own
      size when outside: the holder);
    Every churned array is dead at the full collection, and the young ones
    after it are not judged: neither is in the figure."""
    return KEPT, KEPT + HOLDER + tlab_refills * (TLAB + 1024)


def start_live_keep(jdks, java_classes, flags, home="patched", extra=()):
    java = Path(jdks[home]) / "bin/java"
    cmd = [str(java), *(JVM_FLAGS if home == "patched" else ["-Xms256m", "-Xmx256m"]), *flags, *extra,
           "-cp", str(java_classes), "LiveKeep", str(KEEP_MB), str(CHURN_MB), str(YOUNG_MB)]
    jvm = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    jvm.out = LineReader(jvm.stdout)
    try:
        jvm.out.wait_for(lambda l: l.startswith("ready "), 60, "LiveKeep to start")
    except BaseException:
        reap(jvm)
        raise
    return jvm


def go_and_wait(jvm):
    jvm.stdin.write("go\n")
    jvm.stdin.flush()
    jvm.out.wait_for(lambda l: l == "done", 120, "LiveKeep's allocations")


def finish(jvm):
    jvm.stdin.write("\n")
    jvm.stdin.close()
    assert jvm.wait(60) == 0, jvm.stderr.read()[-2000:]


def stat_and_record_live(jdks, java_classes, tmp_path, flags):
    """LiveKeep with stat --live and record --live attached to it together,
    from before "go" to after every churned array's death was reported.
    Returns (stat's last JSON report, report --live's JSON)."""
    trace = tmp_path / "live.jvmtrace"
    jvm = start_live_keep(jdks, java_classes, flags)
    stat = rec = None
    try:
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(jvm.pid), "--live", "--json", "-i", "0.2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rec = subprocess.Popen([str(JVMTRACE), "record", "--live", "-p", str(jvm.pid), "-o", str(trace)],
                               stderr=subprocess.PIPE, text=True)
        s_out, s_err, r_err = LineReader(stat.stdout), LineReader(stat.stderr), LineReader(rec.stderr)
        s_err.wait_for(lambda l: l.startswith("Attached 9 probes"), 60, "stat --live to attach")
        r_err.wait_for(lambda l: l.startswith("Recording PID"), 60, "record --live to attach")
        go_and_wait(jvm)
        # Every churned array died by the full collection (System.gc()), and
        # none of the kept: once the VM has reported that many deaths, no
        # more can come while LiveKeep waits (its young arrays die only at
        # a collection, which an idle JVM does not have).
        s_out.wait_for(lambda l: json.loads(l)["live"]["counters"]["died"] >= CHURN_SAMPLES, 60,
                       "the churned arrays' deaths")
        rec.send_signal(signal.SIGINT)
        assert rec.wait(60) == 0, "\n".join(r_err.drain())
        stat.send_signal(signal.SIGINT)
        assert stat.wait(60) == 0, "\n".join(s_err.drain())
        last = json.loads(s_out.drain()[-1])
        print("record:", "\n".join(l for l in r_err.drain() if "sampled objects" in l or "lost" in l))
        finish(jvm)
    finally:
        reap(jvm, stat, rec)
    r = subprocess.run([str(JVMTRACE), "report", "--live", "--json", str(trace)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return last, json.loads(r.stdout)


@pytest.mark.parametrize("gc", COLLECTORS)
def test_live_gauge_equals_report_live_and_the_kept_bytes(jdks, java_classes, tmp_path, gc):
    modes = [COLLECTORS[gc]]
    if gc == "ZGC" and int(jdks["line"]) == 21:  # 21 has both ZGCs
        modes = [modes[0] + ["-XX:-ZGenerational"], modes[0] + ["-XX:+ZGenerational"]]
    for flags in modes:
        stat, report = stat_and_record_live(jdks, java_classes, tmp_path, flags)
        live = stat["live"]
        lo, hi = bounds(stat["counters"]["tlab_refills"])
        print(f"{flags}: gauge {live.get('estimated_live_bytes')} report {report['live_bytes']} kept {KEPT} "
              f"bounds [{lo}, {hi}] level {live.get('level')} tracked {live.get('tracked')} "
              f"refills {stat['counters']['tlab_refills']} young {live.get('young_bytes')} {live['counters']}")
        assert live["snapshots"] > 0 and live["lost"] == 0, live
        # Thinned, each sample would stand for 2^level: not the exact bound.
        assert live["level"] == 0 == report["level"], (live, report["level"])
        # The same probe hits (samples, fates, gc__start) through two tools:
        # the same figure, to the byte.
        assert live["estimated_live_bytes"] == report["live_bytes"], (live, {k: v for k, v in report.items()
                                                                             if k not in ("sites", "classes")})
        assert lo <= live["estimated_live_bytes"] <= hi, (lo, live["estimated_live_bytes"], hi)
        # And report puts the kept arrays' site first, with their bytes.
        top = report["sites"][0]
        assert top["name"].startswith("LiveKeep.keep") and lo <= top["live_bytes"] <= hi, top


def test_the_kernels_arithmetic_to_the_byte(usdt_fixture):
    """The fixture's --live-script (tests/fixtures/usdt_fixture.cpp): a
    death, a promotion (stays), a lost count, a sample with no id, a thinned
    and an untracked one, a fate of an id never sampled and a record of a
    kind not yet defined.  After its second batch the samples alive are ids
    2 (0x2000) and 5 (0x20000); 5 was born after the last gc__start (too
    young), and each stands for 2^2: (0x22000 - 0x20000) << 2 = 0x8000."""
    run = traced_run(lambda pid: [str(JVMTRACE), "stat", "-p", str(pid), "--live", "--json", "-b",
                                  str(usdt_fixture)],
                     [str(usdt_fixture), "--wait-for", "stdin", "--live-script"],
                     ready=lambda l: l.startswith("Attached "), stderr_ready=True)
    reports = [json.loads(l) for l in run.trace_out if l.startswith("{")]
    assert reports, run.trace_err
    live = reports[-1]["live"]
    assert live["counters"] == {"samples": 6, "kept": 5, "not_kept_map_full": 0, "fate_batches": 2, "died": 2,
                                "thinned": 1, "untracked": 1, "promoted": 1, "fates_of_unknown_ids": 1,
                                "fates_lost_in_vm": 7, "fate_records_unreadable": 0}, live
    assert (live["estimated_live_bytes"], live["level"], live["tracked"], live["gc_id"]) == (0x8000, 2, 2, 3), live
    assert (live["alive_bytes"], live["young_bytes"]) == (0x22000 << 2, 0x20000 << 2), live
    assert (live["snapshots"], live["kept_now"], live["lost"]) == (2, 2, 7), live


def test_live_on_a_stock_jvm_is_a_clear_error(jdks, java_classes):
    jvm = start_live_keep(jdks, java_classes, [], home="stock")
    try:
        r = subprocess.run([str(JVMTRACE), "stat", "-p", str(jvm.pid), "--live", "-d", "1"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 1, r
        assert "--live needs the alloc__sample and sample__fates probes of a patched JVM" in r.stderr, r.stderr
        assert "no jvmtrace probes (a stock JVM)" in r.stderr, r.stderr
    finally:
        reap(jvm)


def vm_flag(jdks, pid, name):
    r = subprocess.run([str(Path(jdks["patched"]) / "bin/jcmd"), str(pid), "VM.flags", "-all"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.search(rf"\b{name}\s+= (\d+)", r.stdout)
    assert m, r.stdout[-2000:]
    return int(m.group(1))


def test_live_samples_sets_the_vm_table_while_attached(jdks, java_classes):
    """--live-samples N: JvmtraceLiveSamples is N while stat is attached (set
    before its probes go in), and what it was after."""
    jvm = start_live_keep(jdks, java_classes, COLLECTORS["G1"])
    stat = None
    try:
        assert vm_flag(jdks, jvm.pid, "JvmtraceLiveSamples") == 65536
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(jvm.pid), "--live-samples", "1000", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = LineReader(stat.stderr)
        err.wait_for(lambda l: l.startswith("Attached 9 probes"), 60, "stat --live-samples to attach")
        assert vm_flag(jdks, jvm.pid, "JvmtraceLiveSamples") == 1000
        stat.send_signal(signal.SIGINT)
        assert stat.wait(60) == 0, "\n".join(err.drain())
        assert json.loads(stat.stdout.read())["live"]["snapshots"] == 0
        assert vm_flag(jdks, jvm.pid, "JvmtraceLiveSamples") == 65536
        go_and_wait(jvm)
        finish(jvm)
    finally:
        reap(jvm, stat)


def live_series(samples, pid):
    return {k: v for k, v in series_of(samples, pid).items() if k[0].startswith("jvmtrace_live_heap_")}


def test_daemon_serves_the_gauge_per_jvm_with_stat_live_only(tmp_path, jdks, java_classes):
    """jvmtraced --stat-live: the patched JVM's stat worker runs with --live,
    and its gauge comes with the JVM's identity labels, one series per JVM
    (4 live series in all); a stock JVM beside it keeps its other metrics
    and has none; the scrape passes promtool.  Without --stat-live, the same
    JVM has no live series."""
    need_prometheus()
    patched = start_live_keep(jdks, java_classes, COLLECTORS["G1"])
    stock = start_live_keep(jdks, java_classes, COLLECTORS["G1"], home="stock")
    try:
        for live in (True, False):
            (tmp_path / str(live)).mkdir()
            d = Daemon(tmp_path / str(live), *(["--stat-live"] if live else []))
            try:
                for j in (patched, stock):
                    d.wait_listed(j.pid)
                    r = d.client("attach", j.pid, "--stat")
                    assert r.returncode == 0 and r.stdout.startswith("ok: stat attached"), r.stdout + r.stderr
                probes = 9 if live else 7
                d.log.find(lambda l: f"[stat {patched.pid}] Attached {probes} probes" in l, 30,
                           "the patched JVM's stat worker to attach")
                if live:
                    go_and_wait(patched)

                    def gauge_settled():
                        text = d.metrics()
                        m = parse_exposition(text)
                        g = [v for (n, lab), v in live_series(m, patched.pid).items()
                             if n == "jvmtrace_live_heap_estimated_bytes"]
                        refills = [v for (n, lab), v in series_of(m, patched.pid).items()
                                   if n == "jvmtrace_tlab_refills_total"]
                        return (text, m, g[0], refills[0]) if g and refills and g[0] >= KEPT else None
                    text, m, gauge, refills = wait_until("the patched JVM's live heap gauge", gauge_settled)
                    lo, hi = bounds(refills)
                    print("\n".join(l for l in text.splitlines() if l.startswith("jvmtrace_live_heap_")))
                    assert lo <= gauge <= hi, (lo, gauge, hi)
                    series = live_series(m, patched.pid)
                    assert {n for (n, _) in series} == {"jvmtrace_live_heap_estimated_bytes",
                                                         "jvmtrace_live_heap_tracked_samples",
                                                         "jvmtrace_live_heap_sampling_level",
                                                         "jvmtrace_live_heap_samples_lost_total"}, series
                    for (n, labels) in series:  # the daemon's identity labels, no label of its own
                        assert dict(labels) == {"pid": str(patched.pid), "mode": "usdt", "application": "LiveKeep",
                                                "container": ""}, (n, labels)
                    assert series[("jvmtrace_live_heap_samples_lost_total", next(
                        lab for (n, lab) in series if n == "jvmtrace_live_heap_samples_lost_total"))] == 0
                    rc, said = promtool_check_metrics(text)
                    assert rc == 0 and said == "", said
                else:
                    m = wait_until("both JVMs' metrics", lambda: (lambda m: m if series_of(m, patched.pid) and
                                   series_of(m, stock.pid) else None)(parse_exposition(d.metrics())))
                    assert not live_series(m, patched.pid), live_series(m, patched.pid)
                m = wait_until("the stock JVM's metrics",
                               lambda: (lambda m: m if series_of(m, stock.pid) else None)(parse_exposition(d.metrics())))
                assert not live_series(m, stock.pid)
            finally:
                d.stop()
        finish(patched)
    finally:
        reap(patched, stock)
