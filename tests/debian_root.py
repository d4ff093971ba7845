"""A fresh Debian 12 (or 13) root for tests that must start from a bare
system (the packages' install and removal, the main command's first
minutes): made once with mmdebstrap (Debian's own tool) as a tarball under
the cache, unpacked anew for each use.  Commands run in it through chroot inside a private mount
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
# Debian 13's: the sources a Debian 13 installation has (the release, its
# updates and its security archive), since the packages under test depend
# on the runtime of a point release.
TRIXIE_RECIPE = 1
SUITES = {
    "bookworm": (TARBALL, ["http://deb.debian.org/debian"]),
    "trixie": (CACHE / f"trixie-minbase-{TRIXIE_RECIPE}.tar",
               ["deb http://deb.debian.org/debian trixie main",
                "deb http://deb.debian.org/debian trixie-updates main",
                "deb http://deb.debian.org/debian-security trixie-security main"]),
}


def tarball(suite="bookworm"):
    """The cached base root of a suite (minbase: essential and apt only), made if missing."""
    path, mirrors = SUITES[suite]
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".part.tar")
        subprocess.run(["mmdebstrap", "--variant=minbase", "--include=ca-certificates", suite, str(part),
                        *mirrors], check=True, capture_output=True, text=True)
        part.rename(path)
    return path


def fresh_root(where, suite="bookworm"):
    """A new root of suite (bookworm: Debian 12, trixie: Debian 13) at where
    (a directory that must not exist yet)."""
    where = Path(where)
    where.mkdir(parents=True)
    subprocess.run(["tar", "-C", str(where), "-xf", str(tarball(suite))], check=True)
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
