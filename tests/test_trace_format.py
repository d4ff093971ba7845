"""The trace reader on cut and damaged files: the C++ property test (several
seeds), the same through the CLI on a real recording cut at every byte, and
the libFuzzer target run for a bounded time."""
import json
import subprocess

from conftest import BUILD_DIR, REPO
from helpers import PROBES, SEPARATE, traced_run

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"


def test_property_roundtrip_cuts_and_damage():
    for seed in (1, 2, 3):
        r = subprocess.run([str(BUILD_DIR / "tests/fixtures/trace_format_test"), "--seed", str(seed)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        assert ": ok" in r.stdout


def small_trace(usdt_fixture, path):
    # --stacks: the trace holds stack records too (the fixture's own frames).
    traced_run(lambda pid: [str(JVMTRACE), "record", "-p", str(pid), "-b", str(usdt_fixture), "-o", str(path),
                            "-q", "--block-kb", "1", "--stacks", *SEPARATE],
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
