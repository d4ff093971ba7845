"""Nothing a container, a target process, a trace file or a local client does
can stall, steer or swell root's tools (issue 21, docs/security.md).

Real processes, real mount namespaces and chroots, a real FUSE file system,
real eBPF where an attach is part of it, and real limits (RLIMIT_AS through
prlimit).  Each test here failed on the code before the fix it guards: the
commit that added it, and docs/notes.md ("Session 11"), say how it failed."""
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import BUILD_DIR
from helpers import REPO, wait_until

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
FIXTURE_TRACE = REPO / "tests/fixtures/traces/fixture-v1.jvmtrace"


@pytest.mark.parametrize("command", ["flame", "export", "report --html"])
def test_output_files_never_follow_a_planted_link(tmp_path, command):
    """A symbolic link planted at the output name is refused with a clear
    error and its target is untouched; a hard link planted there (an existing
    file) is replaced by a new file, never written through.  The old code
    opened the name with O_CREAT|O_TRUNC: root overwrote the link's target."""
    victim = tmp_path / "victim"
    victim.write_text("root's file\n")
    suffix = {"flame": ".svg", "export": ".json", "report --html": ".html"}[command]
    argv = {"flame": ["flame", str(FIXTURE_TRACE), "-o"],
            "export": ["export", "--perfetto", str(FIXTURE_TRACE), "-o"],
            "report --html": ["report", "--html", str(FIXTURE_TRACE), "-o"]}[command]
    out = tmp_path / f"out{suffix}"
    out.symlink_to(victim)
    r = subprocess.run([str(JVMTRACE), *argv, str(out)], capture_output=True, text=True, timeout=120)
    assert victim.read_text() == "root's file\n", f"{command} wrote through the symlink"
    assert out.is_symlink()
    assert r.returncode == 1 and "symbolic link" in r.stderr, r.stdout[-500:] + r.stderr
    # A hard link at the name: the name gets a new file, the other link keeps its bytes.
    out.unlink()
    os.link(victim, out)
    r = subprocess.run([str(JVMTRACE), *argv, str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "root's file\n", f"{command} wrote through the hard link"
    assert out.stat().st_ino != victim.stat().st_ino and out.stat().st_size > 100
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")], "a temporary was left behind"
