"""The Debian packages, as a Debian user meets them: `cmake --build build
--target package` (the tools) and `scripts/build-patched-jdk.sh --deb` (the
patched JDK 17; `--jdk 21 --deb`, `--jdk 25 --deb` for Debian 13) are
installed with apt into a fresh Debian 12 root (17) and a fresh Debian 13
root (21 and 25, with the same tools package), both made by mmdebstrap; a
Java program runs on each packaged JDK traced by the packaged jvmtrace, the
packaged daemon starts from its unit's command line and config, and
`apt-get purge` + `autoremove` leave the root as it was.  Then, in a
Debian 12 and a Debian 13 root with systemd booted (systemd-nspawn), the
unit is started on install, reloads, and is stopped on removal, and,
hardened, still attaches eBPF to a JVM."""
import json
import os
import re
import signal
import shlex
import subprocess
import time
from pathlib import Path

import pytest

import debian_root
from conftest import BUILD_DIR
from helpers import REPO

JDK_HOME = "/usr/lib/jvm/jvmtrace-17-patched"
# What each package puts where (a build of the tools' package writes them).
TOOLS_PATHS = ("/usr/bin/jvmtrace", "/usr/bin/jvmtraced", "/usr/bin/jvmtrace-bt", "/etc/jvmtrace/jvmtraced.conf",
               "/usr/lib/systemd/system/jvmtraced.service", "/usr/share/man/man1/jvmtrace.1.gz",
               "/usr/share/man/man8/jvmtraced.8.gz", "/usr/share/jvmtrace/bpftrace/gcpause_stock.bt",
               "/usr/share/jvmtrace/prometheus/jvmtrace-rules.yml",
               "/usr/share/jvmtrace/prometheus/jvmtrace-alerts.yml")


@pytest.fixture(scope="module")
def tools_deb():
    """The tools' package, built from this tree (CPack)."""
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(BUILD_DIR), "-DCMAKE_INSTALL_PREFIX=/usr"], check=True,
                   capture_output=True)
    r = subprocess.run(["cmake", "--build", str(BUILD_DIR), "--target", "package"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (tools,) = BUILD_DIR.glob("jvmtrace_*_amd64.deb")
    return tools


def jdk_deb(line):
    """The patched JDK of a line as a package (build-patched-jdk.sh --deb:
    from the cached image; the image is built first if missing)."""
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--jdk", line, "--deb"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("deb="), r.stdout
    return Path(last[len("deb="):])


@pytest.fixture(scope="module")
def debs(tools_deb):
    return tools_deb, jdk_deb("17")


@pytest.fixture(scope="module")
def debian13_jdk_debs():
    """jvmtrace-jdk-21 and jvmtrace-jdk-25 (Debian 13's runtime, patched)."""
    return {line: jdk_deb(line) for line in ("21", "25")}


def sh(root, cmd, **kw):
    """cmd (a shell line) in root; the completed process, checked unless check=False."""
    check = kw.pop("check", True)
    r = debian_root.run_in(root, ["sh", "-c", cmd], capture_output=True, text=True, **kw)
    if check:
        assert r.returncode == 0, f"{cmd}: {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def check_tools_listing(tools_deb):
    """What a package build writes: /usr and /etc paths, the conffile, the scripts."""
    listing = subprocess.run(["dpkg-deb", "-c", str(tools_deb)], capture_output=True, text=True, check=True).stdout
    paths = {l.split()[5].lstrip(".") for l in listing.splitlines()}
    for p in TOOLS_PATHS:
        assert p in paths, f"{p} not in {tools_deb.name}"
    assert not any(p.startswith("/usr/local") for p in paths)


def install_into_fresh_root(where, suite, debs):
    """A fresh root of suite with debs installed by apt (the way a user
    installs local .debs), tests/java beside them; (root, its files before)."""
    root = debian_root.fresh_root(where, suite)
    before = debian_root.files_of(root)
    (root / "tmp/pkgs").mkdir()
    subprocess.run(["cp", *map(str, debs), str(root / "tmp/pkgs")], check=True)
    subprocess.run(["cp", "-r", str(REPO / "tests/java"), str(root / "tmp/java")], check=True)
    sh(root, "apt-get update -qq")
    sh(root, "apt-get install -y -qq --no-install-recommends /tmp/pkgs/*.deb")
    return root, before


def check_installed_tools(root):
    """The tools, the man pages (from --help), jvmtrace-bt through its link,
    the unit enabled (deb-systemd-helper's link; no systemd runs here to
    start it)."""
    version = sh(root, "jvmtrace --version").stdout.split()
    assert version[0] == "jvmtrace" and re.fullmatch(r"\d+\.\d+\.\d+", version[1])
    assert "gcpause_stock" in sh(root, "jvmtrace-bt --list").stdout
    man = subprocess.run(["sh", "-c", f"zcat {root}/usr/share/man/man1/jvmtrace.1.gz"], capture_output=True,
                         text=True, check=True).stdout
    assert ".SS jvmtrace record" in man and "--segment-mb" in man
    assert (root / "etc/systemd/system/multi-user.target.wants/jvmtraced.service").is_symlink()


def check_daemon_starts_from_its_unit(root):
    """The daemon from its unit's command line and the packaged config."""
    unit = (root / "usr/lib/systemd/system/jvmtraced.service").read_text()
    exec_start = next(l for l in unit.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    argv = shlex.split(exec_start)
    assert argv[:3] == ["/usr/bin/jvmtraced", "--config", "/etc/jvmtrace/jvmtraced.conf"]
    r = sh(root, f"{exec_start} & pid=$!; "
                 "i=0; until jvmtrace daemon status >/tmp/status 2>&1 || [ $i -ge 100 ]; do sleep 0.1; i=$((i+1)); done; "
                 "kill -TERM $pid; wait $pid; cat /tmp/status")
    assert "trace_dir /var/lib/jvmtraced" in r.stdout, r.stdout + r.stderr


def check_ca_store(root, home):
    """The JDK's lib/security/cacerts is the system's store (ca-certificates-
    java's, /etc/ssl/certs/java/cacerts), and it holds Debian's CAs even
    where no Debian JRE is installed (whose `java`, on PATH through its
    alternatives, is what ca-certificates-java makes the store with)."""
    assert os.readlink(root / home.lstrip("/") / "lib/security/cacerts") == "/etc/ssl/certs/java/cacerts"
    r = sh(root, f"{home}/bin/keytool -list -cacerts -storepass changeit", check=False)
    m = re.search(r"Your keystore contains (\d+) entries", r.stdout)
    assert r.returncode == 0 and m and int(m.group(1)) > 100, r.stdout[-1000:] + r.stderr[-1000:]


def check_purge_leaves_root_as_it_was(root, before, packages):
    """Removed: purge, then the dependencies apt pulled in: nothing of ours
    is left, and the root holds the files it held before."""
    sh(root, "rm -rf /tmp/pkgs /tmp/java /tmp/classes*")
    sh(root, f"apt-get purge -y -qq {' '.join(packages)} && apt-get autoremove --purge -y -qq")
    after = debian_root.files_of(root)
    assert after - before == set(), sorted(after - before)[:40]
    assert not (root / "etc/systemd/system/multi-user.target.wants/jvmtraced.service").exists()


@pytest.mark.jdk_line("17")
def test_both_packages_install_trace_and_purge_cleanly_in_a_fresh_debian_root(debs, tmp_path):
    tools_deb, jdk_deb = debs
    check_tools_listing(tools_deb)
    root, before = install_into_fresh_root(tmp_path / "root", "bookworm", [tools_deb, jdk_deb])
    check_installed_tools(root)
    check_ca_store(root, JDK_HOME)

    # A real program on the packaged JDK, recorded from its first allocation
    # by the packaged jvmtrace; its pauses are -Xlog:gc's.
    java = f"{JDK_HOME}/bin/java"
    assert "17.0" in sh(root, f"{java} -version").stderr
    sh(root, f"mkdir -p /tmp/classes && {JDK_HOME}/bin/javac -d /tmp/classes /tmp/java/*.java")
    r = sh(root, f"cd /tmp && jvmtrace record -q -o /tmp/t.jvmtrace -- {java} -XX:+UseG1GC -Xms64m -Xmx64m "
                 f"-Xlog:gc:file=/tmp/gc.log -cp /tmp/classes AllocWorker 2000000 < /dev/null")
    assert "Recording PID" in r.stderr and "8 probes" in r.stderr, r.stderr  # (with the safepoint pair)
    sh(root, "jvmtrace report --check /tmp/t.jvmtrace")
    events = [json.loads(l) for l in sh(root, "jvmtrace dump --json /tmp/t.jvmtrace").stdout.splitlines()]
    pauses = [e for e in events if e.get("probe") == "gc__pause__end"]
    log = (root / "tmp/gc.log").read_text()
    assert len(pauses) == len(re.findall(r"GC\(\d+\) Pause ", log)) >= 3, log
    assert sum(1 for e in events if e.get("probe") == "tlab__refill") > 100

    check_daemon_starts_from_its_unit(root)
    check_purge_leaves_root_as_it_was(root, before, ["jvmtrace", "jvmtrace-jdk-17"])


# Debian 13's JDKs as packaged: the line, and what `java -version` names.
DEBIAN13_JDKS = {"21": 'version "21.0.12', "25": 'version "25.0.3'}


def traced_runs_on_the_packaged_jdk(root, line):
    """A real program (AllocWorker, compiled by the package's own javac) on
    the packaged JDK of a line, twice: under `jvmtrace stat` (its report at
    the JVM's exit) and under `jvmtrace record --stacks` (a trace that
    `report --check` passes); each run's pauses are its -Xlog:gc's."""
    home = f"/usr/lib/jvm/jvmtrace-{line}-patched"
    java, classes = f"{home}/bin/java", f"/tmp/classes-{line}"
    # Its own CDS archive is used where it was installed (-Xshare:on fails
    # when the archive does not match the image).
    assert DEBIAN13_JDKS[line] in sh(root, f"{java} -Xshare:on -version").stderr
    sh(root, f"mkdir -p {classes} && {home}/bin/javac -d {classes} /tmp/java/*.java")

    def program(gc_log):
        return f"{java} -XX:+UseG1GC -Xms64m -Xmx64m -Xlog:gc:file={gc_log} -cp {classes} AllocWorker 2000000 " \
               "< /dev/null"

    r = sh(root, f"cd /tmp && jvmtrace stat --json -- {program(f'/tmp/stat-{line}.log')}")
    (rep,) = [json.loads(l) for l in r.stderr.splitlines() if l.startswith("{")]
    log = (root / f"tmp/stat-{line}.log").read_text()
    assert rep["mode"] == "usdt" and rep["counters"]["tlab_refills"] > 100, rep["counters"]
    assert rep["counters"]["gc_pauses"] == len(re.findall(r"GC\(\d+\) Pause ", log)) >= 3, (rep["counters"], log)

    trace = f"/tmp/t-{line}.jvmtrace"
    r = sh(root, f"cd /tmp && jvmtrace record -q --stacks -o {trace} -- {program(f'/tmp/gc-{line}.log')}")
    assert "Recording PID" in r.stderr, r.stderr
    sh(root, f"jvmtrace report --check {trace}")
    events = [json.loads(l) for l in sh(root, f"jvmtrace dump --json {trace}").stdout.splitlines()]
    log = (root / f"tmp/gc-{line}.log").read_text()
    pauses = [e for e in events if e.get("probe") == "gc__pause__end"]
    assert len(pauses) == len(re.findall(r"GC\(\d+\) Pause ", log)) >= 3, log
    assert sum(1 for e in events if e.get("probe") == "tlab__refill") > 100
    # --stacks: the VM's own walks, named: most sampled bytes are the work loop's.
    rep = json.loads(sh(root, f"jvmtrace report --json {trace}").stdout)
    sampled = rep["allocation_samples"]["sampled_bytes"]
    in_work = sum(x["bytes"] for x in rep["allocation_sites"] if "AllocWorker.work" in (x["method"] or ""))
    assert sampled > 0 and in_work >= 0.7 * sampled, (in_work, rep["allocation_samples"], rep["allocation_sites"][:5])


@pytest.mark.jdk_line("21")
@pytest.mark.jdk_line("25")
def test_tools_and_jdks_21_and_25_install_trace_and_purge_cleanly_in_a_fresh_debian_13_root(
        tools_deb, debian13_jdk_debs, tmp_path):
    """Debian 13: the same tools package (built on Debian 12: its Depends,
    libelf1 among them, are met by Debian 13's libraries) and both JDK
    packages in one apt install; each JDK runs a traced program; none of
    them registers an alternative, and Debian's own JDK installs beside
    them; purge leaves the root as it was."""
    # Made of Debian 13's runtime: apt refuses them on Debian 12 (glibc).
    for deb in debian13_jdk_debs.values():
        depends = subprocess.run(["dpkg-deb", "-f", str(deb), "Depends"], capture_output=True, text=True,
                                 check=True).stdout
        assert "libc6 (>= 2.38)" in depends, (deb.name, depends)
    check_tools_listing(tools_deb)
    root, before = install_into_fresh_root(tmp_path / "root", "trixie", [tools_deb, *debian13_jdk_debs.values()])
    assert sh(root, ". /etc/os-release && echo $VERSION_ID").stdout.strip() == "13"
    check_installed_tools(root)
    # Beside the system's JDK, never instead of it: no alternative names ours.
    alternatives = root / "etc/alternatives"
    ours = [a.name for a in alternatives.iterdir() if a.is_symlink() and "jvmtrace-" in os.readlink(a)]
    assert ours == [], ours

    for line in DEBIAN13_JDKS:
        check_ca_store(root, f"/usr/lib/jvm/jvmtrace-{line}-patched")
        traced_runs_on_the_packaged_jdk(root, line)

    # Then the system's own JDK comes (Debian's openjdk-21): `java` is its,
    # ours are untouched and still run, and ca-certificates-java, which had
    # waited for a JRE of Debian's (decision 132 left its state alone), now
    # brings the store up to date itself.
    assert (root / "var/lib/ca-certificates-java/fresh").exists()
    sh(root, "apt-get install -y -qq --no-install-recommends openjdk-21-jre-headless")
    assert sh(root, "readlink -f /usr/bin/java").stdout.strip() == "/usr/lib/jvm/java-21-openjdk-amd64/bin/java"
    assert not (root / "var/lib/ca-certificates-java/fresh").exists()
    sh(root, "dpkg --verify jvmtrace-jdk-21 jvmtrace-jdk-25")
    for line in DEBIAN13_JDKS:
        check_ca_store(root, f"/usr/lib/jvm/jvmtrace-{line}-patched")
        assert DEBIAN13_JDKS[line] in sh(root, f"/usr/lib/jvm/jvmtrace-{line}-patched/bin/java -version").stderr

    check_daemon_starts_from_its_unit(root)
    check_purge_leaves_root_as_it_was(root, before, ["jvmtrace", "jvmtrace-jdk-21", "jvmtrace-jdk-25",
                                                     "openjdk-21-jre-headless"])


class BootedRoot:
    """A fresh Debian 12 (or 13: suite="trixie") root with systemd booted in
    it (systemd-nspawn, its own PID and mount namespaces, the host's
    network), for what only a running systemd shows: the unit started,
    reloaded, stopped.  Commands go in through nsenter into the container's
    init's namespaces."""

    def __init__(self, where, *nspawn_args, suite="bookworm"):
        self.root = debian_root.fresh_root(where, suite)
        sh(self.root, "apt-get update -qq && apt-get install -y -qq --no-install-recommends systemd systemd-sysv dbus")
        self.nspawn = subprocess.Popen(["systemd-nspawn", "-D", str(self.root), "--register=no", "--keep-unit",
                                        *nspawn_args, "--boot", "-q"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.init = None
        try:
            self._boot()
        except BaseException:
            self.close()  # (a container whose boot failed must not outlive the test)
            raise

    def _boot(self):
        deadline = time.monotonic() + 30
        while self.init is None:
            assert self.nspawn.poll() is None, self.nspawn.stderr.read()
            assert time.monotonic() < deadline, "systemd-nspawn started no init"
            children = Path(f"/proc/{self.nspawn.pid}/task/{self.nspawn.pid}/children").read_text().split()
            if children and Path(f"/proc/{children[0]}/comm").read_text().strip() == "systemd":
                self.init = int(children[0])
            time.sleep(0.1)
        # (systemctl talks to systemd over /run/systemd/private, which comes a
        # moment after init starts: until then it fails at once, "Failed to
        # connect to bus" (systemd 252), "Failed to connect to system scope
        # bus via local transport" (257))
        deadline = time.monotonic() + 120
        while True:
            r = self.run("systemctl is-system-running --wait", check=False, timeout=120)
            if not re.search(r"Failed to connect to .*bus", r.stderr) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert r.stdout.strip() in ("running", "degraded"), r.stdout + r.stderr

    def run(self, cmd, check=True, timeout=600):
        r = subprocess.run(["nsenter", "-t", str(self.init), "-a", "sh", "-c", cmd], capture_output=True, text=True,
                           timeout=timeout, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                                                 "DEBIAN_FRONTEND": "noninteractive"})
        if check:
            assert r.returncode == 0, f"{cmd}: {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        return r

    def close(self):
        self.nspawn.terminate()  # systemd-nspawn asks the container's systemd to power off
        try:
            self.nspawn.wait(60)
        except subprocess.TimeoutExpired:
            self.nspawn.kill()
            self.nspawn.wait()
            if self.init:  # (its init would stay, orphaned, with the container's processes)
                try:
                    os.kill(self.init, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.mark.parametrize("suite", ["bookworm", "trixie"])
def test_packaged_daemon_starts_reloads_and_stops_under_systemd(tools_deb, tmp_path, suite):
    """On Debian 12 and on Debian 13 (systemd 252 and 257), from the same package."""
    booted = BootedRoot(tmp_path / "root", suite=suite)
    try:
        # (/tmp is the container's own tmpfs: the package goes in /root)
        subprocess.run(["cp", str(tools_deb), str(booted.root / "root/jvmtrace.deb")], check=True)
        booted.run("apt-get install -y -qq --no-install-recommends /root/jvmtrace.deb")
        # Installed: enabled and running, its state directory root's only.
        assert booted.run("systemctl is-enabled jvmtraced").stdout.strip() == "enabled"
        assert booted.run("systemctl is-active jvmtraced").stdout.strip() == "active"
        status = booted.run("i=0; until jvmtrace daemon status; do i=$((i+1)); [ $i -lt 50 ] || exit 1; "
                            "sleep 0.1; done").stdout
        assert "trace_dir /var/lib/jvmtraced" in status, status
        assert booted.run("stat -c %a /var/lib/jvmtraced").stdout.strip() == "750"
        pid = booted.run("systemctl show -p MainPID --value jvmtraced").stdout.strip()
        # systemctl reload re-reads the config (SIGHUP), same process.
        booted.run("systemctl reload jvmtraced")
        assert booted.run("systemctl is-active jvmtraced").stdout.strip() == "active"
        assert booted.run("systemctl show -p MainPID --value jvmtraced").stdout.strip() == pid
        # Removed: stopped first, then gone; purged: forgotten.
        booted.run("apt-get remove -y -qq jvmtrace")
        assert booted.run("systemctl is-active jvmtraced", check=False).stdout.strip() == "inactive"
        assert booted.run("pidof jvmtraced", check=False).returncode != 0
        booted.run("apt-get purge -y -qq jvmtrace")
        r = booted.run("systemctl is-enabled jvmtraced", check=False)
        assert r.returncode != 0 and "masked" not in r.stdout, r.stdout + r.stderr
        assert not (booted.root / "var/lib/jvmtraced").exists() and not (booted.root / "etc/jvmtrace").exists()
    finally:
        booted.close()


# The unit's hardening (docs/security.md, "The systemd unit"): what systemd
# shows of it, and what the running daemon's process has.
HARDENING = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateDevices": "yes",
             "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "UMask": "0077"}  # (as systemctl sorts them)
CAPABILITIES = {"cap_bpf", "cap_perfmon", "cap_sys_admin", "cap_sys_ptrace", "cap_sys_chroot", "cap_setuid",
                "cap_setgid", "cap_dac_read_search", "cap_dac_override"}
JDK17 = "/usr/lib/jvm/java-17-openjdk-amd64"


@pytest.mark.parametrize("suite", ["bookworm", pytest.param("trixie", marks=pytest.mark.jdk_line("21"))])
def test_hardened_unit_still_attaches_ebpf_to_a_jvm_under_systemd(tools_deb, tmp_path, suite, request):
    """The packaged unit under a real systemd (systemd-nspawn, with the
    capabilities eBPF needs given to the container): its hardening is in
    force (systemd's view, and the daemon's own /proc status: no new
    privileges, only the capabilities attach takes, a read-only /usr and
    /etc, no /home, a private /dev, no netlink socket), and through it the
    daemon still attaches: stat to a JVM in the container gives non-zero
    figures on /metrics, and a recording lands in its state directory.
    (The unit had no hardening before issue 21.)  On Debian 12 the JVM is
    Debian's JDK 17, bound in read-only; on Debian 13 (systemd 257) it is
    the packaged jvmtrace-jdk-21, installed with the tools."""
    # The container's part: systemd-nspawn keeps CAP_BPF and CAP_PERFMON
    # from its payload and its seccomp filter refuses bpf() and
    # perf_event_open() (every service of the container inherits it): given
    # here, so that what is tested is the unit's own hardening.
    nspawn_args = ["--capability=CAP_BPF,CAP_PERFMON", "--system-call-filter=bpf perf_event_open"]
    if suite == "bookworm":
        java_home, debs = JDK17, [tools_deb]
        nspawn_args += [f"--bind-ro={JDK17}", "--bind-ro=/etc/java-17-openjdk"]
    else:
        java_home, debs = "/usr/lib/jvm/jvmtrace-21-patched", [tools_deb, request.getfixturevalue(
            "debian13_jdk_debs")["21"]]
    booted = BootedRoot(tmp_path / "root", *nspawn_args, suite=suite)
    try:
        (booted.root / "root/debs").mkdir()
        subprocess.run(["cp", *map(str, debs), str(booted.root / "root/debs")], check=True)
        classes = booted.root / "root/classes"
        classes.mkdir()
        # (class files of 17's javac: every line runs them)
        subprocess.run([f"{JDK17}/bin/javac", "-d", str(classes), *map(str, (REPO / "tests/java").glob("*.java"))],
                       check=True, capture_output=True)
        booted.run("apt-get install -y -qq --no-install-recommends /root/debs/*.deb")
        assert booted.run("systemctl is-active jvmtraced").stdout.strip() == "active"
        shown = booted.run("systemctl show jvmtraced -p " + " -p ".join(HARDENING)).stdout
        props = dict(l.split("=", 1) for l in shown.splitlines() if "=" in l)
        for k, v in HARDENING.items():
            assert props.get(k) == v, (k, props.get(k))
        pid = booted.run("systemctl show -p MainPID --value jvmtraced").stdout.strip()
        status = booted.run(f"cat /proc/{pid}/status").stdout
        assert re.search(r"^NoNewPrivs:\s+1$", status, re.M), status
        bnd = int(re.search(r"^CapBnd:\s+([0-9a-f]+)$", status, re.M).group(1), 16)
        names = booted.run("capsh --decode=%x 2>/dev/null || true" % bnd, check=False).stdout
        if "=" in names:  # (capsh is libcap2-bin's: in the root if apt pulled it in)
            assert set(names.split("=", 1)[1].strip().split(",")) == CAPABILITIES, names
        else:
            assert bin(bnd).count("1") == len(CAPABILITIES), hex(bnd)
        # What the daemon's mount namespace holds: /usr read-only, /home empty, /dev private.
        ro = booted.run(f"nsenter -t {pid} -m sh -c 'touch /usr/jvmtrace-probe; echo $?'", check=False).stdout
        assert ro.strip().endswith("1"), ro
        assert booted.run(f"nsenter -t {pid} -m ls /dev").stdout.split() != \
            booted.run("ls /dev").stdout.split()
        # A JVM in the container, stat attached through the daemon: eBPF works under all of it.
        # It allocates until the test kills it ("forever"; with stdin at EOF it
        # does not wait for "go"): a fixed amount of work (400M iterations) was
        # done, and the JVM gone, before the record attach below came.
        booted.run(f"cd /root && nohup {java_home}/bin/java -cp /root/classes AllocWorker forever "
                   "</dev/null >/root/jvm.out 2>&1 & echo $! > /root/jvm.pid")
        jvm = booted.run("cat /root/jvm.pid").stdout.strip()
        booted.run(f"i=0; until jvmtrace daemon list | grep -q '^{jvm} '; do i=$((i+1)); [ $i -lt 100 ] || exit 1; "
                   "sleep 0.1; done")
        r = booted.run(f"jvmtrace daemon attach {jvm} --stat", check=False)
        assert r.returncode == 0 and "ok: stat attached" in r.stdout, r.stdout + r.stderr + \
            booted.run("journalctl -u jvmtraced --no-pager | tail -20", check=False).stdout
        metrics = "exec 3<>/dev/tcp/127.0.0.1/9464; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3"
        got = ""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = booted.run(f"bash -c {shlex.quote(metrics)}", check=False).stdout
            m = re.search(r'^jvmtrace_tlab_refills_total\{[^}]*\} (\d+)', got, re.M)
            if m and int(m.group(1)) > 0:
                break
            time.sleep(0.5)
        assert m and int(m.group(1)) > 0, got[-2000:]
        assert booted.run(f"kill -0 {jvm}", check=False).returncode == 0, \
            "the JVM died: " + booted.run("tail -20 /root/jvm.out", check=False).stdout
        r = booted.run(f"jvmtrace daemon attach {jvm} --record --duration 1", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        # (the packaged config rotates into segments: NAME.000000.jvmtrace ...)
        first = r.stdout.split("-> ")[1].split()[0].replace("NNNNNN", "000000")
        assert first.startswith("/var/lib/jvmtraced/"), r.stdout
        booted.run(f"i=0; until jvmtrace report {first} 2>/dev/null | grep -q 'trace complete'; do i=$((i+1)); "
                   "[ $i -lt 100 ] || exit 1; sleep 0.1; done")
        booted.run(f"kill {jvm}", check=False)
    finally:
        booted.close()
