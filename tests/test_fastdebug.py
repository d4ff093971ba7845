"""The patched HotSpot with HotSpot's own asserts on (fastdebug), on 17, 21
and 25: every probe site runs while a tracer is attached (`record --stacks`:
the VM's own stack walk at sampled slow paths too), on every collector, and
HotSpot checks the locks and safepoint states the sites rely on.  A probe
that reads what it may not (say, G1's used() off a safepoint without
Heap_lock, as gc__end of a concurrent cycle once did, or a stack walk that
may safepoint) crashes a debug JVM with an assert.

The JVM probe tests and every collector's pauses against its logs run on
this build too: scripts/test.sh runs test_jvm_probes.py and
test_stop_the_world.py a second time per line with JVMTRACE_PATCHED_HOME
set to it."""
import json
import subprocess

import pytest

from conftest import BUILD_DIR, FASTDEBUG_LINES, fastdebug_home_of
from helpers import parse_all_pauses

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"

# Each: collector flags, program, and what must happen in the trace.
RUNS = {
    # System.gc() as a concurrent cycle: a concurrent-start young pause, then
    # marking, Remark and Cleanup, and the cycle's end on the marking thread.
    "G1-concurrent": (["-XX:+UseG1GC", "-Xmx256m", "-XX:+ExplicitGCInvokesConcurrent"], ["SystemGc", "4"]),
    "G1-full": (["-XX:+UseG1GC", "-Xmx256m"], ["SystemGc", "2"]),
    "G1-alloc": (["-XX:+UseG1GC", "-Xmx96m"], ["AllocWorker", "3000000"]),
    # Evacuation failure on demand (a debug-build flag): objects that could
    # not be copied stay where they were, the pause says "To-space exhausted"
    # in the log, and report --check must still find every stretch right.
    "G1-evacuation-failure": (["-XX:+UseG1GC", "-Xmx96m", "-XX:+G1EvacuationFailureALot",
                               "-XX:G1EvacuationFailureALotInterval=1", "-XX:G1EvacuationFailureALotCount=2"],
                              ["AllocWorker", "3000000"]),
    "Parallel": (["-XX:+UseParallelGC", "-Xmx96m"], ["AllocWorker", "3000000"]),
    "Serial": (["-XX:+UseSerialGC", "-Xmx96m"], ["AllocWorker", "3000000"]),
    # The concurrent collectors: their pauses' probes in their own VM
    # operations, the batch flush at a ZGC operation's top.
    "ZGC": (["-XX:+UseZGC", "-Xmx96m"], ["AllocWorker", "3000000"]),
    "Shenandoah": (["-XX:+UseShenandoahGC", "-Xmx96m"], ["AllocWorker", "3000000"]),
}
# On 21, ZGC's generational mode is a flag (25 has only that mode, 17 none).
EXTRA = {"21": {"ZGC-generational": (["-XX:+UseZGC", "-XX:+ZGenerational", "-Xmx96m"], ["AllocWorker", "3000000"])}}
CASES = [(line, run) for line in FASTDEBUG_LINES for run in [*RUNS, *EXTRA.get(line, {})]]


def record_from_start(java, flags, program, classes, out):
    """Starts the program (it waits for "go"), records it, lets it run."""
    jvm = subprocess.Popen([java, *flags, "-Xlog:gc*:file=gc.log", "-cp", str(classes), *program], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=out.parent)  # where an assert leaves its hs_err_pid*.log
    try:
        ready = jvm.stdout.readline()
        assert ready.startswith("ready "), f"no ready line: {ready!r} {jvm.stderr.read()[-3000:]}"
        rec = subprocess.Popen([str(JVMTRACE), "record", "--stacks", "-p", str(jvm.pid), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Attached once the banner is out.
        for line in rec.stderr:
            if line.startswith("Recording PID"):
                break
        else:
            pytest.fail(f"record did not attach: rc {rec.wait()}")
        rest, err = jvm.communicate("go\n", timeout=600)
        rec_rest = rec.stderr.read()
        rec.wait(timeout=120)
        return jvm.returncode, ready + rest, err, rec.returncode, rec_rest
    finally:
        if jvm.poll() is None:
            jvm.kill()


@pytest.mark.parametrize("line,run", CASES, ids=[f"jdk{line}-{run}" for line, run in CASES])
def test_probe_sites_hold_hotspots_own_asserts(line, run, java_classes, tmp_path):
    flags, program = {**RUNS, **EXTRA.get(line, {})}[run]
    if line == "25":  # 25 renamed the evacuation-failure flags (G1GCAllocationFailureALot...)
        flags = [f.replace("G1EvacuationFailureALot", "G1GCAllocationFailureALot") for f in flags]
    fastdebug_home = fastdebug_home_of(line)
    java = str(fastdebug_home / "bin/java")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    assert "debug" in version, f"{fastdebug_home} is not a debug build:\n{version}"
    out = tmp_path / f"{run}.jvmtrace"
    rc, stdout, stderr, rec_rc, rec_err = record_from_start(java, flags, program, java_classes, out)
    assert rc == 0, f"the debug JVM failed (an assert at a probe site?) rc {rc}:\n{stderr[-4000:]}\n{stdout[-2000:]}"
    assert "assert" not in stderr and "Internal Error" not in stderr + stdout, stderr[-4000:]
    assert rec_rc == 0, rec_err
    events = [json.loads(l) for l in subprocess.run([str(JVMTRACE), "dump", "--json", str(out)], check=True,
                                                    capture_output=True, text=True).stdout.splitlines()]
    probes = {e["probe"] for e in events if e.get("type") == "event"}
    kinds = {e["args"]["kind"] for e in events if e.get("probe") == "gc__end"}
    # The run reached the sites it is there for, every pause and safepoint
    # among them, and the VM walked its stacks.
    assert {"gc__start", "gc__end", "gc__pause__start", "gc__pause__end", "safepoint__begin", "safepoint__end",
            "alloc__sample"} <= probes, probes
    log = (tmp_path / "gc.log").read_text()
    assert sum(1 for e in events if e.get("probe") == "gc__pause__end") == len(parse_all_pauses(log)), log[-3000:]
    if run == "G1-evacuation-failure":
        # 17 logs "To-space exhausted", 21 and 25 an "(Evacuation Failure...)" title.
        assert "To-space exhausted" in log or "Evacuation Failure" in log, "no evacuation failed: the run lost its point"
    if run == "G1-concurrent":
        assert 2 in kinds, f"no concurrent cycle ended in the trace: kinds {kinds}"
    if run.endswith("alloc") or run in ("Parallel", "Serial"):
        assert {"tlab__refill", "alloc__slow__enter", "alloc__slow__exit"} <= probes, probes
    if run in ("G1-alloc", "Parallel"):
        assert {"plab__alloc", "plab__retire"} <= probes, probes
    check = subprocess.run([str(JVMTRACE), "report", "--check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
