"""Attaching must never harm the target, and nothing the target or its
container controls may make root run, read or write what it should not
(docs/security.md).  Real JVMs, real eBPF, real mount namespaces and users.

Each test here failed on the code before the fix it guards (docs/security.md
names the failure each one saw)."""
import concurrent.futures
import os
import pwd
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import REPO

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
LAUNCHES = int(os.environ.get("JVMTRACE_LAUNCHES", "200"))


def expected_output(java, classes, iterations):
    r = subprocess.run([java, "-cp", str(classes), "AllocWorker", str(iterations)], input="go\n",
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return [l for l in r.stdout.splitlines() if l.startswith("checksum ")]


def libjvm_mapped(pid):
    try:
        return "/libjvm.so" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def launch_and_attach(java, classes, iterations, tool, delay_s, workdir, held=False, after_libjvm=False):
    """Starts a JVM, attaches `tool` delay_s after exec (after_libjvm: delay_s
    after libjvm.so first shows in its maps; held: while the JVM waits at
    -XX:+PauseAtStartup, then releases it), returns what happened."""
    out = workdir / "trace.jvmtrace"
    hold = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup"] if held else []
    jvm = subprocess.Popen([java, *hold, "-XX:+PreserveFramePointer", "-cp", str(classes), "AllocWorker",
                            str(iterations)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           cwd=workdir)
    pause_file = workdir / f"vm.paused.{jvm.pid}"
    if held:
        deadline = time.monotonic() + 30
        while not pause_file.exists() and time.monotonic() < deadline and jvm.poll() is None:
            time.sleep(0.01)
    else:
        if after_libjvm:
            deadline = time.monotonic() + 30
            while not libjvm_mapped(jvm.pid) and time.monotonic() < deadline and jvm.poll() is None:
                time.sleep(0.001)
        time.sleep(delay_s)  # the attach moment is what this test varies
    if tool == "record":  # user stacks: the recorder talks to the JVM (jcmd writes its perf map)
        cmd = [str(JVMTRACE), "record", "--stacks-from", "user", "-p", str(jvm.pid), "-o", str(out)]
    elif tool == "record-vm":  # the VM's own stacks: the recorder reads the JVM's tables while it starts
        cmd = [str(JVMTRACE), "record", "--stacks", "-p", str(jvm.pid), "-o", str(out)]
    else:
        cmd = [str(JVMTRACE), "stat", "-p", str(jvm.pid)]
    tracer = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner = ""
    try:
        # The JVM starts its work ("go") once the tracer is attached (its
        # banner) or has given up: a JVM that finished its work while the
        # probes went in would fail the tracer for no fault of its own.
        # Held: released then too, as a user tracing from the first
        # allocation would.
        for line in tracer.stderr:
            banner += line
            if line.startswith(("Recording PID", "Attached ")):
                break
        pause_file.unlink(missing_ok=True)
        jvm_out, jvm_err = jvm.communicate("go\n", timeout=120)
        t_out, t_err = tracer.communicate(timeout=60)
    finally:
        pause_file.unlink(missing_ok=True)
        for p in (jvm, tracer):
            if p.poll() is None:
                p.kill()
                p.wait()
    return {"delay": delay_s, "tool": tool, "held": held, "after_libjvm": after_libjvm, "jvm_rc": jvm.returncode, "jvm_out": jvm_out,
            "jvm_err": jvm_err, "tracer_rc": tracer.returncode, "tracer_err": banner + t_err, "tracer_out": t_out}


def test_attaching_at_any_moment_of_start_up_never_harms_the_jvm(jdks17, java_classes, tmp_path):
    """LAUNCHES JVMs, each with `record --stacks[-from user]` (or `stat`) attached at a
    random moment 0-300 ms after libjvm.so is mapped, through all of the VM's
    start-up (every twentieth at a moment 0-50 ms after exec, when it may not
    be a JVM yet): every JVM exits 0 and prints its normal output (no death by
    SIGQUIT, no thread dump in its stdout).  Before the attach client checked
    SigCgt, `record --stacks` ran jcmd, whose SIGQUIT killed JVMs that had not
    installed their handler."""
    java = str(Path(jdks17["patched"]) / "bin/java")
    iterations = 3_000_000  # about a second: most attachments land while it runs
    want = expected_output(java, java_classes, iterations)
    assert want, "AllocWorker printed no checksum"
    seed = int(os.environ.get("JVMTRACE_SEED", str(int(time.time()))))
    rng = random.Random(seed)
    # Mostly record with user stacks (it talks to the JVM) or the VM's own
    # (it reads the VM's tables as they are set up); every tenth launch is
    # held at -XX:+PauseAtStartup while the tracer attaches: the moment
    # before HotSpot handles SIGQUIT, every time.  The moment is counted from
    # libjvm.so's mapping, not from exec: how long the launcher takes to get
    # there depends on the machine's load (a share counted from exec once
    # swung from 5% to 20% of launches under CI's load).
    plan = [{"tool": "stat" if i % 10 in (7, 8) else "record-vm" if i % 10 in (4, 5, 6) else "record",
             "held": i % 10 == 9,
             "after_libjvm": i % 20 != 3,
             "delay_s": rng.uniform(0, 0.3) if i % 20 != 3 else rng.uniform(0, 0.05)}
            for i in range(LAUNCHES)]
    dirs = [tmp_path / f"run{i}" for i in range(LAUNCHES)]
    for d in dirs:
        d.mkdir()
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda a: launch_and_attach(java, java_classes, iterations, workdir=a[1], **a[0]),
                                zip(plan, dirs)))
    harmed = [r for r in results
              if r["jvm_rc"] != 0 or [l for l in r["jvm_out"].splitlines() if l.startswith("checksum ")] != want
              or "Full thread dump" in r["jvm_out"] or r["jvm_err"].strip()]
    assert not harmed, (f"seed {seed}: {len(harmed)} of {len(results)} JVMs harmed; first: "
                        f"{ {k: (v[-1500:] if isinstance(v, str) else v) for k, v in harmed[0].items()} }")
    # The tracers either attached and ended cleanly, or said clearly why they
    # could not (a process that has not mapped libjvm.so yet is no JVM yet).
    attached = [r for r in results if r["tracer_rc"] == 0]
    unclear = [r for r in results if r["tracer_rc"] != 0 and "libjvm" not in r["tracer_err"]
               and "not a JVM" not in r["tracer_err"]]
    assert not unclear, f"seed {seed}: a tracer failed without a clear reason: {unclear[0]}"
    # Once libjvm.so is mapped the process is a JVM: every tracer attached
    # from then on must succeed, however early in the VM's start-up.
    missed = [r for r in results if r["after_libjvm"] and r["tracer_rc"] != 0]
    assert not missed, (f"seed {seed}: {len(missed)} tracers attached after libjvm.so was mapped failed; first: "
                        f"{missed[0]['tracer_err'][-1500:]}")
    # The held launches and the random moments, counted apart.  Every held
    # recorder attaches before HotSpot handles SIGQUIT (by construction, so
    # all of them must say so).  The random moments are not required to hit
    # that window: measured, they did not (0 of 16 on a loaded 2-core
    # machine, decision 142): a recorder starts too slowly to find a JVM
    # that has mapped libjvm.so still without its handler.  The window is
    # tested by the held launches; the count of random hits is printed.
    def is_early(r):
        return r["tracer_rc"] == 0 and "does not handle SIGQUIT yet" in r["tracer_err"]
    held = [r for r in results if r["held"]]
    not_early = [r for r in held if not is_early(r)]
    assert not not_early, f"seed {seed}: a held recorder did not attach early: {not_early[0]['tracer_err'][-1500:]}"
    randoms = [r for r in results if not r["held"] and r["tool"] == "record"]
    early_random = [r for r in randoms if is_early(r)]
    print(f"seed {seed}: {len(held)} held recorders, all early; {len(early_random)} of {len(randoms)} recorders "
          f"attached at random moments early")
    early = held + early_random
    # Those still got their perf map once the JVM could serve it.
    named = [r for r in early if "renamed once the perf map" in r["tracer_err"]
             and " (0 renamed" not in r["tracer_err"]]
    assert named, f"seed {seed}: no early recorder got a perf map later: {early[0]['tracer_err']}"


@pytest.fixture
def nobody():
    return pwd.getpwnam("nobody")


def test_a_hostile_container_cannot_make_root_run_or_read_anything(jdks17, java_classes, tmp_path, nobody):
    """A JVM in its own mount namespace, run by an unprivileged user, whose
    JDK's `jcmd` is a script that would leave a marker on the host if root ran
    it, and whose /tmp/perf-PID.map is a symlink to a root-only host file laid
    out as a perf map naming all code: the marker never appears, the secret
    never reaches the trace, and the recording still works (stacks without
    Java names, said so)."""
    java_home = Path(jdks17["patched"])
    marker = Path("/var/tmp") / f"jvmtrace-marker-{os.getpid()}"
    marker.unlink(missing_ok=True)
    evil = tmp_path / "evil-jcmd"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\n")
    evil.chmod(0o755)
    secret_text = f"JVMTRACE-SECRET-{os.getpid()}"
    secret = Path("/root") / f"jvmtrace-secret-{os.getpid()}"
    secret.write_text(f"0 ffffffffffffffff {secret_text}\n")
    secret.chmod(0o600)
    before = secret.read_bytes()
    classes = Path("/var/tmp") / f"jvmtrace-classes-{os.getpid()}"
    shutil.copytree(java_classes, classes)
    os.chmod(classes, 0o755)
    out = tmp_path / "hostile.jvmtrace"
    # The container: a private mount namespace with its own /tmp, the evil
    # jcmd bound over the JDK's, the perf map name taken by a symlink; then
    # the JVM, as nobody.
    script = (f"mount --bind {evil} {java_home}/bin/jcmd && mount -t tmpfs tmpfs /tmp && "
              f"ln -s {secret} /tmp/perf-$$.map && "
              f"exec setpriv --reuid={nobody.pw_uid} --regid={nobody.pw_gid} --clear-groups -- "
              f"{java_home}/bin/java -XX:+PreserveFramePointer -cp {classes} AllocWorker 3000000")
    jvm = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = jvm.stdout.readline()
        assert line.startswith("ready "), f"the JVM did not start: {line!r} {jvm.stderr.read()[-2000:]}"
        assert Path(f"/proc/{jvm.pid}/root{java_home}/bin/jcmd").read_text() == evil.read_text(), \
            "the container's jcmd is not the planted one"
        rec = subprocess.Popen([str(JVMTRACE), "record", "--stacks-from", "user", "-p", str(jvm.pid), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Recording has begun once the trace has its first block on disk.
        deadline = time.monotonic() + 30
        while not (out.exists() and out.stat().st_size > 0) and rec.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        rest, jvm_err = jvm.communicate("go\n", timeout=120)
        _, rec_err = rec.communicate(timeout=60)
    finally:
        for p in (jvm,):
            if p.poll() is None:
                p.kill()
        shutil.rmtree(classes, ignore_errors=True)
    try:
        harm = []  # every way it went wrong, not only the first
        if jvm.returncode != 0 or "checksum " not in rest:
            harm.append(f"the JVM was harmed: rc {jvm.returncode}, {jvm_err[-2000:]}")
        if rec.returncode != 0:
            harm.append(f"record failed: {rec_err}")
        if marker.exists():
            harm.append("root ran the container's jcmd")
        if secret.read_bytes() != before:
            harm.append("the root-only file was changed")
        if out.exists() and secret_text.encode() in out.read_bytes():
            harm.append("the root-only file's content reached the trace")
        if "symbolic link" not in rec_err:
            harm.append(f"record did not say why Java frames are unnamed:\n{rec_err}")
        if "distinct stacks" not in rec_err or " 0 distinct stacks" in rec_err:
            harm.append(f"no stacks were recorded:\n{rec_err}")
        assert not harm, "\n".join(harm)
        dump = subprocess.run([str(JVMTRACE), "dump", str(out)], capture_output=True, text=True, timeout=120)
        assert dump.returncode == 0 and secret_text not in dump.stdout
    finally:
        marker.unlink(missing_ok=True)
        secret.unlink(missing_ok=True)


def test_a_trace_file_cannot_choose_what_calibrate_runs(java_classes, tmp_path):
    """A trace names the JDK it was recorded from.  calibrate used to run
    <that JDK>/bin/jfr: whoever wrote the trace (or owned that directory)
    chose what root ran.  Now the jfr tool comes from JAVA_HOME or PATH."""
    jdk = Path("/var/tmp") / f"jvmtrace-evil-jdk-{os.getpid()}"
    marker = Path("/var/tmp") / f"jvmtrace-jfr-marker-{os.getpid()}"
    marker.unlink(missing_ok=True)
    shutil.rmtree(jdk, ignore_errors=True)
    # A JDK whose files are Debian's (hard links) but whose bin/jfr is not.
    subprocess.run(["cp", "-al", "/usr/lib/jvm/java-17-openjdk-amd64", str(jdk)], check=True)
    try:
        (jdk / "bin/jfr").unlink()
        (jdk / "bin/jfr").write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (jdk / "bin/jfr").chmod(0o755)
        jfr, out = tmp_path / "run.jfr", tmp_path / "run.jvmtrace"
        jvm = subprocess.Popen([str(jdk / "bin/java"), "-cp", str(java_classes), "AllocWorker", "1000000", str(jfr)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert jvm.stdout.readline().startswith("ready ")
        rec = subprocess.Popen([str(JVMTRACE), "record", "-p", str(jvm.pid), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in rec.stderr:
            if line.startswith("Recording PID"):
                break
        jvm.communicate("go\n", timeout=120)
        rec.communicate(timeout=60)
        assert rec.returncode == 0 and jvm.returncode == 0
        meta = subprocess.run([str(JVMTRACE), "dump", "--json", str(out)], capture_output=True, text=True).stdout
        assert str(jdk) in meta.splitlines()[0], "the trace does not name the evil JDK: the test proves nothing"
        env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
        r = subprocess.run([str(JVMTRACE), "calibrate", str(out), "--jfr", str(jfr)], capture_output=True,
                           text=True, env=env, timeout=300)
        assert not marker.exists(), "calibrate ran the jfr tool the trace's JDK path led to"
        assert r.returncode == 0, r.stderr
    finally:
        shutil.rmtree(jdk, ignore_errors=True)
        marker.unlink(missing_ok=True)


def record_stacks_then_go(jvm, out):
    """`record --stacks` attached to jvm (waiting on stdin for "go"), then
    the JVM let go and both waited for: (recorder, the JVM's stdout, its
    stderr, the recorder's whole stderr)."""
    rec = subprocess.Popen([str(JVMTRACE), "record", "--stacks-from", "user", "-p", str(jvm.pid), "-o", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    banner = ""
    for line in rec.stderr:
        banner += line
        if line.startswith("Recording PID"):
            break
    jvm_out, jvm_err = jvm.communicate("go\n", timeout=120)
    _, rec_err = rec.communicate(timeout=60)
    return rec, jvm_out, jvm_err, banner + rec_err


def test_an_impostor_attach_socket_is_never_talked_to(jdks17, java_classes, tmp_path):
    """Another process (here of the JVM's own user) listens at the JVM's
    attach socket name before the JVM opened its listener.  The recorder must
    not talk to it (SO_PEERCRED names another PID), must not signal the JVM
    (a listener seems to exist), and must still record."""
    import socket
    import threading
    jvm = subprocess.Popen([str(Path(jdks17["patched"]) / "bin/java"), "-cp", str(java_classes), "AllocWorker",
                            "2000000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    path = f"/tmp/.java_pid{jvm.pid}"
    impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    got = []
    try:
        assert jvm.stdout.readline().startswith("ready ")
        assert not os.path.exists(path), "the JVM already has a listener: the test cannot plant one"
        impostor.bind(path)
        impostor.listen(4)
        impostor.settimeout(0.2)

        def accept():
            while not stop.is_set():
                try:
                    conn, _ = impostor.accept()
                    got.append(conn.recv(4096))
                    conn.close()
                except OSError:
                    pass
        stop = threading.Event()
        t = threading.Thread(target=accept, daemon=True)
        t.start()
        rec, jvm_out, jvm_err, rec_err = record_stacks_then_go(jvm, tmp_path / "impostor.jvmtrace")
        stop.set()
        t.join(5)
    finally:
        impostor.close()
        if os.path.exists(path):
            os.unlink(path)
        if jvm.poll() is None:
            jvm.kill()
    # (A connection it cannot avoid: SO_PEERCRED needs one.  Not a byte.)
    assert not any(got), f"the recorder sent the impostor a request: {got}"
    assert len(got) <= 2, f"the recorder kept knocking at the impostor: {len(got)} connections"
    assert jvm.returncode == 0 and "checksum " in jvm_out and "Full thread dump" not in jvm_out, jvm_err[-2000:]
    assert rec.returncode == 0, rec_err
    assert "not by the JVM" in rec_err, rec_err


def test_java_frames_are_named_for_a_jvm_in_its_own_pid_namespace(jdks17, java_classes, tmp_path):
    """The usual container: own PID namespace (the JVM has another PID there) and
    its own /tmp.  The attach socket and the perf map carry the namespace
    PID; the perf map is found, and JIT-compiled Java frames are named.
    (The previous code looked for /tmp/perf-<host PID>.map and named none.)"""
    classes = Path("/var/tmp") / f"jvmtrace-classes-ns-{os.getpid()}"
    shutil.copytree(java_classes, classes, dirs_exist_ok=True)
    java = Path(jdks17["patched"]) / "bin/java"
    script = (f"mount -t tmpfs tmpfs /tmp && exec {java} -XX:+PreserveFramePointer -cp {classes} "
              f"AllocWorker 20000000")
    box = subprocess.Popen(["unshare", "--pid", "--fork", "--mount", "--mount-proc", "--propagation", "private",
                            "--", "sh", "-c", script],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, folded = tmp_path / "ns.jvmtrace", tmp_path / "ns.folded"
    try:
        assert box.stdout.readline().startswith("ready "), box.stderr.read()[-2000:]
        children = Path(f"/proc/{box.pid}/task/{box.pid}/children").read_text().split()
        assert len(children) == 1, children
        pid = int(children[0])
        nspids = Path(f"/proc/{pid}/status").read_text().split("NSpid:")[1].split("\n")[0].split()
        assert len(nspids) == 2 and nspids[1] != str(pid), f"not in its own PID namespace: {nspids}"
        rec = subprocess.Popen([str(JVMTRACE), "record", "--stacks-from", "user", "-p", str(pid), "-o", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in rec.stderr:
            if line.startswith("Recording PID"):
                break
        rest, err = box.communicate("go\n", timeout=300)
        _, rec_err = rec.communicate(timeout=60)
    finally:
        if box.poll() is None:
            box.kill()
        shutil.rmtree(classes, ignore_errors=True)
    assert box.returncode == 0 and "checksum " in rest, err[-2000:]
    assert rec.returncode == 0, rec_err
    r = subprocess.run([str(JVMTRACE), "flame", str(out), "-o", str(folded)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "AllocWorker.work_[j]" in folded.read_text(), f"no named Java frame:\n{rec_err}"


def test_names_the_target_chose_cannot_drive_roots_terminal(jdks17, java_classes, tmp_path):
    """A thread named with escape sequences (a window-title write, a screen
    clear): dump, report, report --check and stat print it with its control
    characters as \\xNN, never raw; so do the HTML report, the flame graph
    (SVG and folded text) and calibrate, and every JSON output stays valid
    JSON.  (Before issue 21 the SVG and HTML held the raw bytes, the SVG was
    no longer XML, and calibrate printed the name raw.)"""
    out, jfr = tmp_path / "names.jvmtrace", tmp_path / "names.jfr"
    jvm = subprocess.Popen([str(Path(jdks17["patched"]) / "bin/java"), "-Xmx64m",
                            f"-XX:StartFlightRecording:filename={jfr},settings=profile", "-Xlog:jfr+startup=error",
                            "-XX:-DoEscapeAnalysis",  # (its arrays stay allocations, JIT-compiled or not)
                            "-cp", str(java_classes),
                            "HostileNames", "3000000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline().startswith("ready ")
        # (combined: each slow path as it happens, so the thread's name is
        # read while the thread lives; batched ones can come at the JVM's exit)
        rec = subprocess.Popen([str(JVMTRACE), "record", "--probe-set", "combined", "-p", str(jvm.pid), "-o",
                                str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        stat = subprocess.Popen([str(JVMTRACE), "stat", "-p", str(jvm.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for p in (rec, stat):
            for line in p.stderr:
                if line.startswith(("Recording PID", "Attached ")):
                    break
        jvm.communicate("go\n", timeout=120)
        _, rec_err = rec.communicate(timeout=60)
        stat_out, stat_err = stat.communicate(timeout=60)
    finally:
        if jvm.poll() is None:
            jvm.kill()
    assert jvm.returncode == 0 and rec.returncode == 0 and stat.returncode == 0, rec_err + stat_err
    dump = subprocess.run([str(JVMTRACE), "dump", str(out)], capture_output=True, text=True).stdout
    report = subprocess.run([str(JVMTRACE), "report", str(out)], capture_output=True, text=True).stdout
    # report --check names the thread in what it finds: a trace with one of
    # that thread's slow-path enters taken out (its refill then lies outside
    # any slow path).
    from test_analysis import damage, events_of
    ev = events_of(out)
    hostile = [i for i, e in enumerate(ev) if "pwned" in e["thread"] and e["probe"] == "alloc__slow__enter"]
    assert len(hostile) > 20, "the hostile thread's slow paths are not in the trace"
    damaged = tmp_path / "names-damaged.jvmtrace"
    damage(out, damaged, "drop", hostile[10])
    check = subprocess.run([str(JVMTRACE), "report", "--check", str(damaged)], capture_output=True, text=True)
    assert check.returncode == 4, check.stdout[-2000:] + check.stderr
    for what, text in (("dump", dump), ("report", report), ("stat", stat_out), ("report --check", check.stdout)):
        assert "\x1b" not in text and "\x07" not in text, f"{what} printed a raw escape sequence"
        assert "\\x1b]0;pwned" in text, f"{what} does not show the thread's name:\n{text[-2000:]}"
    # Every other way out (issue 21): HTML and SVG (the SVG must stay XML: a
    # raw control character is not allowed in XML 1.0 at all), the flame
    # graph's folded text, JSON (valid, the name intact once decoded), and
    # calibrate's table (against JFR's record of the same run).
    import json
    import xml.etree.ElementTree as ET
    outputs = {}
    for name, argv in (("html", ["report", "--html", out, "-o"]), ("svg", ["flame", "--threads", out, "-o"]),
                       ("folded", ["flame", "--threads", out, "-o"]), ("json", ["export", "--perfetto", out, "-o"])):
        path = tmp_path / f"names.{name}"
        r = subprocess.run([str(JVMTRACE), *map(str, argv), str(path)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outputs[name] = path.read_text(errors="replace")
    for name in ("html", "svg", "folded"):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", outputs[name]), f"{name}: a raw control character"
        # (the flame graph's frames have ':' for ';', its separator)
        assert re.search(r"\\x1b\][0];pwned\\x07|\\x1b\][0]:pwned\\x07", outputs[name]), \
            f"{name} does not show the thread's name"
    ET.fromstring(outputs["svg"].split("\n", 1)[1])  # (after the XML declaration)
    json.loads(outputs["json"])
    for argv in (["dump", "--json", out], ["report", "--json", out]):
        text = subprocess.run([str(JVMTRACE), *map(str, argv)], capture_output=True, text=True).stdout
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), f"{argv[0]} --json: a raw control character"
        # Valid JSON, the name in it as JSON escapes it (which decodes to the name itself).
        for l in text.splitlines():
            json.loads(l)
        assert "\\u001b]0;pwned\\u0007" in text, f"{argv[0]} --json lost the name"
    cal = subprocess.run([str(JVMTRACE), "calibrate", str(out), "--jfr", str(jfr)], capture_output=True, text=True,
                         timeout=300)
    assert cal.returncode == 0, cal.stderr
    assert "\x1b" not in cal.stdout and "\x07" not in cal.stdout, "calibrate printed a raw escape sequence"
    assert "\\x1b]0;pwned" in cal.stdout, cal.stdout


def test_a_libjvm_path_cannot_inject_bpftrace_code(tmp_path):
    """jvmtrace-bt used to put the path of the target's libjvm.so (the
    container's choice) into the text of a bpftrace program it runs as root;
    bpftrace parsed a directory name with bpftrace syntax in it (a probe body
    printing INJECTED) as code.  The program now names the library
    /proc/self/fd/3, the file `jvmtrace target` checked, handed to bpftrace
    open: no path of the target's reaches the program at all (a stand-in
    bpftrace writes down what it was given)."""
    from test_hostile_input import java_classes_dir, stand_in_bpftrace
    java_classes = java_classes_dir(tmp_path)
    # A JDK whose directory name carries the payload (hard links of Debian's).
    base = Path("/var/tmp") / f"jvmtrace-inj-{os.getpid()}"
    jdk = base / 'a{printf("INJECTED");exit();}b' / "jdk"  # (a ':' would stop the JVM itself)
    shutil.rmtree(base, ignore_errors=True)
    jdk.parent.mkdir(parents=True)
    subprocess.run(["cp", "-al", "/usr/lib/jvm/java-17-openjdk-amd64", str(jdk)], check=True)
    env, seen = stand_in_bpftrace(tmp_path)
    jvm = subprocess.Popen([str(jdk / "bin/java"), "-cp", str(java_classes), "AllocWorker", "1000000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline().startswith("ready ")
        maps = Path(f"/proc/{jvm.pid}/maps").read_text()
        assert "INJECTED" in maps and "libjvm.so" in maps, "the JVM does not map the planted path"
        bt = subprocess.run([str(REPO / "scripts/jvmtrace-bt"), "gcpause_stock", str(jvm.pid)],
                            capture_output=True, text=True, timeout=120, env=env)
    finally:
        jvm.kill()
        jvm.wait()
        shutil.rmtree(base, ignore_errors=True)
    assert bt.returncode == 0, bt.stdout + bt.stderr
    args = seen.read_text()
    assert "INJECTED" not in args.split("-e\n", 1)[1].rsplit("\n", 2)[0], f"the path reached the program:\n{args}"
    assert "uprobe:/proc/self/fd/3:_ZN8GCTracer" in args, args


def test_a_fifo_at_the_perf_map_name_neither_is_opened_nor_stalls_the_jvm(jdks17, java_classes, tmp_path):
    """The container's /tmp/perf-PID.map is a FIFO: the recorder looks at it
    (an O_PATH descriptor opens nothing) and never opens it (a device node
    there would get no open() with its side effects either), and does not
    ask the JVM to write it: HotSpot's fopen() of a FIFO blocks its attach
    listener inside the VM, and the JVM then never exits (seen: still alive
    120 s after its work).  A writer blocked on the FIFO tells whether any
    reader ever opened it."""
    import threading
    box_tmp = tmp_path / "box-tmp"
    box_tmp.mkdir()
    box_tmp.chmod(0o1777)
    classes = Path("/var/tmp") / f"jvmtrace-classes-fifo-{os.getpid()}"
    shutil.copytree(java_classes, classes, dirs_exist_ok=True)
    java = Path(jdks17["patched"]) / "bin/java"
    script = (f"mount --bind {box_tmp} /tmp && mkfifo -m 666 /tmp/perf-$$.map && "
              f"exec {java} -XX:+PreserveFramePointer -cp {classes} AllocWorker 3000000")
    jvm = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fifo = box_tmp / f"perf-{jvm.pid}.map"
    opened = threading.Event()

    def writer():  # returns from open() only once a reader opens the FIFO
        try:
            fd = os.open(fifo, os.O_WRONLY)
            opened.set()
            os.close(fd)
        except OSError:
            pass
    t = None
    try:
        assert jvm.stdout.readline().startswith("ready "), jvm.stderr.read()[-2000:]
        assert fifo.is_fifo()
        t = threading.Thread(target=writer, daemon=True)
        t.start()
        rec, rest, err, rec_err = record_stacks_then_go(jvm, tmp_path / "fifo.jvmtrace")
    finally:
        if jvm.poll() is None:
            jvm.kill()
        was_opened = opened.is_set()
        # Release the blocked writers (ours; the JVM's own perf-map write).
        try:
            r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            if t:
                t.join(5)
            os.close(r)
        except OSError:
            pass
        shutil.rmtree(classes, ignore_errors=True)
    assert not was_opened, "the recorder opened the FIFO at the perf map's name"
    assert jvm.returncode == 0 and "checksum " in rest, err[-2000:]
    assert rec.returncode == 0, rec_err
    assert "not a regular file" in rec_err, rec_err


# --- Issue 33, item 1: a symbol name that makes the demangler blow up ---
#
# A fake libjvm.so, compiled here, with what stock mode looks for (a small
# gHotSpotVMStructs table, the four functions it traces) whose traced
# function's mangled name back-references templates so that its demangled
# text doubles with each repetition: libstdc++'s __cxa_demangle took 3.7-7 s
# and 1.1 GB at 24 repetitions, 2.2 GB at 25.  It is mapped (dlopen) by a
# process of user nobody.  Root's tools must end within a bounded time and
# peak memory, whatever the name.

BOMB_REPETITIONS = 40  # 2^40 times the text: no demangler without a budget finishes
BOMB_SECONDS = 30
BOMB_MAX_RSS_MIB = 256
BOMB_AS_LIMIT = 2 << 30  # so that the unbounded code fails the test instead of the machine


def b36(v):
    digits = ""
    while True:
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[v % 36] + digits
        v //= 36
        if not v:
            return digits


def doubling(n):
    """n back-referenced templates, each twice the text of the one before:
    S0_ is A, S1_ is A<int, int>, S2_ is A<S1_, S1_> ..."""
    return "".join(f"S0_IS{b36(k)}_S{b36(k)}_E" for k in range(1, n + 1))


def bomb_symbol(n):
    return "_ZN11AllocTracer27send_allocation_in_new_tlabE1AIiiE" + doubling(n)


FAKE_LIBJVM_C = r"""
#include <stddef.h>
#include <stdint.h>
/* HotSpot's VMStructEntry, and the globals that describe it (vmStructs.cpp). */
struct entry { const char* type_name; const char* field_name; const char* type_string;
               int32_t is_static; uint64_t offset; void* address; };
static struct entry table[] = {
  {"Klass", "_name", "Symbol*", 0, 16, 0},
  {"Symbol", "_length", "u2", 0, 4, 0},
  {"Symbol", "_body", "u1", 0, 6, 0},
  {0, 0, 0, 0, 0, 0},
};
struct entry* gHotSpotVMStructs = table;
uint64_t gHotSpotVMStructEntryArrayStride = sizeof(struct entry);
uint64_t gHotSpotVMStructEntryTypeNameOffset = offsetof(struct entry, type_name);
uint64_t gHotSpotVMStructEntryFieldNameOffset = offsetof(struct entry, field_name);
uint64_t gHotSpotVMStructEntryIsStaticOffset = offsetof(struct entry, is_static);
uint64_t gHotSpotVMStructEntryOffsetOffset = offsetof(struct entry, offset);
/* The functions stock mode traces, the first by the crafted name. */
void f1(void) __asm__("@FUNCTION@");
void f1(void) {}
void f2(void) __asm__("_ZN11AllocTracer28send_allocation_outside_tlabEP5KlassP8HeapWordmP6Thread");
void f2(void) {}
void f3(void) __asm__("_ZN8GCTracer15report_gc_startEN7GCCause5CauseERK6Ticks");
void f3(void) {}
void f4(void) __asm__("_ZN8GCTracer13report_gc_endERK6TicksP14TimePartitions");
void f4(void) {}
/* A collector's vtable whose class doubles the same way (stat names
   collectors by the vtables whose class ends with "Tracer"). */
const uint64_t vtable[4] __asm__("@VTABLE@") = {0};
"""


def fake_libjvm(directory, n=BOMB_REPETITIONS):
    """directory/lib/server/libjvm.so, compiled with the C compiler, readable by all."""
    src = directory / "fake_libjvm.c"
    src.write_text(FAKE_LIBJVM_C.replace("@FUNCTION@", bomb_symbol(n))
                   .replace("@VTABLE@", "_ZTV6TracerI1BIiiE" + doubling(n) + "E"))
    lib = directory / "lib/server/libjvm.so"
    lib.parent.mkdir(parents=True)
    subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-o", str(lib), str(src)], check=True)
    for p in (directory, directory / "lib", lib.parent, lib):
        p.chmod(0o755)
    names = subprocess.run(["nm", str(lib)], capture_output=True, text=True, check=True).stdout
    assert bomb_symbol(n) in names and "gHotSpotVMStructs" in names, names
    return lib


@pytest.fixture
def bomb_target(nobody):
    """A process of user nobody that has dlopen()ed the fake libjvm.so (its
    relocations applied, as a JVM's would be): (process, library)."""
    import tempfile
    directory = Path(tempfile.mkdtemp(prefix="jvmtrace-bomb-"))
    lib = fake_libjvm(directory)
    code = ("import ctypes, os, sys\n"
            f"ctypes.CDLL({str(lib)!r})\n"
            "print('ready', os.getpid(), flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
                          "/usr/bin/python3", "-c", code],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("ready "), p.stderr.read()
        assert str(lib) in Path(f"/proc/{p.pid}/maps").read_text()
        yield p, lib
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(directory, ignore_errors=True)


# Runs a command and writes the peak resident set size of it and of every
# descendant it (or they) waited for, in KiB, to argv[1]; the command runs
# under RLIMIT_AS argv[2] bytes.  Signals to this process are passed on.
MEASURED = r"""
import resource, signal, subprocess, sys
out, limit, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
p = subprocess.Popen(cmd, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, lambda n, f: p.send_signal(n))
rc = p.wait()
with open(out, "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc if rc >= 0 else 128 - rc)
"""


def measured(tmp_path, cmd):
    """(argv running cmd under MEASURED, the file its peak RSS in KiB goes to)."""
    script = tmp_path / "measured.py"
    script.write_text(MEASURED)
    rss = tmp_path / f"rss-{len(list(tmp_path.glob('rss-*')))}"
    return ["/usr/bin/python3", str(script), str(rss), str(BOMB_AS_LIMIT), *map(str, cmd)], rss


def run_bounded(tmp_path, cmd):
    """cmd's (CompletedProcess, seconds, peak RSS in MiB); a run past
    BOMB_SECONDS is killed and fails the test."""
    argv, rss = measured(tmp_path, cmd)
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=BOMB_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        raise AssertionError(f"{' '.join(map(str, cmd))} did not finish within {BOMB_SECONDS} s")
    seconds = time.monotonic() - t0
    peak = int(rss.read_text()) / 1024
    print(f"{' '.join(map(str, cmd[:3]))}: {seconds:.2f} s, peak RSS {peak:.0f} MiB, rc {p.returncode}")
    return subprocess.CompletedProcess(cmd, p.returncode, out, err), seconds, peak


def test_a_crafted_symbol_cannot_make_stat_demangle_without_bound(bomb_target, tmp_path):
    """`jvmtrace stat -p PID -d 1` on a process of nobody that maps the fake
    libjvm.so: it ends within 30 s (one second of that is -d 1) and 256 MiB,
    and, the library having all that stock mode needs, it attaches and
    reports (the crafted name is matched by its mangled form, never
    demangled).  Before, root's stat took 3.7-7 s and 1.1 GB at 24
    repetitions; at 40 it never ends."""
    target, lib = bomb_target
    r, seconds, peak = run_bounded(tmp_path, [JVMTRACE, "stat", "-p", target.pid, "-d", "1"])
    assert peak < BOMB_MAX_RSS_MIB, f"stat peaked at {peak:.0f} MiB:\n{r.stderr[-2000:]}"
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stock mode" in r.stdout + r.stderr, r.stdout + r.stderr
    assert target.poll() is None, "the target died"


def test_a_crafted_symbol_cannot_make_jvmtrace_target_demangle_without_bound(bomb_target, tmp_path):
    """`jvmtrace target PID --function AllocTracer::send_allocation_in_new_tlab`
    (what scripts/jvmtrace-bt asks): within 30 s and 256 MiB, and it names
    the crafted symbol (plain characters, the function by its mangled form)."""
    target, lib = bomb_target
    r, seconds, peak = run_bounded(tmp_path, [JVMTRACE, "target", target.pid, "--function",
                                              "AllocTracer::send_allocation_in_new_tlab",
                                              "--function", "GCTracer::report_gc_start"])
    assert peak < BOMB_MAX_RSS_MIB, f"jvmtrace target peaked at {peak:.0f} MiB:\n{r.stderr[-2000:]}"
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"function AllocTracer::send_allocation_in_new_tlab {bomb_symbol(BOMB_REPETITIONS)}\n" in r.stdout, r.stdout
    assert "function GCTracer::report_gc_start _ZN8GCTracer15report_gc_start" in r.stdout, r.stdout


def test_a_crafted_symbol_cannot_swell_the_daemons_auto_stat_workers(bomb_target, tmp_path):
    """jvmtraced --auto-stat starts a root stat worker by itself for every
    JVM it finds, the fake one of nobody's too: the worker attaches within
    30 s, and the daemon and its workers peak under 256 MiB each.  Before,
    such a worker reached 2.1 GB in 10 s (and --max-workers allows 64)."""
    import test_daemon
    target, lib = bomb_target
    argv, rss = measured(tmp_path, [test_daemon.JVMTRACED])
    wrapper = tmp_path / "jvmtraced"
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in argv) + ' "$@"\n')
    wrapper.chmod(0o755)
    daemon = None
    saved = test_daemon.JVMTRACED
    test_daemon.JVMTRACED = wrapper
    try:
        # Its workers are the jvmtrace beside the real jvmtraced.
        daemon = test_daemon.Daemon(tmp_path, "--auto-stat", "--jvmtrace", str(JVMTRACE))
        # (Other JVMs on the machine get workers too: this one's is waited for.)
        mine = f"stat attached to PID {target.pid} "
        try:
            attached = daemon.log.find(lambda l: mine in l or f"auto-stat of PID {target.pid}:" in l,
                                       BOMB_SECONDS, "the auto-stat worker of the fake JVM")
        except AssertionError as e:
            attached = str(e)
    finally:
        test_daemon.JVMTRACED = saved
        log = daemon.stop() if daemon else ""
    peak = int(rss.read_text()) / 1024
    print(f"auto-stat: peak RSS of the daemon and its workers {peak:.0f} MiB")
    assert mine in attached and "stock mode" in attached, \
        f"no stat worker attached within {BOMB_SECONDS} s: {attached}\n{log[-3000:]}"
    assert peak < BOMB_MAX_RSS_MIB, f"the daemon or a worker peaked at {peak:.0f} MiB:\n{log[-3000:]}"
    assert target.poll() is None, "the target died"


@pytest.mark.no_root
def test_the_bounded_demangler():
    """The demangler that names VM frames and collectors (userspace/hotspot/
    demangle.h): known names, matching by mangled form, doubling bombs of 1
    to 400 repetitions and 200,000 seeded random inputs each within 50 ms of
    CPU and 2 KiB of text (tests/demangle_test.cpp)."""
    seed = random.randrange(1 << 30)
    r = subprocess.run([str(BUILD_DIR / "tests/fixtures/demangle_test"), "--seed", str(seed)],
                       capture_output=True, text=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("ok"), f"seed {seed}:\n{r.stdout}{r.stderr}"


@pytest.mark.no_root
def test_line_tables_decode_the_same_whole_and_in_chunks():
    """The compressed line table that names a frame's line, read from the
    target's memory in 512-byte chunks: each chunk's new entries decoded
    once (an entry cut by a chunk's end waits for the next), the same pairs
    as a whole decode, for 2,000 seeded random tables in 17's and 21's forms;
    a table cut short yields what it held; a byte no table holds ends it
    (tests/line_table_test.cpp)."""
    seed = random.randrange(1 << 30)
    r = subprocess.run([str(BUILD_DIR / "tests/fixtures/line_table_test"), "--seed", str(seed)],
                       capture_output=True, text=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("ok"), f"seed {seed}:\n{r.stdout}{r.stderr}"


@pytest.mark.no_root
@pytest.mark.parametrize("libjvm", sorted({str(p.resolve()) for p in Path("/usr/lib/jvm").glob("*/lib/server/libjvm.so")})
                         or ["(no JDK in /usr/lib/jvm)"])
def test_the_bounded_demangler_names_hotspots_symbols_as_libstdcxx_does(libjvm):
    """Every C++ symbol of a real libjvm.so (trusted: the JDKs on this
    machine): at least 95% are named, each as libstdc++'s __cxa_demangle
    names it (its parameter list cut, as stack frames show names); the rest
    are shown mangled."""
    r = subprocess.run([str(BUILD_DIR / "tests/fixtures/demangle_test"), "--against", libjvm],
                       capture_output=True, text=True, timeout=300)
    print(r.stdout)
    assert r.returncode == 0 and r.stdout.rstrip().endswith("ok"), r.stdout + r.stderr


# --- Issue 33, item 7: what one ELF file may cost the scanner and a worker ---

# One USDT note, as sys/sdt.h would emit it: provider "other", probe "site".
STAPSDT_NOTE = r"""
__asm__(".pushsection .note.stapsdt,\"\",@note\n.balign 4\n.4byte 8, 36, 3\n.asciz \"stapsdt\"\n"
        ".balign 4\n.8byte 0, 0, 0\n.asciz \"other\"\n.asciz \"site\"\n.asciz \"\"\n.balign 4\n.popsection\n");
"""


def giant_sections(lib, size):
    """lib grown (sparse) to `size` bytes, its .symtab and .note.stapsdt
    section headers stretched to the end of the file: libelf reads a section
    it is asked for whole, so a reader that takes such a file pays for its
    size."""
    import struct
    data = bytearray(lib.read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    names_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    stretched = []
    for i in range(shnum):
        h = shoff + i * shentsize
        name, = struct.unpack_from("<I", data, h)
        sname = bytes(data[names_off + name:data.index(b"\0", names_off + name)]).decode()
        if sname in (".symtab", ".note.stapsdt"):
            off, = struct.unpack_from("<Q", data, h + 0x18)
            struct.pack_into("<Q", data, h + 0x20, (size - off) // 24 * 24)
            stretched.append(sname)
    assert sorted(stretched) == [".note.stapsdt", ".symtab"], stretched
    lib.write_bytes(data)
    os.truncate(lib, size)


def descendants(pid):
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in children] + [d for c in children for d in descendants(int(c))]


def vm_hwm_kib(pid):
    try:
        return int(re.search(r"^VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M).group(1))
    except (OSError, AttributeError):
        return 0


def test_an_elf_file_with_giant_sections_costs_root_little(tmp_path, nobody):
    """A process of nobody maps a libjvm.so of 900 MiB (sparse) whose symbol
    table and USDT notes claim all of it.  `jvmtrace target PID --function`
    refuses it with the reason, and the daemon's discovery looks at it, each
    peaking under 256 MiB: files over 256 MiB are not read (a libjvm.so is
    24-30 MB).  Before, both read up to 1 GiB a file through libelf."""
    import tempfile
    import test_daemon
    from test_hostile_input import mapper
    directory = Path(tempfile.mkdtemp(prefix="jvmtrace-giant-"))
    try:
        src = directory / "giant.c"
        src.write_text(STAPSDT_NOTE +
                       FAKE_LIBJVM_C.replace("@FUNCTION@", "_ZN11AllocTracer27send_allocation_in_new_tlabEv")
                       .replace("@VTABLE@", "_ZTV11G1NewTracer"))
        lib = directory / "lib/server/libjvm.so"
        lib.parent.mkdir(parents=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-o", str(lib), str(src)], check=True)
        giant_sections(lib, 900 << 20)
        for p in (directory, directory / "lib", lib.parent, lib):
            p.chmod(0o755)
        target = mapper(lib, before=f"os.setgid({nobody.pw_gid}); os.setuid({nobody.pw_uid})")
        try:
            r, seconds, peak = run_bounded(tmp_path, [JVMTRACE, "target", target.pid, "--function",
                                                      "AllocTracer::send_allocation_in_new_tlab"])
            assert peak < BOMB_MAX_RSS_MIB, f"jvmtrace target peaked at {peak:.0f} MiB: {r.stderr}"
            assert r.returncode == 1 and "larger than" in r.stderr, r.stdout + r.stderr
            argv, rss = measured(tmp_path, [test_daemon.JVMTRACED])
            wrapper = tmp_path / "jvmtraced"
            wrapper.write_text("#!/bin/sh\nexec " + " ".join(f"'{a}'" for a in argv) + ' "$@"\n')
            wrapper.chmod(0o755)
            saved, test_daemon.JVMTRACED = test_daemon.JVMTRACED, wrapper
            daemon = None
            try:
                daemon = test_daemon.Daemon(tmp_path)
                # Discovery looks at every process as it starts, in a child
                # the daemon may kill unwaited: its high-water mark is read
                # while it lives too.
                hwm = 0
                for _ in range(30):
                    hwm = max([hwm] + [vm_hwm_kib(p) for p in descendants(daemon.proc.pid)])
                    time.sleep(0.1)
            finally:
                test_daemon.JVMTRACED = saved
                log = daemon.stop() if daemon else ""
            peak = max(int(rss.read_text()), hwm) / 1024
            print(f"the daemon, its discovery having met the giant library: peak RSS {peak:.0f} MiB")
            assert peak < BOMB_MAX_RSS_MIB, f"the daemon or its scanner peaked at {peak:.0f} MiB:\n{log[-3000:]}"
        finally:
            target.kill()
            target.wait()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
