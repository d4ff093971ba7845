#!/usr/bin/env python3
"""Benchmark: the patched HotSpot with nothing attached vs the unpatched one
(same source, flags and compiler), on an allocation-heavy multi-threaded Java
program.  Runs are interleaved in a random order per round; prints every run,
then medians and the patched/unpatched ratio per GC.  Target: <= 1.005x.

  sudo bench/detached_overhead.py [--rounds N] [--iterations N] [--gc G1,Parallel]

Two figures per run: the program's own timing of its measured phase (after
warm-up) and the whole process's wall time (start-up and exit included).
"""
import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def jdk_homes():
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"detached_overhead: JDKs not built ({r.stderr.strip()}); run scripts/build-patched-jdk.sh")
    return dict(l.split("=", 1) for l in r.stdout.split())


def run_once(home, classes, gc, heap, args):
    cmd = [f"{home}/bin/java", f"-XX:+Use{gc}GC", f"-Xms{heap}", f"-Xmx{heap}", "-cp", classes,
           "AllocBench", *map(str, args)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    fields = dict(l.split(" ", 1) for l in r.stdout.splitlines())
    return int(fields["elapsed_ms"]) / 1000.0, wall, fields["checksum"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=60_000_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--gc", default="G1,Parallel")
    ap.add_argument("--heap", default="256m")
    a = ap.parse_args()
    homes = jdk_homes()
    classes = tempfile.mkdtemp(prefix="allocbench")
    subprocess.run([f"{homes['patched']}/bin/javac", "-d", classes, str(REPO / "bench/java/AllocBench.java")],
                   check=True)
    args = (a.threads, a.iterations, a.iterations // 4)
    rng = random.Random(42)
    print(f"# AllocBench threads={a.threads} iterations={a.iterations} heap={a.heap}, {a.rounds} interleaved rounds")
    summary = []
    for gc in a.gc.split(","):
        res = {"patched": [], "unpatched": []}
        checks = set()
        for rnd in range(a.rounds):
            order = ["patched", "unpatched"]
            rng.shuffle(order)
            for v in order:
                timed, wall, chk = run_once(homes[v], classes, gc, a.heap, args)
                checks.add(chk)
                res[v].append((timed, wall))
                print(f"{gc:9s} round {rnd + 1:2d} {v:9s} timed {timed:7.3f}s  wall {wall:7.3f}s", flush=True)
        assert len(checks) == 1, f"variants disagree on the checksum: {checks}"
        med = {v: (statistics.median(t for t, _ in r), statistics.median(w for _, w in r)) for v, r in res.items()}
        # Per-round ratios too: each pair ran back to back, so drift cancels.
        pair = [p[0] / u[0] for p, u in zip(res["patched"], res["unpatched"])]
        summary.append((gc, med["patched"][0], med["unpatched"][0], med["patched"][0] / med["unpatched"][0],
                        statistics.median(pair), med["patched"][1] / med["unpatched"][1]))
    print("\n| GC | patched timed (median) | unpatched timed (median) | ratio of medians | median of paired ratios | wall-time ratio |")
    print("|---|---|---|---|---|---|")
    for gc, p, u, r, pr, wr in summary:
        print(f"| {gc} | {p:.3f} s | {u:.3f} s | {r:.4f} | {pr:.4f} | {wr:.4f} |")


if __name__ == "__main__":
    main()
