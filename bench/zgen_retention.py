#!/usr/bin/env python3
"""Benchmark: what the tracked samples' weak handles keep alive under
generational ZGC (issue 34, item 5: "the heap kept alive by handles <= 1% of
the live heap").  Generational ZGC's young cycles treat weak handles as
strong, so a tracked object that dies young stays until the next old
(major) cycle.  Leaky (tests/java) runs under `jvmtrace record --live` on a
line whose ZGC is generational (25; 21 with -XX:+ZGenerational); for each
major cycle this prints the bytes of the tracked objects it found dead (an
upper bound on what the handles kept: an object that died in the old
generation would have stayed anyway) against the heap used after it.

  sudo bench/zgen_retention.py [--line 25] [--units 5] [--unit-mb 512]
"""
import argparse
import json
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JVMTRACE = REPO / "build/userspace/jvmtrace"


def patched_home(line):
    out = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--jdk", line, "--variant", "patched",
                          "--print"], capture_output=True, text=True, check=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)["patched"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line", default="25")
    ap.add_argument("--units", type=int, default=5)
    ap.add_argument("--unit-mb", type=int, default=512)
    a = ap.parse_args()
    home = patched_home(a.line)
    flags = ["-XX:+UseZGC"] + (["-XX:+ZGenerational"] if a.line == "21" else [])
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # (/tmp: 21 and 25 run in a root that shares it)
        work = Path(tmp)
        subprocess.run(["javac", "-d", str(work), str(REPO / "tests/java/Leaky.java")], check=True)
        trace = work / "zgen.jvmtrace"
        subprocess.run([str(JVMTRACE), "record", "-q", "--live", "-o", str(trace), "--", f"{home}/bin/java",
                        "-Xmx768m", *flags, "-cp", str(work), "Leaky", str(a.units), str(a.unit_mb), "1"],
                       input="go\n", capture_output=True, text=True, check=True, cwd=work)
        dump = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True).stdout
    size, died, used, name = {}, {}, {}, {}
    for line in dump.splitlines():
        x = json.loads(line)
        if x.get("probe") == "alloc__sample" and x["args"].get("sample_id"):
            size[x["args"]["sample_id"]] = x["args"]["alloc_bytes"]
        elif x.get("type") == "fates":
            for r in x["records"]:
                if r["kind"] == "died":
                    died.setdefault(r["gc_id"], []).append(r["sample_id"])
        elif x.get("probe") == "gc__end":
            used[x["args"]["gc_id"]] = x["args"]["heap_used"]
        elif x.get("probe") == "gc__start":
            name[x["args"]["gc_id"]] = x["args"]["name"]
    print(f"# zgen_retention: Leaky {a.units} x {a.unit_mb} MiB under generational ZGC, JDK {a.line}, "
          f"{len(size)} tracked samples")
    for gc_id in sorted(died):
        b = sum(size.get(s, 0) for s in died[gc_id])
        u = used.get(gc_id)
        share = f"{100 * b / u:.2f}%" if u else "?"
        print(f"GC({gc_id}) {name.get(gc_id, '?')}: {len(died[gc_id])} tracked objects found dead, "
              f"{b / 2**20:.2f} MiB; heap used after {u / 2**20 if u else float('nan'):.1f} MiB: {share}")


if __name__ == "__main__":
    main()
