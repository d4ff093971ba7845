#!/usr/bin/env python3
"""Benchmark: how far each allocation sampler is from the truth, per class,
on AllocWorker (tests/java/AllocWorker.java), whose loop allocates a known
mix: two 24-byte Nodes, a byte[1..64] (52 bytes on average) and every 1024th
iteration a 4112-byte long[512].

  truth     one run with -XX:-UseTLAB: every object then takes the slow path
            outside TLABs, and jvmtrace records each one's exact size (also
            checked against the loop's arithmetic);
  jvmtrace  every TLAB refill of normal runs, weighed by its TLAB's bytes and
            attributed to the class of the allocation that asked for it;
  JFR       jdk.ObjectAllocationSample of the same runs (throttle 150/s, as
            in default.jfc), via `jvmtrace calibrate`.

Per class: its share of the alloc-worker thread's bytes, the median over
--runs normal runs, and each sampler's bias (share / true share).

  sudo bench/calibration.py [--iterations 100000000] [--runs 3] [--jvm-opts '-XX:TLABSize=300k']
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import traced_run  # noqa: E402

JVMTRACE = REPO / "build/userspace/jvmtrace"
CLASSES = ["[B", "AllocWorker$Node", "[J"]


def java_home():
    out = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh")], capture_output=True, text=True, check=True)
    return next(l.split("=", 1)[1] for l in out.stdout.splitlines() if l.startswith("patched="))


def record(home, classes, out, iterations, opts, jfr=None):
    cmd = [f"{home}/bin/java", "-XX:+UseG1GC", "-Xms128m", "-Xmx128m", *opts, "-cp", str(classes), "AllocWorker",
           str(iterations)] + ([str(jfr)] if jfr else [])
    run = traced_run(lambda pid: [str(JVMTRACE), "record", "-q", "-p", str(pid), "-o", str(out)], cmd,
                     ready=lambda l: l.startswith("Recording PID"), stderr_ready=True, timeout=600)
    assert run.target_rc == 0, run.target_err
    return run


def worker_bytes(trace):
    """Per class bytes of the alloc-worker thread: TLAB refills and outside-TLAB objects."""
    out = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, check=True)
    by, enter = defaultdict(int), {}
    for line in out.stdout.splitlines():
        x = json.loads(line)
        if x["type"] != "event" or x["thread"] != "alloc-worker":
            continue
        a = x["args"]
        if x["probe"] == "alloc__slow__enter":
            enter[x["tid"]] = a["class"]
        elif x["probe"] == "tlab__refill":
            by[a["class"]] += a["tlab_bytes"]
        elif x["probe"] == "alloc__slow__exit" and a["outcome"] in (2, 4):
            by[enter[x["tid"]]] += a["alloc_bytes"]
    return by


def shares(d):
    total = sum(d.get(k, 0) for k in CLASSES)
    return {k: d.get(k, 0) / total for k in CLASSES}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=100_000_000)
    ap.add_argument("--truth-iterations", type=int, default=4_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jvm-opts", default="", help="extra JVM options for the normal runs")
    a = ap.parse_args()
    home = java_home()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        classes = tmp / "classes"
        subprocess.run([f"{home}/bin/javac", "-d", str(classes), *map(str, (REPO / "tests/java").glob("*.java"))],
                       check=True)
        n = a.truth_iterations
        record(home, classes, tmp / "truth.jvmtrace", n, ["-XX:-UseTLAB"])
        truth_bytes = worker_bytes(tmp / "truth.jvmtrace")
        arithmetic = {"AllocWorker$Node": 48 * n, "[B": sum(((16 + (i % 64) + 1 + 7) // 8) * 8 for i in range(n)),
                      "[J": ((n + 1023) // 1024) * 4112}
        print(f"truth run ({n} iterations, -XX:-UseTLAB): " +
              ", ".join(f"{k} {truth_bytes[k]} B (loop arithmetic {arithmetic[k]})" for k in CLASSES))
        truth = shares(truth_bytes)
        runs = []
        for r in range(a.runs):
            trace, jfr = tmp / f"run{r}.jvmtrace", tmp / f"run{r}.jfr"
            record(home, classes, trace, a.iterations, a.jvm_opts.split(), jfr)
            cal = json.loads(subprocess.run([str(JVMTRACE), "calibrate", str(trace), "--jfr", str(jfr), "--json"],
                                            capture_output=True, text=True, check=True).stdout)
            jt = shares({c["class"]: c["trace_bytes"] for c in cal["classes"]})
            jf = shares({c["class"]: c["jfr_weight"] for c in cal["classes"]})
            runs.append((jt, jf, cal["jfr_samples_compared"], cal["trace_events"]))
            print(f"run {r + 1}: {cal['trace_events']} refills/objects, {cal['jfr_samples_compared']} JFR samples; "
                  + ", ".join(f"{k} jvmtrace {jt[k]:.2%} JFR {jf[k]:.2%}" for k in CLASSES))
    print(f"\nAllocWorker {a.iterations} iterations {a.jvm_opts or '(default TLAB sizing)'}, "
          f"medians of {a.runs} runs")
    print(f"{'CLASS':<18} {'TRUE':>8} {'JVMTRACE':>9} {'BIAS':>6} {'JFR':>8} {'BIAS':>6}")
    for k in CLASSES:
        jt = statistics.median(r[0][k] for r in runs)
        jf = statistics.median(r[1][k] for r in runs)
        print(f"{k:<18} {truth[k]:>8.2%} {jt:>9.2%} {jt / truth[k]:>6.2f} {jf:>8.2%} {jf / truth[k]:>6.2f}")
    print(f"samples per run (median): jvmtrace {statistics.median(r[3] for r in runs):.0f}, "
          f"JFR {statistics.median(r[2] for r in runs):.0f}")


if __name__ == "__main__":
    main()
