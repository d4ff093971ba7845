#!/usr/bin/env python3
"""Benchmark: jvmtraced --auto-stat on many small JVMs (issue 24, "Fleet-ready").

Starts N AllocWorker JVMs (patched JDK 17, G1, a small heap, one allocating
thread each, -Xlog:gc), held until every one has a stat worker; then lets
them all allocate at once, and measures:
- attach time per JVM: the daemon's "found JVM" log line to its worker's
  "Attached" line (as this script reads the daemon's stderr);
- RSS: the daemon, its discovery process, and each stat worker (per JVM);
- CPU of the daemon and its workers while the JVMs run (per JVM);
- a scrape of /metrics: time, size, series in all and per JVM;
- each JVM's jvmtrace_gc_ends_total against its -Xlog:gc collections after "go".

  sudo nice -n 19 bench/fleet.py [--jvms 16] [--iterations 3000000] [--heap-mb 16] [--full]
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader, go_uptime_s, parse_gc_log  # noqa: E402

CLK = 100  # USER_HZ


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=,comm=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [(int(l.split()[0]), l.split()[1]) for l in out.splitlines() if l.strip()]


def status_kib(pid, field):
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def rollup_kib(pid):
    """smaps_rollup's Pss and private (clean + dirty) KiB: what the process
    costs beside the pages it shares with the others."""
    out = {"Pss": 0, "Private": 0}
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            k, _, rest = line.partition(":")
            if k == "Pss":
                out["Pss"] = int(rest.split()[0])
            elif k in ("Private_Clean", "Private_Dirty"):
                out["Private"] += int(rest.split()[0])
    except OSError:
        pass
    return out


def bpf_map_kib(pid):
    """Kernel memory of the BPF maps a process holds (each map fd's fdinfo
    memlock, each map once), KiB."""
    seen, total = set(), 0
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return 0
    for fd in fds:
        try:
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}").read().splitlines() if ":" in l)
        except OSError:
            continue
        if "map_id" in info and info["map_id"].strip() not in seen:
            seen.add(info["map_id"].strip())
            total += int(info.get("memlock", "0").strip())
    return total / 1024


def cpu_s(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / CLK
    except OSError:
        return 0.0


def scrape(port):
    t = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        body = r.read().decode()
    return body, time.monotonic() - t


def samples(text):
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
        out[(m.group(1), m.group(3) or "")] = float(m.group(4))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jvms", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=3_000_000)
    ap.add_argument("--heap-mb", type=int, default=16)
    ap.add_argument("--full", action="store_true", help="jvmtraced --metrics-full")
    ap.add_argument("--java-home", default=None, help="default: the cached patched JDK 17")
    ap.add_argument("--worker", default=None, help="jvmtraced --jvmtrace PATH: another jvmtrace binary "
                    "(e.g. an older build, for a before/after)")
    a = ap.parse_args()
    home = a.java_home or subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print", "--jdk", "17",
                                          "--variant", "patched"], capture_output=True, text=True,
                                         check=True).stdout.split("=", 1)[1].strip()
    worker_comm = Path(a.worker or "jvmtrace").name[:15]  # as ps shows it
    tmp = Path(tempfile.mkdtemp(prefix="jvmtrace-fleet-"))
    classes = tmp / "classes"
    subprocess.run([f"{home}/bin/javac", "-d", str(classes), str(REPO / "tests/java/AllocWorker.java"),
                    str(REPO / "tests/java/TestSupport.java")], check=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    (tmp / "traces").mkdir(mode=0o750)
    daemon = subprocess.Popen([str(REPO / "build/userspace/jvmtraced"), "--socket", str(tmp / "d.sock"),
                               "--trace-dir", str(tmp / "traces"), "--metrics-port", str(port), "--auto-stat",
                               "--max-workers", str(max(64, a.jvms)), *(["--metrics-full"] if a.full else []),
                               *(["--jvmtrace", a.worker] if a.worker else [])],
                              stderr=subprocess.PIPE, text=True)
    found, attached = {}, {}

    def watch(line):
        now = time.monotonic()
        if m := re.search(r"found JVM (\d+) ", line):
            found.setdefault(int(m.group(1)), now)
        elif m := re.search(r"\[stat (\d+)\] Attached", line):
            attached.setdefault(int(m.group(1)), now)
    ready = threading.Event()

    def read_log():  # the daemon's log, each line timed as it arrives
        for line in daemon.stderr:
            if "control socket" in line:
                ready.set()
            watch(line)
    threading.Thread(target=read_log, daemon=True).start()
    if not ready.wait(30):
        sys.exit("the daemon did not start")
    jvms = []
    try:
        t_start = time.monotonic()
        for i in range(a.jvms):
            gclog = tmp / f"gc-{i}.log"
            p = subprocess.Popen([f"{home}/bin/java", "-XX:+UseG1GC", f"-Xms{a.heap_mb}m", f"-Xmx{a.heap_mb}m",
                                  "-XX:TieredStopAtLevel=1", f"-Xlog:gc:file={gclog}", f"-Djvmtrace.app=fleet{i % 4}",
                                  "-cp", str(classes), "AllocWorker", str(a.iterations), "-", "hold"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            out = LineReader(p.stdout)
            jvms.append((p, out, gclog))
        for p, out, _ in jvms:
            out.wait_for(lambda l: l.startswith("ready"), 300, "ready")
        started = time.monotonic() - t_start
        deadline = time.monotonic() + 600
        while len(attached) < a.jvms and time.monotonic() < deadline:
            time.sleep(0.2)
        if len(attached) < a.jvms:
            sys.exit(f"only {len(attached)} of {a.jvms} JVMs attached in 600 s")
        attach_s = sorted(attached[p.pid] - found[p.pid] for p, _, _ in jvms)
        maps_kib = sorted(bpf_map_kib(w) for w in [pid for pid, comm in children(daemon.pid) if comm == worker_comm])
        workers = [pid for pid, comm in children(daemon.pid) if comm == worker_comm]
        scanners = [pid for pid, comm in children(daemon.pid) if comm != worker_comm]
        watched = [daemon.pid, *workers]
        attach_cpu = sorted(cpu_s(w) for w in workers)  # each worker's CPU so far: its attach, mostly
        cpu0 = {p: cpu_s(p) for p in watched}
        t0 = time.monotonic()
        for p, _, _ in jvms:
            p.stdin.write("go\n")
            p.stdin.flush()
        for p, out, _ in jvms:
            out.wait_for(lambda l: l == "done", 1800, "the workload")
        run_s = time.monotonic() - t0
        cpu1 = {p: cpu_s(p) for p in watched}
        used = sum(max(0.0, cpu1[p] - cpu0[p]) for p in watched if cpu1[p] and cpu0[p])
        rss = {"daemon": status_kib(daemon.pid, "VmRSS"), "scanner": sum(status_kib(s, "VmRSS") for s in scanners),
               "workers": [status_kib(w, "VmRSS") for w in workers],
               "workers_anon": [status_kib(w, "RssAnon") for w in workers],
               "workers_file": [status_kib(w, "RssFile") for w in workers],
               "workers_pss": [rollup_kib(w)["Pss"] for w in workers],
               "workers_private": [rollup_kib(w)["Private"] for w in workers],
               "daemon_private": rollup_kib(daemon.pid)["Private"]}
        # The final figures: every JVM's count once it stops changing.
        want = {}
        for p, out, gclog in jvms:
            want[p.pid] = len(parse_gc_log(gclog.read_text(), go_uptime_s(out.lines)))
        deadline = time.monotonic() + 120
        while True:
            body, _ = scrape(port)
            m = samples(body)
            got = {pid: next((v for (n, lab), v in m.items() if n == "jvmtrace_gc_ends_total" and f'pid="{pid}"' in lab),
                             None) for pid in want}
            if all(got[p] is not None and got[p] >= want[p] for p in want) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        times = []
        for _ in range(10):
            body, t = scrape(port)
            times.append(t)
        m = samples(body)
        per_jvm = [sum(1 for (n, lab) in m if f'pid="{p.pid}"' in lab) for p, _, _ in jvms]
        print(f"jvmtraced --auto-stat{' --metrics-full' if a.full else ''}"
              f"{' --jvmtrace ' + a.worker if a.worker else ''} on {a.jvms} JVMs (patched JDK 17, G1, "
              f"-Xmx{a.heap_mb}m, AllocWorker {a.iterations} iterations); {subprocess.getoutput('nproc')} cores, "
              f"load {open('/proc/loadavg').read().split()[0]}")
        print(f"JVMs started (all 'ready') in {started:.1f} s; their work took {run_s:.1f} s")
        print(f"attach per JVM (found -> attached): median {statistics.median(attach_s):.2f} s, "
              f"max {attach_s[-1]:.2f} s, min {attach_s[0]:.2f} s")
        wr = rss["workers"]
        print(f"RSS: daemon {rss['daemon'] / 1024:.1f} MiB, discovery {rss['scanner'] / 1024:.1f} MiB, "
              f"stat worker median {statistics.median(wr) / 1024:.2f} MiB (anon "
              f"{statistics.median(rss['workers_anon']) / 1024:.2f}, file {statistics.median(rss['workers_file']) / 1024:.2f}); "
              f"all {(rss['daemon'] + rss['scanner'] + sum(wr)) / 1024:.1f} MiB = "
              f"{(rss['daemon'] + rss['scanner'] + sum(wr)) / 1024 / a.jvms:.2f} MiB per JVM")
        print(f"  per worker: PSS median {statistics.median(rss['workers_pss']) / 1024:.2f} MiB, private "
              f"{statistics.median(rss['workers_private']) / 1024:.2f} MiB; the daemon's private "
              f"{rss['daemon_private'] / 1024:.2f} MiB")
        print(f"BPF maps a worker holds (kernel memory, memlock): median {statistics.median(maps_kib) / 1024:.2f} MiB, "
              f"all {sum(maps_kib) / 1024:.1f} MiB")
        print(f"  CPU a worker used until all were attached (its attach, mostly): median "
              f"{statistics.median(attach_cpu):.2f} s, max {attach_cpu[-1]:.2f} s")
        print(f"CPU of the daemon and workers during the work: {used:.2f} s in {run_s:.1f} s = "
              f"{used / run_s:.3f} cores, {used / run_s / a.jvms * 1000:.2f} millicores per JVM")
        print(f"scrape: {len(body)} bytes, {len(m)} series ({statistics.median(per_jvm)} per JVM, "
              f"min {min(per_jvm)}, max {max(per_jvm)}); time median {statistics.median(times) * 1000:.1f} ms, "
              f"max {max(times) * 1000:.1f} ms")
        diffs = [(p.pid, want[p.pid], got[p.pid]) for p, _, _ in jvms]
        exact = sum(1 for _, w, g in diffs if w == g)
        print(f"GC counts: {exact} of {a.jvms} JVMs' jvmtrace_gc_ends_total equal their -Xlog:gc collections "
              f"after go (collections per JVM: median {statistics.median(w for _, w, _ in diffs)})")
        for pid, w, g in diffs:
            if w != g:
                print(f"  PID {pid}: log {w}, metric {g}")
    finally:
        for p, _, _ in jvms:
            p.kill()
        for p, _, _ in jvms:
            p.wait(60)
        daemon.terminate()
        daemon.wait(120)


if __name__ == "__main__":
    main()
