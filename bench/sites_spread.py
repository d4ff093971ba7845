#!/usr/bin/python3
"""Benchmark: how the allocation-site test's figures spread from run to run
(issue 38: its tolerances are to be taken from the spread over at least 10
runs of ecj, Saxon and Lucene on each line).  Each run is exactly one case of
tests/test_allocation_sites.py: the program held at start-up, `record
--stacks` attached, JFR's every-slow-path events and samples from its start;
the same functions compute the same figures.  Per run it prints:

  agree     jvmtrace's method shares against JFR's every-slow-path events
            (the test asserts >= 0.90)
  top10     how many of JFR's top 10 methods count as in jvmtrace's (the
            test asserts >= 9; decision 125's tie rule)
  strict    the same by rank alone (no tie rule)
  z10       for each JFR top-10 method missing from jvmtrace's top 10 by
            rank: how many standard errors it lies below jvmtrace's 10th
            (the tie rule allows 3)
  jfr_self  JFR's own samples against its every-slow-path events (printed
            by the test, not asserted)
  samples   jvmtrace's samples in JFR's span

then per case the minimum, median and maximum of agree and top10, and the
largest z10 seen.

  sudo bench/sites_spread.py [--runs 10] [--programs ecj-compile,saxon-xslt,lucene-index-search]
                             [--lines 17,21,25] [--gcs G1,Parallel]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import test_allocation_sites as sites  # noqa: E402
from conftest import debian_jdk17, jdk_homes  # noqa: E402
from corpus import PROGRAMS  # noqa: E402


# (under /tmp: 21's and 25's JVMs run in the Debian 13 root, which shares the
# host's /tmp but not its /var/tmp, so a work directory elsewhere is not theirs)
def one_run(program, line, gc, inputs):
    work = Path(tempfile.mkdtemp(prefix=f"spread-{program.name}-{line}-{gc}.", dir="/tmp"))
    try:
        shutil.copytree(inputs, work, copy_function=os.link, dirs_exist_ok=True)
        home = jdk_homes(line)["patched"]
        sites.run_with_jfr(program, home, line, gc, work)
        every, sampled, _, span = sites.jfr_sites(home, work / "rec.jfr")
        ours, squares, rep = sites.jvmtrace_sites(work / "trace.jvmtrace", span)
        a, b, j = sites.shares(every), sites.shares(ours), sites.shares(sampled)
        var = sites.sampling_variance(ours, squares)
        tb = sites.top(b)
        tenth = b[tb[-1]] if tb else 0.0
        missing = [k for k in sites.top(a) if k not in tb]
        z = [(tenth - b.get(k, 0.0)) / max((var.get(k, 0.0) + var.get(tb[-1], 0.0)) ** 0.5, 1e-12)
             for k in missing]
        return {"agree": sites.agreement(a, b), "top10": len(sites.top_overlap(a, b, var)),
                "strict": len(sites.top(a)) - len(missing), "z10": max(z, default=0.0),
                "jfr_self": sites.agreement(a, j), "samples": rep["allocation_samples"]["samples"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--programs", default="ecj-compile,saxon-xslt,lucene-index-search")
    ap.add_argument("--lines", default="17,21,25")
    ap.add_argument("--gcs", default="G1,Parallel")
    args = ap.parse_args()
    wanted = args.programs.split(",")
    programs = [p for p in PROGRAMS if p.name in wanted]
    if len(programs) != len(wanted):
        ap.error(f"--programs: known are {', '.join(p.name for p in PROGRAMS)}")
    for program in programs:
        inputs = Path(tempfile.mkdtemp(prefix=f"spread-input-{program.name}.", dir="/tmp"))
        try:
            program.prepare(inputs, str(debian_jdk17()))
            for line in args.lines.split(","):
                for gc in args.gcs.split(","):
                    rows = []
                    for i in range(args.runs):
                        r = one_run(program, line, gc, inputs)
                        rows.append(r)
                        print(f"{program.name} jdk{line} {gc} run {i}: agree {r['agree']:.3f} top10 {r['top10']} "
                              f"strict {r['strict']} z10 {r['z10']:.2f} jfr_self {r['jfr_self']:.3f} "
                              f"samples {r['samples']}", flush=True)
                    ag = [r["agree"] for r in rows]
                    t10 = [r["top10"] for r in rows]
                    print(f"== {program.name} jdk{line} {gc}: agree min {min(ag):.3f} median "
                          f"{statistics.median(ag):.3f} max {max(ag):.3f}; top10 min {min(t10)} median "
                          f"{statistics.median(t10)}; largest z10 {max(r['z10'] for r in rows):.2f}", flush=True)
        finally:
            shutil.rmtree(inputs, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
