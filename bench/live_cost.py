#!/usr/bin/env python3
"""Benchmark: what jvmtrace's weak OopStorage of tracked samples adds to a
collection when its table is full (issue 34, item 5: "the weak processing of
a 64k-entry table adds <= 0.2 ms to a collection at p99").

Catalog (tests/java) builds about ITEMS x 1 KB of live objects beside as much
garbage, with 2 KiB TLABs that never resize and every slow path sampled
(-XX:JvmtraceSampleRate=0), so the VM's table of tracked samples
(JvmtraceLiveSamples, 65,536 by default) fills and thins; it runs under
`jvmtrace record --live` with -Xlog:gc+phases=debug, which prints, per
collection, the time each weak OopStorage took ("jvmtrace Samples Weak"
beside HotSpot's own).  After the build, --full-gcs jcmd GC.run collections
run with the table full.  Printed per collector: the storage's time at each
collection against the table's size then (the fates batch's `tracked`), and
its p50/p99/max over the collections with at least half the table full.

  sudo bench/live_cost.py [--line 17] [--gc G1] [--items 150000] [--full-gcs 10]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JVMTRACE = REPO / "build/userspace/jvmtrace"
sys.path.insert(0, str(REPO / "tests"))
from helpers import LineReader  # noqa: E402

FLAGS = {"G1": "-XX:+UseG1GC", "Parallel": "-XX:+UseParallelGC", "Serial": "-XX:+UseSerialGC",
         "ZGC": "-XX:+UseZGC", "Shenandoah": "-XX:+UseShenandoahGC"}
STORAGE = "jvmtrace Samples Weak"


def patched_home(line):
    out = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--jdk", line, "--variant", "patched",
                          "--print"], capture_output=True, text=True, check=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)["patched"]


def one(home, gc, items, full_gcs, table, work):
    classes = work / "classes"
    log, trace = work / f"phases-{gc}.log", work / f"live-{gc}.jvmtrace"
    java = [f"{home}/bin/java", FLAGS[gc], "-Xmx2g", "-XX:-ResizeTLAB", "-XX:TLABSize=2k",
            "-XX:+UnlockDiagnosticVMOptions", "-XX:JvmtraceSampleRate=0", f"-XX:JvmtraceLiveSamples={table}",
            f"-Xlog:gc+phases=debug:file={log}", "-cp", str(classes), "Catalog", str(items), "0"]
    rec = subprocess.Popen([str(JVMTRACE), "record", "-q", "--live", "-o", str(trace), "--", *java],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=work)
    out = LineReader(rec.stdout)
    pid = int(out.wait_for(lambda l: l.startswith("ready "), 120, "Catalog to start").split()[1])
    rec.stdin.write("go\n")
    rec.stdin.flush()
    out.wait_for(lambda l: l.startswith("built "), 600, "Catalog to build")
    for _ in range(full_gcs):
        subprocess.run([f"{home}/bin/jcmd", str(pid), "GC.run"], capture_output=True, check=True, timeout=300)
    rec.stdin.write("\n")
    rec.stdin.close()
    rec.wait(300)
    # The table's size after each collection, from its fates batches.
    tracked = {}
    dump = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True)
    for line in dump.stdout.splitlines():
        if line.startswith('{"type":"fates"'):
            x = json.loads(line)
            tracked[x["gc_id"]] = x["tracked"]
    times = []  # (gc_id, table size, ms: the storage's Max over workers, the whole weak phase)
    phase = {}
    for line in log.read_text().splitlines():
        m = re.search(r"GC\((\d+)\)\s+Weak Processing: ([\d.]+)ms", line)
        if m:
            phase[int(m.group(1))] = float(m.group(2))
        m = re.search(r"GC\((\d+)\)\s+" + STORAGE + r"\s+Min: [\d.]+, Avg: [\d.]+, Max: ([\d.]+)", line)
        if m:
            times.append((int(m.group(1)), float(m.group(2))))
    known = 0
    rows = []
    for gc_id, ms in times:
        known = tracked.get(gc_id, known)
        rows.append((gc_id, known, ms, phase.get(gc_id)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line", default="17")
    ap.add_argument("--gc", action="append", help="G1 (default), Parallel, Serial, ZGC, Shenandoah")
    ap.add_argument("--items", type=int, default=150_000)
    ap.add_argument("--full-gcs", type=int, default=10)
    ap.add_argument("--table", type=int, default=65536, help="JvmtraceLiveSamples")
    a = ap.parse_args()
    home = patched_home(a.line)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        subprocess.run(["javac", "-d", str(work / "classes"), str(REPO / "tests/java/Catalog.java")], check=True)
        print(f"# live_cost: Catalog {a.items} items, every slow path sampled, 2 KiB TLABs, JvmtraceLiveSamples "
              f"{a.table}, JDK {a.line}; '{STORAGE}' per collection from -Xlog:gc+phases=debug (ms, the log's 2 "
              f"decimals: 0.00 is under 5 us)")
        for gc in a.gc or ["G1"]:
            rows = one(home, gc, a.items, a.full_gcs, a.table, work)
            if not rows:
                print(f"{gc}: the log has no per-storage weak times for this collector")
                continue
            for gc_id, n, ms, ph in rows:
                print(f"{gc} GC({gc_id}) table {n:>6}  {STORAGE} {ms:.2f} ms  (weak processing {ph} ms)")
            full = sorted(ms for _, n, ms, _ in rows if n >= a.table // 2)
            if full:
                p99 = full[min(len(full) - 1, int(0.99 * len(full)))]
                print(f"{gc}: {len(full)} collections with the table at least half full ({a.table // 2}): "
                      f"p50 {statistics.median(full):.2f} ms, p99 {p99:.2f} ms, max {full[-1]:.2f} ms")
            else:
                print(f"{gc}: the table never reached half full ({max(n for _, n, _, _ in rows)} at most)")


if __name__ == "__main__":
    main()
