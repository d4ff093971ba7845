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


def mapper(path, extra="", before=""):
    """A process (this python) that maps `path` and waits for stdin to close:
    to /proc it has a library of that name mapped, as a JVM has libjvm.so.
    before, extra: statements run before the mapping (an unshare) and after
    it (a chroot)."""
    code = ("import ctypes, mmap, os, sys\n"
            f"{before}\n"
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


class FifoWriter:
    """A FIFO at path and a writer waiting on it: open() for writing
    returns only once a reader has opened the FIFO, so `opened` tells
    whether anything ever did.  start() starts the writer; close() lets it
    go (and everything else blocked on the FIFO) by opening the FIFO itself,
    after noting in `was_opened` whether anything had before."""

    def __init__(self, path):
        self.path = path
        os.mkfifo(path)
        self.opened = threading.Event()
        self.held = []

    def start(self):
        def writer():
            try:
                self.held.append(os.open(self.path, os.O_WRONLY))
                self.opened.set()
            except OSError:
                pass
        threading.Thread(target=writer, daemon=True).start()
        return self

    def close(self):
        self.was_opened = self.opened.is_set()  # (our own open below sets it)
        try:
            os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass
        for fd in self.held:
            os.close(fd)


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



def gcpause_stock_on_a_mapper(lib, tmp_path):
    """jvmtrace-bt gcpause_stock on a process that maps lib, with a stand-in
    bpftrace that keeps the program it was given: (the run, the file the
    stand-in wrote, which exists only if it ran)."""
    env, seen = stand_in_bpftrace(tmp_path)
    target = mapper(lib)
    try:
        r = subprocess.run([str(REPO / "scripts/jvmtrace-bt"), "gcpause_stock", str(target.pid)],
                           capture_output=True, text=True, env=env, timeout=60)
    finally:
        target.kill()
        target.wait()
    return r, seen

def test_a_crafted_symbol_never_reaches_a_bpftrace_program(tmp_path):
    """jvmtrace-bt replaces @SYM:GCTracer::report_gc_start@ with the mangled
    name found in the target's libjvm.so.  A library whose symbol carries
    bpftrace text is refused with a clear error, and bpftrace (a stand-in
    here, which writes down what it was given) never runs.  The old script
    took the name from `nm` unchecked: the stand-in got
    `uprobe:...:_ZN8GCTracer15report_gc_startE45a{printf("INJECTED\\n");exit()}kprobe:vfs_read`."""
    lib = crafted_libjvm(tmp_path / "jdk")
    r, seen = gcpause_stock_on_a_mapper(lib, tmp_path)
    program = seen.read_text() if seen.exists() else ""
    assert "INJECTED" not in program, f"the library's text reached bpftrace's program:\n{program}"
    assert not seen.exists(), f"bpftrace ran although a symbol was refused:\n{program}"
    assert r.returncode == 1, r.stdout + r.stderr
    assert "characters other than letters, digits and '_'" in r.stderr and "refused" in r.stderr, r.stderr
    # Said so once, escaped (the symbol's newline escape stays text; no raw control character).
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", r.stderr)


GC_CAUSE_LIB = """
namespace GCCause {
enum Cause { a, b, c, d, e, f, g, h };
const char* to_string(Cause cause);
}
const char* GCCause::to_string(Cause cause) {
  switch (cause) {
    case a: return "System.gc()";
    case b: return "Allocation Failure";
    case c: return THIRD;
    case d: return "G1 Evacuation Pause";
    case e: return "Full GC for -Xshare:dump";
    case f: return "No GC";
    case g: return "Ergonomics";
    case h: return "Metadata GC Threshold";
  }
  return "unknown GCCause";
}
class GCTracer { public: void report_gc_start(int, const long&); void report_gc_end(const long&, void*); };
void GCTracer::report_gc_start(int, const long&) {}
void GCTracer::report_gc_end(const long&, void*) {}
"""


@pytest.mark.parametrize("third,flags", [('"G1 Humongous Allocation"', []),
                                         (r'"x\"; } END { printf(\"INJECTED\"); } //"', []),
                                         (r'"100%d"', []),
                                         ('"G1 Humongous Allocation"', ["-fno-jump-tables"])],
                         ids=["plain", "quote", "percent", "another-shape"])
def test_gc_cause_names_reach_a_bpftrace_program_only_plain(tmp_path, third, flags):
    """gcpause_stock gets the GC causes' names from the libjvm.so the target
    maps (its GCCause::to_string, compiled here by g++ as HotSpot's is: a jump
    table of `lea STR(%rip),%rax; ret` cases), and they go into the program
    as string literals.  All plain: each is there, by its number.  One with a
    quote (bpftrace code) or a '%': none is, jvmtrace target says why, and
    the tool falls back to numbers; the text never reaches bpftrace.  Nor
    when the function is compiled in another shape (compare-and-branch, no
    jump table): nothing is guessed."""
    where = tmp_path / "jdk"
    where.mkdir()
    (where / "lib.cpp").write_text(GC_CAUSE_LIB.replace("THIRD", third))
    lib = where / "libjvm.so"
    subprocess.run(["g++", "-O2", "-fPIC", *flags, "-shared", "-o", str(lib), str(where / "lib.cpp")], check=True)
    r, seen = gcpause_stock_on_a_mapper(lib, tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    program = seen.read_text().split("-e\n", 1)[1]
    names = dict(re.findall(r'@cause_name\[(\d+)\] = "([^"]*)";', program))
    if not flags and third.startswith('"G1'):
        assert names == {"0": "System.gc()", "1": "Allocation Failure", "2": "G1 Humongous Allocation",
                         "3": "G1 Evacuation Pause", "4": "Full GC for -Xshare:dump", "5": "No GC",
                         "6": "Ergonomics", "7": "Metadata GC Threshold", "4294967296": ""}, names
        return
    assert "INJECTED" not in program and "100%" not in program, program
    assert names == {"4294967296": ""}, names
    why = "is not compiled as a jump table" if flags else "cause 2 is not a plain name"
    assert why in r.stderr and "shown by number" in r.stderr, r.stderr


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


@pytest.mark.parametrize("planted", ["fifo", "symlink to a host file"])
def test_jvmtrace_bt_never_opens_what_a_container_planted_at_the_librarys_path(tmp_path, planted):
    """A process in its own mount namespace (bpftrace reads files by their
    path through /proc/PID/root there) maps a file named libjvm.so and
    chroots into a directory of its own, where that path is a FIFO, or a
    symbolic link to the host's libjvm.so (an absolute link, which a path
    walk through /proc/PID/root resolves on the host).  jvmtrace-bt refuses
    at once: the path does not lead, through no symbolic link, to the file the
    process maps; bpftrace never runs and no writer of the FIFO sees a reader.
    The old script ran nm on /proc/PID/root/<path>: on the symlink it read the
    host's libjvm.so and ran bpftrace on it (the stand-in got the program); on
    the FIFO nm happened to refuse ("not an ordinary file")."""
    box = tmp_path / "box"
    lib = box / "lib/libjvm.so"
    lib.parent.mkdir(parents=True)
    shutil.copy(some_library(), lib)
    at = Path(str(box) + str(lib))  # what /proc/PID/root + the maps text leads to
    at.parent.mkdir(parents=True)
    fifo = FifoWriter(at).start() if planted == "fifo" else None
    if not fifo:
        at.symlink_to("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so")
    env, seen = stand_in_bpftrace(tmp_path)
    # (CLONE_NEWNS: a mount namespace of its own)
    target = mapper(lib, before="assert ctypes.CDLL(None).unshare(0x00020000) == 0",
                    extra=f"os.chroot({str(box)!r}); os.chdir('/')")
    try:
        assert os.readlink(f"/proc/{target.pid}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        try:
            r = subprocess.run([str(REPO / "scripts/jvmtrace-bt"), "gcpause_stock", str(target.pid)],
                               capture_output=True, text=True, env=env, timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError("jvmtrace-bt did not return within 20 s: it waits on the FIFO")
    finally:
        target.kill()
        target.wait()
        if fifo:
            fifo.close()
    assert not (fifo and fifo.was_opened), "something opened the FIFO planted at the library's path"
    assert not seen.exists(), f"bpftrace ran on what was planted:\n{seen.read_text()[:600]}"
    assert r.returncode == 1 and "does not lead to the file it maps" in r.stderr, r.stderr


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


# --- the daemon: nothing a process does can make its loop wait --------------------

def status_time(daemon, timeout=2.0):
    """Seconds `status` took to be answered on the control socket; fails
    after timeout (the daemon's loop is held up)."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(daemon.sock)
        s.sendall(b"status\n")
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    except socket.timeout:
        raise AssertionError(f"the daemon did not answer status within {timeout} s; its log ends:\n"
                             + "\n".join(daemon.log.seen()[-15:]))
    finally:
        s.close()
    assert out.startswith(b"jvmtraced pid "), out
    return time.monotonic() - t0


def answers_throughout(daemon, seconds, timeout=2.0):
    """status answered within timeout, again and again for `seconds`."""
    end = time.monotonic() + seconds
    worst = 0.0
    while time.monotonic() < end:
        worst = max(worst, status_time(daemon, timeout))
        time.sleep(0.2)
    return worst


def some_library():
    """A real shared library's bytes, for a file named libjvm.so that is no JVM's."""
    return Path("/lib/x86_64-linux-gnu/libz.so.1").resolve()


def test_a_fifo_under_a_chroot_cannot_stall_the_daemon(tmp_path):
    """The reproduction of the issue: a process maps a file named libjvm.so,
    then chroots into a directory it owns, where the path its maps show (as
    the daemon reads them) leads to a FIFO.  The old daemon opened
    /proc/PID/root + that path and its only loop blocked in open(): `status`
    got no answer within 2 s.  Now discovery opens the mapped file itself
    (/proc/PID/map_files), in a child process: status is answered within 2 s
    throughout, and a writer of the FIFO never sees a reader (on the old
    daemon, with a writer waiting, its open() returned and the writer saw it)."""
    from test_daemon import Daemon
    box = tmp_path / "box"
    lib = box / "lib/libjvm.so"
    lib.parent.mkdir(parents=True)
    shutil.copy(some_library(), lib)
    # /proc/PID/root is the box once it has chrooted: the daemon's path for
    # the library, box + the maps text, is this FIFO.
    at = Path(str(box) + str(lib))
    at.parent.mkdir(parents=True)
    fifo = FifoWriter(at)
    daemon = Daemon(tmp_path)
    target = None
    try:
        target = mapper(lib, extra=f"os.chroot({str(box)!r}); os.chdir('/')")
        assert Path(f"/proc/{target.pid}/root").resolve() == box
        worst = answers_throughout(daemon, 5)  # (several scans: the first one after it appeared looked at it)
        daemon.wait_listed(target.pid)  # discovery looked at it (the mapped file: a regular file) and went on
        fifo.start()
        worst = max(worst, answers_throughout(daemon, 3))
        assert not fifo.opened.is_set(), "something opened the FIFO planted at the library's path"
        print(f"slowest status answer: {worst * 1000:.1f} ms")
    finally:
        if target:
            target.kill()
            target.wait()
        log = daemon.stop()
        fifo.close()
    assert "found JVM" in log


@pytest.fixture
def stalling_library(tmp_path):
    """A libjvm.so on a FUSE file system that stops answering when asked
    (tests/fixtures/stall_fs.py): (its path, a function that stalls it)."""
    mnt = tmp_path / "fuse"
    mnt.mkdir()
    flag = tmp_path / "stall"
    server = subprocess.Popen(["/usr/bin/python3", str(REPO / "tests/fixtures/stall_fs.py"), str(mnt),
                               str(some_library()), str(flag)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.strip() == "mounted", server.stderr.read()
        yield mnt / "libjvm.so", lambda: flag.write_text("stall\n")
    finally:
        server.kill()  # ends the connection: whatever still waits on it fails now
        server.wait()
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_library_on_a_file_system_that_never_answers_cannot_stall_the_daemon(tmp_path, stalling_library):
    """A process maps its libjvm.so from a FUSE mount whose server then stops
    answering: any read of that file, or of its attributes, waits.  The
    daemon's loop never waits for it (discovery runs in a child process; a
    child stuck on one process is replaced and that process is left alone),
    so status is answered within 2 s throughout and a JVM started later is
    still found.  The old daemon's stat() of the library hung its loop."""
    from test_daemon import Daemon
    lib, stall = stalling_library
    target = mapper(lib)
    stall()
    daemon = Daemon(tmp_path)
    jvm = None
    try:
        worst = answers_throughout(daemon, 6)
        daemon.log.wait_for(lambda l: f"PID {target.pid}: reading its /proc files or its libjvm.so did not finish"
                            in l, 10, "the daemon to give up on the stalled process")
        java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java"
        jvm = subprocess.Popen([java, "-Xmx64m", "-cp", str(java_classes_dir(tmp_path)), "AllocWorker", "1000"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert jvm.stdout.readline().startswith("ready ")
        daemon.wait_listed(jvm.pid, timeout=15)
        worst = max(worst, status_time(daemon))
        print(f"slowest status answer: {worst * 1000:.1f} ms")
    finally:
        for p in (jvm, target):
            if p:
                p.kill()
        daemon.stop()


# --- bounded memory against a hostile JVM or file --------------------------------

FIXTURE = BUILD_DIR / "tests/fixtures/usdt_fixture"


def limited(argv, mib):
    """argv under an RLIMIT_AS of mib MiB (prlimit): what it may map in all."""
    return ["prlimit", f"--as={mib << 20}", "--", *map(str, argv)]


def test_a_trace_block_of_tiny_records_reads_in_bounded_memory(tmp_path):
    """A crafted trace: one block of the largest size the format allows
    (16 MiB) full of the smallest valid records (5.6 million 3-byte lost
    records).  The old reader decoded a whole block into memory before
    handing any record out: about 1.5 GiB for this block, so under a 256 MiB
    RLIMIT_AS it died of std::bad_alloc (SIGABRT).  Now a block costs its
    payload: dump and report read it whole within the limit and count every
    record."""
    crafted = tmp_path / "tiny.jvmtrace"
    r = subprocess.run([str(BUILD_DIR / "tests/fixtures/trace_edit"), "-", str(crafted), "tiny-records",
                        str(16 << 20)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    records = (16 << 20) // 3
    for argv in (["report", "--json", crafted], ["dump", "--json", crafted]):
        r = subprocess.run(limited([JVMTRACE, *argv], 256), capture_output=True, text=True, timeout=300)
        assert r.returncode == 3, f"{argv[0]}: exit {r.returncode}: {r.stderr[-500:]}"  # intact, no end record
        assert "no end record" in r.stderr
        if argv[0] == "report":
            import json
            assert json.loads(r.stdout)["lost"] == records
        else:
            assert r.stdout.count('"type":"lost"') == records


def test_a_jvm_flooding_class_names_keeps_the_recorders_memory_bounded(tmp_path):
    """A target that names the class of every allocation with a new pointer
    and length (the USDT fixture with --distinct-names: 600,000 slow paths, a
    new name each).  The old recorder kept every name (its table and the
    writer's copy for rotations) and grew with them: under a 200 MiB
    RLIMIT_AS it died of std::bad_alloc.  Now it keeps at most kMaxClasses
    names (or 64 MiB of them); events that would need one more are not
    recorded and are counted as lost (name tables full), in the trace and on
    its end line."""
    out = tmp_path / "flood.jvmtrace"
    target = subprocess.Popen([str(FIXTURE), "--rounds", "600000", "--batch", "128", "--distinct-names",
                               "--wait-for", "any", "--timeout", "60", "--linger", "200"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().startswith("ready ")
        rec = subprocess.run(limited([JVMTRACE, "record", "-p", target.pid, "--binary", FIXTURE, "-o", out], 200),
                             capture_output=True, text=True, timeout=600)
    finally:
        target.kill()
        target.wait()
    assert rec.returncode == 0, f"record exited {rec.returncode}: {rec.stderr[-1500:]}"
    m = re.search(r"(\d+) lost \(ring buffer full 0, malformed kernel records 0, GC ends without a start 0, "
                  r"name tables full (\d+)\)", rec.stderr)
    assert m and int(m.group(2)) > 0 and m.group(1) == m.group(2), rec.stderr[-1500:]
    assert "more threads, classes or GC strings than the recorder keeps" in rec.stderr
    import json
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", out], capture_output=True, text=True,
                                    timeout=300).stdout)
    assert rep["lost_by_kind"]["name_table_full"] == int(m.group(2)), rep["lost_by_kind"]
    assert rep["events"] > 1_000_000, rep["events"]  # (the names it kept: their events are there)


def test_a_perf_map_of_millions_of_short_lines_is_read_within_limits(tmp_path):
    """The perf map is the target user's file: 200 MiB of 6-byte lines (35
    million entries).  The old recorder read any file up to 1 GiB to its end
    (a growing one further), about 48 bytes of memory a line: under a 512 MiB
    RLIMIT_AS it died of std::bad_alloc.  Now it reads at most 64 MiB and
    524,288 entries, says so, and records."""
    target = subprocess.Popen([str(FIXTURE), "--rounds", "20000", "--wait-for", "any", "--timeout", "60",
                               "--linger", "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    perf_map = Path(f"/tmp/perf-{target.pid}.map")
    try:
        assert target.stdout.readline().startswith("ready ")
        perf_map.write_bytes(b"1 1 a\n" * ((200 << 20) // 6))
        out = tmp_path / "perfmap.jvmtrace"
        rec = subprocess.run(limited([JVMTRACE, "record", "--stacks-from", "user", "-p", target.pid, "--binary", FIXTURE, "-o",
                                      out], 512), capture_output=True, text=True, timeout=600)
    finally:
        target.kill()
        target.wait()
        perf_map.unlink(missing_ok=True)
    assert rec.returncode == 0, f"record exited {rec.returncode}: {rec.stderr[-1500:]}"
    assert "perf map: more than 524288 entries or 64 MiB: the rest is not read" in rec.stderr, rec.stderr[-1500:]


# --- target-chosen text is escaped on every path --------------------------------

RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # (tab and newline are the tools' own)
PAYLOAD = "\x1b]0;pwned\x07"  # a terminal's window-title write


def assert_escaped(what, text):
    assert not RAW_CONTROL.search(text), f"{what} printed a raw control character: {text[-1500:]!r}"
    assert "\\x1b]0;pwned\\x07" in text, f"{what} does not show the text escaped:\n{text[-1500:]}"


@pytest.fixture
def jdk_under_a_hostile_path():
    """Debian's JDK (hard links) in a directory whose name is a terminal
    escape sequence: the path a JVM's maps show for its libjvm.so is then
    the container's choice of bytes."""
    base = Path("/var/tmp") / f"jvmtrace-esc-{os.getpid()}"
    jdk = base / PAYLOAD / "jdk"
    shutil.rmtree(base, ignore_errors=True)
    jdk.parent.mkdir(parents=True)
    subprocess.run(["cp", "-al", "/usr/lib/jvm/java-17-openjdk-amd64", str(jdk)], check=True)
    yield jdk
    shutil.rmtree(base, ignore_errors=True)


def test_a_libjvm_path_with_escapes_reaches_no_terminal_raw(tmp_path, jdk_under_a_hostile_path):
    """stat and record name the JVM's libjvm.so, by the path its maps show
    (the container's bytes), in their first line and in the trace; jvmtrace
    target names it in its errors.  Each prints it escaped (\\xNN).  The old
    code printed the path raw: the window-title write reached the terminal."""
    jdk = jdk_under_a_hostile_path
    jvm = subprocess.Popen([str(jdk / "bin/java"), "-Xmx64m", "-cp", str(java_classes_dir(tmp_path)), "AllocWorker",
                            "200000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert jvm.stdout.readline().startswith("ready ")
        assert PAYLOAD in Path(f"/proc/{jvm.pid}/maps").read_text()
        stat = subprocess.run([str(JVMTRACE), "stat", "-p", str(jvm.pid), "-d", "1"], capture_output=True,
                              text=True, timeout=120)
        rec = subprocess.run([str(JVMTRACE), "record", "-p", str(jvm.pid), "-d", "1", "-o", str(tmp_path / "t.jvmtrace")],
                             capture_output=True, text=True, timeout=120)
        # (a function this HotSpot lacks: the error names the library)
        tgt = subprocess.run([str(JVMTRACE), "target", str(jvm.pid), "--function", "NoSuch::function"],
                             capture_output=True, text=True, timeout=60)
    finally:
        jvm.kill()
        jvm.wait()
    assert stat.returncode == 0 and rec.returncode == 0, stat.stderr + rec.stderr
    assert_escaped("stat", stat.stderr)
    assert_escaped("record", rec.stderr)
    assert tgt.returncode == 1
    assert_escaped("jvmtrace target", tgt.stderr)
    dump = subprocess.run([str(JVMTRACE), "dump", str(tmp_path / "t.jvmtrace")], capture_output=True, text=True)
    assert_escaped("dump", dump.stdout)


FAKE_JVM = r"""
import mmap, os, signal, socket, sys
lib = sys.argv[1]
f = open(lib, 'rb')
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
signal.signal(signal.SIGQUIT, lambda *a: None)  # catches SIGQUIT, as HotSpot does
path = f"/tmp/.java_pid{os.getpid()}"
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
print("ready", os.getpid(), flush=True)
try:
    while True:
        c, _ = s.accept()
        c.recv(4096)
        # An error code, then text of its choosing: what jvmtrace prints as the JVM's answer.
        c.sendall(b"1\n\x1b]0;pwned\x07 and more\n")
        c.close()
finally:
    os.unlink(path)
"""


def test_the_attach_answer_reaches_no_terminal_raw(tmp_path):
    """record --stacks asks the JVM for its perf map over the attach socket
    and prints the JVM's answer when it is an error.  A process that serves
    its own attach socket (it passes every check: the socket is its own, of
    its uid, and it is the listener) answers with an escape sequence: record
    prints it escaped.  The old code printed the JVM's answer raw."""
    lib = tmp_path / "libjvm.so"
    shutil.copy(some_library(), lib)
    fake = subprocess.Popen([sys.executable, "-c", FAKE_JVM, str(lib)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert fake.stdout.readline().startswith("ready ")
        rec = subprocess.run([str(JVMTRACE), "record", "--stacks-from", "user", "-p", str(fake.pid), "--binary", str(FIXTURE),
                              "-d", "1", "-o", str(tmp_path / "a.jvmtrace")], capture_output=True, text=True,
                             timeout=120)
    finally:
        fake.kill()
        fake.wait()
    assert rec.returncode == 0, rec.stderr
    assert "the JVM answered 1" in rec.stderr, rec.stderr
    assert_escaped("record's perf-map line", rec.stderr)


def test_a_process_name_with_escapes_reaches_no_log_list_or_metrics_raw(tmp_path):
    """A process names itself (its comm, which any process sets with
    prctl(PR_SET_NAME)) with an escape sequence and maps a libjvm.so: the
    daemon's log, `jvmtrace daemon list` and /metrics show no raw control
    character, and the name escaped where it is shown.  The old daemon wrote
    comm raw into its log and its list."""
    from test_daemon import Daemon, parse_exposition
    lib = tmp_path / "lib/libjvm.so"
    lib.parent.mkdir()
    shutil.copy(some_library(), lib)
    daemon = Daemon(tmp_path)
    target = None
    try:
        target = mapper(lib, extra=("import ctypes; ctypes.CDLL(None).prctl(15, "
                                    f"ctypes.c_char_p({PAYLOAD.encode()!r}), 0, 0, 0)"))
        assert PAYLOAD in Path(f"/proc/{target.pid}/comm").read_text()
        daemon.wait_listed(target.pid)
        listing = daemon.client("list").stdout
        metrics = daemon.metrics()
        parse_exposition(metrics)
    finally:
        if target:
            target.kill()
            target.wait()
        log = daemon.stop()
    assert_escaped("daemon list", listing)
    assert_escaped("the daemon's log", log)
    assert not RAW_CONTROL.search(metrics), "raw control characters in /metrics"


# --- the target is pinned from attach to detach -----------------------------------

PID_REUSE = r"""
# PID 1 of a PID namespace of its own (with its /proc): there the next PID
# can be chosen (ns_last_pid), so a PID is reused at once, deterministically.
import os, signal, subprocess, sys, time
fixture, jvmtrace, out = sys.argv[1:4]
a = subprocess.Popen([fixture, "--rounds", "0", "--linger", "600000"], stdout=subprocess.PIPE, text=True)
assert a.stdout.readline().startswith("ready ")
rec = subprocess.Popen([jvmtrace, "record", "-p", str(a.pid), "--binary", fixture, "-o", out],
                       stderr=subprocess.PIPE, text=True)
for line in rec.stderr:
    if line.startswith("Recording PID"):
        break
# The recorder is stopped while the target exits and another process takes its PID.
os.kill(rec.pid, signal.SIGSTOP)
a.kill()
a.wait()
with open("/proc/sys/kernel/ns_last_pid", "w") as f:
    f.write(str(a.pid - 1))
b = subprocess.Popen(["sleep", "60"])
print("reused" if b.pid == a.pid else f"not reused: {b.pid} != {a.pid}", flush=True)
os.kill(rec.pid, signal.SIGCONT)
t0 = time.monotonic()
try:
    err = rec.communicate(timeout=10)[1]
    print(f"ended after {time.monotonic() - t0:.2f} s", flush=True)
    print(err, flush=True)
except subprocess.TimeoutExpired:
    print("still recording 10 s after its target exited", flush=True)
    rec.kill()
    rec.wait()
b.kill()
"""


def test_a_reused_pid_is_not_taken_for_the_target(tmp_path):
    """The recorder's target exits and another process gets its PID at once
    (forced, in a PID namespace of its own; the recorder was stopped meanwhile,
    as a busy machine might delay it).  The recorder must see its target gone:
    its liveness is the pidfd opened when it first looked at the target, not
    the number.  The old recorder asked kill(PID, 0): it recorded the new
    process, still running 10 s later."""
    r = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "--", "/usr/bin/python3", "-c", PID_REUSE,
                        str(FIXTURE), str(JVMTRACE), str(tmp_path / "reuse.jvmtrace")],
                       capture_output=True, text=True, timeout=120)
    assert "reused" in r.stdout.splitlines()[0], r.stdout + r.stderr
    assert "ended after" in r.stdout and "target exited" in r.stdout, r.stdout + r.stderr
    assert float(r.stdout.split("ended after ")[1].split()[0]) < 2, r.stdout


# --- root keeps the control socket -----------------------------------------------

FLOOD = r"""
# Keeps N connections open and idle to one address (the daemon closes each
# after 1 s: it is opened again at once), until stdin closes.
import select, socket, sys, time
kind, where, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def connect():
    s = socket.socket(socket.AF_UNIX if kind == "unix" else socket.AF_INET)
    s.setblocking(True)
    s.settimeout(1)
    try:
        s.connect(where if kind == "unix" else ("127.0.0.1", int(where)))
    except OSError:
        s.close()
        return None
    s.setblocking(False)
    return s
socks = []
print("flooding", flush=True)
while not select.select([sys.stdin], [], [], 0)[0]:
    socks = [s for s in socks if s is not None]
    alive = []
    for s in socks:
        try:
            if s.recv(1) == b"":
                s.close()
                continue
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            continue
        alive.append(s)
    socks = alive
    while len(socks) < n:
        s = connect()
        if s is None:
            break
        socks.append(s)
    time.sleep(0.02)
"""


def flood(kind, where, n, uid, gid):
    p = subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "/usr/bin/python3", "-c",
                          FLOOD, kind, str(where), str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "flooding", p.stderr.read()
    return p


def test_floods_of_the_metrics_port_and_the_group_keep_no_root_from_the_control_socket(tmp_path):
    """Any local user can reach the metrics port, and members of --group the
    control socket.  Both flood them (300 idle connections each, reopened as
    the daemon closes them): root's status is answered within 2 s throughout,
    and the metrics port still serves.  The old daemon had one cap of 256
    connections for both sockets: with it full, root's connection was closed
    unanswered."""
    import tempfile
    from test_daemon import Daemon
    sockdir = tempfile.mkdtemp(prefix="jvmtraced-flood")
    os.chmod(sockdir, 0o755)  # (nobody must reach the socket)
    daemon = Daemon(tmp_path, "--group", "nogroup", "--socket", f"{sockdir}/d.sock")
    daemon.sock = f"{sockdir}/d.sock"
    floods = []
    try:
        floods.append(flood("tcp", daemon.port, 300, 65534, 65534))
        floods.append(flood("unix", daemon.sock, 300, 65534, 65534))  # nobody in nogroup: a member
        time.sleep(0.5)  # (the floods have filled their budgets: the condition under test)
        worst = answers_throughout(daemon, 4)
        print(f"slowest status answer under the floods: {worst * 1000:.1f} ms")
    finally:
        for p in floods:
            p.stdin.close()
            p.wait(10)
        log = daemon.stop()
        shutil.rmtree(sockdir, ignore_errors=True)


def test_workers_are_capped(tmp_path):
    """--auto-stat starts a root worker per JVM found: with --max-workers 2
    and four processes that map a libjvm.so, two workers run, and the others
    are refused, logged; an attach asked for then is refused with the
    reason.  (The old daemon had no cap: a user starting JVMs had root start
    a worker for each.)"""
    from test_daemon import Daemon
    worker = tmp_path / "worker.sh"  # a stand-in for jvmtrace: attached at once, until SIGINT
    worker.write_text("#!/bin/sh\ntrap 'exit 0' INT\necho 'Attached 1 probe. Hit Ctrl-C to end.' >&2\n"
                      "while :; do sleep 1; done\n")
    worker.chmod(0o755)
    lib = tmp_path / "lib/libjvm.so"
    lib.parent.mkdir()
    shutil.copy(some_library(), lib)
    targets = [mapper(lib) for _ in range(4)]
    daemon = Daemon(tmp_path, "--auto-stat", "--max-workers", "2", "--jvmtrace", str(worker))
    try:
        for t in targets:
            daemon.wait_listed(t.pid)
        daemon.log.wait_for(lambda l: "attachments already (max-workers 2)" in l, 15, "a refused auto-stat")
        status = daemon.client("status").stdout
        assert "attached stat 2," in status or "attached stat 2\n" in status, status
        r = daemon.client("attach", targets[0].pid, "--record")
        assert r.returncode != 0 and "max-workers 2" in r.stdout + r.stderr, r.stdout + r.stderr
    finally:
        for t in targets:
            t.kill()
            t.wait()
        daemon.stop()


@pytest.mark.parametrize("what", ["--socket", "--trace-dir"])
def test_paths_below_a_directory_others_may_write_are_refused(tmp_path, what):
    """The daemon creates its control socket and its recordings by path: a
    directory on the way that another user may write lets that user swap what
    is below it (the socket's path for a link to /etc/shadow before the old
    daemon's chown/chmod by path; the trace directory for one to /etc under a
    running recorder).  The daemon refuses to start, naming the directory.
    The old daemon checked only the trace directory itself and started."""
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="jvmtraced-parents"))
    os.chmod(base, 0o755)
    users = base / "users"
    users.mkdir()
    os.chown(users, 65534, 65534)  # nobody's
    inner = users / "root-owned"
    inner.mkdir(mode=0o750)  # root's itself, below nobody's directory
    args = {"--socket": ["--socket", str(inner / "d.sock"), "--trace-dir", str(tmp_path / "traces")],
            "--trace-dir": ["--socket", str(tmp_path / "d.sock"), "--trace-dir", str(inner / "traces")]}[what]
    try:
        r = subprocess.run([str(BUILD_DIR / "userspace/jvmtraced"), "--metrics-port", "0", *args],
                           capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("the daemon started below a directory nobody may write")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert r.returncode == 1, r.stderr
    assert f"is below {users}, owned by uid 65534" in r.stderr, r.stderr
