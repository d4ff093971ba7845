"""Offline analysis of real traces: `report --check` passes clean traces of
real Java programs (G1, Parallel, humongous objects, stock mode) and finds
deliberate damage at the damaged record's offset; `export --perfetto`,
`report --html` and the flame graphs are checked against the same traces."""
import gzip
import json
import subprocess

import pytest

from conftest import BUILD_DIR
from test_jvm_probes import java_cmd
from test_record import dump_json, jvmtrace, record_run

TRACE_EDIT = BUILD_DIR / "tests/fixtures/trace_edit"

# name: (jdk, gc, main class, args)
PROGRAMS = {
    "g1": ("patched", "G1", "AllocWorker", [3_000_000]),
    "parallel": ("patched", "Parallel", "AllocWorker", [3_000_000]),
    "humongous": ("patched", "G1", "BigArrays", [120, 100_000]),  # 800 KB arrays, 1 MiB regions
    "stock": ("unpatched", "G1", "AllocWorker", [3_000_000]),
}


@pytest.fixture(scope="module")
def traces(jdks, java_classes, tmp_path_factory):
    d = tmp_path_factory.mktemp("analysis")
    out = {}
    for name, (jdk, gc, main, args) in PROGRAMS.items():
        path = d / f"{name}.jvmtrace"
        # Small blocks, so that a cut trace keeps a part (test_check_on_a_cut_trace...).
        run = record_run(java_cmd(jdks[jdk], java_classes, gc, 64, main, *args), path, "--block-kb", "8")
        assert run.target_rc == 0, run.target_err
        out[name] = path
    return out


def check(path, *extra):
    r = jvmtrace("report", "--check", "--json", *extra, path)
    return r.returncode, json.loads(r.stdout)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_check_passes_clean_traces(traces, name):
    rc, c = check(traces[name])
    assert (rc, c["violations"], c["found"]) == (0, 0, []), c
    runs = c["checks"]
    assert runs["tlab.alloc_within"] >= 5 and runs["tlab.disjoint"] == runs["tlab.alloc_within"]
    assert runs["gc.paired"] >= 3 and runs["gc.id_order"] >= 3
    if name == "stock":
        assert "gc.heap_growth" not in runs and any("stock mode" in n for n in c["notes"])
        return
    assert runs["gc.heap_growth"] >= 2 and runs["plab.used_plus_waste"] >= 10
    assert runs["slow.paired"] >= 2 * runs["tlab.in_slow_path"]
    # Traced allocation explains the heap's growth between pauses to the
    # byte (G1 humongous objects counted as whole regions).
    stretches = [s for s in c["stretches"] if s["checked"]]
    assert stretches and all(s["growth"] == s["allocated"] for s in stretches), stretches
    if name == "humongous":
        # ... which matters: the arrays' bytes alone fall short by each region's tail.
        assert sum(s["allocated"] for s in stretches) >= 40 * (1 << 20)


def events_of(path):
    r, recs = dump_json(path)
    assert r.returncode == 0, r.stderr
    return [x for x in recs if x["type"] == "event"]


def damage(src, dst, *edit):
    subprocess.run([str(TRACE_EDIT), str(src), str(dst), *map(str, edit)], check=True, timeout=60)
    return events_of(dst)


def first_index(events, pred, after=0):
    return next(i for i, e in enumerate(events) if i >= after and pred(e))


# Argument slots, as the trace stores them (usdt/jvmtrace.d order).
ALLOC_BYTES, TLAB_START = 2, 0
GC_ID, HEAP_USED = 0, 4
PLAB_WASTE = 4


def test_check_finds_damage_at_its_offset(traces, tmp_path):
    src = traces["g1"]
    ev = events_of(src)
    later = len(ev) // 3  # past the first collections: state is fully known
    cases = []

    # A retired PLAB whose used + wasted no longer equals its size.
    i = first_index(ev, lambda e: e["probe"] == "plab__retire", later)
    cases.append(("plab.used_plus_waste", i, ("set", i, PLAB_WASTE, ev[i]["args"]["wasted_bytes"] + 8), i))
    # A refilling allocation bigger than its TLAB.
    i = first_index(ev, lambda e: e["probe"] == "tlab__refill", later)
    cases.append(("tlab.alloc_within", i, ("set", i, ALLOC_BYTES, ev[i]["args"]["tlab_bytes"] + 8), i))
    # A GC id that goes back.
    starts = [j for j, e in enumerate(ev) if e["probe"] == "gc__start" and j > later]
    i = starts[1]
    cases.append(("gc.id_order", i, ("set", i, GC_ID, ev[starts[0]]["args"]["gc_id"]), i))
    # The heap at a pause start 64 MiB fuller than the allocation explains.
    cases.append(("gc.heap_growth", i, ("set", i, HEAP_USED, ev[i]["args"]["heap_used"] + (64 << 20)), i))
    # A pause that never ends: the next one starts while it is open.
    j = first_index(ev, lambda e: e["probe"] == "gc__end", starts[0])
    cases.append(("gc.one_pause", j, ("drop", j), starts[1] - 1))
    # A TLAB refill taken out: its slow path now says "new TLAB" without one.
    k = first_index(ev, lambda e: e["probe"] == "tlab__refill", later)
    exit_k = first_index(ev, lambda e: e["probe"] == "alloc__slow__exit" and e["tid"] == ev[k]["tid"], k)
    cases.append(("slow.outcome", k, ("drop", k), exit_k - 1))
    # A new TLAB placed inside another thread's live TLAB.
    a = first_index(ev, lambda e: e["probe"] == "tlab__refill", later)
    b = first_index(ev, lambda e: e["probe"] in ("tlab__refill", "gc__start") and e["tid"] != ev[a]["tid"], a + 1)
    if ev[b]["probe"] == "tlab__refill":
        cases.append(("tlab.disjoint", b, ("set", b, TLAB_START, ev[a]["args"]["tlab_start"] + 64), b))

    for n, (check_name, _, edit, at) in enumerate(cases):
        dst = tmp_path / f"damaged-{n}.jvmtrace"
        damaged = damage(src, dst, *edit)
        rc, c = check(dst)
        offset = damaged[at]["offset"]
        assert rc == 4, (check_name, c)
        found = [(v["check"], v["offset"]) for v in c["found"]]
        assert (check_name, offset) in found, (check_name, offset, c["found"][:5])
    assert len(cases) >= 6


def test_check_on_a_cut_trace_checks_the_intact_part(traces, tmp_path):
    data = traces["g1"].read_bytes()
    cut = tmp_path / "cut.jvmtrace"
    cut.write_bytes(data[: len(data) * 2 // 3])
    rc, c = check(cut)
    assert rc == 3 and c["violations"] == 0 and "cut off" in c["status"], c
    assert 0 < c["events"] < len(events_of(traces["g1"]))
