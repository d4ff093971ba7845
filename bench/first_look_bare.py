#!/usr/bin/env python3
"""Benchmark: the README's main command as a newcomer meets it on a bare
machine.  A fresh Debian 12 root (mmdebstrap minbase: essential packages and
apt, nothing else; tests/debian_root.py), the commit under test cloned into
it, then `scripts/trace-demo.sh --first-look-only` run there as root (chroot
in a private mount namespace with the host's /proc, /sys and /dev, so its
eBPF is the host kernel's).  Prints the demo's own progress lines as they
come, each with the wall-clock seconds since the command started, then:

  first result   seconds until "first result shown" (the README's "first
                 result after")
  stat shown     seconds until `jvmtrace stat`'s report (the command's end)

Every package the first look needs is downloaded and installed in the root,
so the figures include the network; the JDK image build is not started
(--first-look-only).  Run on an otherwise idle machine:

  sudo bench/first_look_bare.py [--keep]       (--keep: leave the root in /tmp)
"""
import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import debian_root  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", action="store_true", help="leave the root (its path is printed)")
    args = ap.parse_args()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="first-look-bare."))
    root = debian_root.fresh_root(work / "root")
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(REPO), str(root / "root/jvmtrace")],
                       check=True)
        subprocess.run(["git", "-C", str(root / "root/jvmtrace"), "checkout", "--quiet", head], check=True)
        # (a minbase root has no git, no python3, no JDK, no compiler: the
        # demo's install step must bring all it needs)
        print(f"commit {head[:12]} in a fresh Debian 12 minbase root at {root}", flush=True)
        start = time.monotonic()
        marks = {}
        # (debian_root.run_in's command, streamed)
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", debian_root.MOUNTS, "root",
             str(root), "sh", "-c", "cd /root/jvmtrace && exec scripts/trace-demo.sh --first-look-only"],
            env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
                 "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, bufsize=1)
        for line in proc.stderr:
            t = time.monotonic() - start
            line = line.rstrip("\n")
            if line.startswith("[demo ") or line.startswith("[deps]"):
                print(f"{t:7.1f} s  {line}", flush=True)
            if "first result shown" in line:
                marks["first result"] = t
            if line.startswith("Attached ") and "stock mode" in line:
                marks["stat attached"] = t
        rc = proc.wait()
        marks["stat shown"] = time.monotonic() - start
        print(f"exit status {rc}")
        for k, v in marks.items():
            print(f"  {k:14} {v:6.1f} s ({int(v) // 60} min {int(v) % 60:02d} s)")
        return rc
    finally:
        if args.keep:
            print(f"kept: {root}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
