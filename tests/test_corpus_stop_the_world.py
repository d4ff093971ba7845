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
import os
import shutil
from pathlib import Path
from collections import Counter

import pytest

from conftest import BUILD_DIR, JDK_LINES, debian_jdk17, jdk_homes
from corpus import PROGRAMS, record_held
from helpers import SchedTrace
from test_record import dump_json
from test_stop_the_world import COLLECTORS, check_against_log, check_report

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"


def collectors_of(line):
    return ["ZGC", "Shenandoah"] + (["ZGC-generational"] if line == "21" else [])


CASES = [(p, line, gc) for line in JDK_LINES for gc in collectors_of(line) for p in PROGRAMS]


def heap_flags(program):
    """Twice the program's G1 heap: the concurrent collectors need room to
    run beside the program (at G1's size ZGC stalls most allocations)."""
    mb = next(int(f[len("-Xmx"):-1]) for f in program.gc["G1"] if f.startswith("-Xmx"))
    return [f"-Xms{2 * mb}m", f"-Xmx{2 * mb}m"]


@pytest.mark.parametrize("program,line,gc", CASES, ids=[f"{p.name}-jdk{l}-{g}" for p, l, g in CASES])
def test_every_pause_and_safepoint_of_a_real_program_is_traced(program, line, gc, corpus_inputs, tmp_path):
    work = tmp_path / "run"
    shutil.copytree(corpus_inputs(program), work, copy_function=os.link)
    home = jdk_homes(line)["patched"]
    with SchedTrace(Path(home) / "lib/server/libjvm.so") as sched:
        rec_err = record_held(program, home, line, [f"-Xlog:gc*,safepoint:file={work}/gc.log", *COLLECTORS[gc],
                                                    *heap_flags(program)], work, JVMTRACE)
    assert "target exited" in rec_err, rec_err
    program.check(work, str(debian_jdk17()))

    trace = work / "trace.jvmtrace"
    r, recs = dump_json(trace)
    assert r.returncode == 0, r.stderr
    assert not [x for x in recs if x["type"] == "lost"]
    events = [x for x in recs if x["type"] == "event"]
    log = (work / "gc.log").read_text()
    logged, safepoints = check_against_log(events, log, gc, sched)
    assert logged, f"{program.name} under {gc}: no pause in the run: the test lost its point"

    ops = check_report(trace, logged, safepoints)
    print(f"\n{program.name} JDK {line} {gc}: {len(logged)} pauses "
          f"{dict(Counter(p['title'].split(' (')[0] for p in logged))}; {len(safepoints)} safepoints {dict(ops)}")
