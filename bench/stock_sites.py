#!/usr/bin/env python3
"""Benchmark: how well a stock JVM's allocation sites come out (issue 22,
"stock JVMs: measure and document what they get").

A stock HotSpot has no alloc__sample probe, so `record --stacks` there takes
the kernel's user-stack walk at every TLAB refill and outside-TLAB object
(stock mode: uprobes on AllocTracer) and names JIT frames from the JVM's perf
map.  This runs each corpus program (tests/corpus.py) on Debian's own JDK
under G1, with JFR's every-slow-path allocation events as the reference (the
same JFC and the same agreement measure as tests/test_allocation_sites.py),
twice: as production runs it, and with -XX:+PreserveFramePointer, which the
kernel's walk needs to get past the first compiled frame.

Per run it prints: the share of bytes whose stack has a named Java frame;
the agreement of the allocating-method distributions (the sum over methods
of the smaller share; 1 is equal) with JFR's; how many of JFR's top 10
methods are in jvmtrace's top 10.  A method is the leaf-most named Java
frame of the stack (a JIT frame from the perf map); an interpreted frame has
no method name in stock mode (`Interpreter_[j]`), so stacks whose leaf-most
Java frame is interpreted count as unnamed.

  sudo bench/stock_sites.py [--line 17] [--programs saxon-xslt,lucene-index-search,...]
"""
import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import corpus  # noqa: E402
from test_allocation_sites import JFC, agreement, class_of, jfr_sites, shares, top  # noqa: E402

JVMTRACE = REPO / "build/userspace/jvmtrace"
BUILD = REPO / "scripts/build-patched-jdk.sh"
# A named Java frame from the perf map: "pkg.Class.method_[j]" (HotSpot's
# stubs and the interpreter have no dot-separated class and method).
JAVA_FRAME = re.compile(r"^(?P<name>[\w$]+(?:[./][\w$]+)*\.[\w$<>]+)(?:\(.*\))?_\[j\]$")


def homes(line):
    out = subprocess.run([str(BUILD), "--jdk", line, "--variant", "patched,stock", "--print"], capture_output=True,
                         text=True, check=True).stdout
    return dict(l.split("=", 1) for l in out.split() if "=" in l)


def run(program, home, line, work, fp):
    (work / "alloc.jfc").write_text(JFC)
    flags = ["-XX:+DumpPerfMapAtExit",
             f"-XX:StartFlightRecording=filename={work}/rec.jfr,settings={work}/alloc.jfc,dumponexit=true",
             *(["-XX:+PreserveFramePointer"] if fp else []), *program.gc["G1"]]
    corpus.record_held(program, home, line, flags, work, JVMTRACE, "--mode", "stock", "--stacks")


def jvmtrace_methods(trace):
    """method -> bytes by the leaf-most named Java frame of each stack of the
    flame graph (every refill and outside object, exact bytes); and the
    bytes whose stack has none."""
    r = subprocess.run([str(JVMTRACE), "flame", str(trace), "-o", "-", "--collapsed"], capture_output=True,
                       text=True, check=True)
    by_method, unnamed = Counter(), 0
    for line in r.stdout.splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")[:-1]  # the leaf is the class
        named = [m.group("name") for m in map(JAVA_FRAME.match, frames) if m]
        if named:
            name, _, method = named[-1].replace("/", ".").rpartition(".")
            by_method[class_of(name) + "." + method] += int(n)
        else:
            unnamed += int(n)
    return by_method, unnamed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--line", default="17", choices=["17", "21", "25"])
    ap.add_argument("--programs", default=",".join(p.name for p in corpus.PROGRAMS))
    a = ap.parse_args()
    h = homes(a.line)
    stock = h["stock"]
    wanted = a.programs.split(",")
    print(f"Stock JDK {a.line} ({stock}), G1, record --stacks (stock mode) against JFR's every-slow-path events")
    print(f"{'program':<22} {'flags':<22} {'named bytes':>12} {'agreement':>10} {'top-10 overlap':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for program in (p for p in corpus.PROGRAMS if p.name in wanted):
            inputs = Path(tmp) / f"input-{program.name}"
            inputs.mkdir()
            program.prepare(inputs, h["patched"])
            for fp in (False, True):
                work = Path(tmp) / f"{program.name}-{int(fp)}"
                shutil.copytree(inputs, work)
                run(program, stock, a.line, work, fp)
                every, _, _, _ = jfr_sites(stock, work / "rec.jfr")
                ours, unnamed = jvmtrace_methods(work / "trace.jvmtrace")
                total = sum(ours.values()) + unnamed
                ja, jb = shares(every), shares(ours + Counter({"[no named Java frame]": unnamed}))
                print(f"{program.name:<22} {'PreserveFramePointer' if fp else '(none)':<22} "
                      f"{100 * sum(ours.values()) / total:>11.1f}% {agreement(ja, jb):>10.3f} "
                      f"{len(set(top(ja)) & set(top(jb))):>12} of 10", flush=True)


if __name__ == "__main__":
    main()
