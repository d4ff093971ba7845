#!/usr/bin/env python3
"""Benchmark: what jvmtrace costs an allocation-heavy, multi-threaded Java
program (bench/java/AllocBench.java), measured side by side in one run.

Configurations (pick with --configs, comma-separated):
  unpatched   our build of the same HotSpot source without the patch: the baseline
  patched     the patched HotSpot, nothing attached (target: <= 1.005x unpatched)
  stat        patched + `jvmtrace stat` attached (libbpf, in-kernel aggregation)
  stat-noslow patched + `jvmtrace stat --no-slow-path` (refill, GC and PLAB probes only)
  jvmmem      patched + the jvmmem bpftrace tool attached (every probe, bpftrace)
  record      patched + `jvmtrace record` to a file (every event, ring buffer, trace file)
  patched-fp  patched with -XX:+PreserveFramePointer, nothing attached (what --stacks needs)
  record-stacks patched-fp + `jvmtrace record --stacks` (a user stack per refill and slow path)
  stock-record unpatched + `jvmtrace record --mode stock` (uprobes on HotSpot's functions)
  jfr         patched + JFR from launch with the same events (TLAB and outside-TLAB
              allocations, PLAB and outside-PLAB promotions, GCs), no stack traces
  jfr-stacks  the same with stack traces, as JFR's profile settings record them

Every round runs each configuration once, in a random order; the program times
its own measured phase (after warm-up), so tracer start-up is not counted.
Prints every run, then per configuration the median and the ratio to the
baseline (ratio of medians, and the median of per-round ratios: each round's
runs are back to back, so slow drift cancels).

  bench/overhead.py [--jdk 17|21|25] [--rounds 10] [--gc G1,Parallel] [--configs unpatched,patched]
"""
import argparse
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader  # noqa: E402

# name: (command for a PID, the stream its "attached" banner appears on)
TRACERS = {
    "stat": (lambda pid: [str(REPO / "build/userspace/jvmtrace"), "stat", "-p", str(pid)], "stderr"),
    "stat-noslow": (lambda pid: [str(REPO / "build/userspace/jvmtrace"), "stat", "--no-slow-path", "-p", str(pid)],
                    "stderr"),
    "jvmmem": (lambda pid: [str(REPO / "scripts/jvmtrace-bt"), "jvmmem", str(pid)], "stdout"),
    "stock-record": (lambda pid: [str(REPO / "build/userspace/jvmtrace"), "record", "-q", "--mode", "stock", "-p",
                                  str(pid), "-o", f"{TRACE_DIR}/bench-stock.jvmtrace"], "stderr"),
    "record": (lambda pid: [str(REPO / "build/userspace/jvmtrace"), "record", "-q", "-p", str(pid),
                            "-o", f"{TRACE_DIR}/bench.jvmtrace"], "stderr"),
    "record-stacks": (lambda pid: [str(REPO / "build/userspace/jvmtrace"), "record", "-q", "--stacks", "-p", str(pid),
                                   "-o", f"{TRACE_DIR}/bench-stacks.jvmtrace"], "stderr"),
}
TRACE_DIR = tempfile.mkdtemp(prefix="jvmtrace-bench")

JFR_EVENTS = ("jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB", "jdk.PromoteObjectInNewPLAB",
              "jdk.PromoteObjectOutsidePLAB", "jdk.GarbageCollection")


def jfr_settings(stacks):
    """A .jfc enabling only the events jvmtrace records."""
    path = Path(TRACE_DIR) / f"events-{'stacks' if stacks else 'nostacks'}.jfc"
    events = "".join(f'<event name="{e}"><setting name="enabled">true</setting>'
                     f'<setting name="stackTrace">{"true" if stacks else "false"}</setting></event>'
                     for e in JFR_EVENTS)
    path.write_text(f'<?xml version="1.0" encoding="UTF-8"?><configuration version="2.0">{events}</configuration>')
    return path


def jvm_flags(config):
    if config in ("patched-fp", "record-stacks"):
        return ["-XX:+PreserveFramePointer"]
    if config in ("jfr", "jfr-stacks"):
        return [f"-XX:StartFlightRecording=settings={jfr_settings(config == 'jfr-stacks')},"
                f"filename={TRACE_DIR}/bench.jfr"]
    return []


def jdk_homes(jdk):
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print", "--jdk", jdk],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"overhead: JDK {jdk} not built ({r.stderr.strip()}); run scripts/build-patched-jdk.sh --jdk {jdk}")
    return dict(l.split("=", 1) for l in r.stdout.split())


def run_once(config, homes, classes, gc, heap, args):
    """Seconds of the program's measured phase, and its checksum."""
    home = homes["unpatched" if config in ("unpatched", "stock-record") else "patched"]
    cmd = [f"{home}/bin/java", f"-XX:+Use{gc}GC", f"-Xms{heap}", f"-Xmx{heap}", *jvm_flags(config), "-cp", classes,
           "AllocBench", *map(str, args), "wait"]
    java = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = LineReader(java.stdout)
    tracer = None
    try:
        pid = int(out.wait_for(lambda l: l.startswith("ready "), 60, "ready").split()[1])
        if config in TRACERS:
            cmd_for, stream = TRACERS[config]
            tracer = subprocess.Popen(cmd_for(pid), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            banner = LineReader(getattr(tracer, stream))
            LineReader(tracer.stderr if stream == "stdout" else tracer.stdout)  # drain the other stream
            banner.wait_for(lambda l: "Hit Ctrl-C to end." in l, 60, f"{config} to attach")
        java.stdin.write("go\n")
        java.stdin.close()
        java.wait(600)
        lines = out.drain()
        fields = dict(l.split(" ", 1) for l in lines if l.startswith(("elapsed_ms", "checksum")))
        return int(fields["elapsed_ms"]) / 1000.0, fields["checksum"]
    finally:
        for p in (tracer, java):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=60_000_000, help="per thread, measured phase")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gc", default="G1,Parallel")
    ap.add_argument("--heap", default="256m")
    ap.add_argument("--configs", default="unpatched,patched")
    ap.add_argument("--jdk", default="17", choices=("17", "21", "25"),
                    help="release line: its patched and unpatched builds (21, 25: in the Debian 13 root)")
    a = ap.parse_args()
    configs = a.configs.split(",")
    for c in configs:
        if c not in ("unpatched", "patched", "patched-fp", "jfr", "jfr-stacks", *TRACERS):
            sys.exit(f"overhead: unknown configuration {c!r}")
    base = configs[0]
    homes = jdk_homes(a.jdk)
    classes = tempfile.mkdtemp(prefix="allocbench")
    # Debian's javac 17: class files every line runs, and it reads the sources
    # where they are (a 21/25 javac runs in the Debian 13 root, which does not
    # see this clone).
    subprocess.run(["/usr/lib/jvm/java-17-openjdk-amd64/bin/javac", "-d", classes, str(REPO / "bench/java/AllocBench.java"),
                    str(REPO / "tests/java/TestSupport.java")], check=True)
    args = (a.threads, a.iterations, a.iterations // 4)
    rng = random.Random(42)
    print(f"# JDK {a.jdk}, AllocBench threads={a.threads} iterations={a.iterations}/thread heap={a.heap}; "
          f"{a.rounds} rounds, order shuffled per round; baseline: {base}", flush=True)
    rows = []
    for gc in a.gc.split(","):
        res = {c: [] for c in configs}
        checks = set()
        for rnd in range(a.rounds):
            order = list(configs)
            rng.shuffle(order)
            for c in order:
                t, chk = run_once(c, homes, classes, gc, a.heap, args)
                checks.add(chk)
                res[c].append(t)
                print(f"{gc:9s} round {rnd + 1:2d} {c:10s} {t:7.3f} s", flush=True)
        assert len(checks) == 1, f"configurations disagree on the checksum: {checks}"
        med_base = statistics.median(res[base])
        for c in configs:
            paired = statistics.median(x / y for x, y in zip(res[c], res[base]))
            rows.append((gc, c, statistics.median(res[c]), statistics.median(res[c]) / med_base, paired,
                         min(res[c]), max(res[c])))
    print("\n| GC | configuration | median (s) | ratio of medians | median of paired ratios | min-max (s) |")
    print("|---|---|---|---|---|---|")
    for gc, c, m, r, p, lo, hi in rows:
        print(f"| {gc} | {c} | {m:.3f} | {r:.4f} | {p:.4f} | {lo:.3f}-{hi:.3f} |")


if __name__ == "__main__":
    main()
