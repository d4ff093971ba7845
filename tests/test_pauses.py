"""Every stop-the-world pause, on every collector: the pause probes against
-Xlog:gc of the same run, through `jvmtrace record` attached before the JVM's
first allocation (held at -XX:+PauseAtStartup), and `report --check` right on
runs with G1 concurrent cycles (Remark and Cleanup free memory), humongous
arrays, explicit and forced full collections, and Serial's abandoned young
collections.  tests/java/PauseMix.java makes all of these in about a second;
the corpus of real programs (test_corpus_programs.py) covers the rest."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import ABI, LineReader, parse_gc_pauses, pause_kind_of, pause_title, wait_until
from test_record import dump_json

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
MIB = 1 << 20

# name: (collector flags, PauseMix's live-set MiB, what the run must show)
CONFIGS = {
    "G1-cycles": (["-XX:+UseG1GC", "-XX:+ExplicitGCInvokesConcurrent"], 40, {"Pause Remark", "Pause Cleanup"}),
    "G1-full": (["-XX:+UseG1GC"], 40, {"Pause Full"}),
    "Parallel": (["-XX:+UseParallelGC"], 40, {"Pause Full", "Pause Young"}),
    "Serial": (["-XX:+UseSerialGC"], 40, {"Pause Full", "Pause Young"}),
}


def held_record(home, classes, workdir, jvm_flags, args, trace, log_spec="gc"):
    """Runs PauseMix held at start-up, `jvmtrace record` attached before it is
    released; returns (java's stdout, the recorder's stderr)."""
    log = workdir / "gc.log"
    cmd = [str(Path(home) / "bin/java"), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", *jvm_flags,
           "-Xms64m", "-Xmx64m", f"-Xlog:{log_spec}:file={log}", "-cp", str(classes), "PauseMix", *map(str, args)]
    java = subprocess.Popen(cmd, cwd=workdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    rec = None
    try:
        hold = workdir / f"vm.paused.{java.pid}"
        wait_until(lambda: hold.exists() or java.poll() is not None, 60, "the JVM to hold at start-up")
        assert java.poll() is None, java.stderr.read()
        rec = subprocess.Popen([str(JVMTRACE), "record", "-p", str(java.pid), "-o", str(trace)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "the recorder to attach")
        hold.unlink()
        out, jerr = java.communicate("go\n", timeout=300)
        assert java.returncode == 0, jerr[-2000:]
        rec.wait(60)
        rec_err = "\n".join(err.drain())
        assert rec.returncode == 0 and "target exited" in rec_err, rec_err
        return out, rec_err, log.read_text()
    finally:
        for p in (java, rec):
            if p and p.poll() is None:
                p.kill()
                p.wait(30)


@pytest.mark.parametrize("config", CONFIGS)
def test_every_pause_of_the_log_is_traced_and_checks(jdks, java_classes, tmp_path, config):
    flags, live_mb, must_show = CONFIGS[config]
    trace = tmp_path / "pauses.jvmtrace"
    log_spec = "gc=trace" if config == "Serial" else "gc"  # trace: the "not safe" lines
    out, rec_err, log = held_record(jdks["patched"], java_classes, tmp_path, flags, [3, live_mb], trace, log_spec)
    assert "checksum " in out
    logged = parse_gc_pauses(log)
    titles = {t.split(" (")[0] for _, t, *_ in logged}
    assert must_show <= titles, f"the run did not show {must_show - titles}: {sorted(titles)}"

    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    assert not [x for x in recs if x["type"] == "lost"]
    events = [x for x in recs if x["type"] == "event"]
    pause_ends = [e["args"] for e in events if e["probe"] == "gc__pause__end"]
    assert pause_ends, "no gc__pause__end events: is this JDK patched with the pause probes?"
    starts = {(e["args"]["gc_id"], e["args"]["kind"]): e["args"] for e in events if e["probe"] == "gc__pause__start"}
    ours = []
    for a in pause_ends:
        s = starts[(a["gc_id"], a["kind"])]
        text = pause_title(a["name"], a["cause"])
        ours.append((a["gc_id"], text, s["heap_used"] // MIB, a["heap_used"] // MIB, a["heap_committed"] // MIB))
    # Every pause line once, in order, same id, title, cause and heap figures.
    assert ours == [(g, t, b, a, c) for g, t, b, a, c, _ in logged]
    assert [a["kind"] for a in pause_ends] == [pause_kind_of(t) for _, t, *_ in logged]

    # G1's Remark and Cleanup carry their concurrent cycle's id.
    cycles = {e["args"]["gc_id"] for e in events if e["probe"] == "gc__start" and e["args"]["kind"] == ABI["JVMTRACE_GC_CONCURRENT"]}
    for a in pause_ends:
        if a["kind"] in (ABI["JVMTRACE_PAUSE_REMARK"], ABI["JVMTRACE_PAUSE_CLEANUP"]):
            assert a["gc_id"] in cycles, a
    # Every collection that starts ends (Serial's abandoned young collection
    # used to leave a start without an end).
    gc_starts = [e["args"]["gc_id"] for e in events if e["probe"] == "gc__start"]
    gc_ends = [e["args"]["gc_id"] for e in events if e["probe"] == "gc__end"]
    assert sorted(gc_starts) == sorted(gc_ends)
    if config == "Serial" and jdks["line"] != "25":
        # (25 checks a young collection is safe before it starts one: it
        # gives none up, and logs no such line)
        assert "Collection attempt not safe" in log, "no young collection was given up: the test lost its point"

    check = subprocess.run([str(JVMTRACE), "report", "--check", str(trace)], capture_output=True, text=True,
                           timeout=300)
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(trace)], capture_output=True,
                                    text=True, timeout=300, check=True).stdout)
    assert rep["pause_probes"] is True
    assert len(rep["pauses"]) == len(logged)
    assert sum(rep["pause_ns_by_kind"][k]["count"] for k in ("young", "full", "remark", "cleanup")) == len(logged)
