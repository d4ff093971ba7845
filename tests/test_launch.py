"""`jvmtrace stat|record [OPTIONS] -- COMMAND [ARGS...]`: the program starts
with its JVM held at start-up until the tracer is attached, so the trace holds
its very first TLAB refills (checked against HotSpot's own log of every
refill); the program's streams, signals and exit status are its own; wrappers
that run java as a child, or several times, or in the background work; a
command that is not Java, or a failed attach, never leaves anything waiting."""
import fcntl
import json
import os
import re
import signal
import subprocess
import termios
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import LineReader

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
HOLD_NOTE = "NOTE: Picked up JDK_JAVA_OPTIONS: -XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup"
STDIN = bytes(range(256)) * 4 + "é中\n".encode()


def java(jdks, variant="patched"):
    return str(Path(jdks[variant]) / "bin/java")


def run(args, timeout=180, **kw):
    return subprocess.run([str(JVMTRACE), *map(str, args)], capture_output=True, timeout=timeout, **kw)


def dump(trace):
    r = run(["dump", "--json", trace])
    assert r.returncode == 0, r.stderr
    return [json.loads(l) for l in r.stdout.splitlines()]


def program_pids(stderr):
    """The PIDs Launched printed ("pid N" on its stderr), in order."""
    return [int(m) for m in re.findall(rb"^pid (\d+)$", stderr, flags=re.M)]


def no_pause_files(*dirs):
    return [p for d in dirs for p in Path(d).glob("vm.paused.*")]


@pytest.mark.parametrize("variant,mode", [("patched", "usdt"), ("stock", "stock")])
def test_record_has_every_tlab_refill_from_the_first(jdks, java_classes, tmp_path, variant, mode):
    """HotSpot's own log of every TLAB fill (-Xlog:gc+tlab=trace, from the
    JVM's first allocation on, long before main) and the trace agree thread
    by thread.  A recorder attached after start-up misses the first fills of
    the JVM's main thread and its system threads: without the hold this
    fails (docs/stat.md, "Launching a program")."""
    out, log = tmp_path / "t.jvmtrace", tmp_path / "tlab.log"
    r = run(["record", "-q", "-o", out, "--mode", mode, "--", java(jdks, variant), "-XX:+UseG1GC",
             "-XX:G1HeapRegionSize=2m", f"-Xlog:gc+tlab=trace:file={log}:uptimenanos,tid", "-cp", java_classes,
             "AllocWorker", 300_000], input=b"go\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    recs = dump(out)
    meta = recs[0]
    jvm = int(re.search(rb"^ready (\d+)$", r.stdout, flags=re.M).group(1))
    assert meta["type"] == "meta" and meta["mode"] == mode and int(meta["pid"]) == jvm, meta
    # Read when the first event came, not at attach: a held JVM's region size is still 0 then.
    assert meta["heap_region_bytes"] == str(2 << 20), meta
    ours = Counter(e["tid"] for e in recs if e["type"] == "event" and e["probe"] == "tlab__refill")
    fills = re.findall(r"TLAB: fill thread: 0x[0-9a-f]+ \[id: *(\d+)\].* refills: (\d+) ", log.read_text())
    theirs = Counter(int(tid) for tid, _ in fills)
    assert sum(theirs.values()) > 50 and ours == theirs, (ours, theirs)
    # The JVM's very first fill (its main thread's first, in VM start-up) is in the trace.
    first_tid, first_n = fills[0]
    assert first_n == "1" and ours[int(first_tid)] >= 1
    worker = int(re.search(rb"^worker tid (\d+)$", r.stdout, flags=re.M).group(1))
    assert ours[worker] == theirs[worker] > 50
    end = next(x for x in recs if x["type"] == "end")
    assert end["reason"] == "target exited" and end["lost"] == 0, end
    assert not no_pause_files(tmp_path), "the pause file was left behind"


def test_g1_region_size_is_the_jvms_when_held_at_start_up(jdks, java_classes, tmp_path):
    """The meta's heap_region_bytes is what G1 chose (8 MiB regions for a
    16 GiB heap, no flag naming it), and report --check uses it."""
    out = tmp_path / "g1.jvmtrace"
    r = run(["record", "-q", "-o", out, "--", java(jdks), "-XX:+UseG1GC", "-Xmx16g", "-cp", java_classes,
             "Launched", "exit", 0], cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    meta = dump(out)[0]
    assert meta["heap_region_bytes"] == str(8 << 20), meta
    c = run(["report", "--check", "--json", out])
    assert c.returncode == 0 and json.loads(c.stdout)["violations"] == 0, c.stdout[-500:]


def test_exit_status_is_the_programs(jdks, java_classes, tmp_path):
    """0, System.exit(3), and death by SIGKILL (137, as a shell says): each is
    record's status, after a complete trace."""
    for status in (0, 3):
        out = tmp_path / f"exit{status}.jvmtrace"
        r = run(["record", "-q", "-o", out, "--", java(jdks), "-cp", java_classes, "Launched", "exit", status],
                cwd=tmp_path)
        assert r.returncode == status, r.stderr.decode()
        recs = dump(out)
        assert recs[-2]["type"] == "end" and recs[-2]["reason"] == "target exited"
        assert sum(1 for x in recs if x["type"] == "event") > 10
    out = tmp_path / "killed.jvmtrace"
    rec = subprocess.Popen([str(JVMTRACE), "record", "-q", "-o", str(out), "--", java(jdks), "-cp",
                            str(java_classes), "Launched", "wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=tmp_path)
    try:
        err = LineReader(rec.stderr)
        pid = int(err.wait_for(lambda l: l.startswith("pid "), 60, "the program's PID").split()[1])
        LineReader(rec.stdout).wait_for(lambda l: l == "waiting", 60, "the program to wait")
        os.kill(pid, signal.SIGKILL)
        assert rec.wait(60) == 128 + signal.SIGKILL
        assert any("target exited" in l for l in err.drain()), err.lines
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()
    assert dump(out)[-2]["reason"] == "target exited"


def test_stdout_is_byte_identical_and_stdin_is_the_programs(jdks, java_classes, tmp_path):
    """Every byte of stdin reaches the program and every byte it writes to
    stdout reaches ours, identical to an untraced run; its stderr passes
    through beside jvmtrace's own lines.  record --stacks, which talks to
    the JVM (perf map), waits until the JVM handles SIGQUIT: no thread dump
    in its stdout, no death by SIGQUIT."""
    cmd = [java(jdks), "-cp", str(java_classes), "Launched", "exit", "0"]
    plain = subprocess.run(cmd, input=STDIN, capture_output=True, timeout=120, cwd=tmp_path)
    assert plain.returncode == 0 and f"stdin {len(STDIN)} bytes".encode() in plain.stdout
    for tool in (["record", "-o", tmp_path / "s.jvmtrace"], ["record", "--stacks", "-o", tmp_path / "k.jvmtrace"],
                 ["stat"]):
        traced = run([*tool, "--", *cmd], input=STDIN, cwd=tmp_path)
        assert traced.returncode == 0, traced.stderr.decode()
        assert traced.stdout == plain.stdout, tool
        assert len(program_pids(traced.stderr)) == 1
        # A java launcher gets the hold as arguments; a script (the JDK 21/25
        # homes' bin/java wraps the real one) through JDK_JAVA_OPTIONS, which
        # the launcher then names on stderr.
        wrapped = Path(cmd[0]).read_bytes()[:2] == b"#!"
        assert (HOLD_NOTE.encode() in traced.stderr) == wrapped, traced.stderr


def write_wrapper(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_a_wrapper_that_runs_java_as_a_child_twice(jdks, java_classes, tmp_path):
    """A shell script that changes directory and runs java twice, as
    children: the first JVM is recorded (its PID, not the script's), the
    second is let go untraced and says so, no pause file is left, and the
    script's own status (5) is record's."""
    work = tmp_path / "work"
    work.mkdir()
    script = write_wrapper(tmp_path / "wrapper.sh", f"""cd "{work}"
"{java(jdks)}" -cp "{java_classes}" Launched exit 3 </dev/null
first=$?
"{java(jdks)}" -cp "{java_classes}" Launched exit 0 </dev/null
echo "wrapper: first java $first, second $?"
exit 5
""")
    out = tmp_path / "w.jvmtrace"
    r = run(["record", "-q", "-o", out, "--", script], cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 5, err
    assert b"wrapper: first java 3, second 0\n" in r.stdout and r.stdout.count(b"allocated ") == 2
    first, second = program_pids(r.stderr)
    # JDK_JAVA_OPTIONS carried the hold, so java says so, once per JVM.
    assert err.count(HOLD_NOTE) == 2, err
    assert f"PID {second}, another JVM of {script}, was held at start-up: let go untraced" in err, err
    recs = dump(out)
    assert int(recs[0]["pid"]) == first and "Launched exit 3" in recs[0]["cmdline"]
    assert {e["tid"] for e in recs if e["type"] == "event"} and recs[-2]["reason"] == "target exited"
    assert not no_pause_files(tmp_path, work)


def test_a_jvm_orphaned_by_its_wrapper_is_still_traced(jdks, java_classes, tmp_path):
    """`sh -c 'java ... &'`: the shell exits at once and its JVM is orphaned;
    jvmtrace, a child subreaper, still finds it, records it to its end, and
    exits with the shell's status."""
    out = tmp_path / "o.jvmtrace"
    r = run(["record", "-q", "-o", out, "--", "sh", "-c",
             f'"{java(jdks)}" -cp "{java_classes}" Launched exit 9 </dev/null & exit 0'], cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert b"allocated " in r.stdout, "the orphan ran to its end before jvmtrace exited"
    (jvm,) = program_pids(r.stderr)
    recs = dump(out)
    assert int(recs[0]["pid"]) == jvm and recs[-2]["reason"] == "target exited"
    assert not no_pause_files(tmp_path)


def test_a_command_that_is_not_java(tmp_path):
    """One that exits: a clear error at once and its own status; one that
    runs on: the error when --launch-timeout passes, then its status when it
    ends.  No trace file either way."""
    t0 = time.monotonic()
    r = run(["record", "-o", tmp_path / "n.jvmtrace", "--", "sh", "-c", "echo not java; exit 3"], cwd=tmp_path)
    took = time.monotonic() - t0
    assert r.returncode == 3 and r.stdout == b"not java\n", r.stderr
    assert b"sh exited with status 3 before any JVM was held at start-up" in r.stderr, r.stderr
    assert took < 10, took
    p = subprocess.Popen([str(JVMTRACE), "stat", "--launch-timeout", "1", "--", "sh", "-c", "read line; exit 4"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=tmp_path)
    try:
        err = LineReader(p.stderr)
        t0 = time.monotonic()
        err.wait_for(lambda l: "no JVM of sh" in l and "within 1 s" in l, 20, "the launch timeout's error")
        assert time.monotonic() - t0 < 15
        assert p.poll() is None, "jvmtrace waits for the command, which runs on"
        p.stdin.write("done\n")
        p.stdin.close()
        assert p.wait(30) == 4
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    for missing in ("nosuchcommand-jvmtrace", str(tmp_path / "nothere")):
        r = run(["stat", "--", missing])
        assert r.returncode == 127 and (b"not found" in r.stderr or b"No such file" in r.stderr), r.stderr
    text = tmp_path / "text"
    text.write_text("not a program\n")
    r = run(["stat", "--", text])
    assert r.returncode == 126 and b"Permission denied" in r.stderr, r.stderr
    text.unlink()
    assert not list(tmp_path.glob("*.jvmtrace"))


def test_a_failed_attach_lets_the_jvm_go(jdks, java_classes, tmp_path):
    """--mode usdt on an unpatched JVM fails after the JVM is held: it is let
    go, says so, runs to its end with its normal output, and its status is
    record's; the trace file is removed."""
    out = tmp_path / "f.jvmtrace"
    plain = subprocess.run([java(jdks, "stock"), "-cp", str(java_classes), "Launched", "exit", "6"],
                           capture_output=True, timeout=120, cwd=tmp_path)
    r = run(["record", "--mode", "usdt", "-o", out, "--", java(jdks, "stock"), "-cp", java_classes,
             "Launched", "exit", 6], cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 6 and r.stdout == plain.stdout, err
    (jvm,) = program_pids(r.stderr)
    assert "has no jvmtrace probes" in err and f"let PID {jvm} go untraced" in err, err
    assert not out.exists() and not no_pause_files(tmp_path)


def test_stat_prints_its_report_on_stderr(jdks, java_classes, tmp_path):
    """stat -- java: the JSON report (every refill of the worker thread in it)
    goes to stderr when the JVM exits; stdout is the program's alone."""
    r = run(["stat", "--json", "--", java(jdks), "-XX:+UseG1GC", "-cp", java_classes, "AllocWorker", 300_000],
            input=b"go\n", cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    assert not any(l.startswith(b"{") for l in r.stdout.splitlines())
    reports = [json.loads(l) for l in r.stderr.splitlines() if l.startswith(b"{")]
    assert len(reports) == 1, r.stderr.decode()[-2000:]
    rep = reports[0]
    jvm = int(re.search(rb"^ready (\d+)$", r.stdout, flags=re.M).group(1))
    worker = int(re.search(rb"^worker tid (\d+)$", r.stdout, flags=re.M).group(1))
    assert rep["pid"] == jvm and rep["mode"] == "usdt"
    t = next(t for t in rep["threads"] if t["tid"] == worker)
    assert t["comm"] == "alloc-worker" and t["tlab_refills"] > 50
    assert {c["class"] for c in rep["classes"][:2]} == {"AllocWorker$Node", "[B"}
    # Stock mode (the default --mode auto on an unpatched JVM) too.
    r = run(["stat", "--json", "--", java(jdks, "stock"), "-cp", java_classes, "AllocWorker", 300_000],
            input=b"go\n", cwd=tmp_path)
    rep = json.loads(next(l for l in r.stderr.splitlines() if l.startswith(b"{")))
    assert r.returncode == 0 and rep["mode"] == "stock" and rep["counters"]["tlab_refills"] > 50


def read_all(fd, sink):
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return
        if not chunk:
            return
        sink.append(chunk)


def test_ctrl_c_is_the_programs_and_the_trace_ends_with_the_jvm(jdks, java_classes, tmp_path):
    """On a terminal, Ctrl-C reaches the program (the JVM exits 130, as
    without jvmtrace) and record ends cleanly when the JVM has exited; a
    SIGTERM sent to jvmtrace alone is passed to the program (143)."""
    out = tmp_path / "c.jvmtrace"
    master, slave = os.openpty()

    def controlling_tty():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        # A terminal user's session: Ctrl-C not ignored, whatever started the
        # tests (a shell's background job ignores SIGINT, and the JVM, which
        # keeps an ignored SIGINT ignored, then never exits: seen in a CI
        # simulation started with `&`).
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    rec = subprocess.Popen([str(JVMTRACE), "record", "-o", str(out), "--", java(jdks), "-cp", str(java_classes),
                            "Launched", "wait"], stdin=slave, stdout=slave, stderr=slave, preexec_fn=controlling_tty,
                           cwd=tmp_path)
    os.close(slave)
    seen = []
    reader = threading.Thread(target=read_all, args=(master, seen), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while b"waiting" not in b"".join(seen):
            assert time.monotonic() < deadline and rec.poll() is None, b"".join(seen)
            time.sleep(0.05)
        os.write(master, b"\x03")  # the terminal's Ctrl-C: SIGINT to the foreground process group
        try:
            rc = rec.wait(60)
        except subprocess.TimeoutExpired:
            # Seen once in a CI simulation (not reproduced in isolation): say
            # who is still there, and where each process waits.
            ps = subprocess.run(["ps", "-e", "-o", "pid,ppid,pgid,stat,wchan:32,args"], capture_output=True,
                                text=True).stdout
            raise AssertionError(f"record still running 60 s after Ctrl-C; processes:\n{ps}\n"
                                 f"terminal:\n{b''.join(seen).decode(errors='replace')}") from None
        assert rc == 130, b"".join(seen)
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)  # record and the JVM: its session's group
            rec.wait()
        reader.join(10)
        os.close(master)
    text = b"".join(seen).decode(errors="replace")
    assert "target exited" in text and "interrupted" not in text, text
    recs = dump(out)
    assert recs[-2]["reason"] == "target exited" and recs[-1]["status"] == "complete"
    # kill(1) to jvmtrace alone: the program gets it, as if jvmtrace were not there.
    rec = subprocess.Popen([str(JVMTRACE), "record", "-q", "-o", str(out), "--", java(jdks), "-cp",
                            str(java_classes), "Launched", "wait"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, cwd=tmp_path)
    try:
        err = LineReader(rec.stderr)
        LineReader(rec.stdout).wait_for(lambda l: l == "waiting", 60, "the program to wait")
        rec.send_signal(signal.SIGTERM)
        assert rec.wait(60) == 143
        assert any("target exited" in l for l in err.drain()), err.lines
    finally:
        if rec.poll() is None:
            rec.kill()
            rec.wait()


def test_usage_of_the_form(tmp_path):
    for args, msg in ((["record", "-p", "1", "-o", "x", "--", "java"], "-p PID and -- COMMAND exclude each other"),
                      (["stat", "-p", "1", "--", "java"], "-p PID and -- COMMAND exclude each other"),
                      (["stat", "--"], "no COMMAND after --"),
                      (["record", "-o", "x", "java", "-version"], "unexpected argument 'java' (a command to run goes after --)"),
                      (["record", "--", "java"], "-o FILE is required"),
                      (["record", "-o", "x"], "-p PID or -- COMMAND is required"),
                      (["stat", "-p", "1", "--launch-timeout", "5"], "--launch-timeout goes with -- COMMAND")):
        r = run(args, cwd=tmp_path)
        assert r.returncode == 2 and msg.encode() in r.stderr, (args, r.stderr)
    # "-o --" is -o's argument, not the end of the options.
    r = run(["record", "-p", "1", "-o", "--"], cwd=tmp_path)
    assert r.returncode == 1 and b"COMMAND" not in r.stderr, r.stderr
    for cmd in ("stat", "record"):
        h = run([cmd, "--help"]).stdout.decode()
        assert f"jvmtrace {cmd} " in h and "-- COMMAND [ARGS...]" in h and f"jvmtrace {cmd} " in h
        assert re.search(rf"^  jvmtrace {cmd} .*-- java ", h, flags=re.M), h
    assert not list(tmp_path.iterdir())
