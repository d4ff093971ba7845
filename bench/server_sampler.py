#!/usr/bin/env python3
"""Benchmark: the VM's allocation sampler on a server-like program (issue 35, item 1).

ServerBench (bench/java: 8 threads, 16 call paths about 60 frames deep, objects of mixed
sizes, over 1 GB/s in total) runs a fixed amount of work under each mode, rounds
interleaved (the order rotates each round):

  none        no tracer
  record      plain `jvmtrace record` (every slow path, no stacks)
  stacks      `record --stacks` at the JVM's own JvmtraceSampleRate (250)
  stacks-1000 `record --stacks --sample-rate 1000`
  every       `record --stacks --sample-rate 0`: every slow path sampled, so the samples'
              cost shows in the JVM's CPU time (the marginal cost per sample, below)
  walk        `record --stacks --sample-rate 1000` with bpftrace beside it timing the VM's own
              work per sample in the allocating thread (jvmtrace_fire_sample's entry to its
              alloc__sample probe: the stack walk and the leaf's name); its CPU carries the
              extra uprobe, so it is not one to compare

and prints, per run: the JVM's CPU (user + sys of the child, from wait4's rusage), the
program's own allocation rate (the workers' getCurrentThreadAllocatedBytes), the traced
slow paths' byte rate (tlab__refill and outside-TLAB records of the trace), and for the
--stacks modes the samples of each second of the run (alloc__sample's timestamps from
`jvmtrace dump --json`), the busiest sliding second (any one-second window), the mean
rate against the target, and alloc__sample's BPF run time per hit (kernel.bpf_stats_enabled,
on for every mode and restored after, as bench/sample_cost.py does).

Then, per mode: the JVM CPU's median, min-max and standard deviation; each round's CPU
against the same round's `record` (median and range of the per-round differences); and a
sample's cost in microseconds: the BPF program's run time + the uprobe's trap (--trap-us,
docs/performance.md's 5-byte-nop figure) + the VM's own work (the stack walk, the leaf's
name, the controller), which is isolated as the `every` mode's extra JVM CPU over `record`'s,
per sample, less the BPF and trap share, and timed directly by the walk mode (preferred: the
CPU difference is noise on a shared machine); and what the default rate's samples cost as a
share of the JVM's CPU by that figure.

Run it on a quiet machine: two cores shared with anything else make the CPU figures noise.

  sudo bench/server_sampler.py [--rounds 6] [--requests 2000000] [--line 17] [--gc G1]
                               [--modes none,record,stacks,stacks-1000,every,walk] [--jvmtrace PATH]
"""
import argparse
import bisect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from follow import Follow

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "scripts/build-patched-jdk.sh"
PROGRAMS = ("alloc__sample", "alloc__batch", "plab__batch")
MODES = {
    "none": None,
    "record": [],
    "stacks": ["--stacks"],
    "stacks-1000": ["--stacks", "--sample-rate", "1000"],
    "every": ["--stacks", "--sample-rate", "0"],
    "walk": ["--stacks", "--sample-rate", "1000"],
}
# The VM's own work per sample, timed in the allocating thread (mode walk, beside record):
# from jvmtrace_fire_sample's entry (a uprobe on the local symbol) to its alloc__sample probe,
# which fires once the stack is walked and the leaf named.  Wall time: a thread preempted in
# between shows as an outlier, so the median is the figure.  It includes the entry uprobe's
# own return (part of a trap).
WALK_BT = """
uprobe:{lib}:_ZL20jvmtrace_fire_sampleP10JavaThreadmRK21jvmtrace_alloc_recordm /pid == {pid}/ {{ @s[tid] = nsecs; }}
usdt:{lib}:jvmtrace:alloc__sample /pid == {pid} && @s[tid]/ {{
  @walk_us = lhist((nsecs - @s[tid]) / 1000, 0, 1000, 1); delete(@s[tid]);
}}
"""
TARGETS = {"stacks": 250, "stacks-1000": 1000, "walk": 1000}  # the JVM's own JvmtraceSampleRate is 250
OUTSIDE_TLAB = (2, 4)  # alloc__slow__exit outcomes that handed out memory outside TLABs (jvmtrace_abi.h)


def patched_home(line):
    out = subprocess.run([str(BUILD), "--jdk", line, "--variant", "patched", "--print"], capture_output=True,
                         text=True, check=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)["patched"]


def prog_stats(ids=None):
    """name -> (run_time_ns, run_cnt) of the loaded BPF programs we care for, those of ids
    only if given, and the ids: the recorder's are the ones that came with its attach
    (bpftrace's program at alloc__sample, in the walk mode, has the same name, another
    recorder's too, and bpftool may not name a program's process)."""
    out = subprocess.run(["bpftool", "--json", "prog", "show"], capture_output=True, text=True).stdout
    stats, seen = {}, set()
    for p in json.loads(out or "[]"):
        if p.get("name") not in PROGRAMS or (ids is not None and p.get("id") not in ids):
            continue
        seen.add(p.get("id"))
        t, c = stats.get(p["name"], (0, 0))
        stats[p["name"]] = (t + p.get("run_time_ns", 0), c + p.get("run_cnt", 0))
    return stats, seen


SAMPLE_TS = re.compile(r'"probe":"alloc__sample","ts_ns":(\d+)')


def trace_figures(jvmtrace, trace):
    """(sample timestamps, slow-path bytes, first and last slow path's time) of a trace.
    Streamed: an every-slow-path run's dump is a gigabyte of stacks, whose samples are only
    timed here (by a pattern, not parsed)."""
    dump = subprocess.Popen([str(jvmtrace), "dump", "--json", str(trace)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    stamps, slow_bytes, first, last = [], 0, None, None
    for line in dump.stdout:
        m = SAMPLE_TS.search(line, 0, 200)
        if m:
            stamps.append(int(m.group(1)))
            continue
        if '"tlab__refill"' not in line and '"alloc__slow__exit"' not in line:
            continue
        x = json.loads(line)
        if x.get("type") != "event":
            continue
        p = x.get("probe")
        if p == "tlab__refill":
            b = x["args"]["tlab_bytes"]
        elif p == "alloc__slow__exit" and x["args"]["outcome"] in OUTSIDE_TLAB:
            b = x["args"]["alloc_bytes"]
        else:
            continue
        slow_bytes += b
        first = x["ts_ns"] if first is None else min(first, x["ts_ns"])
        last = x["ts_ns"] if last is None else max(last, x["ts_ns"])
    err = dump.stderr.read()
    if dump.wait() not in (0, 3):
        raise RuntimeError(f"dump {trace}: {err.strip()[-500:]}")
    stamps.sort()
    return stamps, slow_bytes, first, last


def rate_figures(stamps):
    """Samples by whole second from the first sample, the busiest sliding second, the mean a
    second over the samples' span, and the mean over the whole seconds after the first."""
    if len(stamps) < 2:
        return None
    t0 = stamps[0]
    per_second = Counter(int((t - t0) // 10**9) for t in stamps)
    seconds = [per_second.get(s, 0) for s in range(max(per_second) + 1)]
    busiest = max(bisect.bisect_right(stamps, t + 10**9) - i for i, t in enumerate(stamps))
    span = (stamps[-1] - t0) / 1e9
    steady = seconds[1:-1]  # whole seconds after the first (the last is cut short)
    return {"seconds": seconds, "busiest": busiest, "mean": len(stamps) / span if span else float("nan"),
            "steady": statistics.mean(steady) if steady else float("nan"), "span": span}


def libjvm_of(pid):
    """libjvm.so as this machine's root sees it (21 and 25 run in a Debian 13 root)."""
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        if line.endswith("/libjvm.so"):
            return os.path.realpath(f"/proc/{pid}/root" + line.split(None, 5)[5])
    raise RuntimeError(f"no libjvm.so in {pid}'s maps")


def walk_figures(text):
    """(samples timed, median, p90, mean under 1 ms) of WALK_BT's histogram, in us."""
    buckets = []
    for line in text.splitlines():
        m = re.match(r"\[(\d+)(?:, \d+\)|, \.\.\.\))\s+(\d+)", line.strip())
        if m:
            buckets.append((int(m.group(1)), int(m.group(2))))
    n = sum(c for _, c in buckets)
    if not n:
        return None

    def quantile(q):
        seen = 0
        for v, c in buckets:
            seen += c
            if seen >= q * n:
                return v + 0.5
    under = [(v, c) for v, c in buckets if v < 1000]
    mean = sum((v + 0.5) * c for v, c in under) / max(1, sum(c for _, c in under))
    return n, quantile(0.5), quantile(0.9), mean


def one_run(mode, jvmtrace, java, classes, work, a):
    trace = work / f"{mode}.jvmtrace"
    if trace.exists():
        trace.unlink()
    jvm = subprocess.Popen([java, f"-XX:+Use{a.gc}GC", f"-Xms{a.heap}", f"-Xmx{a.heap}", "-cp", str(classes),
                            "ServerBench", str(a.threads), str(a.requests), str(a.depth), "wait"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=work)
    line = jvm.stdout.readline()
    if not line.startswith("ready "):
        jvm.kill()
        raise RuntimeError(f"ServerBench did not start: {line!r}")
    rec, rec_out = None, None
    loaded = prog_stats()[1]  # anyone else's (another recorder, a test), left out below
    if MODES[mode] is not None:
        rec = subprocess.Popen([str(jvmtrace), "record", *MODES[mode], "-v", "-p", str(jvm.pid), "-o", str(trace)],
                               stderr=subprocess.PIPE, text=True)
        rec_out = Follow(rec.stderr, lambda l: l.startswith("Recording PID"))
        if not rec_out.wait(120):
            rec.kill()
            jvm.kill()
            raise RuntimeError(f"record did not attach ({mode}): " + "\n".join(rec_out.lines[-5:]))
    ids = prog_stats()[1] - loaded if rec is not None else set()  # the recorder's programs, before bpftrace's
    bt = None
    if mode == "walk":
        script = work / "walk.bt"
        script.write_text(WALK_BT.format(lib=libjvm_of(jvm.pid), pid=jvm.pid))
        bt = subprocess.Popen(["bpftrace", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        bt_out = Follow(bt.stdout, lambda l: l.startswith("Attaching"))
        if not bt_out.wait(60):
            bt.kill()
            raise RuntimeError("bpftrace did not attach: " + "\n".join(bt_out.lines[-5:]))
        time.sleep(1)  # "Attaching" comes before the probes are in
    last = {}
    t0 = time.monotonic()
    jvm.stdin.write("go\n")
    jvm.stdin.flush()
    # The programs' counters vanish with them: the last look before the JVM ends is the
    # run's.  Polled in every mode (the same disturbance for each).
    while True:
        pid, status, usage = os.wait4(jvm.pid, os.WNOHANG)
        if pid == jvm.pid:
            jvm.returncode = os.waitstatus_to_exitcode(status)
            break
        now = prog_stats(ids)[0]
        if now:
            last = now
        time.sleep(a.poll)
    wall = time.monotonic() - t0
    out = jvm.stdout.read()
    if rec is not None:
        rec.wait(300)
        rec_out.join(10)
    walk = None
    if bt is not None:
        bt.send_signal(2)  # SIGINT: bpftrace prints its maps and ends
        bt.wait(60)
        bt_out.join(10)
        walk = walk_figures(bt_out.text() + "\n")
    if jvm.returncode != 0:
        raise RuntimeError(f"ServerBench exited {jvm.returncode} ({mode}): {out[-1000:]}")
    m = re.search(r"allocated (\d+) in (\d+) ms", out)
    r = {"mode": mode, "user": usage.ru_utime, "sys": usage.ru_stime, "cpu": usage.ru_utime + usage.ru_stime,
         "wall": wall, "alloc_rate": int(m.group(1)) / (int(m.group(2)) / 1e3) if m else float("nan"),
         "programs": last, "rec": rec_out.text() if rec_out else "", "walk": walk}
    s = re.search(r"(\d+) allocation samples with", r["rec"])
    r["rec_samples"] = int(s.group(1)) if s else None
    if rec is not None:
        stamps, slow_bytes, first, last_ts = trace_figures(jvmtrace, trace)
        r["samples"] = len(stamps)
        r["slow_rate"] = slow_bytes / ((last_ts - first) / 1e9) if first is not None and last_ts > first else float("nan")
        r["rates"] = rate_figures(stamps)
        if not a.keep:
            trace.unlink()
    return r


def fmt_spread(xs, f="{:.3f}"):
    if not xs:
        return "-"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return (f"{f.format(statistics.median(xs))} ({f.format(min(xs))}-{f.format(max(xs))}, sd "
            f"{f.format(sd)}, n {len(xs)})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--modes", default="none,record,stacks,stacks-1000,every,walk")
    ap.add_argument("--line", default="17")
    ap.add_argument("--gc", default="G1")
    ap.add_argument("--heap", default="1g")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--requests", type=int, default=2_000_000,
                    help="per thread (about 10 s a run at 8-10 GB/s, this machine quiet)")
    ap.add_argument("--depth", type=int, default=60)
    ap.add_argument("--poll", type=float, default=0.1, help="seconds between looks at the BPF statistics")
    ap.add_argument("--trap-us", type=float, default=1.3,
                    help="the uprobe's trap at a 5-byte nop (docs/performance.md), added to the BPF run time")
    ap.add_argument("--jvmtrace", default=str(Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))
                                              / "userspace/jvmtrace"))
    ap.add_argument("--keep", help="keep the traces in this directory")
    a = ap.parse_args()
    modes = a.modes.split(",")
    if any(m not in MODES for m in modes):
        sys.exit(f"server_sampler: modes are {', '.join(MODES)}")
    if os.geteuid() != 0:
        sys.exit("server_sampler: needs root (BPF statistics, record)")
    home = os.environ.get("JVMTRACE_PATCHED_HOME") or patched_home(a.line)
    stats_path = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = stats_path.read_text().strip()
    results = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="jvmtrace-server-") as tmp:
        # (21 and 25 run in their Debian 13 root, which sees /tmp, not this tree)
        work = Path(a.keep) if a.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        classes = Path(tmp) / "classes"
        sources = [Path(tmp) / "ServerBench.java", Path(tmp) / "TestSupport.java"]
        shutil.copy(REPO / "bench/java/ServerBench.java", sources[0])
        shutil.copy(REPO / "tests/java/TestSupport.java", sources[1])
        subprocess.run([str(Path(home) / "bin/javac"), "-d", str(classes), *map(str, sources)], check=True)
        print(f"# server_sampler: ServerBench {a.threads} threads x {a.requests} requests, depth {a.depth}, "
              f"{a.gc}, -Xmx{a.heap}, JDK {a.line} ({home}), {a.jvmtrace}; {a.rounds} rounds of {', '.join(modes)}")
        try:
            stats_path.write_text("1")
            for i in range(a.rounds):
                order = modes[i % len(modes):] + modes[:i % len(modes)]
                for mode in order:
                    r = one_run(mode, a.jvmtrace, str(Path(home) / "bin/java"), classes, work, a)
                    r["round"] = i
                    results[mode].append(r)
                    hit = r["programs"].get("alloc__sample")
                    progs = f"  alloc__sample {hit[1]} hits {hit[0] / hit[1] / 1000:.2f} us/hit" if hit and hit[1] else ""
                    print(f"round {i + 1} {mode:11s} JVM CPU {r['cpu']:.3f} s (user {r['user']:.3f} sys "
                          f"{r['sys']:.3f}) wall {r['wall']:.2f} s  allocated {r['alloc_rate'] / 1e9:.2f} GB/s"
                          + (f" (traced slow paths {r['slow_rate'] / 1e9:.2f} GB/s)" if "slow_rate" in r else "")
                          + progs, flush=True)
                    q = r.get("rates")
                    if q:
                        tgt = TARGETS.get(mode)
                        vs = f" ({q['mean'] / tgt:.2f} x the target {tgt})" if tgt else ""
                        print(f"    samples {r['samples']} over {q['span']:.2f} s: {q['mean']:.0f} a second{vs}, "
                              f"whole seconds after the first {q['steady']:.0f}, busiest sliding second "
                              f"{q['busiest']}; by second: {', '.join(map(str, q['seconds']))}", flush=True)
                    if r.get("walk"):
                        n, med, p90, mean = r["walk"]
                        print(f"    the VM's walk and naming, timed in {n} samples: median {med:.1f} us, p90 {p90:.1f}, "
                              f"mean under 1 ms {mean:.1f}", flush=True)
        finally:
            stats_path.write_text(before)

    print("\n## JVM CPU (user + sys, s): median (min-max, sd, n); each round's against the same round's record")
    base = {r["round"]: r["cpu"] for r in results.get("record", [])}
    base_user = {r["round"]: r["user"] for r in results.get("record", [])}
    for mode in modes:
        rs = results[mode]
        line = f"{mode:11s} {fmt_spread([r['cpu'] for r in rs])}  sys {statistics.median(r['sys'] for r in rs):.3f}"
        diffs = [(r["cpu"] / base[r["round"]] - 1) * 100 for r in rs if r["round"] in base]
        if mode != "record" and diffs:
            line += (f"  vs record: median {statistics.median(diffs):+.2f}% (rounds {min(diffs):+.2f}% .. "
                     f"{max(diffs):+.2f}%)")
        print(line)

    print("\n## The sampler's rate")
    for mode in modes:
        rs = [r for r in results[mode] if r.get("rates")]
        if not rs:
            continue
        tgt = TARGETS.get(mode)
        means = [r["rates"]["mean"] for r in rs]
        print(f"{mode:11s} mean a second {fmt_spread(means, '{:.0f}')}" + (f", target {tgt}" if tgt else "")
              + f"; busiest sliding second, worst run {max(r['rates']['busiest'] for r in rs)}"
              + (f" (2 x target {2 * tgt})" if tgt else "") + f"; samples a run {statistics.median(r['samples'] for r in rs):.0f}")

    print("\n## A sample's cost (us)")
    per_hit = {}
    for mode in modes:
        rs = [r for r in results[mode] if r["programs"].get("alloc__sample", (0, 0))[1]]
        if rs:
            per_hit[mode] = statistics.median(r["programs"]["alloc__sample"][0] / r["programs"]["alloc__sample"][1] / 1000
                                              for r in rs)
            print(f"{mode:11s} alloc__sample BPF {per_hit[mode]:.2f} us a hit (median of {len(rs)}), + trap "
                  f"{a.trap_us:.2f} us = {per_hit[mode] + a.trap_us:.2f} us in the kernel")
    vm_us = vm_walk = None
    walks = [r["walk"] for r in results.get("walk", []) if r.get("walk")]
    if walks:
        vm_walk = statistics.median(w[1] for w in walks)
        print(f"walk        the VM's walk and naming a sample (fire_sample's entry to alloc__sample, wall): "
              f"median {vm_walk:.1f} us (runs' medians {', '.join(f'{w[1]:.1f}' for w in walks)}; p90s "
              f"{', '.join(f'{w[2]:.1f}' for w in walks)})")
    if "every" in results and base:
        # The every-slow-path run's extra CPU over the same round's record, per sample.
        per = [(r["cpu"] - base[r["round"]]) * 1e6 / r["samples"] for r in results["every"]
               if r["round"] in base and r.get("samples")]
        if per:
            total = statistics.median(per)
            kernel = per_hit.get("every", 0.0) + a.trap_us
            vm_us = total - kernel
            user = [(r["user"] - base_user[r["round"]]) * 1e6 / r["samples"] for r in results["every"]
                    if r["round"] in base and r.get("samples")]
            print(f"every       marginal JVM CPU a sample (every - record, per round): {fmt_spread(per, '{:.2f}')}; "
                  f"less the kernel's {kernel:.2f}: the VM's own work about {vm_us:.2f} us (user time alone: "
                  f"{fmt_spread(user, '{:.2f}')})")
    vm = vm_walk if vm_walk is not None else vm_us
    for mode in ("stacks", "stacks-1000"):
        rs = [r for r in results.get(mode, []) if r.get("samples")]
        if rs and mode in per_hit:
            us = per_hit[mode] + a.trap_us + (vm if vm is not None else 0.0)
            n = statistics.median(r["samples"] for r in rs)
            cpu = statistics.median(r["cpu"] for r in rs)
            print(f"{mode:11s} {n:.0f} samples x {us:.2f} us = {n * us / 1e3:.1f} ms, {n * us / 1e4 / cpu:.3f}% of "
                  f"the JVM's {cpu:.2f} s (BPF + trap + the VM's "
                  + ("walk, timed)" if vm_walk is not None else "marginal, every's)" if vm_us is not None
                     else "share not measured: no walk or every mode)"))


if __name__ == "__main__":
    main()
