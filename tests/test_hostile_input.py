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
# A symbol a hostile libjvm.so may carry: it demangles to
# GCTracer::report_gc_start(...), and its text is a bpftrace probe body and a
# second probe (the reproduction in the issue).
INJECTED_SYMBOL = '_ZN8GCTracer15report_gc_startE45a{printf("INJECTED\\n");exit()}kprobe:vfs_read'


def mapper(path, extra=""):
    """A process (this python) that maps `path` and waits for stdin to close:
    to /proc it has a library of that name mapped, as a JVM has libjvm.so.
    extra: statements run after the mapping (a chroot)."""
    code = ("import mmap, os, sys\n"
            f"f = open({str(path)!r}, 'rb')\n"
            "m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)\n"
            "f.close()\n"
            f"{extra}\n"
            "print('ready', os.getpid(), flush=True)\n"
            "sys.stdin.read()\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("ready "), p.stderr.read()
    return p


def crafted_libjvm(where):
    """A shared library named libjvm.so whose GCTracer::report_gc_start is
    INJECTED_SYMBOL (and report_gc_end a plain one): what a container could
    put where its JVM's libjvm.so is."""
    where.mkdir(parents=True, exist_ok=True)
    src = where / "lib.c"
    src.write_text("void placeholder_start(void) {}\nvoid placeholder_end(void) {}\n")
    lib = where / "libjvm.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    subprocess.run(["objcopy", f"--redefine-sym=placeholder_start={INJECTED_SYMBOL}",
                    "--redefine-sym=placeholder_end=_ZN8GCTracer13report_gc_endEv", str(lib)], check=True)
    assert INJECTED_SYMBOL in subprocess.run(["nm", str(lib)], capture_output=True, text=True).stdout
    return lib


def stand_in_bpftrace(where):
    """A `bpftrace` that only writes down the program it was given (and its
    descriptor 3's target), first on PATH: what would have run as root."""
    bindir = where / "bin"
    bindir.mkdir()
    seen = where / "bpftrace-args"
    fake = bindir / "bpftrace"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {seen}\nreadlink /proc/self/fd/3 >> {seen} 2>&1\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "JVMTRACE": str(JVMTRACE)}, seen


def test_a_crafted_symbol_never_reaches_a_bpftrace_program(tmp_path):
    """jvmtrace-bt replaces @SYM:GCTracer::report_gc_start@ with the mangled
    name found in the target's libjvm.so.  A library whose symbol carries
    bpftrace text is refused with a clear error, and bpftrace (a stand-in
    here, which writes down what it was given) never runs.  The old script
    took the name from `nm` unchecked: the stand-in got
    `uprobe:...:_ZN8GCTracer15report_gc_startE45a{printf("INJECTED\\n");exit()}kprobe:vfs_read`."""
    lib = crafted_libjvm(tmp_path / "jdk")
    env, seen = stand_in_bpftrace(tmp_path)
    target = mapper(lib)
    try:
        r = subprocess.run([str(REPO / "scripts/jvmtrace-bt"), "gcpause_stock", str(target.pid)],
                           capture_output=True, text=True, env=env, timeout=60)
    finally:
        target.kill()
        target.wait()
    program = seen.read_text() if seen.exists() else ""
    assert "INJECTED" not in program, f"the library's text reached bpftrace's program:\n{program}"
    assert not seen.exists(), f"bpftrace ran although a symbol was refused:\n{program}"
    assert r.returncode == 1, r.stdout + r.stderr
    assert "characters other than letters, digits and '_'" in r.stderr and "refused" in r.stderr, r.stderr
    # Said so once, escaped (the symbol's newline escape stays text; no raw control character).
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", r.stderr)


def test_jvmtrace_bt_hands_bpftrace_the_checked_file_not_a_name(tmp_path):
    """On a real (stock) JVM, the program jvmtrace-bt builds names libjvm.so
    as /proc/self/fd/3, and descriptor 3 of the bpftrace it runs is the file
    the JVM maps: no path below the target's root goes into the program or is
    opened by name (a container could swap what it leads to)."""
    env, seen = stand_in_bpftrace(tmp_path)
    java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
    jvm = subprocess.Popen([java, "-Xmx64m", "-cp", str(java_classes_dir(tmp_path)), "AllocWorker", "1000"],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline().startswith("ready ")
        r = subprocess.run([str(REPO / "scripts/jvmtrace-bt"), "allocbyclass_stock", str(jvm.pid)],
                           capture_output=True, text=True, env=env, timeout=60)
    finally:
        jvm.kill()
        jvm.wait()
    assert r.returncode == 0, r.stderr
    args = seen.read_text()
    program = args.split("-e\n", 1)[1]
    assert "uprobe:/proc/self/fd/3:_ZN11AllocTracer" in program, program
    assert not re.search(r"@(SYM|VMSTRUCT|LIBJVM)", program), program
    assert "/proc/" + str(jvm.pid) not in program, program
    assert args.strip().splitlines()[-1].endswith("/lib/server/libjvm.so"), args


def java_classes_dir(tmp_path):
    """tests/java compiled by Debian's JDK 17 (the tests here that need only a
    stock JVM do not wait for the patched one)."""
    out = tmp_path / "classes"
    if not out.exists():
        out.mkdir()
        sources = sorted(str(p) for p in (REPO / "tests/java").glob("*.java"))
        subprocess.run(["/usr/lib/jvm/java-17-openjdk-amd64/bin/javac", "-d", str(out), *sources], check=True)
    return out


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
