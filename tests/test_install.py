"""`cmake --install` (into a staging tree, DESTDIR): the binaries, the systemd
unit and its config, jvmtrace-bt and its tools, the man pages and the docs
land where they should, and the unit's command line starts a jvmtraced that
reads the shipped config.  (The Debian package of the same tree:
test_packages.py.)"""
import os
import re
import shlex
import subprocess
import time

from conftest import BUILD_DIR


def install_prefix():
    cache = (BUILD_DIR / "CMakeCache.txt").read_text()
    return re.search(r"^CMAKE_INSTALL_PREFIX:PATH=(.*)$", cache, re.M).group(1)


def test_install_tree_and_systemd_unit(tmp_path):
    stage = tmp_path / "stage"
    subprocess.run(["cmake", "--install", str(BUILD_DIR)], check=True, capture_output=True, text=True,
                   env=dict(os.environ, DESTDIR=str(stage)))
    prefix = stage / install_prefix().lstrip("/")
    for exe in ("jvmtrace", "jvmtraced"):
        r = subprocess.run([str(prefix / "bin" / exe), "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "USAGE" in r.stdout, exe
    r = subprocess.run([str(prefix / "bin/jvmtrace-bt"), "--list"], capture_output=True, text=True)
    assert r.returncode == 0 and "tlabstat_stock" in r.stdout, r.stderr
    for man in ("man1/jvmtrace.1.gz", "man8/jvmtraced.8.gz"):
        assert (prefix / "share/man" / man).stat().st_size > 1000
    unit = (prefix / "lib/systemd/system/jvmtraced.service").read_text()
    exec_start = next(l for l in unit.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    argv = shlex.split(exec_start)
    assert argv[0] == install_prefix() + "/bin/jvmtraced" and argv[1] == "--config"
    conf = stage / argv[2].lstrip("/")
    assert conf.is_file(), f"the unit's config {argv[2]} is not installed"
    assert "KillSignal=SIGTERM" in unit and "ExecReload=" in unit and "WantedBy=multi-user.target" in unit
    # The unit's command line with the shipped config starts the daemon (here
    # with its socket, trace directory and metrics moved aside).
    sock = tmp_path / "d.sock"
    d = subprocess.Popen([str(prefix / "bin/jvmtraced"), "--config", str(conf), "--socket", str(sock),
                          "--trace-dir", str(tmp_path / "traces"), "--metrics-port", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not sock.exists():
            assert d.poll() is None, d.stderr.read()
            assert time.monotonic() < deadline, "jvmtraced made no socket"
            time.sleep(0.05)
        r = subprocess.run([str(prefix / "bin/jvmtrace"), "daemon", "--socket", str(sock), "status"],
                           capture_output=True, text=True)
        assert r.returncode == 0 and "trace_dir" in r.stdout, r.stdout + r.stderr
    finally:
        d.terminate()
        d.wait(20)
    for doc in ("README.md", "daemon.md", "trace-format.md", "stock-mode.md", "stat.md", "analysis.md"):
        assert next(prefix.glob(f"share/doc/*/{doc}")).stat().st_size > 1000
    # The Prometheus rules, with their unit test, pass promtool where they are installed.
    rules = prefix / "share/jvmtrace/prometheus"
    r = subprocess.run(["promtool", "test", "rules", "jvmtrace-rules.test.yml"], cwd=rules, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
