#!/usr/bin/python3
"""Benchmark: how far report --live's survival curve at the default sampling
rate lies from the every-slow-path run's, run to run (issue 34 item 4's
Kolmogorov-Smirnov distance; issue 38: a tolerance from the spread).  Each
run is one run of tests/test_live.py's survival test (Leaky held at
start-up, `record --live` attached).  One every-slow-path run per case (its
sampling has no randomness: every slow path), then --runs default-rate runs;
it prints each run's KS distance, their minimum, median, 90th percentile and
maximum, and the KS distance of the mean of each consecutive group of --mean
runs' curves (what the test asserts on).

  sudo bench/survival_spread.py [--runs 20] [--mean 3] [--lines 17,21,25] [--gcs G1,ZGC]
"""
import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import test_live as live  # noqa: E402
from conftest import debian_jdk17, jdk_homes  # noqa: E402
from helpers import run_checked  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--mean", type=int, default=3)
    ap.add_argument("--lines", default="17,21,25")
    ap.add_argument("--gcs", default=",".join(live.COLLECTORS))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="survival-spread.") as tmp:
        tmp = Path(tmp)
        classes = tmp / "classes"
        classes.mkdir()
        run_checked([str(debian_jdk17() / "bin/javac"), "-d", str(classes), str(REPO / "tests/java/Leaky.java")])
        for line in args.lines.split(","):
            home = jdk_homes(line)["patched"]
            for gc in args.gcs.split(","):
                every, n_every, gcs_every = live.survival_run(home, classes, tmp, gc, True)
                curves, ks = [], []
                for i in range(args.runs):
                    c, n, gcs = live.survival_run(home, classes, tmp, gc, False, f"-{i}")
                    curves.append(c)
                    ks.append(live.ks_distance(c, every))
                    print(f"{line} {gc} run {i}: KS {ks[-1]:.3f} ({n} samples, {gcs} collections; every slow path {n_every}, {gcs_every})", flush=True)
                means = []
                for g in range(0, len(curves) - args.mean + 1, args.mean):
                    group = curves[g:g + args.mean]
                    mean = [sum(c[j] for c in group) / len(group) for j in range(len(every))]
                    means.append(live.ks_distance(mean, every))
                q = sorted(ks)
                print(f"{line} {gc}: {len(ks)} runs, KS min {q[0]:.3f} median {statistics.median(q):.3f} "
                      f"p90 {q[int(0.9 * (len(q) - 1))]:.3f} max {q[-1]:.3f}; mean of {args.mean}: "
                      f"{' '.join(f'{m:.3f}' for m in means)}", flush=True)


if __name__ == "__main__":
    main()
