"""The daemon's `container` label says what it is (issue 33, item 6).

It is a container runtime's id only where the cgroup layout is one only
root makes (docs/decisions.md 128): a user who names a cgroup of their
delegated subtree after a victim's container
(`systemd-run --user --scope --unit=docker-<victim id>`: user@UID.service/
app.slice/docker-ID.scope) gets no container label, where the old
container_of() took the first 64 hex digits anywhere in /proc/PID/cgroup
and gave that user the victim's.

First the parsing alone (tests/fixtures/identity_of.cpp), on cgroup files
as docker, containerd, CRI-O and podman write them on cgroup v1 and v2;
then the daemon, with processes moved into real cgroups of this host and
its /metrics read."""
import os
import secrets
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from conftest import BUILD_DIR

IDENTITY_OF = BUILD_DIR / "tests/fixtures/identity_of"

A, B = secrets.token_hex(32), secrets.token_hex(32)
POD = str(uuid.uuid4())

# cgroup v1 files list every hierarchy; a container's process is in the
# runtime's cgroup in each (docker with its cgroupfs driver, v1).
V1_CONTROLLERS = ["cpuset", "cpu,cpuacct", "blkio", "memory", "devices", "freezer", "net_cls,net_prio",
                  "perf_event", "hugetlb", "pids", "rdma", "misc"]


def v1(path, systemd=None):
    """A cgroup v1 file with `path` in every controller's hierarchy and
    `systemd` (default: path) in name=systemd's, plus the empty v2 line a
    hybrid host adds."""
    lines = [f"{i + 2}:{c}:{path}" for i, c in enumerate(reversed(V1_CONTROLLERS))]
    return "\n".join(lines + [f"1:name=systemd:{systemd or path}", "0::/"]) + "\n"


def v2(path):
    return f"0::{path}\n"


CASES = {
    # --- what the runtimes write: the label is the container's id -------------------------
    "docker, cgroupfs, v1": (v1(f"/docker/{A}"), A),
    "docker, cgroupfs, v2": (v2(f"/docker/{A}"), A),
    "docker, systemd, v1": (v1(f"/system.slice/docker-{A}.scope"), A),
    "docker, systemd, v2": (v2(f"/system.slice/docker-{A}.scope"), A),
    "docker, systemd inside the container": (v2(f"/system.slice/docker-{A}.scope/init.scope"), A),
    "kubelet + containerd, systemd, burstable":
        (v2(f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD.replace('-', '_')}.slice/"
            f"cri-containerd-{A}.scope"), A),
    "kubelet + containerd, systemd, guaranteed":
        (v2(f"/kubepods.slice/kubepods-pod{POD.replace('-', '_')}.slice/cri-containerd-{A}.scope"), A),
    "kubelet + containerd, cgroupfs, v1, besteffort": (v1(f"/kubepods/besteffort/pod{POD}/{A}"), A),
    "kubelet + containerd, cgroupfs, v1, guaranteed": (v1(f"/kubepods/pod{POD}/{A}"), A),
    "kubelet + CRI-O, systemd":
        (v2(f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD.replace('-', '_')}.slice/"
            f"crio-{A}.scope"), A),
    "kubelet + CRI-O, systemd, crun's container cgroup":
        (v2(f"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{POD.replace('-', '_')}.slice/"
            f"crio-{A}.scope/container"), A),
    "kubelet + CRI-O, cgroupfs": (v1(f"/kubepods/burstable/pod{POD}/crio-{A}"), A),
    "kubelet + docker, systemd":
        (v1(f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{POD.replace('-', '_')}.slice/"
            f"docker-{A}.scope"), A),
    "podman (root), systemd, v2": (v2(f"/machine.slice/libpod-{A}.scope/container"), A),
    "podman (root), systemd, v1": (v1(f"/machine.slice/libpod-{A}.scope"), A),
    "podman (root), cgroupfs": (v1(f"/libpod_parent/libpod-{A}"), A),
    # A container that makes cgroups below its own (a systemd, a nested
    # runtime) is labelled by its own, the outermost.
    "a container's own docker-ID.scope below it": (v2(f"/system.slice/docker-{A}.scope/docker-{B}.scope"), A),
    # --- no container ----------------------------------------------------------------------
    "a login session": (v2("/user.slice/user-1000.slice/session-3.scope"), ""),
    "a system service": (v2("/system.slice/ssh.service"), ""),
    "the root cgroup, v1 and v2": (v1("/"), ""),
    "conmon (CRI-O's monitor), not the container": (v2(f"/machine.slice/crio-conmon-{A}.scope"), ""),
    # --- forged: a cgroup a user (or a service) may make with any name ---------------------
    "forged: user@UID.service/app.slice/docker-ID.scope (systemd-run --user --scope), v2":
        (v2(f"/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{A}.scope"), ""),
    "forged: the same in name=systemd on a hybrid host, v1":
        (v1("/user.slice", systemd=f"/user.slice/user-1000.slice/user@1000.service/app.slice/docker-{A}.scope"),
         ""),
    "forged: /docker/ID below the user's service": (v2(f"/user.slice/user-1000.slice/user@1000.service/docker/{A}"),
                                                   ""),
    "forged: kubepods below the user's service":
        (v2(f"/user.slice/user-1000.slice/user@1000.service/kubepods/pod{POD}/{A}"), ""),
    "forged: a delegated system service's subtree": (v2(f"/system.slice/build.service/docker-{A}.scope"), ""),
    "forged: 64 hex digits in a unit's name": (v2(f"/system.slice/cache-{A}.service"), ""),
    "rootless podman: the user's own cgroup":
        (v2(f"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{A}.scope"), ""),
    "rootless docker: the user's own cgroup":
        (v2(f"/user.slice/user-1000.slice/user@1000.service/docker.service/docker/{A}"), ""),
    # --- not an id -----------------------------------------------------------------------
    "65 hex digits": (v2(f"/docker/{A}0"), ""),
    "upper-case hex": (v2(f"/docker/{A.upper()}"), ""),
    "two containers in two hierarchies (v1)": (v1(f"/docker/{A}", systemd=f"/docker/{B}"), ""),
}


@pytest.mark.no_root
@pytest.mark.parametrize("case", list(CASES))
def test_container_label_of_cgroup_files(case):
    text, want = CASES[case]
    r = subprocess.run([str(IDENTITY_OF), "container"], input=text, capture_output=True, text=True, timeout=10,
                       check=True)
    assert r.stdout == want[:12] + "\n", (case, text)


# --- the daemon, with real cgroups ------------------------------------------------------------


def hierarchies():
    """Where this host mounts cgroup v2 and v1's name=systemd hierarchy (the
    ones systemd delegates user@UID.service in): [(mount point, 'v2'|'v1')]."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _, where, fs, opts = line.split()[:4]
        if fs == "cgroup2":
            out.append((Path(where), "v2"))
        elif fs == "cgroup" and "name=systemd" in opts.split(","):
            out.append((Path(where), "v1"))
    return out


class Cgroups:
    """The same path made in every hierarchy of hierarchies(); removed
    (deepest first) at the end."""

    def __init__(self):
        self.made = []

    def make(self, path):
        dirs = []
        for root, _ in hierarchies():
            d = root / path.lstrip("/")
            for p in reversed([d, *d.parents]):
                if p != root and root in p.parents and not p.exists():
                    p.mkdir()
                    self.made.append(p)
            dirs.append(d)
        assert dirs, "no cgroup v2 or name=systemd hierarchy mounted"
        return dirs

    def remove(self):
        for d in reversed(self.made):
            for _ in range(50):  # a killed process leaves its cgroup a moment later
                try:
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)


def test_daemon_labels_only_a_runtimes_container(tmp_path):
    """Two processes that map a libjvm.so, moved into real cgroups of this
    host (in cgroup v2 and v1's name=systemd, as systemd would): one in
    /system.slice/docker-A.scope (what docker's systemd driver makes: only
    root can), one in /user.slice/user-4242.slice/user@4242.service/
    app.slice/docker-A.scope (what `systemd-run --user --scope
    --unit=docker-A` makes in a user's own subtree).  The daemon labels the
    first container="A[:12]" and the second container="" (the old daemon
    gave both A's label)."""
    from test_daemon import Daemon, parse_exposition
    from test_hostile_input import mapper, some_library
    worker = tmp_path / "worker.sh"  # a stand-in for `jvmtrace stat --prometheus`: one block
    worker.write_text("#!/bin/sh\ntrap 'exit 0' INT TERM\necho 'Attached 1 probe. Hit Ctrl-C to end.' >&2\n"
                      "printf '# TYPE jvmtrace_losses_total counter\\njvmtrace_losses_total{mode=\"usdt\"} 0\\n# EOF\\n'\n"
                      "while sleep 0.2; do :; done\n")
    worker.chmod(0o755)
    lib = tmp_path / "lib/libjvm.so"
    lib.parent.mkdir()
    shutil.copy(some_library(), lib)
    cid = secrets.token_hex(32)
    cgroups = Cgroups()
    targets = []
    daemon = None
    try:
        genuine = cgroups.make(f"/system.slice/docker-{cid}.scope")
        forged = cgroups.make(f"/user.slice/user-4242.slice/user@4242.service/app.slice/docker-{cid}.scope")
        for dirs in (genuine, forged):
            join = "\n".join(f"open({str(d / 'cgroup.procs')!r}, 'w').write(str(os.getpid()))" for d in dirs)
            targets.append(mapper(lib, before=join))
        for t in targets:  # (where the kernel says they are)
            assert f"docker-{cid}.scope" in Path(f"/proc/{t.pid}/cgroup").read_text()
        daemon = Daemon(tmp_path, "--jvmtrace", str(worker))
        for t in targets:
            daemon.wait_listed(t.pid)
            r = daemon.client("attach", t.pid, "--stat")
            assert r.returncode == 0, r.stdout + r.stderr
        labels = {}
        deadline = time.monotonic() + 30
        while len(labels) < 2 and time.monotonic() < deadline:
            for (name, lab), _ in parse_exposition(daemon.metrics()).items():
                lab = dict(lab)
                if name == "jvmtrace_jvm_start_time_seconds":
                    labels[int(lab["pid"])] = lab["container"]
            time.sleep(0.2)
        assert labels == {targets[0].pid: cid[:12], targets[1].pid: ""}, (labels, [t.pid for t in targets])
    finally:
        for t in targets:
            t.kill()
            t.wait()
        if daemon:
            daemon.stop()
        cgroups.remove()
