import contextlib
"""jvmtraced, the collector daemon, with real JVMs and real eBPF: discovery,
attach on request, Prometheus metrics that agree with JFR and -Xlog:gc from
the same run, records into its own directory, detach leaving nothing behind
(no BPF programs, links or uprobes; no fds in the daemon), many cycles, a
strict control protocol, and a clean stop on SIGTERM."""
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections import defaultdict

import pytest

from conftest import BUILD_DIR
from helpers import LineReader, go_uptime_s, jfr_events, parse_gc_log
from test_jvm_probes import java_cmd
from test_record import dump_json, links_and_uprobes

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
JVMTRACED = BUILD_DIR / "userspace/jvmtraced"


class Daemon:
    def __init__(self, tmp_path, *extra):
        self.sock = str(tmp_path / "d.sock")
        self.dir = tmp_path / "traces"
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen([str(JVMTRACED), "--socket", self.sock, "--trace-dir", str(self.dir),
                                      "--metrics-port", str(self.port), "--stat-interval", "0.5", *extra],
                                     stderr=subprocess.PIPE, text=True)
        self.log = LineReader(self.proc.stderr)
        self.log.wait_for(lambda l: "control socket" in l, 30, "the daemon to start")

    def request(self, line):
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.sock)
        s.sendall(line if isinstance(line, bytes) else line.encode())
        out = b""
        while chunk := s.recv(65536):
            out += chunk
        s.close()
        return out.decode()

    def client(self, *args):
        r = subprocess.run([str(JVMTRACE), "daemon", "--socket", self.sock, *map(str, args)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and self.proc.poll() is not None:
            # The daemon itself is gone: say how it ended, with its last words.
            r.stdout += (f"\n[the daemon exited with status {self.proc.returncode}; its log ends:\n" +
                         "\n".join(self.log.drain(5)[-30:]) + "]")
        return r

    def metrics(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            assert r.status == 200
            return r.read().decode()

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def fds_baseline(self):
        """The daemon's steady fd count: the least of a few samples (see fds_settled)."""
        samples = []
        for _ in range(10):
            samples.append(self.fds())
            time.sleep(0.05)
        return min(samples)

    def fds_settled(self, expected, timeout=5):
        """The daemon's open fd count once it equals `expected`, or after `timeout`.

        The daemon opens /proc directories for a moment on every discovery
        scan, so one sample can catch a transient fd; a leak stays."""
        deadline = time.monotonic() + timeout
        while (n := self.fds()) != expected and time.monotonic() < deadline:
            time.sleep(0.1)
        return n

    def wait_listed(self, pid, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(rf"^{pid}\s", self.client("list").stdout, re.M):
                return
            time.sleep(0.2)
        raise AssertionError(f"the daemon did not find JVM {pid}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(60)
        return "\n".join(self.log.drain())


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.stop()


def parse_exposition(text):
    """{(name, frozenset(labels)): value}; also checks each family's TYPE comes once, before its samples."""
    samples, typed, seen_samples = {}, set(), set()
    family = None
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            name = line.split()[2]
            assert name not in typed, f"second TYPE line for {name}"
            typed.add(name)
            family = name
        elif line and not line.startswith("#"):
            m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$', line)
            assert m, f"not an exposition sample: {line!r}"
            name, labels = m.group(1), m.group(3) or ""
            assert name.startswith(family), f"{name} outside its family {family}"
            # Label values as the format escapes them: \\, \" and \n.
            lab = frozenset((k, re.sub(r'\\(.)', lambda e: "\n" if e.group(1) == "n" else e.group(1), v))
                            for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
            assert (name, lab) not in seen_samples, f"duplicate sample {line}"
            seen_samples.add((name, lab))
            samples[(name, lab)] = float(m.group(4))
    return samples


def value(samples, name, **labels):
    want = set(labels.items())
    hits = [v for (n, lab), v in samples.items() if n == name and want <= set(lab)]
    assert len(hits) == 1, (name, labels, hits)
    return hits[0]


def settled_metrics(daemon, pid, settle_s=1.5, timeout=60):
    """The daemon's metrics once the JVM's figures have stopped changing: the
    same jvmtrace_* values for settle_s (three of the test daemon's 0.5 s
    stat reports; the JVM is idle, and its batched records have reached the
    worker).  Fails if they never settle."""
    def figures():
        m = parse_exposition(daemon.metrics())
        return m, {k: v for k, v in m.items() if k[0].startswith("jvmtrace_") and ("pid", str(pid)) in k[1]}
    deadline = time.monotonic() + timeout
    m, last = figures()
    since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.25)
        m, now = figures()
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= settle_s:
            return m
    raise AssertionError(f"the metrics of PID {pid} did not settle within {timeout} s")


def trace_has_a_block(path, timeout=30):
    """Waits until the recording at path holds more than its file header (a
    block of events is on disk)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 16:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} holds no block after {timeout} s")


def start_jvm(home, classes, tmp_path, *args, gc="G1"):
    proc = subprocess.Popen(java_cmd(home, classes, gc, 64, "AllocWorker", *args, gc_log=tmp_path / "gc.log"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = LineReader(proc.stdout)
    out.wait_for(lambda l: l.startswith("ready"), 60, "ready")
    proc.out = out
    return proc


def start_busy_jvm(d, jdks, java_classes, tmp_path):
    """A patched JVM allocating for a long while, found by the daemon."""
    proc = start_jvm(jdks["patched"], java_classes, tmp_path, "forever")  # 400M iterations took 5.6 s: raced the tests
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        d.wait_listed(proc.pid)
    except BaseException:
        proc.kill()
        proc.wait(30)
        raise
    return proc


@pytest.fixture
def daemon_full(tmp_path):
    d = Daemon(tmp_path, "--metrics-full", "--metrics-linger", "2")
    yield d
    d.stop()


def test_discover_attach_metrics_agree_with_jfr_then_detach_leaves_nothing(daemon_full, jdks, java_classes, tmp_path):
    """(With --metrics-full: every histogram; tests/test_fleet.py has the default set.)"""
    daemon = daemon_full
    jfr = tmp_path / "rec.jfr"
    before = links_and_uprobes()
    proc = start_jvm(jdks["patched"], java_classes, tmp_path, 3_000_000, jfr, "hold")
    try:
        daemon.wait_listed(proc.pid)
        assert re.search(rf"^{proc.pid}\s+{proc.pid}\s+jvmtrace\s+-\s", daemon.client("list").stdout, re.M)
        fds0 = daemon.fds_baseline()
        r = daemon.client("attach", proc.pid, "--stat")
        assert r.returncode == 0 and r.stdout.startswith("ok: stat attached"), r.stdout + r.stderr
        daemon.log.wait_for(lambda l: f"[stat {proc.pid}] Attached 7 probes (batched" in l, 30, "the stat worker to attach")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        proc.out.wait_for(lambda l: l == "done", 120, "the workload")
        pid = str(proc.pid)
        m = settled_metrics(daemon, pid)
        assert value(m, "jvmtraced_jvms", probes="jvmtrace") >= 1
        logged = parse_gc_log((tmp_path / "gc.log").read_text(), go_uptime_s(proc.out.lines))
        starts = value(m, "jvmtrace_gc_starts_total", pid=pid)
        assert starts == value(m, "jvmtrace_gc_ends_total", pid=pid) == len(logged) >= 5
        pauses = value(m, "jvmtrace_gc_pause_seconds_count", pid=pid, kind="young") + \
            value(m, "jvmtrace_gc_pause_seconds_count", pid=pid, kind="full")
        assert pauses == sum(1 for _, what, _ in logged if what.startswith("Pause"))
        proc.stdin.write("exit\n")  # JFR's file is written by now; the JVM may go
        proc.stdin.flush()
        proc.wait(60)
        jfr_plabs = len(jfr_events(jdks["patched"], jfr, "jdk.PromoteObjectInNewPLAB"))
        assert value(m, "jvmtrace_plabs_total", pid=pid) == jfr_plabs > 20
        worker = defaultdict(int)
        for e in jfr_events(jdks["patched"], jfr, "jdk.ObjectAllocationInNewTLAB"):
            worker[e["values"]["eventThread"]["javaName"]] += 1
        assert value(m, "jvmtrace_tlab_refills_total", pid=pid) >= worker["alloc-worker"] > 200
        # Histogram consistency: +Inf bucket == _count == the counter.
        assert value(m, "jvmtrace_tlab_size_bytes_bucket", pid=pid, le="+Inf") == \
            value(m, "jvmtrace_tlab_size_bytes_count", pid=pid) == value(m, "jvmtrace_tlab_refills_total", pid=pid)
        assert value(m, "jvmtrace_tlab_size_bytes_sum", pid=pid) == value(m, "jvmtrace_tlab_bytes_total", pid=pid)
        assert value(m, "jvmtrace_gc_pause_seconds_bucket", pid=pid, kind="young", le="+Inf") == \
            value(m, "jvmtrace_gc_pause_seconds_count", pid=pid, kind="young")
        # The JVM exited: its worker ends by itself, and nothing is left behind.
        deadline = time.monotonic() + 10
        while (links_and_uprobes() != before or daemon.fds() != fds0) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert links_and_uprobes() == before
        assert daemon.fds_settled(fds0) == fds0, os.listdir(f"/proc/{daemon.proc.pid}/fd")
        # Its last figures stay served for --metrics-linger (2 s here), then go.
        deadline = time.monotonic() + 15
        while "jvmtrace_tlab_refills_total" in daemon.metrics() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "jvmtrace_tlab_refills_total" not in daemon.metrics()
    finally:
        proc.kill()
        proc.wait(60)


def test_many_attach_detach_cycles_leak_nothing(daemon, jdks, java_classes, tmp_path):
    before = links_and_uprobes()
    # Stock mode; the JVM works, then stays up ("hold") however long the cycles take.
    proc = start_jvm(jdks["stock"], java_classes, tmp_path, 20_000_000, tmp_path / "r.jfr", "hold")
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        daemon.wait_listed(proc.pid)
        t0 = time.monotonic()
        fds0 = daemon.fds_baseline()
        for i in range(100):
            what = "--stat" if i % 2 == 0 else "--record"
            r = daemon.client("attach", proc.pid, what)
            assert r.returncode == 0, r.stdout
            r = daemon.client("detach", proc.pid)
            assert r.returncode == 0 and r.stdout.startswith("ok: detached 1"), r.stdout
        print(f"100 attach/detach cycles took {time.monotonic() - t0:.1f} s")
        assert proc.poll() is None, "the JVM must survive the cycles"
        assert daemon.fds_settled(fds0) == fds0, os.listdir(f"/proc/{daemon.proc.pid}/fd")
        assert links_and_uprobes() == before
        traces = sorted(daemon.dir.glob("*.jvmtrace"))
        assert len(traces) == 50, f"one trace per record cycle, none overwritten: {len(traces)}"
        for t in traces[-3:]:
            rc, recs = dump_json(t)
            assert rc.returncode == 0, rc.stderr
    finally:
        proc.kill()
        proc.wait(60)


def test_control_protocol_refuses_bad_requests_and_keeps_serving(daemon, usdt_fixture):
    bad = {
        b"bogus\n": "unknown request",
        b"\n": "empty request",
        b"attach\n": "needs a PID",
        b"attach 1 stat\n": "is not a JVM this daemon has found",
        b"attach 12x stat\n": "needs a PID",
        b"attach 1 record ../../etc/passwd\n": "SECONDS must be",
        b"attach 1 stat 5\n": "only attach PID record takes SECONDS",
        b"detach 1 everything\n": "detach PID takes",
        b"list extra\n": "takes no arguments",
        b"status\x00\n": "control or non-ASCII byte",
        b"A" * 100_000 + b"\n": "longer than 1024 bytes",
        b"list": "not ended by a newline",
        b"detach 4194304\n": "nothing attached",
    }
    for req, msg in bad.items():
        reply = daemon.request(req)
        assert reply.startswith("error: ") and msg in reply, (req[:40], reply)
    assert daemon.client("status").stdout.startswith("jvmtraced pid")
    # Not root: the socket itself refuses (mode 0600).
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(JVMTRACE), "daemon",
                        "--socket", daemon.sock, "status"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "Permission denied" in r.stderr, r.stderr
    assert oct(os.stat(daemon.sock).st_mode & 0o777) == "0o600"
    # Client-side validation.
    for args in (["attach", "x"], ["attach", "1"], ["attach", "1", "--stat", "--duration", "3"], ["frobnicate"]):
        r = daemon.client(*args)
        assert r.returncode == 2, (args, r.stderr)


def test_sigterm_mid_record_flushes_a_complete_trace(tmp_path, jdks, java_classes):
    d = Daemon(tmp_path)
    proc = start_busy_jvm(d, jdks, java_classes, tmp_path)
    try:
        r = d.client("attach", proc.pid, "--record")
        assert r.returncode == 0, r.stdout
        path = r.stdout.split(" -> ")[1].strip()
        assert path.startswith(str(d.dir)) and "/../" not in path
        trace_has_a_block(path)
        log = d.stop()
        assert d.proc.returncode == 0 and "stopped" in log
        assert not os.path.exists(d.sock)
        rc, recs = dump_json(path)
        assert rc.returncode == 0, rc.stderr
        end = next(x for x in recs if x["type"] == "end")
        assert end["reason"] == "interrupted" and end["events"] > 100
        assert proc.poll() is None, "the JVM keeps running after the daemon stops"
    finally:
        proc.kill()
        proc.wait(60)
        d.stop()


def test_jvm_killed_while_recorded_leaves_a_complete_trace(daemon, jdks, java_classes, tmp_path):
    """A recorded JVM killed with SIGKILL: its worker ends cleanly (exit 0)
    with a complete trace, and the daemon keeps serving."""
    proc = start_busy_jvm(daemon, jdks, java_classes, tmp_path)
    try:
        r = daemon.client("attach", proc.pid, "--record")
        assert r.returncode == 0, r.stdout
        trace = r.stdout.split(" -> ")[1].strip()
        trace_has_a_block(trace)
        proc.kill()
        proc.wait(30)
        daemon.log.wait_for(lambda l: f"for PID {proc.pid} ended (exit 0)" in l, 30, "the recording to end")
        rc, recs = dump_json(trace)
        assert rc.returncode == 0, rc.stderr
        end = next(x for x in recs if x["type"] == "end")
        assert end["reason"] == "target exited" and end["events"] > 100
        assert daemon.client("status").returncode == 0
    finally:
        proc.kill()
        proc.wait(30)


def test_full_trace_directory_stops_the_recording_and_the_daemon_goes_on(tmp_path, jdks, java_classes):
    """A 256 KiB tmpfs as the trace directory: the recording stops with the
    reason in the daemon's log, its file reads up to its last whole block,
    and the daemon keeps serving."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0750", "tmpfs", str(small)], check=True)
    d = Daemon(tmp_path, "--trace-dir", str(small))  # the later --trace-dir wins
    proc = start_busy_jvm(d, jdks, java_classes, tmp_path)
    try:
        r = d.client("attach", proc.pid, "--record")
        assert r.returncode == 0, r.stdout
        trace = r.stdout.split(" -> ")[1].strip()
        d.log.wait_for(lambda l: "No space left on device" in l, 60, "the full disk to be reported")
        d.log.wait_for(lambda l: f"for PID {proc.pid} ended (exit 1)" in l, 30, "the recording to stop")
        assert d.client("status").returncode == 0
        assert str(proc.pid) in d.client("list").stdout
        assert proc.poll() is None
        # Cut back to whole blocks: no partial block, just no end record.
        # (How many blocks fit depends on how fast the JVM filled 256 KiB.)
        rc, recs = dump_json(trace)
        assert rc.returncode == 3 and "no end record" in rc.stderr, rc.stderr
        kept = d.log.find(lambda l: "complete blocks" in l, 10, "the daemon's log of the blocks it kept")
        assert f"({os.path.getsize(trace)} bytes)" in kept, kept
    finally:
        proc.kill()
        proc.wait(30)
        d.stop()
        subprocess.run(["umount", str(small)], check=True)


def test_recordings_rotate_into_bounded_segments(tmp_path, jdks, java_classes):
    """jvmtraced --segment-mb 0.0625 --keep 2: a recording becomes rotating
    segments, only the newest two stay, each a complete trace on its own."""
    d = Daemon(tmp_path, "--segment-mb", "0.0625", "--keep", "2")  # 64 KiB: rotates within seconds
    proc = start_busy_jvm(d, jdks, java_classes, tmp_path)
    try:
        r = d.client("attach", proc.pid, "--record")
        assert r.returncode == 0 and "segments of 0.0625 MiB, newest 2 kept" in r.stdout, r.stdout
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            files = sorted(d.dir.glob(f"jvm-{proc.pid}-*.jvmtrace"))
            if files and int(files[-1].name.split(".")[-2]) >= 3:
                break
            time.sleep(0.3)
        assert d.client("detach", proc.pid).returncode == 0
        files = sorted(d.dir.glob(f"jvm-{proc.pid}-*.jvmtrace"))
        numbers = [int(f.name.split(".")[-2]) for f in files]
        assert len(files) == 2 and numbers[1] == numbers[0] + 1 and numbers[0] >= 2, files
        for i, f in enumerate(files):
            rc, recs = dump_json(f)
            assert rc.returncode == 0, rc.stderr
            end = next(x for x in recs if x["type"] == "end")
            assert end["reason"].startswith("continued in the next segment") if i == 0 else \
                end["reason"] == "interrupted"
            assert sum(1 for x in recs if x["type"] == "event") > 1000
    finally:
        proc.kill()
        proc.wait(30)
        d.stop()


def test_config_file_and_sighup_reload(tmp_path, jdks, java_classes):
    """--config: options as name = value lines; a bad line stops start-up with
    its line number; SIGHUP re-reads the file: auto-stat switched on attaches
    stat to the JVMs already found, a bad file on reload changes nothing."""
    conf = tmp_path / "jvmtraced.conf"
    conf.write_text("# test\nstat-interval = 0.5\nauto-stat = maybe\n")
    r = subprocess.run([str(JVMTRACED), "--config", str(conf), "--socket", str(tmp_path / "x.sock")],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and f"{conf}:3: --auto-stat takes true or false" in r.stderr, r.stderr
    conf.write_text("# test\nstat-interval = 0.5\nauto-stat = false   # not yet\n")
    d = Daemon(tmp_path, "--config", str(conf))
    proc = start_jvm(jdks["patched"], java_classes, tmp_path, 3_000_000, tmp_path / "r.jfr", "hold")
    try:
        d.wait_listed(proc.pid)
        assert re.search(rf"^{proc.pid}\s+\d+\s+jvmtrace\s+-\s", d.client("list").stdout, re.M)
        conf.write_text("auto-stat = true\nkeep = 3\n")  # keep without segment-mb: invalid
        d.proc.send_signal(signal.SIGHUP)
        d.log.wait_for(lambda l: "reload failed" in l and "--keep goes with --segment-mb" in l, 10, "the bad reload")
        assert re.search(rf"^{proc.pid}\s+\d+\s+jvmtrace\s+-\s", d.client("list").stdout, re.M)
        conf.write_text("auto-stat = true\nmetrics-address = 127.0.0.2\n")  # restart-only
        d.proc.send_signal(signal.SIGHUP)
        d.log.wait_for(lambda l: "need a restart" in l, 10, "the restart-only warning")
        d.log.wait_for(lambda l: f"stat attached to PID {proc.pid}" in l, 30, "auto-stat after the reload")
        assert re.search(rf"^{proc.pid}\s+\d+\s+jvmtrace\s+stat\s", d.client("list").stdout, re.M)
        assert d.client("status").returncode == 0  # still on the original socket
    finally:
        proc.kill()
        proc.wait(30)
        d.stop()


def dir_bytes(d):
    return sum(f.stat().st_size for f in d.iterdir() if f.is_file())


def test_time_segments_and_the_disk_cap(tmp_path, jdks, java_classes):
    """--segment-seconds 0.5 --segment-mb 0.25 --max-disk-mb 1: segments
    rotate by time (or size, whichever first); the directory stays near its
    cap because the oldest finished segments are deleted (logged), and what
    remains reads.  Runs until the cap has had to act, whatever the JVM's rate."""
    d = Daemon(tmp_path, "--segment-seconds", "0.5", "--segment-mb", "0.25", "--max-disk-mb", "1")
    proc = start_busy_jvm(d, jdks, java_classes, tmp_path)
    try:
        r = d.client("attach", proc.pid, "--record")
        assert r.returncode == 0 and "segments of 0.25 MiB or 0.5 s" in r.stdout, r.stdout
        peak = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            peak = max(peak, dir_bytes(d.dir))
            if time.monotonic() - t0 > 3 and any("disk cap 1 MiB: deleted" in l for l in d.log.seen()):
                break
            time.sleep(0.2)
        assert d.client("detach", proc.pid).returncode == 0
        log = d.log.seen()
        assert any("disk cap 1 MiB: deleted" in l for l in log), log[-10:]
        assert not any("stopping the recording" in l for l in log), log[-10:]
        # Enforced once a second: at most a second of recording above the cap.
        assert peak < 2**20 + 600_000, peak
        files = sorted(d.dir.glob(f"jvm-{proc.pid}-*.jvmtrace"))
        numbers = [int(f.name.split(".")[-2]) for f in files]
        assert numbers and numbers[0] >= 1, numbers  # the first segments were deleted
        rc, recs = dump_json(files[-1])
        assert rc.returncode == 0, rc.stderr
    finally:
        proc.kill()
        proc.wait(30)
        d.stop()


def test_disk_cap_below_one_recording_stops_it_then_makes_room_for_the_next(tmp_path, jdks, java_classes):
    """A recording alone over the cap is stopped (its file kept and readable,
    through the once-a-second passes that follow: it used to go at the next
    one); the next recording starts by deleting that oldest finished file."""
    d = Daemon(tmp_path, "--max-disk-mb", "0.0625")
    proc = start_busy_jvm(d, jdks, java_classes, tmp_path)
    try:
        assert d.client("attach", proc.pid, "--record").returncode == 0
        d.log.wait_for(lambda l: "reached by running recordings: stopping the recording" in l, 30, "the cap")
        d.log.wait_for(lambda l: f"record worker" in l and "ended (exit 0)" in l, 30, "the recording to stop")
        files = list(d.dir.glob("*.jvmtrace"))
        assert len(files) == 1
        # Nothing to wait for: the file must outlast three passes of the cap.
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            assert files[0].exists(), d.log.seen()[-5:]
            time.sleep(0.1)
        assert not any("deleted" in l for l in d.log.seen()), d.log.seen()[-5:]
        assert dump_json(files[0])[0].returncode == 0
        r = d.client("attach", proc.pid, "--record")  # within the same second: a -2 name
        assert r.returncode == 0, r.stdout
        d.log.wait_for(lambda l: f"disk cap 0.0625 MiB: deleted {files[0]}" in l, 10, "room for the new recording")
        assert not files[0].exists()
    finally:
        proc.kill()
        proc.wait(30)
        d.stop()


def proc_text(pid, name):
    """/proc/PID/name, or "" if that process has gone meanwhile (other processes come and go)."""
    try:
        with open(f"/proc/{pid}/{name}") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def test_jvm_in_its_own_pid_namespace_is_found_and_traced(daemon, jdks, java_classes, tmp_path):
    """A JVM started in a new PID namespace (as in a container): listed with
    its host PID and its PID inside the namespace, and stat attaches to it."""
    cmd = ["unshare", "--pid", "--fork", "--mount-proc"] + \
        java_cmd(jdks["patched"], java_classes, "G1", 64, "AllocWorker", 3_000_000, tmp_path / "r.jfr", "hold")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    out = LineReader(proc.stdout)
    try:
        ns_pid = int(out.wait_for(lambda l: l.startswith("ready"), 60, "ready").split()[1])
        host_pid = next(int(p) for p in os.listdir("/proc") if p.isdigit() and
                        re.search(rf"^NSpid:\s+\d+\s+{ns_pid}$", proc_text(p, "status"), re.M) and
                        "AllocWorker" in proc_text(p, "cmdline"))
        assert host_pid != ns_pid
        daemon.wait_listed(host_pid)
        assert re.search(rf"^{host_pid}\s+{ns_pid}\s+jvmtrace\s", daemon.client("list").stdout, re.M)
        r = daemon.client("attach", host_pid, "--stat")
        assert r.returncode == 0, r.stdout
        proc.stdin.write("go\n")
        proc.stdin.flush()
        out.wait_for(lambda l: l == "done", 120, "the workload")
        m = settled_metrics(daemon, host_pid)
        assert value(m, "jvmtrace_tlab_refills_total", pid=str(host_pid)) > 200
    finally:
        proc.kill()
        proc.wait(30)


def test_group_members_may_use_the_socket(tmp_path):
    """--group nogroup: the socket is 0660 root:nogroup and a nogroup member
    (uid 65534) gets answers; the group's members only, not everyone."""
    import tempfile
    sockdir = tempfile.mkdtemp(prefix="jvmtraced-group")
    os.chmod(sockdir, 0o755)  # pytest's tmp_path is not reachable by uid 65534
    d = Daemon(tmp_path, "--group", "nogroup", "--socket", f"{sockdir}/d.sock")  # the later --socket wins
    d.sock = f"{sockdir}/d.sock"
    try:
        st = os.stat(d.sock)
        assert oct(st.st_mode & 0o777) == "0o660" and st.st_gid == 65534
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(JVMTRACE), "daemon",
                            "--socket", d.sock, "status"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0 and r.stdout.startswith("jvmtraced pid"), r.stdout + r.stderr
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=100", "--clear-groups", str(JVMTRACE), "daemon",
                            "--socket", d.sock, "status"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "Permission denied" in r.stderr, r.stdout + r.stderr
    finally:
        d.stop()
        os.rmdir(sockdir)


# --- never held up, never trusting: concurrency, groups, the trace directory ---

def gated_worker(tmp_path, ignore_sigint=False):
    """A stand-in for --jvmtrace: it writes its arguments to a file, then waits
    at a gate (a FIFO) until the test opens it, then runs the real jvmtrace.
    So an attach through it provably cannot finish before the test lets it.
    With ignore_sigint it also ignores SIGINT, as a hung worker would.
    Returns (script, args_file, open_gate)."""
    gate, args = tmp_path / "gate", tmp_path / "worker-args"
    os.mkfifo(gate)
    script = tmp_path / "gated-jvmtrace"
    trap = "trap '' INT" if ignore_sigint else ""
    script.write_text(f'#!/bin/sh\n{trap}\n'
                      f'printf "%s\\n" "$@" > {args}.tmp && mv {args}.tmp {args}\n'
                      f'read go < {gate}\nexec {JVMTRACE} "$@"\n')
    script.chmod(0o755)

    def open_gate(timeout=30):
        deadline = time.monotonic() + timeout
        while True:  # O_NONBLOCK: fails (ENXIO) until the worker waits at the gate
            try:
                fd = os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the gated worker never reached its gate")
                time.sleep(0.05)
        os.write(fd, b"go\n")
        os.close(fd)

    return script, args, open_gate


@contextlib.contextmanager
def gated_attach(tmp_path, jdks, java_classes, kind):
    """A daemon whose worker waits at a gate, a JVM it lists, and a client's
    `attach PID --KIND` under way; all stopped at the end.  Yields (daemon,
    jvm, attach, args_file, open_gate)."""
    script, args, open_gate = gated_worker(tmp_path)
    d = Daemon(tmp_path, "--jvmtrace", str(script))
    proc = start_jvm(jdks["stock"], java_classes, tmp_path, 20_000_000, tmp_path / "r.jfr", "hold")
    attach = None
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        d.wait_listed(proc.pid)
        attach = subprocess.Popen([str(JVMTRACE), "daemon", "--socket", d.sock, "attach", str(proc.pid),
                                   f"--{kind}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        yield d, proc, attach, args, open_gate
    finally:
        if attach and attach.poll() is None:
            attach.kill()
        proc.kill()
        proc.wait(30)
        d.stop()


def wait_file(path, timeout=30):
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)
    return path.read_text()


def timed(what, fn, limit):
    """fn()'s result, failing if it takes longer than `limit` seconds."""
    t0 = time.monotonic()
    try:
        out = fn()
    except (socket.timeout, TimeoutError, subprocess.TimeoutExpired, OSError) as e:
        raise AssertionError(f"{what} was not answered within {limit} s: {e!r}")
    took = time.monotonic() - t0
    print(f"{what}: {took * 1000:.0f} ms")
    assert took < limit, f"{what} took {took:.2f} s"
    return out, took


def test_slow_attach_holds_up_neither_metrics_nor_other_clients(tmp_path, jdks, java_classes):
    """An attach whose worker cannot attach yet (it waits at a gate) must not
    hold the daemon up: a metrics scrape and a status request are answered
    at once while it waits; then the attach completes with "ok"."""
    with gated_attach(tmp_path, jdks, java_classes, "stat") as (d, proc, attach, args, open_gate):
        assert wait_file(args).split("\n")[:3] == ["stat", "-p", str(proc.pid)]  # the worker is at its gate
        body, _ = timed("metrics scrape during the attach", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{d.port}/metrics", timeout=5).read().decode(), 2)
        m = parse_exposition(body)
        assert value(m, "jvmtraced_attachments", kind="stat") == 0  # attaching, not attached
        r, _ = timed("status during the attach", lambda: subprocess.run(
            [str(JVMTRACE), "daemon", "--socket", d.sock, "status"], capture_output=True, text=True, timeout=5), 2)
        assert r.returncode == 0 and r.stdout.startswith("jvmtraced pid") and "attaching 1" in r.stdout, r.stdout
        r, _ = timed("a second attach of the same kind", lambda: subprocess.run(
            [str(JVMTRACE), "daemon", "--socket", d.sock, "attach", str(proc.pid), "--stat"],
            capture_output=True, text=True, timeout=5), 2)
        assert r.returncode == 1 and "is being attached to PID" in r.stdout, r.stdout
        assert attach.poll() is None, "the attach cannot have finished: its worker is still at the gate"
        open_gate()
        out, err = attach.communicate(timeout=60)
        assert attach.returncode == 0 and out.startswith(f"ok: stat attached to PID {proc.pid}"), out + err
        assert re.search(rf"^{proc.pid}\s+\d+\s+stock\s+stat\s", d.client("list").stdout, re.M)
        r = d.client("detach", proc.pid)
        assert r.returncode == 0 and r.stdout.startswith("ok: detached 1"), r.stdout


def test_a_worker_deaf_to_detach_is_killed_and_the_detach_answered(tmp_path, jdks, java_classes):
    """A worker that ignores SIGINT (here: while it is still attaching): the
    detach is answered once the daemon has killed it, 15 s after SIGINT; the
    daemon serves others meanwhile, and the attach gets its error."""
    script, args, _ = gated_worker(tmp_path, ignore_sigint=True)
    d = Daemon(tmp_path, "--jvmtrace", str(script))
    proc = start_jvm(jdks["stock"], java_classes, tmp_path, 20_000_000, tmp_path / "r.jfr", "hold")
    attach = detach = None
    try:
        proc.stdin.write("go\n")
        proc.stdin.flush()
        d.wait_listed(proc.pid)
        attach = subprocess.Popen([str(JVMTRACE), "daemon", "--socket", d.sock, "attach", str(proc.pid), "--stat"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_file(args)
        t0 = time.monotonic()
        detach = subprocess.Popen([str(JVMTRACE), "daemon", "--socket", d.sock, "detach", str(proc.pid)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        r, _ = timed("status while a detach waits", lambda: subprocess.run(
            [str(JVMTRACE), "daemon", "--socket", d.sock, "status"], capture_output=True, text=True, timeout=5), 2)
        assert r.returncode == 0, r.stdout
        timed("metrics while a detach waits", d.metrics, 2)
        out, err = detach.communicate(timeout=60)
        took = time.monotonic() - t0
        assert detach.returncode == 0 and out.startswith(f"ok: detached 1 from PID {proc.pid}") and \
            "did not stop in time and was killed" in out, out + err
        assert 14 < took < 30, took  # SIGKILL 15 s after SIGINT, not before
        out, err = attach.communicate(timeout=30)
        assert attach.returncode == 1 and out.startswith(f"error: stat to PID {proc.pid} could not attach"), out + err
        d.log.find(lambda l: "did not stop within 15 s of SIGINT: killed" in l, 10, "the daemon's log of the kill")
        assert re.search(rf"^{proc.pid}\s+\d+\s+stock\s+-\s", d.client("list").stdout, re.M)
    finally:
        for p in (attach, detach):
            if p and p.poll() is None:
                p.kill()
        proc.kill()
        proc.wait(30)
        d.stop()


def test_a_slow_client_holds_up_no_one(daemon):
    """A client that trickles its request a byte at a time (each byte well
    within a per-read timeout) must not delay the others: the deadline is on
    the whole request, and the daemon reads it without waiting for it."""
    s = socket.socket(socket.AF_UNIX)
    s.connect(daemon.sock)
    stop = False

    def trickle():
        for ch in b"status" * 10:
            if stop:
                return
            try:
                s.send(bytes([ch]))
            except OSError:
                return  # the daemon gave up on it: as it should
            time.sleep(0.2)  # the slow client's pace (the adversary, not a wait)

    import threading
    t = threading.Thread(target=trickle, daemon=True)
    t.start()
    try:
        time.sleep(0.3)  # the trickle has begun
        for i in range(3):
            r, _ = timed(f"status #{i} beside a trickling client", lambda: daemon.client("status"), 0.8)
            assert r.returncode == 0, r.stdout
        timed("metrics beside a trickling client", daemon.metrics, 0.8)
        s.settimeout(10)
        reply = s.recv(4096).decode()
        assert reply.startswith("error: request not ended by a newline within 1 s"), reply
    finally:
        stop = True
        s.close()
        t.join(15)


def make_user(name, primary, supplementary=None):
    cmd = ["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-g", primary]
    if supplementary:
        cmd += ["-G", supplementary]
    subprocess.run(cmd + [name], check=True, capture_output=True)


def test_supplementary_group_members_may_use_the_socket(tmp_path):
    """--group G: a user whose primary group is another one but who is a
    supplementary member of G is served; a user outside G is refused.
    Real users and groups, made for the test and removed afterwards."""
    import secrets
    import tempfile
    tag = secrets.token_hex(3)
    dgroup, other, member, outsider = f"jvtd{tag}", f"jvto{tag}", f"jvtm{tag}", f"jvtx{tag}"
    made_groups, made_users = [], []
    sockdir = tempfile.mkdtemp(prefix="jvmtraced-supp")
    os.chmod(sockdir, 0o755)
    d = None
    try:
        for g in (dgroup, other):
            subprocess.run(["groupadd", g], check=True, capture_output=True)
            made_groups.append(g)
        make_user(member, other, dgroup)
        made_users.append(member)
        make_user(outsider, other)
        made_users.append(outsider)
        import grp
        import pwd
        assert pwd.getpwnam(member).pw_gid == grp.getgrnam(other).gr_gid  # primary: not the daemon's group
        d = Daemon(tmp_path, "--group", dgroup, "--socket", f"{sockdir}/d.sock")
        d.sock = f"{sockdir}/d.sock"

        def as_user(user, *args):
            return subprocess.run(["runuser", "-u", user, "--", str(JVMTRACE), "daemon", "--socket", d.sock, *args],
                                  capture_output=True, text=True, timeout=30)

        r = as_user(member, "status")
        assert r.returncode == 0 and r.stdout.startswith("jvmtraced pid"), r.stdout + r.stderr
        r = as_user(member, "list")
        assert r.returncode == 0 and r.stdout.startswith("PID"), r.stdout + r.stderr
        r = as_user(outsider, "status")
        assert r.returncode == 1 and "Permission denied" in r.stderr, r.stdout + r.stderr
        # The same member with its supplementary groups dropped is refused.
        member_uid = pwd.getpwnam(member).pw_uid
        r = subprocess.run(["setpriv", f"--reuid={member_uid}", f"--regid={grp.getgrnam(other).gr_gid}",
                            "--clear-groups", str(JVMTRACE), "daemon", "--socket", d.sock, "status"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 1 and "Permission denied" in r.stderr, r.stdout + r.stderr
    finally:
        if d:
            d.stop()
        for u in made_users:
            subprocess.run(["userdel", u], capture_output=True)
        for g in made_groups:
            subprocess.run(["groupdel", g], capture_output=True)
        os.rmdir(sockdir)


def start_outcome(tmp_path, trace_dir):
    """(exit code or None if it started and ran, its stderr) of a daemon with this trace directory."""
    p = subprocess.Popen([str(JVMTRACED), "--socket", str(tmp_path / "t.sock"), "--trace-dir", str(trace_dir),
                          "--metrics-port", "0"], stderr=subprocess.PIPE, text=True)
    log = LineReader(p.stderr)
    deadline = time.monotonic() + 30
    while p.poll() is None and time.monotonic() < deadline:
        if any("control socket" in l for l in log.seen()):
            p.send_signal(signal.SIGTERM)
            p.wait(30)
            return None, "\n".join(log.drain())
        time.sleep(0.05)
    p.wait(30)
    return p.returncode, "\n".join(log.drain())


def test_unsafe_trace_directory_is_refused(tmp_path):
    """The trace directory must be a real directory (not a symlink), owned by
    root, not writable by group or others; a missing one is made 0750 root."""
    ww = tmp_path / "world-writable"
    ww.mkdir()
    ww.chmod(0o777)
    rc, log = start_outcome(tmp_path, ww)
    assert rc == 1, f"the daemon ran with a world-writable trace directory:\n{log}"
    assert f"trace directory {ww} " in log and "owned by uid 0 (root)" in log and "mode 0777" in log and \
        f"chmod go-w {ww}" in log, log
    group_w = tmp_path / "group-writable"
    group_w.mkdir()
    group_w.chmod(0o770)
    rc, log = start_outcome(tmp_path, group_w)
    assert rc == 1 and "mode 0770" in log, log
    theirs = tmp_path / "not-roots"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    theirs.chmod(0o755)
    rc, log = start_outcome(tmp_path, theirs)
    assert rc == 1 and "owned by uid 65534" in log and f"chown root {theirs}" in log, log
    real = tmp_path / "real"
    real.mkdir(mode=0o750)
    link = tmp_path / "link"
    link.symlink_to(real)
    rc, log = start_outcome(tmp_path, link)
    assert rc == 1 and f"trace directory {link} is a symbolic link" in log, log
    missing = tmp_path / "missing"
    rc, log = start_outcome(tmp_path, missing)
    assert rc is None, log
    st = os.lstat(missing)
    assert st.st_uid == 0 and oct(st.st_mode & 0o7777) == "0o750", (st.st_uid, oct(st.st_mode))


def test_disk_cap_never_deletes_through_a_symlink(tmp_path):
    """The disk cap deletes the oldest regular files of the trace directory;
    a symlink in it (to a file outside) is neither counted nor followed."""
    d_dir = tmp_path / "traces"
    d_dir.mkdir(mode=0o750)
    outside = tmp_path / "outside"
    outside.mkdir()
    precious = outside / "precious.jvmtrace"
    precious.write_bytes(b"p" * (1 << 20))
    (d_dir / "jvm-1-20000101-000000.jvmtrace").symlink_to(precious)
    old = d_dir / "jvm-2-20000101-000000.jvmtrace"
    old.write_bytes(b"o" * (1 << 20))
    os.utime(old, (946684800, 946684800))
    d = Daemon(tmp_path, "--max-disk-mb", "0.0625")
    try:
        d.log.wait_for(lambda l: f"deleted {old}" in l, 10, "the cap to delete the old file")
        assert not old.exists()
        assert precious.read_bytes() == b"p" * (1 << 20)
        assert (d_dir / "jvm-1-20000101-000000.jvmtrace").is_symlink()
        assert d.client("status").returncode == 0
    finally:
        d.stop()


def test_symlink_at_the_recording_name_is_not_followed(tmp_path, jdks, java_classes):
    """A symlink planted in the trace directory at the exact name a recording
    is about to use (read from the worker's own arguments while it waits at
    its gate), pointing at a root-owned file outside: after the attach and a
    detach, that file is unchanged."""
    precious = tmp_path / "precious"
    precious.write_text("root's file, not a trace\n")
    before = precious.read_bytes(), os.stat(precious).st_mtime_ns
    with gated_attach(tmp_path, jdks, java_classes, "record") as (d, proc, attach, args, open_gate):
        argv = wait_file(args).split("\n")
        path = argv[argv.index("-o") + 1]
        assert os.path.dirname(path) == os.path.realpath(d.dir), path
        os.symlink(precious, path)
        open_gate()
        out, err = attach.communicate(timeout=60)
        print(out, err)
        if attach.returncode == 0:
            r = d.client("detach", proc.pid)
            assert r.returncode == 0, r.stdout
        assert (precious.read_bytes(), os.stat(precious).st_mtime_ns) == before, \
            f"the recording wrote through the symlink into {precious}"
