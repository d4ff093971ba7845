#!/usr/bin/env python3
"""Benchmark: what one allocation sample costs inside the kernel (issue 22,
item 2; decision 116).

`record --stacks` on a patched JVM attaches alloc__sample; each hit runs in
the allocating thread: the uprobe's trap (about 1.3 us at a 5-byte-nop site
on this machine), then the BPF program.  This runs AllocBench (bench/java,
2 threads that do nothing but allocate) under `record --stacks` with the
kernel's BPF statistics on (sysctl kernel.bpf_stats_enabled, restored
after), and prints, per run, each BPF program's hits and its mean run time
per hit, and the samples `record -v` says woke nobody.  The JVM's CPU is
bench/cpu_overhead.py's to measure; this isolates the program's share.
With --compare, the same with a second jvmtrace binary, runs interleaved;
with --compare-home, the same jvmtrace on a second patched JDK (another
build of the VM's sampler: decision 118), runs interleaved.

  sudo bench/sample_cost.py [--runs 3] [--gc G1] [--jvmtrace PATH] [--compare PATH | --compare-home JAVA_HOME]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from follow import Follow

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "scripts/build-patched-jdk.sh"
PROGRAMS = ("alloc__sample", "alloc__batch", "plab__batch")


def patched_home(line):
    out = subprocess.run([str(BUILD), "--jdk", line, "--variant", "patched", "--print"], capture_output=True,
                         text=True, check=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)["patched"]


def prog_stats():
    """name -> (run_time_ns, run_cnt) of the loaded BPF programs we care for
    (summed over programs of one name)."""
    out = subprocess.run(["bpftool", "prog", "show"], capture_output=True, text=True).stdout
    stats = {}
    for line in out.splitlines():
        m = re.search(r"name (\S+).*run_time_ns (\d+) run_cnt (\d+)", line)
        if m and m.group(1) in PROGRAMS:
            t, c = stats.get(m.group(1), (0, 0))
            stats[m.group(1)] = (t + int(m.group(2)), c + int(m.group(3)))
    return stats


def one_run(jvmtrace, java, classes, gc, work, args):
    """AllocBench held by its ready/go handshake, record --stacks -v attached;
    returns the figures of this run."""
    trace = work / "s.jvmtrace"
    jvm = subprocess.Popen([java, f"-XX:+Use{gc}GC", "-Xms256m", "-Xmx256m", "-cp", str(classes), "AllocBench",
                            str(args.threads), str(args.iterations), str(args.warmup), "wait"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=work)
    line = jvm.stdout.readline()
    if not line.startswith("ready "):
        raise RuntimeError(f"AllocBench did not start: {line!r}")
    rec = subprocess.Popen([str(jvmtrace), "record", "--stacks", "-v", "-p", str(jvm.pid), "-o", str(trace)],
                           stderr=subprocess.PIPE, text=True)
    rec_out = Follow(rec.stderr, lambda l: l.startswith("Recording PID"))
    if not rec_out.wait(60):
        rec.kill()
        jvm.kill()
        raise RuntimeError("record did not attach: " + "\n".join(rec_out.lines[-5:]))
    last = {}
    jvm.stdin.write("go\n")
    jvm.stdin.flush()
    # The programs' counters vanish with them: the last look before the JVM
    # ends is the run's (polled every 50 ms; a few hits may come after it).
    while True:
        pid, status, usage = os.wait4(jvm.pid, os.WNOHANG)  # (reaped here, for its rusage)
        if pid == jvm.pid:
            jvm.returncode = os.waitstatus_to_exitcode(status)
            break
        now = prog_stats()
        if now:
            last = now
        time.sleep(0.05)
    rec.wait(120)
    rec_out.join(10)
    out = rec_out.text()
    samples = re.search(r"(\d+) allocation samples with", out)
    quiet = re.search(r"(\d+) of the samples were of a stack already named", out)
    return {"programs": last, "samples": int(samples.group(1)) if samples else 0,
            "quiet": int(quiet.group(1)) if quiet else None, "jvm_cpu": usage.ru_utime + usage.ru_stime}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gc", default="G1")
    ap.add_argument("--line", default="17")
    ap.add_argument("--jvmtrace", default=str(REPO / "build/userspace/jvmtrace"))
    ap.add_argument("--compare", help="a second jvmtrace binary, run interleaved with the first")
    ap.add_argument("--compare-home", help="a second patched JAVA_HOME (17: the same line), run interleaved")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=60_000_000)
    ap.add_argument("--warmup", type=int, default=15_000_000)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("sample_cost: needs root (BPF statistics, record)")
    home = os.environ.get("JVMTRACE_PATCHED_HOME") or patched_home(a.line)
    if a.compare and a.compare_home:
        sys.exit("sample_cost: --compare or --compare-home, not both")
    # (name, jvmtrace, JAVA_HOME) of each variant
    binaries = [("first", a.jvmtrace, home)] + ([("second", a.compare, home)] if a.compare else []) + (
        [("second", a.jvmtrace, a.compare_home)] if a.compare_home else [])
    stats_path = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = stats_path.read_text().strip()
    results = {name: [] for name, _, _ in binaries}
    with tempfile.TemporaryDirectory(prefix="jvmtrace-samplecost-") as tmp:
        work = Path(tmp)
        classes = work / "classes"
        # (21 and 25 run in their Debian 13 root, which sees /tmp, not this tree)
        sources = [work / "AllocBench.java", work / "TestSupport.java"]
        shutil.copy(REPO / "bench/java/AllocBench.java", sources[0])
        shutil.copy(REPO / "tests/java/TestSupport.java", sources[1])
        subprocess.run([str(Path(home) / "bin/javac"), "-d", str(classes), *map(str, sources)], check=True)
        print(f"# sample_cost: AllocBench {a.threads} threads x {a.iterations} iterations, {a.gc}, JDK {a.line} "
              f"; {a.runs} runs each of: " + ", ".join(f"{n} = {b} on {h}" for n, b, h in binaries))
        try:
            stats_path.write_text("1")
            for i in range(a.runs):
                for name, binary, jhome in (binaries if i % 2 == 0 else binaries[::-1]):
                    r = one_run(binary, str(Path(jhome) / "bin/java"), classes, a.gc, work, a)
                    results[name].append(r)
                    progs = "  ".join(f"{p} {c} hits {t / c / 1000:.2f} us/hit" for p, (t, c) in
                                      sorted(r["programs"].items()) if c)
                    print(f"run {i + 1} {name:6s} samples {r['samples']} quiet {r['quiet']} JVM CPU {r['jvm_cpu']:.3f} s"
                          f"  {progs}", flush=True)
        finally:
            stats_path.write_text(before)
    print()
    print("| variant | alloc__sample hits (median) | us per hit (median) | samples that woke nobody "
          "| JVM CPU s (median) |")
    print("|---|---|---|---|---|")
    for name, binary, jhome in binaries:
        rs = [r for r in results[name] if "alloc__sample" in r["programs"]]
        per_hit = statistics.median(r["programs"]["alloc__sample"][0] / r["programs"]["alloc__sample"][1] / 1000
                                    for r in rs) if rs else float("nan")
        hits = statistics.median(r["programs"]["alloc__sample"][1] for r in rs) if rs else 0
        quiet = [r["quiet"] / r["samples"] for r in results[name] if r["quiet"] is not None and r["samples"]]
        q = f"{statistics.median(quiet) * 100:.1f}%" if quiet else "(not reported)"
        cpu = statistics.median(r["jvm_cpu"] for r in results[name]) if results[name] else float("nan")
        print(f"| {name} ({binary} on {jhome}) | {hits:.0f} | {per_hit:.2f} | {q} | {cpu:.3f} |")


if __name__ == "__main__":
    main()
