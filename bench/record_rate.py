#!/usr/bin/env python3
"""Benchmark: how many events per second `jvmtrace record` keeps with zero
drops, what it costs per event, and how big the events are on disk -- with
the USDT fixture (tests/fixtures/usdt_fixture.cpp), which fires all ten
probes at a chosen rate from one or two threads.

Per step, side by side in one run:
  * paced: the fixture fires at RATE events/s (split over --threads) for
    --seconds; record's drops, its CPU time per million events (user+sys of
    the recorder process), bytes per event on disk;
  * flat out (--rate 0): the highest rate the probes allow, three ways: nothing
    attached, bpftrace `count()` on every probe (the floor any tracer pays),
    and jvmtrace record; the ratio record/count() of firing time per event is
    the loader's own cost, machine speed cancelled.
Medians of --repeat runs.

  sudo bench/record_rate.py [--rates 100000,250000,...] [--threads 2] [--repeat 3]
"""
import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader  # noqa: E402

FIXTURE = REPO / "build/tests/fixtures/usdt_fixture"
JVMTRACE = REPO / "build/userspace/jvmtrace"
EVENTS_PER_ROUND = 10


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(rate, threads, seconds, tracer, out):
    """One fixture run; returns dict(events_fired, fire_ns, and the tracer's figures)."""
    rounds = int(rate * seconds / EVENTS_PER_ROUND / threads) if rate else int(400_000 * seconds / threads)
    fx = subprocess.Popen([str(FIXTURE), "--wait-for", "stdin" if tracer is None else "all", "--real-tid",
                           "--threads", str(threads), "--rounds", str(rounds),
                           "--rate", str(int(rate / EVENTS_PER_ROUND / threads)), "--linger", "300"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fx_out, fx_err = LineReader(fx.stdout), LineReader(fx.stderr)
    pid = int(fx_out.wait_for(lambda l: l.startswith("ready"), 30, "fixture").split()[1])
    res = {"fired": rounds * threads * EVENTS_PER_ROUND}
    tr = None
    if tracer == "record":
        tr = subprocess.Popen([str(JVMTRACE), "record", "-q", "-p", str(pid), "-b", str(FIXTURE), "-o", str(out)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elif tracer == "count":
        tr = subprocess.Popen(["bpftrace", "-p", str(pid), "-e", f"usdt:{FIXTURE}:jvmtrace:* {{ @n = count(); }}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if tracer is None:
        fx.stdin.write("go\n")
    fx.stdin.close()
    fx.wait(600)
    cpu0 = child_cpu()  # the fixture is reaped: what follows is the tracer's own CPU time
    ns = int(next(l for l in fx_err.drain() if l.startswith("firing took")).split()[2])
    res["fire_ns_per_event"] = ns / res["fired"]
    res["achieved_rate"] = res["fired"] / (ns / 1e9)
    if tr is not None:
        if tracer == "count":
            tr.send_signal(2)
        o, e = tr.communicate(timeout=120)
        res["tracer_cpu_s"] = child_cpu() - cpu0
        if tracer == "record":
            import json
            rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(out)], capture_output=True,
                                            text=True).stdout)
            res["recorded"] = rep["events"]
            res["lost"] = rep["lost"]
            res["bytes_per_event"] = out.stat().st_size / max(1, rep["events"])
            res["cpu_s_per_million"] = res["tracer_cpu_s"] / max(1, rep["events"]) * 1e6
        else:
            res["counted"] = int(next(l for l in o.splitlines() if l.startswith("@n")).split()[1])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="100000,250000,500000,750000,1000000,1250000,1500000")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="jvmtrace-rate")) / "rate.jvmtrace"
    print(f"# fixture: {a.threads} threads, {a.seconds} s per run, {a.repeat} runs per step; medians")
    print("\n## Paced: jvmtrace record at a fixed event rate\n")
    print("| target ev/s | achieved ev/s | recorded | lost (runs with drops) | recorder CPU s per M events | bytes/event |")
    print("|---|---|---|---|---|---|")
    for rate in map(int, a.rates.split(",")):
        runs = [run(rate, a.threads, a.seconds, "record", out) for _ in range(a.repeat)]
        med = lambda k: statistics.median(r[k] for r in runs)  # noqa: E731
        print(f"| {rate:,} | {med('achieved_rate'):,.0f} | {med('recorded'):,.0f} | {med('lost'):,.0f} "
              f"({sum(1 for r in runs if r['lost'])}/{len(runs)}) | {med('cpu_s_per_million'):.3f} | "
              f"{med('bytes_per_event'):.2f} |", flush=True)
    print("\n## Flat out: firing cost per event, side by side\n")
    print("| tracer | ns per event (median) | achieved ev/s | ratio to count() | events kept | lost |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for _ in range(a.repeat):
        for t in (None, "count", "record"):
            rows.setdefault(t, []).append(run(0, a.threads, a.seconds, t, out))
    base = statistics.median(r["fire_ns_per_event"] for r in rows["count"])
    for t, runs in rows.items():
        ns = statistics.median(r["fire_ns_per_event"] for r in runs)
        kept = statistics.median(r.get("recorded", r.get("counted", 0)) for r in runs)
        lost = statistics.median(r.get("lost", 0) for r in runs)
        print(f"| {t or 'nothing attached'} | {ns:.1f} | {statistics.median(r['achieved_rate'] for r in runs):,.0f} | "
              f"{ns / base:.2f} | {kept:,.0f} / {runs[0]['fired']:,} | {lost:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
