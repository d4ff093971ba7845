"""`cmake --install`: the binaries, the systemd unit and the docs land where
they should, and the unit's command line is one jvmtraced accepts."""
import shlex
import subprocess

from conftest import BUILD_DIR


def test_install_tree_and_systemd_unit(tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(BUILD_DIR), "--prefix", str(prefix)], check=True,
                   capture_output=True, text=True)
    for exe in ("jvmtrace", "jvmtraced"):
        r = subprocess.run([str(prefix / "bin" / exe), "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "USAGE" in r.stdout, exe
    unit = (prefix / "lib/systemd/system/jvmtraced.service").read_text()
    exec_start = next(l for l in unit.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    argv = shlex.split(exec_start)
    assert argv[0].endswith("/bin/jvmtraced")
    # The unit's options parse (--help after them exits 0 only if they did).
    r = subprocess.run([str(prefix / "bin/jvmtraced"), *argv[1:], "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "KillSignal=SIGTERM" in unit and "WantedBy=multi-user.target" in unit
    for doc in ("daemon.md", "trace-format.md", "stock-mode.md", "stat.md", "analysis.md"):
        assert next(prefix.glob(f"share/doc/*/{doc}")).stat().st_size > 1000
