#!/usr/bin/env python3
"""Benchmark: jvmtraced's own footprint while `stat` is attached to three busy
JVMs, and what that costs them -- side by side in one run.

Each round starts three AllocBench JVMs (patched, 1 allocating thread each)
and runs them once with nothing attached and once under `jvmtraced
--auto-stat` (order alternating per round).  Reports the JVMs' measured-phase
time (median over JVMs and rounds, and the ratio), and the daemon's RSS and
CPU, workers included (each attachment is a jvmtrace worker process).

  sudo bench/daemon_cost.py [--rounds 5] [--iterations 30000000]
"""
import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader  # noqa: E402

CLK = 100  # USER_HZ


def proc_tree(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()
    return [pid] + [int(p) for p in out]


def rss_kib(pids):
    total = 0
    for p in pids:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def cpu_s(pids):
    total = 0.0
    for p in pids:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / CLK
        except OSError:
            pass
    return total


def run_jvms(home, classes, iterations, daemon_sock=None):
    jvms = []
    for _ in range(3):
        p = subprocess.Popen([f"{home}/bin/java", "-XX:+UseG1GC", "-Xmx256m", "-cp", classes, "AllocBench", "1",
                              str(iterations), str(iterations // 4), "wait"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        out = LineReader(p.stdout)
        out.wait_for(lambda l: l.startswith("ready"), 60, "ready")
        jvms.append((p, out))
    if daemon_sock:  # wait until --auto-stat has a worker on each
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            lst = subprocess.run([str(REPO / "build/userspace/jvmtrace"), "daemon", "--socket", daemon_sock, "list"],
                                 capture_output=True, text=True).stdout
            if all(f"{p.pid} " in lst and "stat" in next(l for l in lst.splitlines() if l.startswith(f"{p.pid} "))
                   for p, _ in jvms if f"{p.pid} " in lst) and all(f"{p.pid} " in lst for p, _ in jvms):
                break
            time.sleep(0.2)
    for p, _ in jvms:
        p.stdin.write("go\n")
        p.stdin.close()
    times = []
    for p, out in jvms:
        p.wait(600)
        times.append(int(next(l for l in out.drain() if l.startswith("elapsed_ms")).split()[1]) / 1000)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30_000_000)
    a = ap.parse_args()
    homes = dict(l.split("=", 1) for l in subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print"],
                                                         capture_output=True, text=True, check=True).stdout.split())
    classes = tempfile.mkdtemp(prefix="daemonbench")
    subprocess.run([f"{homes['patched']}/bin/javac", "-d", classes, str(REPO / "bench/java/AllocBench.java"),
                    str(REPO / "tests/java/TestSupport.java")], check=True)
    tmp = Path(tempfile.mkdtemp(prefix="jvmtraced-bench"))
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    bare, traced, rss, cpu_per_s = [], [], [], []
    for rnd in range(a.rounds):
        for mode in (["bare", "daemon"] if rnd % 2 == 0 else ["daemon", "bare"]):
            if mode == "bare":
                t = run_jvms(homes["patched"], classes, a.iterations)
                bare += t
            else:
                sock = str(tmp / "d.sock")
                d = subprocess.Popen([str(REPO / "build/userspace/jvmtraced"), "--socket", sock, "--trace-dir",
                                      str(tmp / "traces"), "--metrics-port", str(port), "--auto-stat"],
                                     stderr=subprocess.DEVNULL)
                time.sleep(0.5)
                t0 = time.monotonic()
                c0 = cpu_s(proc_tree(d.pid))
                t = run_jvms(homes["patched"], classes, a.iterations, sock)
                pids = proc_tree(d.pid)
                rss.append(rss_kib(pids))
                cpu_per_s.append((cpu_s(pids) - c0) / (time.monotonic() - t0))
                d.terminate()
                d.wait(60)
                traced += t
            print(f"round {rnd + 1} {mode:6s} " + " ".join(f"{x:.3f}" for x in t), flush=True)
    mb, mt = statistics.median(bare), statistics.median(traced)
    print("\n| configuration | JVM measured phase, median (s) | ratio | daemon + workers RSS (MiB, median) | daemon + workers CPU (cores, median) |")
    print("|---|---|---|---|---|")
    print(f"| 3 JVMs, nothing attached | {mb:.3f} | 1.000 | - | - |")
    print(f"| 3 JVMs, jvmtraced --auto-stat | {mt:.3f} | {mt / mb:.3f} | {statistics.median(rss) / 1024:.1f} | "
          f"{statistics.median(cpu_per_s):.4f} |")


if __name__ == "__main__":
    main()
