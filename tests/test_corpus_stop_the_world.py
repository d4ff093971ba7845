"""Every stop of the world of the real programs under the collectors whose
pauses are not G1's, Parallel's or Serial's (those: test_corpus_programs.py),
on every release line: ZGC (17; 21 in both modes; 25 generational) and
Shenandoah.  Each corpus program (Saxon, Lucene, H2, ecj, Rhino) runs held at
start-up with `-Xlog:gc*,safepoint` and `jvmtrace record` attached before it
is released; then, against its own log (test_stop_the_world's check):

- every "Pause ..." line is one gc__pause__start/end pair with its GC id,
  title, kind and a duration that brackets the log's, inside a safepoint;
- every -Xlog:safepoint line is one safepoint__end with its operation and
  the log's exact figures (reaching, cleanup, at the safepoint, total);
- `report` shows every pause and no "pauses not seen" note, its safepoints
  by operation are the log's, and `report --check` finds nothing;
- the program's output is right (traced, it computes what it computes).

(PauseMix in test_stop_the_world.py makes every kind of pause on purpose;
these programs make what real work makes: allocation stalls, degenerated
cycles, the safepoints of class loading and deoptimisation.)"""
import json
import os
import shutil
import subprocess
from collections import Counter

import pytest

from conftest import BUILD_DIR, JDK_LINES, jdk_homes
from corpus import PROGRAMS, STDOUT, command as corpus_command
from helpers import LineReader, wait_until
from test_record import dump_json
from test_stop_the_world import COLLECTORS, check_against_log

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"


def collectors_of(line):
    return ["ZGC", "Shenandoah"] + (["ZGC-generational"] if line == "21" else [])


CASES = [(p, line, gc) for line in JDK_LINES for gc in collectors_of(line) for p in PROGRAMS]


def heap_flags(program):
    """Twice the program's G1 heap: the concurrent collectors need room to
    run beside the program (at G1's size ZGC stalls most allocations)."""
    mb = next(int(f[len("-Xmx"):-1]) for f in program.gc["G1"] if f.startswith("-Xmx"))
    return [f"-Xms{2 * mb}m", f"-Xmx{2 * mb}m"]


def run_recorded(program, home, line, gc, work):
    flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", f"-Xlog:gc*,safepoint:file={work}/gc.log",
             *COLLECTORS[gc], *heap_flags(program)]
    with open(work / STDOUT, "w") as out, open(work / "stderr.txt", "w") as err:
        jvm = subprocess.Popen(corpus_command(program, home, flags, line, work), cwd=work, stdout=out, stderr=err,
                               stdin=subprocess.DEVNULL)
    rec = None
    try:
        held = work / f"vm.paused.{jvm.pid}"
        wait_until(lambda: held.exists() or jvm.poll() is not None, 120, "HotSpot to hold at start-up")
        assert jvm.poll() is None, (work / "stderr.txt").read_text()[-2000:]
        rec = subprocess.Popen([str(JVMTRACE), "record", "-p", str(jvm.pid), "-o", str(work / "trace.jvmtrace")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        held.unlink()
        assert jvm.wait(600) == 0, (work / "stderr.txt").read_text()[-2000:]
        assert rec.wait(120) == 0
        rec_err = "\n".join(err.drain())
        assert "target exited" in rec_err, rec_err
        return rec_err
    finally:
        for p in (jvm, rec):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait(60)


@pytest.mark.parametrize("program,line,gc", CASES, ids=[f"{p.name}-jdk{l}-{g}" for p, l, g in CASES])
def test_every_pause_and_safepoint_of_a_real_program_is_traced(program, line, gc, corpus_inputs, tmp_path):
    work = tmp_path / "run"
    shutil.copytree(corpus_inputs(program), work, copy_function=os.link)
    home = jdk_homes(line)["patched"]
    run_recorded(program, home, line, gc, work)
    program.check(work, jdk_homes("17")["patched"])

    trace = work / "trace.jvmtrace"
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    assert not [x for x in recs if x["type"] == "lost"]
    events = [x for x in recs if x["type"] == "event"]
    log = (work / "gc.log").read_text()
    logged, safepoints = check_against_log(events, log, gc)
    assert logged, f"{program.name} under {gc}: no pause in the run: the test lost its point"

    check = subprocess.run([str(JVMTRACE), "report", "--check", "--json", str(trace)], capture_output=True,
                           text=True, timeout=600)
    c = json.loads(check.stdout)
    assert check.returncode == 0 and c["violations"] == 0, c["found"][:5]
    assert c["checks"]["pause.in_safepoint"] == len(logged) and c["checks"]["safepoint.figures"] == len(safepoints)
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(trace)], capture_output=True,
                                    text=True, timeout=600, check=True).stdout)
    assert rep["pauses_not_seen"] is None, rep["pauses_not_seen"]
    assert len(rep["pauses"]) == len(logged)
    ops = Counter(s["operation"] for s in safepoints)
    assert {o["operation"]: o["total_ns"]["count"] for o in rep["safepoints_by_operation"]} == dict(ops)
    print(f"\n{program.name} JDK {line} {gc}: {len(logged)} pauses "
          f"{dict(Counter(p['title'].split(' (')[0] for p in logged))}; {len(safepoints)} safepoints {dict(ops)}")
