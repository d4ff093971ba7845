#!/usr/bin/env python3
"""Benchmark: what a tracer's batched probes add to safepoints, with many
allocating threads (issue 23: the VM once flushed every thread's alloc__batch
records at every safepoint, under Threads_lock; issue 35: a safepoint now
takes them with one swap and fires them after it ends).

SafepointStorm (bench/java) runs THREADS threads that allocate all the time
while its main thread takes a thread dump every 100 ms (VM_ThreadDump: a
safepoint, not a collection).  Each round runs it once with nothing attached
and once under `jvmtrace stat` (the batched probes: every thread keeps its
slow paths' records), order alternating, on each JDK given; the figures are
the safepoints' own, from -Xlog:safepoint, by operation (the ThreadDumps and
the collector's own pauses): the time to reach them, the cleanup (where the
flush used to run, 17 and 21) and the time at them.  --gc picks the
collectors (G1, ZGC, Shenandoah; each a run of its own).

  sudo bench/safepoint_cost.py --home new=/path/to/jdk [--home old=/path] [--threads 500] [--rounds 3] \
      [--gc G1 --gc ZGC --gc Shenandoah]
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader, parse_safepoints  # noqa: E402

JVMTRACE = REPO / "build/userspace/jvmtrace"


def run(home, classes, threads, seconds, attach, work, gc="G1", heap="1g"):
    log = Path(work) / "sp.log"
    log.unlink(missing_ok=True)
    flag = {"G1": "-XX:+UseG1GC", "ZGC": "-XX:+UseZGC", "Shenandoah": "-XX:+UseShenandoahGC"}[gc]
    java = subprocess.Popen([f"{home}/bin/java", flag, f"-Xmx{heap}", f"-Xlog:safepoint:file={log}", "-cp",
                             classes, "SafepointStorm", str(threads), str(seconds)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = LineReader(java.stdout)
    out.wait_for(lambda l: l.startswith("ready"), 120, "SafepointStorm to start")
    stat = None
    if attach:
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(java.pid), "--json"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        LineReader(stat.stderr).wait_for(lambda l: l.startswith("Attached"), 60, "stat to attach")
    java.stdin.write("\n")
    java.stdin.flush()
    java.wait(seconds + 120)
    if stat:
        stat.wait(60)
    return parse_safepoints(log.read_text())


def summary(dumps, field):
    v = sorted(d[field] or 0 for d in dumps)
    return statistics.median(v) / 1e3, v[int(0.99 * (len(v) - 1))] / 1e3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", action="append", required=True, help="NAME=JAVA_HOME (a patched JDK)")
    ap.add_argument("--threads", type=int, default=500)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--gc", action="append", help="G1 (default), ZGC, Shenandoah; repeat for several")
    ap.add_argument("--ops", type=int, default=4, help="operations shown per collector, most frequent first")
    ap.add_argument("--heap", default="1g", help="-Xmx (smaller: more collections)")
    a = ap.parse_args()
    gcs = a.gc or ["G1"]
    with tempfile.TemporaryDirectory() as work:
        classes = Path(work) / "classes"
        subprocess.run(["javac", "-d", str(classes), str(REPO / "bench/java/SafepointStorm.java")], check=True)
        results = {}
        for r in range(a.rounds):
            for gc in gcs:
                for name, home in (h.split("=", 1) for h in a.home):
                    for attach in ((False, True) if r % 2 == 0 else (True, False)):
                        sps = run(home, str(classes), a.threads, a.seconds, attach, work, gc, a.heap)
                        results.setdefault((gc, name, attach), []).extend(sps)
                        print(f"round {r} {gc} {name} {'stat' if attach else 'detached'}: {len(sps)} safepoints",
                              file=sys.stderr)
        print(f"Safepoints with {a.threads} allocating threads, by operation (microseconds: median / p99)")
        print(f"{'GC':<11} {'operation':<24} {'JDK':<6} {'tracer':<7} {'n':>5} {'reaching':>18} {'cleanup':>18} "
              f"{'at safepoint':>18} {'total':>18}")
        for gc in gcs:
            ops = {}
            for (g, _, _), sps in results.items():
                if g == gc:
                    for sp in sps:
                        ops[sp["operation"]] = ops.get(sp["operation"], 0) + 1
            for op in sorted(ops, key=ops.get, reverse=True)[:a.ops]:
                for (g, name, attach), sps in sorted(results.items()):
                    mine = [sp for sp in sps if sp["operation"] == op] if g == gc else []
                    if not mine:
                        continue
                    cols = [summary(mine, f) for f in ("reaching_ns", "cleanup_ns", "at_safepoint_ns", "total_ns")]
                    print(f"{gc:<11} {op:<24} {name:<6} {'stat' if attach else 'none':<7} {len(mine):>5} " +
                          " ".join(f"{m:>8.0f} / {p:>7.0f}" for m, p in cols))

if __name__ == "__main__":
    main()
