#!/usr/bin/env python3
"""Benchmark: the VM's allocation sampler (alloc__sample's controller,
usdt/hotspot/shared/utilities/jvmtraceStack.cpp; decision 118) replayed
offline on the slow paths of real traces.

A trace recorded by `jvmtrace record` holds every slow path exactly (each
new TLAB's size, each object outside TLABs, with its thread and time), and
the sampler's choices depend on nothing else: so any controller can be
replayed on a real program's stream, without rebuilding a JDK.  This prints,
per trace, the samples a run would take under each controller (the median
over --seeds random countdowns), the slow paths, and the worst second.  The
replay of the controller a trace was recorded with comes within a few per
cent of the samples the VM took (Rhino on 25: 596 replayed, 605 taken).

Controllers: `old` (decision 85: double per 500 samples in a window of a
second, halve per quiet window), `band` (decision 118: windows end at 500
samples or a second; a rate outside 125-1,000 a second lands the mean on
500), `band-pace` (band, and a window ends early at a pace over 4,000 a
second over its last 125 samples), `target` (scale at any rate over 500).

  bench/replay_sampler.py TRACE [TRACE...] [--seeds 20]
"""
import argparse
import collections
import json
import os
import random
import statistics
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET, BASE, MAX = 500, 64 * 1024, 1 << 40


def slow_paths(jvmtrace, trace):
    """(ts_ns, tid, bytes) of every slow path that handed out memory, in time order."""
    r = subprocess.run([jvmtrace, "dump", "--json", str(trace)], capture_output=True, text=True)
    if r.returncode not in (0, 3):
        raise SystemExit(f"replay_sampler: {trace}: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("type") != "event":
            continue
        if x["probe"] == "tlab__refill":
            out.append((x["ts_ns"], x["tid"], x["args"]["tlab_bytes"]))
        elif x["probe"] == "alloc__slow__exit" and x["args"]["outcome"] in (2, 3):  # outside TLABs
            out.append((x["ts_ns"], x["tid"], x["args"]["alloc_bytes"]))
    out.sort()
    return out


def replay(paths, seed, controller):
    """The samples' times under a controller, with per-thread exponential
    countdowns as the VM draws them."""
    rng = random.Random(seed)
    mean, start, used, mark = BASE, 0, 0, 0
    countdown, drawn_with, taken = {}, {}, []
    for ts, tid, b in paths:
        if b <= 0:
            continue
        if drawn_with.get(tid) != mean:  # rescaled to the new mean (memoryless)
            countdown[tid] = (rng.expovariate(1 / mean) if tid not in drawn_with
                              else countdown[tid] * mean / drawn_with[tid])
            drawn_with[tid] = mean
        countdown[tid] -= b
        if countdown[tid] > 0:
            continue
        countdown[tid] = rng.expovariate(1 / mean)
        taken.append(ts)
        if controller == "old":
            w = ts // 10**9
            if start != w:
                quiet = (1 if used < TARGET // 4 else 0) + min(40, max(0, w - start - 1)) if start else 0
                start, used = w, 0
                if quiet:
                    mean = max(BASE, mean >> quiet)
            used += 1
            if used % TARGET == 0:
                mean = min(MAX, mean * 2)
            continue
        used += 1
        rate = used * 1e9 / max(ts - start, 1)
        ended = start == 0 or ts - start >= 10**9 or used >= TARGET
        if not ended and controller == "band-pace" and used % (TARGET // 4) == 0:
            pace = (TARGET // 4) * 1e9 / max(ts - mark, 1)
            mark = ts
            if pace > 8 * TARGET:
                rate, ended = pace, True
        if not ended:
            continue
        first, start, used, mark = start == 0, ts, 0, ts
        high = 1.0 if controller == "target" else 2.0
        if first or TARGET / 4 <= rate <= high * TARGET:
            continue
        mean = min(MAX, max(BASE, mean * rate / TARGET))
    return taken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--controllers", default="old,target,band-pace,band")
    ap.add_argument("--jvmtrace", default=str(Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))
                                              / "userspace/jvmtrace"))
    a = ap.parse_args()
    controllers = a.controllers.split(",")
    print("| trace | slow paths | span s | " + " | ".join(f"{c}: samples (worst second)" for c in controllers) + " |")
    print("|---|---|---|" + "---|" * len(controllers))
    for trace in a.traces:
        paths = slow_paths(a.jvmtrace, trace)
        if not paths:
            print(f"| {trace} | 0 | | " + " | ".join("" for _ in controllers) + " |")
            continue
        span = (paths[-1][0] - paths[0][0]) / 1e9
        cells = []
        for c in controllers:
            runs = [replay(paths, s, c) for s in range(a.seeds)]
            worst = max(max(collections.Counter((t - r[0]) // 10**9 for t in r).values()) for r in runs if r)
            cells.append(f"{statistics.median(len(r) for r in runs):,.0f} ({worst:,})")
        print(f"| {trace} | {len(paths):,} | {span:.2f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
