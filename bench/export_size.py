#!/usr/bin/env python3
"""Benchmark: `jvmtrace export --perfetto` in its two formats, Trace Event
JSON and Perfetto's protobuf trace, on one real recording: bytes per
timeline event (plain and gzip), export time and peak memory (medians of
--repeat runs each).

Without a trace, it records one first: AllocWorker (tests/java) under the
patched JDK 17, G1, 2 threads, `jvmtrace record -- java ...` for --seconds
(40 s gives over a million events on 2 cores).

  sudo bench/export_size.py [--trace FILE] [--seconds 40] [--repeat 3]
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
JVMTRACE = REPO / "build/userspace/jvmtrace"


def record(seconds, out):
    home = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--variant", "patched", "--print"],
                          capture_output=True, text=True, check=True).stdout
    java_home = [l.split("=", 1)[1] for l in home.splitlines() if l.startswith("patched=")][0]
    classes = Path(tempfile.mkdtemp(prefix="jvmtrace-bench-"))
    subprocess.run([f"{java_home}/bin/javac", "-d", str(classes), *map(str, (REPO / "tests/java").glob("*.java"))],
                   check=True)
    print(f"recording {seconds:g} s of AllocWorker into {out} ...", file=sys.stderr)
    java = subprocess.Popen([f"{java_home}/bin/java", "-XX:+UseG1GC", "-Xms256m", "-Xmx256m", "-cp", str(classes),
                             "AllocWorker", "forever"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    while not java.stdout.readline().startswith("ready"):
        pass
    rec = subprocess.Popen([str(JVMTRACE), "record", "-q", "-d", str(seconds), "-p", str(java.pid), "-o", str(out)],
                           stderr=subprocess.PIPE, text=True)
    lines = []
    for line in rec.stderr:  # go once attached: every allocation of the run is in the trace
        lines.append(line)
        if line.startswith("Recording PID"):
            break
    java.stdin.write("go\n")
    java.stdin.flush()
    lines += rec.stderr.readlines()
    rec.wait()
    java.kill()
    java.wait()
    if rec.returncode != 0:
        sys.exit("record failed: " + "".join(lines))
    print(lines[-1].strip(), file=sys.stderr)


def export(trace, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([str(JVMTRACE), "export", "--perfetto", str(trace), "-o", str(out)], capture_output=True,
                       text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"export failed: {r.stderr}")
    events = int(r.stderr.split(": ")[2].split()[0])
    return {"events": events, "bytes": out.stat().st_size, "wall": wall,
            "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "rss_mb": after.ru_maxrss / 1024}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="jvmtrace-export-"))
    trace = a.trace or work / "alloc.jvmtrace"
    if not a.trace:
        record(a.seconds, trace)
    report = subprocess.run([str(JVMTRACE), "report", str(trace)], capture_output=True, text=True).stdout
    print(f"trace: {trace}, {trace.stat().st_size:,} bytes; " +
          next(l.strip() for l in report.splitlines() if " events over " in l))
    print(f"{'format':<22} {'timeline events':>15} {'bytes':>13} {'B/event':>8} {'wall s':>7} {'cpu s':>6}")
    for name in ("out.json", "out.json.gz", "out.pftrace", "out.pftrace.gz"):
        runs = [export(trace, work / name) for _ in range(a.repeat)]
        m = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{name:<22} {m['events']:>15,.0f} {m['bytes']:>13,.0f} {m['bytes'] / m['events']:>8.1f} "
              f"{m['wall']:>7.2f} {m['cpu']:>6.2f}")
    print("(peak RSS of the exporter, any format: "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB)")


if __name__ == "__main__":
    main()
