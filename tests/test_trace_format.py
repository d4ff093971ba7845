"""The trace reader on cut and damaged files: the C++ property test (several
seeds), the same through the CLI on a real recording cut at every byte, and
the libFuzzer target run for a bounded time."""
import json
import subprocess

import pytest

from conftest import BUILD_DIR, REPO
from helpers import PROBES, SEPARATE, traced_run

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"


@pytest.mark.no_root
def test_property_roundtrip_cuts_and_damage():
    for seed in (1, 2, 3):
        r = subprocess.run([str(BUILD_DIR / "tests/fixtures/trace_format_test"), "--seed", str(seed)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert ": ok" in r.stdout


def small_trace(usdt_fixture, path):
    # --stacks: the trace holds stack records too (the fixture's own frames).
    traced_run(lambda pid: [str(JVMTRACE), "record", "-p", str(pid), "-b", str(usdt_fixture), "-o", str(path),
                            "-q", "--block-kb", "1", "--stacks-from", "user", *SEPARATE],
               [str(usdt_fixture), "--wait-for", "stdin", "--real-tid", "--rounds", "40", "--linger", "200"],
               ready=lambda l: l.startswith("Recording PID"), stderr_ready=True)
    return path.read_bytes()


def count_events(path):
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode >= 0, f"dump died of signal {-r.returncode}"
    return r.returncode, sum(1 for l in r.stdout.splitlines() if json.loads(l)["type"] == "event"), r.stderr


def test_cli_reads_a_real_trace_cut_at_every_byte(usdt_fixture, tmp_path):
    data = small_trace(usdt_fixture, tmp_path / "small.jvmtrace")
    rc, full, _ = count_events(tmp_path / "small.jvmtrace")
    assert rc == 0 and full == 40 * PROBES
    cut = tmp_path / "cut.jvmtrace"
    prev = 0
    for n in range(len(data)):
        cut.write_bytes(data[:n])
        rc, events, err = count_events(cut)
        if n < 16:
            assert rc == 1 and "file header" in err, (n, err)
            continue
        assert rc == 3, (n, rc, err)
        assert ("cut off at offset" in err or "no end record" in err), (n, err)
        assert prev <= events < full or (events == full and "no end record" in err), (n, events)
        prev = events
    assert prev > 0, "a cut trace should still give its complete blocks"


def test_fuzzer_finds_nothing(usdt_fixture, tmp_path):
    seed = tmp_path / "seed.jvmtrace"
    small_trace(usdt_fixture, seed)
    r = subprocess.run([str(REPO / "scripts/fuzz-trace-reader.sh"), "30", str(seed)], capture_output=True, text=True,
                       timeout=600, env={"FUZZ_DIR": str(tmp_path / "fuzz"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Done" in r.stderr and "stat::number_of_executed_units" in r.stderr


@pytest.mark.no_root
def test_a_version_1_trace_still_reads_exactly():
    """tests/fixtures/traces/fixture-v1.jvmtrace was written by the recorder of
    commit 6f879a4 (trace format version 1, before the pause probes) from the
    USDT fixture, 5 rounds on one thread: today's reader gives back every
    event of it, argument by argument."""
    from test_record import dump_json, fixture_round
    path = REPO / "tests/fixtures/traces/fixture-v1.jvmtrace"
    assert path.read_bytes()[8:12] == (1).to_bytes(4, "little"), "not a version 1 file"
    r, recs = dump_json(path)
    assert r.returncode == 0, r.stderr
    events = [(x["probe"], x["args"]) for x in recs if x["type"] == "event"]
    old_probes = [p for p, _ in fixture_round(0) if not p.startswith("gc__pause")]
    assert events == [(p, a) for i in range(5) for p, a in fixture_round(i) if p in old_probes]
    end = next(x for x in recs if x["type"] == "end")
    assert (end["events"], end["lost"], end["reason"]) == (40, 0, "target exited")


@pytest.mark.no_root
def test_a_crafted_meta_record_forges_no_json_and_no_terminal_control(tmp_path):
    """A trace file is input like any other: meta values that try to add a
    JSON field (a pid that is not a number) or to drive the terminal (escape
    sequences, bytes that are not UTF-8) come out as data, in every output."""
    fixture = REPO / "tests/fixtures/traces/fixture-v1.jvmtrace"
    edit = str(BUILD_DIR / "tests/fixtures/trace_edit")
    forged, hostile = tmp_path / "forged.jvmtrace", tmp_path / "hostile.jvmtrace"
    subprocess.run([edit, str(fixture), str(forged), "meta", "pid", '1, "forged": true'], check=True, timeout=30)
    title = "\x1b]0;owned\x07\x1b[2J"
    subprocess.run([edit, str(fixture), str(tmp_path / "step.jvmtrace"), "meta", "mode", title], check=True, timeout=30)
    subprocess.run([edit, str(tmp_path / "step.jvmtrace"), str(hostile), "meta", "cmdline", "java \udcff\udcfe"],
                   check=True, timeout=30)
    for args in (["report", "--json"], ["report", "--check", "--json"], ["dump", "--json"]):
        for trace in (forged, hostile):
            r = subprocess.run([str(JVMTRACE), *args, str(trace)], capture_output=True, timeout=30)
            assert r.returncode in ((0, 4) if "--check" in args else (0,)), r.stderr  # 4: violations found
            for line in r.stdout.decode().splitlines():  # UTF-8: bytes that were not became U+FFFD
                assert "forged" not in json.loads(line), f"{args}: {line}"
    report = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(forged)], capture_output=True,
                                       timeout=30, check=True).stdout)
    assert report["pid"] is None
    hostile_json = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", str(hostile)], capture_output=True,
                                             timeout=30, check=True).stdout)
    assert hostile_json["mode"] == title and hostile_json["cmdline"] == "java \ufffd\ufffd"
    for args in (["report"], ["report", "--check"], ["dump"]):
        r = subprocess.run([str(JVMTRACE), *args, str(hostile)], capture_output=True, timeout=30)
        assert r.returncode in (0, 4) and b"\x1b" not in r.stdout and b"\x07" not in r.stdout, f"{args}: {r.stdout[:300]}"


@pytest.mark.no_root
def test_an_event_of_an_undefined_thread_is_corrupt_not_a_crash(tmp_path):
    """tests/fixtures/traces/fuzz-undefined-thread.jvmtrace: what the fuzzer
    found once it reached the decoder below the checksum (session 9), 1,854
    bytes whose event names thread index ~4 billion.  The decoder made room
    for that many threads' state and died of std::bad_alloc; now every
    reader says where the trace is corrupt, and exits 1."""
    path = REPO / "tests/fixtures/traces/fuzz-undefined-thread.jvmtrace"
    for args in (["dump"], ["dump", "--json"], ["report"], ["report", "--check"], ["report", "--json"],
                 ["export", "--perfetto", "-o", str(tmp_path / "p.json")], ["flame", "-o", str(tmp_path / "f.svg")]):
        r = subprocess.run([str(JVMTRACE), *args, str(path)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 1, (args, r.returncode, r.stderr[-500:])
        assert "corrupt at offset 403: an event of an undefined thread" in r.stderr, (args, r.stderr[-500:])
