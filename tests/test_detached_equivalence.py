"""With nothing attached, the patched VM behaves like the unpatched one: the
test programs print the same results (less pids and thread ids) under both,
and no jvmtrace probe site is armed."""
import subprocess

import pytest

from test_jvm_probes import GCS, java_cmd

PROGRAMS = [("SystemGc", 3), ("BigArrays", 3, 1 << 18), ("AllocWorker", 1_000_000)]


def stable_output(cmd):
    r = subprocess.run(cmd, input="go\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stdout.splitlines()
             if not l.startswith(("ready ", "worker tid "))]
    assert lines, f"{cmd[-1]} printed nothing"
    return lines, r.stderr


@pytest.mark.parametrize("gc", GCS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p[0])
def test_same_output_patched_and_unpatched(jdks, java_classes, gc, program):
    main, *args = program
    outs = {}
    for variant in ("patched", "unpatched"):
        outs[variant] = stable_output(java_cmd(jdks[variant], java_classes, gc, 128, main, *args))
    assert outs["patched"] == outs["unpatched"]


def test_semaphores_stay_zero_without_a_tracer(jdks, patched_libjvm, java_classes):
    """Read every jvmtrace semaphore out of a running patched JVM's memory:
    all zero when nothing is attached (so no probe computes arguments)."""
    import re
    from helpers import LineReader, usdt_notes
    notes = [p for p in usdt_notes(patched_libjvm) if p.provider == "jvmtrace"]
    cmd = java_cmd(jdks["patched"], java_classes, "G1", 64, "SystemGc", 1)
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        LineReader(proc.stdout).wait_for(lambda l: l.startswith("ready"), 60, "ready")
        maps = open(f"/proc/{proc.pid}/maps").read().splitlines()
        # The semaphores live in libjvm's writable data: find its load bias from
        # the first mapping of the file (offset 0), as a tracer does.
        first = next(l for l in maps if l.endswith(str(patched_libjvm)) and l.split()[2] == "00000000")
        base = int(first.split("-")[0], 16)
        with open(f"/proc/{proc.pid}/mem", "rb") as mem:
            for p in notes:
                mem.seek(base + p.semaphore)
                value = int.from_bytes(mem.read(2), "little")
                assert value == 0, f"{p.name}: semaphore {value} with no tracer attached"
        assert re.search(r"libjvm\.so", "\n".join(maps))
    finally:
        proc.stdin.write("go\n")
        proc.stdin.close()
        proc.wait(60)
