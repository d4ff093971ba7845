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
`band@T:TOP:W[:HELD]` is `band` with a target of T samples a second, the
band's top at TOP a second (2T if left out), windows that end at W samples
or a second (T if left out) and, with HELD, a lower top once the mean has
risen above 64 KiB (tried in session 17, not the VM's), so a lower target
can leave the rates it leaves alone, and the bursts it sees, where they
were: decision 121's VM is `band@250:1000:500`, decision 118's `band`.

With --jfr the arguments are JFR recordings with stacks of JFR's event for
every slow path (jdk.ObjectAllocationInNewTLAB and OutsideTLAB, as
tests/test_allocation_sites.py records them): the replay then takes its
samples from those events, weighs each as the VM does (bytes / (1 -
e^(-bytes/mean))), and prints how the sampled allocating methods (the top
frame) agree with all of JFR's events, as that test measures them: the
agreement (sum of the smaller shares) and how many of the top 10 are in the
sampled top 10, the median and the worst over the seeds.  So a controller's
effect on the corpus's agreement is known before a JDK is rebuilt.

  bench/replay_sampler.py TRACE [TRACE...] [--seeds 20]
  bench/replay_sampler.py --jfr REC.jfr [...] --controllers band,band@250:1000:500
"""
import argparse
import collections
import datetime
import json
import math
import os
import random
import statistics
import subprocess
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET, BASE, MAX = 500, 64 * 1024, 1 << 40


def slow_paths(jvmtrace, trace):
    """(ts_ns, tid, bytes) of every slow path that handed out memory, in time order."""
    r = subprocess.run([jvmtrace, "dump", "--json", str(trace)], capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 3):
        raise SystemExit(f"replay_sampler: {trace}: {r.stderr.strip()}")
    out = []
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("type") != "event":
            continue
        if x["probe"] == "tlab__refill":
            out.append((x["ts_ns"], x["tid"], x["args"]["tlab_bytes"]))
        elif x["probe"] == "alloc__slow__exit" and x["args"]["outcome"] in (2, 4):  # outside TLABs (jvmtrace_abi.h)
            out.append((x["ts_ns"], x["tid"], x["args"]["alloc_bytes"]))
    out.sort()
    return out


def jfr_top_frames(jfr, recording, events):
    """(type, values, class name, method name) of each of a recording's
    events of those types that has a stack, by its top frame, as `jfr print
    --json` gives them (tests/test_allocation_sites.py reads JFR with this
    too)."""
    r = subprocess.run([jfr, "print", "--json", "--events", ",".join(events), str(recording)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{jfr} print {recording}: {r.stderr.strip()}")
    for e in json.loads(r.stdout)["recording"]["events"]:
        v = e["values"]
        frames = (v.get("stackTrace") or {}).get("frames") or []
        if frames:
            m = frames[0]["method"]
            yield e["type"], v, m["type"]["name"].replace("/", "."), m["name"]


def jfr_slow_paths(jfr, recording):
    """(ts_ns, tid, bytes, method) of JFR's event for every slow path, in time order."""
    out = []
    for kind, v, cls, name in jfr_top_frames(jfr, recording, ["jdk.ObjectAllocationInNewTLAB",
                                                             "jdk.ObjectAllocationOutsideTLAB"]):
        b = v["tlabSize"] if kind == "jdk.ObjectAllocationInNewTLAB" else v["allocationSize"]
        d, _, frac = v["startTime"].rstrip("Z").partition(".")
        ts = int(datetime.datetime.fromisoformat(d).replace(tzinfo=datetime.timezone.utc).timestamp()) * 10**9 \
            + int(frac.ljust(9, "0")[:9])
        out.append((ts, v["eventThread"]["javaThreadId"], b, cls + "." + name))
    out.sort()
    return out


def shares(weights):
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()} if total else {}


def top(share, n=10):
    return [k for k, _ in sorted(share.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def agreement_of(paths, taken):
    """(agreement, JFR's top 10 in the sample's top 10) of the sampled
    methods' shares against every slow path's, as the sites test counts
    them (a method within 0.001 of the sample's 10th counts as in it)."""
    a = Counter()
    for _, _, b, m in paths:
        a[m] += b
    s = Counter()
    for i, w in taken:
        s[paths[i][3]] += w
    a, s = shares(a), shares(s)
    agree = sum(min(a.get(k, 0.0), s.get(k, 0.0)) for k in set(a) | set(s))
    ts = top(s)
    cut = s[ts[-1]] - 0.001 if ts else 0.0
    return agree, sum(1 for k in top(a) if k in ts or s.get(k, 0.0) >= cut)


def replay(paths, seed, controller, weighed=False):
    """The samples' times under a controller, with per-thread exponential
    countdowns as the VM draws them."""
    target, top, window, held_top = TARGET, 2.0 * TARGET, TARGET, None
    if controller.startswith("band@"):
        t, h, w, ht = (controller[len("band@"):].split(":") + ["", "", ""])[:4]
        target = int(t)
        top = float(h) if h else 2.0 * target
        window = int(w) if w else target
        held_top = float(ht) if ht else None
        controller = "band"
    rng = random.Random(seed)
    mean, start, used, mark = BASE, 0, 0, 0
    countdown, drawn_with, taken = {}, {}, []
    for i, (ts, tid, b, *_) in enumerate(paths):
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
        taken.append((i, b / -math.expm1(-b / drawn_with[tid])) if weighed else ts)
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
        ended = start == 0 or ts - start >= 10**9 or used >= window
        if not ended and controller == "band-pace" and used % (target // 4) == 0:
            pace = (target // 4) * 1e9 / max(ts - mark, 1)
            mark = ts
            if pace > 8 * target:
                rate, ended = pace, True
        if not ended:
            continue
        first, start, used, mark = start == 0, ts, 0, ts
        if controller == "target":
            top = target
        high = held_top if held_top and mean > BASE else top
        if first or target / 4 <= rate <= high:
            continue
        mean = min(MAX, max(BASE, mean * rate / target))
    return taken


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--controllers", default="old,band,band@250:1000:500")
    ap.add_argument("--jvmtrace", default=str(Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))
                                              / "userspace/jvmtrace"))
    ap.add_argument("--jfr", action="store_true", help="the arguments are JFR recordings: replay on JFR's "
                    "every-slow-path events and print the sampled sites' agreement with them")
    ap.add_argument("--jfr-tool", default="/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr")
    a = ap.parse_args()
    controllers = a.controllers.split(",")
    if a.jfr:
        print("| recording | slow paths | " + " | ".join(
            f"{c}: samples, agreement median (worst), top-10 worst" for c in controllers) + " |")
        print("|---|---|" + "---|" * len(controllers))
        for rec in a.traces:
            paths = jfr_slow_paths(a.jfr_tool, rec)
            cells = []
            for c in controllers:
                runs = [replay(paths, s, c, weighed=True) for s in range(a.seeds)]
                agrees = [agreement_of(paths, r) for r in runs]
                cells.append(f"{statistics.median(len(r) for r in runs):,.0f}, "
                             f"{statistics.median(x for x, _ in agrees):.3f} ({min(x for x, _ in agrees):.3f}), "
                             f"{min(n for _, n in agrees)}")
            print(f"| {rec} | {len(paths):,} | " + " | ".join(cells) + " |", flush=True)
        return
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
