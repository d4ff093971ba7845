"""The two Debian packages, as a Debian user meets them: `cmake --build build
--target package` (the tools) and `scripts/build-patched-jdk.sh --deb` (the
patched JDK 17) are installed with apt into a fresh Debian 12 root (made by
mmdebstrap), a Java program runs on the packaged JDK traced by the packaged
jvmtrace, the packaged daemon starts from its unit's command line and
config, and `apt-get purge` + `autoremove` leave the root as it was."""
import json
import re
import shlex
import subprocess

import pytest

import debian_root
from conftest import BUILD_DIR
from helpers import REPO

JDK_HOME = "/usr/lib/jvm/jvmtrace-17-patched"


@pytest.fixture(scope="module")
def debs():
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD_DIR), "-DCMAKE_INSTALL_PREFIX=/usr"], check=True,
                   capture_output=True)
    r = subprocess.run(["cmake", "--build", str(BUILD_DIR), "--target", "package"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (tools,) = BUILD_DIR.glob("jvmtrace_*_amd64.deb")
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--deb"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("deb="), r.stdout
    return tools, last[len("deb="):]


def sh(root, cmd, **kw):
    """cmd (a shell line) in root; the completed process, checked unless check=False."""
    check = kw.pop("check", True)
    r = debian_root.run_in(root, ["sh", "-c", cmd], capture_output=True, text=True, **kw)
    if check:
        assert r.returncode == 0, f"{cmd}: {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def test_both_packages_install_trace_and_purge_cleanly_in_a_fresh_debian_root(debs, tmp_path):
    tools_deb, jdk_deb = debs
    # What a package build writes: /usr and /etc paths, the conffile, the scripts.
    listing = subprocess.run(["dpkg-deb", "-c", str(tools_deb)], capture_output=True, text=True, check=True).stdout
    paths = {l.split()[5].lstrip(".") for l in listing.splitlines()}
    for p in ("/usr/bin/jvmtrace", "/usr/bin/jvmtraced", "/usr/bin/jvmtrace-bt", "/etc/jvmtrace/jvmtraced.conf",
              "/usr/lib/systemd/system/jvmtraced.service", "/usr/share/man/man1/jvmtrace.1.gz",
              "/usr/share/man/man8/jvmtraced.8.gz", "/usr/share/jvmtrace/bpftrace/gcpause_stock.bt"):
        assert p in paths, f"{p} not in {tools_deb.name}"
    assert not any(p.startswith("/usr/local") for p in paths)

    root = debian_root.fresh_root(tmp_path / "root")
    before = debian_root.files_of(root)
    (root / "tmp/pkgs").mkdir()
    subprocess.run(["cp", str(tools_deb), str(jdk_deb), str(root / "tmp/pkgs")], check=True)
    subprocess.run(["cp", "-r", str(REPO / "tests/java"), str(root / "tmp/java")], check=True)
    sh(root, "apt-get update -qq")
    sh(root, "apt-get install -y -qq --no-install-recommends /tmp/pkgs/*.deb")

    # The tools, the man pages (from --help), jvmtrace-bt through its link.
    version = sh(root, "jvmtrace --version").stdout.split()
    assert version[0] == "jvmtrace" and re.fullmatch(r"\d+\.\d+\.\d+", version[1])
    assert "gcpause_stock" in sh(root, "jvmtrace-bt --list").stdout
    man = subprocess.run(["sh", "-c", f"zcat {root}/usr/share/man/man1/jvmtrace.1.gz"], capture_output=True,
                         text=True, check=True).stdout
    assert ".SS jvmtrace record" in man and "--segment-mb" in man
    # The unit is enabled (deb-systemd-helper's link; no systemd runs here to start it).
    assert (root / "etc/systemd/system/multi-user.target.wants/jvmtraced.service").is_symlink()

    # A real program on the packaged JDK, recorded from its first allocation
    # by the packaged jvmtrace; its pauses are -Xlog:gc's.
    java = f"{JDK_HOME}/bin/java"
    assert "17.0" in sh(root, f"{java} -version").stderr
    sh(root, f"mkdir -p /tmp/classes && {JDK_HOME}/bin/javac -d /tmp/classes /tmp/java/*.java")
    r = sh(root, f"cd /tmp && jvmtrace record -q -o /tmp/t.jvmtrace -- {java} -XX:+UseG1GC -Xms64m -Xmx64m "
                 f"-Xlog:gc:file=/tmp/gc.log -cp /tmp/classes AllocWorker 2000000 < /dev/null")
    assert "Recording PID" in r.stderr and "6 probes" in r.stderr, r.stderr
    sh(root, "jvmtrace report --check /tmp/t.jvmtrace")
    events = [json.loads(l) for l in sh(root, "jvmtrace dump --json /tmp/t.jvmtrace").stdout.splitlines()]
    pauses = [e for e in events if e.get("probe") == "gc__pause__end"]
    log = (root / "tmp/gc.log").read_text()
    assert len(pauses) == len(re.findall(r"GC\(\d+\) Pause ", log)) >= 3, log
    assert sum(1 for e in events if e.get("probe") == "tlab__refill") > 100

    # The daemon from its unit's command line and the packaged config.
    unit = (root / "usr/lib/systemd/system/jvmtraced.service").read_text()
    exec_start = next(l for l in unit.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    argv = shlex.split(exec_start)
    assert argv[:3] == ["/usr/bin/jvmtraced", "--config", "/etc/jvmtrace/jvmtraced.conf"]
    r = sh(root, f"{exec_start} & pid=$!; "
                 "i=0; until jvmtrace daemon status >/tmp/status 2>&1 || [ $i -ge 100 ]; do sleep 0.1; i=$((i+1)); done; "
                 "kill -TERM $pid; wait $pid; cat /tmp/status")
    assert "trace_dir /var/lib/jvmtraced" in r.stdout, r.stdout + r.stderr

    # Removed: purge, then the dependencies apt pulled in: nothing of ours
    # is left, and the root holds the files it held before.
    sh(root, "rm -rf /tmp/pkgs /tmp/java /tmp/classes")
    sh(root, "apt-get purge -y -qq jvmtrace jvmtrace-jdk-17 && apt-get autoremove --purge -y -qq")
    after = debian_root.files_of(root)
    assert after - before == set(), sorted(after - before)[:40]
    assert not (root / "etc/systemd/system/multi-user.target.wants/jvmtraced.service").exists()
