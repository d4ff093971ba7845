"""A fresh Debian 12 root for tests that must start from a bare system (the
packages' install and removal, the main command's first minutes): made once
with mmdebstrap (Debian's own tool) as a tarball under the cache, unpacked
anew for each use.  Commands run in it through chroot inside a private mount
namespace with the host's /proc, /sys and /dev, so eBPF works there as on
the host and nothing stays mounted after."""
import os
import shutil
import subprocess
from pathlib import Path

CACHE = Path(os.environ.get("JVMTRACE_CACHE", "/var/cache/jvmtrace"))
# Bump to remake the tarball (its content is Debian's of the day it was made).
RECIPE = 1
TARBALL = CACHE / f"bookworm-minbase-{RECIPE}.tar"


def tarball():
    """The cached base root (minbase: essential and apt only), made if missing."""
    if not TARBALL.exists():
        TARBALL.parent.mkdir(parents=True, exist_ok=True)
        part = TARBALL.with_suffix(".part.tar")
        subprocess.run(["mmdebstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", str(part),
                        "http://deb.debian.org/debian"], check=True, capture_output=True, text=True)
        part.rename(TARBALL)
    return TARBALL


def fresh_root(where):
    """A new root at where (a directory that must not exist yet)."""
    where = Path(where)
    where.mkdir(parents=True)
    subprocess.run(["tar", "-C", str(where), "-xf", str(tarball())], check=True)
    resolv = where / "etc/resolv.conf"
    if resolv.is_symlink() or resolv.exists():
        resolv.unlink()  # (never written through a link into the host)
    shutil.copy("/etc/resolv.conf", resolv)
    return where


MOUNTS = 'set -e; r=$1; shift; mount -t proc proc "$r/proc"; mount --rbind /sys "$r/sys"; ' \
         'mount --rbind /dev "$r/dev"; mount -t tmpfs tmpfs "$r/run"; exec chroot "$r" "$@"'


def run_in(root, argv, **kw):
    """argv in root (chroot, private mounts); subprocess.run's result."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
           "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", MOUNTS, "root",
                           str(root), *map(str, argv)], env=env, **kw)


def files_of(root):
    """Every path in root, as root-relative strings, outside the places a
    package manager keeps its own state and logs."""
    skip = ("proc", "sys", "dev", "run", "tmp", "var/lib/apt", "var/lib/dpkg", "var/cache", "var/log")
    out = set()
    root = Path(root)
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel != "." and rel.startswith(skip):
            dirnames[:] = []
            continue
        for n in dirnames + filenames:
            r = os.path.normpath(os.path.join(rel, n))
            if not r.startswith(skip):
                out.add(r)
    return out
