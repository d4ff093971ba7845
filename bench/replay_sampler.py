#!/usr/bin/env python3
"""Benchmark: the VM's allocation sampler (alloc__sample's controller,
usdt/hotspot/shared/utilities/jvmtraceStack.cpp; decisions 148, 165) replayed
offline on the slow paths of real traces.

A trace recorded by `jvmtrace record` holds every slow path exactly (each
new TLAB's size, each object outside TLABs, with its thread and time), and
the sampler's choices depend on nothing else (and its own random draws): so a
controller can be replayed on a real program's stream, without rebuilding a
JDK.  This prints, per trace, the samples a run would take under each
controller (the median over --seeds), the slow paths, the busiest sliding
second of any seed, and, when the trace was recorded with --stacks, the
samples the VM took (so the replay of the rate it was recorded at checks
itself against the VM).

Controllers:
  bucket@T   the VM's sampler since session 21 (decision 148), as
             jvmtrace_sample_decide is written: per-thread exponential
             countdowns of the global mean (rescaled when it moves), a token
             bucket of max(2, 0.2 T) refilled at 1.8 T a second, a candidate
             that finds it empty sampled with probability 2^-k (k <= 16,
             candidates in a row that found it empty) into debt, the mean
             re-targeted to R / T at each 100 ms window (or at once when the
             bucket runs dry; halfway in log space under 10 samples), within
             [64 KiB, 1 TiB], a fresh session after a second without a
             candidate; T = 0 every slow path.
  band@T:TOP:W[:HELD]
             decisions 118/121's band (the VM before session 21), kept to
             replay a "before" on a trace of today: windows end at W samples
             or a second, a rate outside [T/4, TOP] lands the mean on T;
             decision 121's VM is band@250:1000:500.  (Decision 85's doubling
             rule and session 15's rejected tries are in git history, commit
             c26ae65 and before.)

With --jfr the arguments are JFR recordings with stacks of JFR's event for
every slow path (jdk.ObjectAllocationInNewTLAB and OutsideTLAB, as
tests/test_allocation_sites.py records them): the replay then takes its
samples from those events, weighs each as the VM does (bytes / p / q), and
prints how the sampled allocating methods (the top frame) agree with all of
JFR's events, as that test measures them: the agreement (sum of the smaller
shares) and how many of the top 10 are in the sampled top 10, the median and
the worst over the seeds.  So a controller's effect on the corpus's agreement
is known before a JDK is rebuilt.

  bench/replay_sampler.py TRACE [TRACE...] [--seeds 20] [--controllers bucket@250,band@250:1000:500]
  bench/replay_sampler.py --jfr REC.jfr [...] --controllers bucket@250,bucket@1000
"""
import argparse
import bisect
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
# jvmtraceStack.cpp's constants
BASE, MAX = 64 * 1024, 1 << 40
WINDOW_NS, SESSION_GAP_NS = 100 * 10**6, 10**9


def slow_paths(jvmtrace, trace):
    """(ts_ns, tid, bytes) of every slow path that handed out memory, in time order, and the
    trace's alloc__sample events (what the VM took, if it was recorded with --stacks)."""
    r = subprocess.run([jvmtrace, "dump", "--json", str(trace)], capture_output=True, text=True, timeout=600)
    if r.returncode not in (0, 3):
        raise SystemExit(f"replay_sampler: {trace}: {r.stderr.strip()}")
    out, taken = [], 0
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("type") != "event":
            continue
        if x["probe"] == "tlab__refill":
            out.append((x["ts_ns"], x["tid"], x["args"]["tlab_bytes"]))
        elif x["probe"] == "alloc__slow__exit" and x["args"]["outcome"] in (2, 4):  # outside TLABs (jvmtrace_abi.h)
            out.append((x["ts_ns"], x["tid"], x["args"]["alloc_bytes"]))
        elif x["probe"] == "alloc__sample":
            taken += 1
    out.sort()
    return out, taken


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


def parse_controller(name):
    """("bucket", T) or ("band", T, TOP, W, HELD) of a controller's name."""
    if name.startswith("bucket@"):
        return ("bucket", int(name[len("bucket@"):]))
    if name.startswith("band@"):
        t, h, w, ht = (name[len("band@"):].split(":") + ["", "", ""])[:4]
        target = int(t)
        return ("band", target, float(h) if h else 2.0 * target, int(w) if w else target,
                float(ht) if ht else None)
    raise SystemExit(f"replay_sampler: no controller {name!r} (bucket@T or band@T:TOP:W[:HELD])")


def next_interval(rng, mean):
    """The VM's draw: an exponential of that mean, in whole bytes, at least 1."""
    return int(-math.log(1.0 - rng.random()) * mean) + 1


class Bucket:
    """jvmtrace_sample_decide (jvmtraceStack.cpp, decision 148) line by line: one global
    state, a candidate's time its slow path's."""

    def __init__(self, target, rng):
        self.target, self.rng = float(target), rng
        self.mean = BASE
        self.last = 0
        self.tokens = self.refilled = self.k = 0
        self.wstart, self.wbytes, self.wused = 0, 0.0, 0

    def decide(self, now, weight_p):
        """The weight of a sampled candidate, or None."""
        capacity = max(2.0, 0.2 * self.target)
        if self.last == 0 or now - self.last > SESSION_GAP_NS:
            self.mean, self.tokens, self.refilled, self.k = BASE, capacity, now, 0
            self.wstart, self.wbytes, self.wused = now, 0.0, 0
        self.last = now
        self.tokens = min(capacity, self.tokens + (now - self.refilled) * 1.8 * self.target / 1e9)
        self.refilled = now
        q, empty = 1.0, False
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            self.k = 0
        else:
            empty = True
            self.k = min(self.k + 1, 16)
            q = math.ldexp(1.0, -self.k)
            if self.rng.random() >= q:
                return None
            self.tokens -= 1.0  # a coin's sample: into debt
        w = weight_p / q
        self.wbytes += w
        self.wused += 1
        elapsed = now - self.wstart
        if elapsed >= WINDOW_NS or (empty and elapsed > 0):
            rate = self.wbytes * 1e9 / elapsed
            mean = rate / max(self.target, 1.0)
            if self.wused < 10:
                mean = math.sqrt(self.mean * max(mean, 1.0))
            self.mean = int(min(float(MAX), max(float(BASE), mean)))
            self.wstart, self.wbytes, self.wused = now, 0.0, 0
        return w


def replay_bucket(paths, seed, target, weighed=False):
    """The samples' times (or (index, weight) with weighed) under the VM's sampler today:
    per-thread exponential countdowns rescaled when the mean moves, and the bucket."""
    rng = random.Random(seed)
    bucket = Bucket(target, rng)
    countdown, drawn_with, taken = {}, {}, []
    for i, (ts, tid, b, *_) in enumerate(paths):
        if b <= 0:
            continue
        if target == 0:  # every slow path, of weight B
            taken.append((i, float(b)) if weighed else ts)
            continue
        mean = bucket.mean
        if drawn_with.get(tid) != mean:  # rescaled to the new mean (memoryless)
            countdown[tid] = (next_interval(rng, mean) if tid not in drawn_with
                              else int(countdown[tid] * (mean / drawn_with[tid])) + 1)
            drawn_with[tid] = mean
        countdown[tid] -= min(b, MAX)
        if countdown[tid] > 0:
            continue
        countdown[tid] = next_interval(rng, mean)
        w = bucket.decide(ts, b / -math.expm1(-b / mean))
        if w is not None:
            taken.append((i, w) if weighed else ts)
    return taken


def replay_band(paths, seed, target, top, window, held_top, weighed=False):
    """The samples' times under decisions 118/121's band (the VM before session 21), kept
    to replay a trace's "before": windows end at W samples or a second; a rate outside
    [T/4, TOP] moves the mean so that it lands on T; with HELD, a lower top once the mean
    has risen above 64 KiB (session 17's try)."""
    rng = random.Random(seed)
    mean, start, used = BASE, 0, 0
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
        used += 1
        rate = used * 1e9 / max(ts - start, 1)
        if not (start == 0 or ts - start >= 10**9 or used >= window):
            continue
        first, start, used = start == 0, ts, 0
        high = held_top if held_top and mean > BASE else top
        if first or target / 4 <= rate <= high:
            continue
        mean = min(MAX, max(BASE, mean * rate / target))
    return taken


def replay(paths, seed, controller, weighed=False):
    c = parse_controller(controller)
    if c[0] == "bucket":
        return replay_bucket(paths, seed, c[1], weighed)
    return replay_band(paths, seed, *c[1:], weighed=weighed)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--controllers", default="bucket@250,bucket@1000,band@250:1000:500")
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
    print("| trace | slow paths | span s | the VM took | "
          + " | ".join(f"{c}: samples (busiest second)" for c in controllers) + " |")
    print("|---|---|---|---|" + "---|" * len(controllers))
    for trace in a.traces:
        paths, vm_taken = slow_paths(a.jvmtrace, trace)
        if not paths:
            print(f"| {trace} | 0 | | {vm_taken} | " + " | ".join("" for _ in controllers) + " |")
            continue
        span = (paths[-1][0] - paths[0][0]) / 1e9
        cells = []
        for c in controllers:
            runs = [replay(paths, s, c) for s in range(a.seeds)]
            # the busiest sliding second of any seed's replay
            worst = max((max(bisect.bisect_right(r, t + 10**9) - j for j, t in enumerate(r)) for r in runs if r),
                        default=0)
            cells.append(f"{statistics.median(len(r) for r in runs):,.0f} ({worst:,})")
        print(f"| {trace} | {len(paths):,} | {span:.2f} | {vm_taken:,} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
