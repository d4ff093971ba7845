"""Test helpers: run a target that waits for "go", attach bpftrace to it, and
collect both outputs; parse readelf notes, -Xlog:gc and JFR."""
import json
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
READY_MARK = "@@jvmtrace-tracing@@"
# Events a fixture round gives with the separate probe set (every probe of
# usdt/jvmtrace.d but alloc__slow and plab__batch, each once a round), and
# the options that choose that set.
PROBES = 10
SEPARATE = ("--probe-set", "separate")


def run_checked(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise AssertionError(f"{cmd[0]} exited {r.returncode}\nstdout:\n{r.stdout[-3000:]}\n"
                             f"stderr:\n{r.stderr[-3000:]}")
    return r


def reap(*procs):
    """Kill and wait for each process (None: skipped) still running: a
    test's finally, so nothing it started outlives it."""
    for p in procs:
        if p is not None and p.poll() is None:
            p.kill()
            p.wait(60)


def start_held_and_attach(jvm_cmd, cwd, recorder_cmd, env=None):
    """Starts jvm_cmd (which holds at start-up: -XX:+PauseAtStartup), waits
    for its hold, starts the recorder (recorder_cmd(pid) -> argv), waits for
    its "Recording PID" banner, then lets the JVM go.  Returns (jvm, rec,
    rec_err: a LineReader); the caller writes the JVM's stdin and reaps
    both (reap)."""
    jvm = subprocess.Popen(jvm_cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    rec = None
    try:
        held = Path(cwd) / f"vm.paused.{jvm.pid}"
        wait_until(lambda: held.exists() or jvm.poll() is not None, 60, "HotSpot to hold at start-up")
        if jvm.poll() is not None:  # else the recorder's attach to a gone PID would be the error shown
            raise AssertionError(f"the JVM exited ({jvm.returncode}) before holding: {jvm.stderr.read()[-2000:]}")
        rec = subprocess.Popen(recorder_cmd(jvm.pid), stderr=subprocess.PIPE, text=True, env=env)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        held.unlink()
    except BaseException:
        reap(jvm, rec)
        raise
    return jvm, rec, err


def wait_until(pred, timeout, what, interval=0.01):
    """Polls pred until it is true (a condition with no stream to read, such
    as a file appearing); fails after timeout seconds naming what."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class LineReader:
    """Reads a stream on a thread so we can wait for one line with a timeout."""

    def __init__(self, stream):
        self.lines = []
        self._q = queue.Queue()
        self._t = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._t.start()

    def _pump(self, stream):
        for line in stream:
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def wait_for(self, pred, timeout, what):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; "
                                     f"saw: {self.lines[-20:]}")
            try:
                line = self._q.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"stream ended while waiting for {what}; saw: {self.lines[-20:]}")
            self.lines.append(line)
            if pred(line):
                return line

    def find(self, pred, timeout, what):
        """The first line so far, or still to come within timeout, that pred accepts.
        (The reader thread may not have queued a line the process wrote just
        before it answered something else: never conclude from seen() alone.)"""
        for line in self.seen():
            if pred(line):
                return line
        return self.wait_for(pred, timeout, what)

    def seen(self):
        """Every line read so far, without waiting (the stream may go on)."""
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                return self.lines
            if line is None:
                self._q.put(None)  # keep the end for wait_for/drain
                return self.lines
            self.lines.append(line)

    def drain(self, timeout=30):
        """All remaining lines, once the stream has ended."""
        self._t.join(timeout)
        while True:
            try:
                line = self._q.get_nowait()
            except queue.Empty:
                break
            if line is not None:
                self.lines.append(line)
        return self.lines


@dataclass
class TraceRun:
    target_out: list
    target_err: str
    target_rc: int
    trace_out: list           # bpftrace stdout lines after the ready mark
    trace_err: str
    pid: int = 0
    extra: dict = field(default_factory=dict)


def bpftrace_run(script, target_cmd, **kw):
    """traced_run with `bpftrace -p PID -e script`; the script must print
    READY_MARK from BEGIN, which bpftrace runs once every probe is attached."""
    return traced_run(lambda pid: ["bpftrace", "-p", str(pid), "-e", script], target_cmd,
                      ready=lambda l: l == READY_MARK, **kw)


def tool_run(tool, target_cmd, **kw):
    """traced_run with `scripts/jvmtrace-bt TOOL PID` (tools print their
    "Hit Ctrl-C to end." banner from BEGIN)."""
    return traced_run(lambda pid: [str(REPO / "scripts/jvmtrace-bt"), tool, str(pid)], target_cmd,
                      ready=lambda l: "Hit Ctrl-C to end." in l, keep_ready_line=False, **kw)


def traced_run(tracer_cmd, target_cmd, ready, timeout=180, env=None, settle=0.5, keep_ready_line=False,
               stderr_ready=False):
    """Starts target_cmd (which prints "ready PID" and waits for a line on
    stdin), starts tracer_cmd(PID), waits until the tracer prints a line for
    which ready(line) holds (it is attached then), lets the target go, waits
    for it to exit, then stops the tracer with SIGINT and returns everything
    both printed (the tracer's lines after the ready line; with stderr_ready
    the ready line is looked for on the tracer's stderr, and all its stdout
    lines are kept)."""
    target = subprocess.Popen(target_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    t_out = LineReader(target.stdout)
    t_err = LineReader(target.stderr)
    bt = None
    try:
        ready_line = t_out.wait_for(lambda l: l.startswith("ready "), 60, "the target's ready line")
        pid = int(ready_line.split()[1])
        bt = subprocess.Popen(tracer_cmd(pid), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        b_out = LineReader(bt.stdout)
        b_err = LineReader(bt.stderr)
        try:
            (b_err if stderr_ready else b_out).wait_for(ready, 60, "the tracer to attach")
        except AssertionError as e:
            bt.kill()
            raise AssertionError(f"{e}\ntracer stderr: {' | '.join(b_err.drain(5))}")
        mark = 0 if stderr_ready else len(b_out.lines) - (1 if keep_ready_line else 0)
        target.stdin.write("go\n")
        target.stdin.close()
        rc = target.wait(timeout)
        time.sleep(settle)  # let the last events drain from the perf buffer
        bt.send_signal(signal.SIGINT)
        bt.wait(60)
        out = [l for l in b_out.drain()[mark:] if l.strip()]
        err = "\n".join(b_err.drain())
        assert not any(l.startswith("Lost ") for l in out + err.splitlines()), \
            f"bpftrace lost events: {[l for l in out if l.startswith('Lost')]}"
        assert not re.search(r"dropped [1-9]", err), f"the tracer dropped events: {err[-300:]}"
        return TraceRun(t_out.drain(), "\n".join(t_err.drain()), rc, out, err, pid)
    finally:
        for p in (target, bt):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


# --- readelf -n ------------------------------------------------------------

@dataclass
class NoteProbe:
    provider: str
    name: str
    location: int
    semaphore: int
    args: list  # e.g. ["-4@%ecx", "8@%rsi"]


def usdt_notes(path):
    """Every stapsdt note of an ELF file, parsed from `readelf -n`."""
    out = run_checked(["readelf", "-n", "--wide", str(path)]).stdout
    probes, cur = [], {}
    for line in out.splitlines():
        line = line.strip()
        if "Provider:" in line:  # "stapsdt 0x.. NT_STAPSDT (...)  Provider: x" with --wide
            cur = {"provider": line.split("Provider:", 1)[1].strip()}
        elif line.startswith("Name:") and "provider" in cur:
            cur["name"] = line.split(":", 1)[1].strip()
        elif line.startswith("Location:") and "name" in cur:
            m = re.match(r"Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)", line)
            cur["location"], cur["semaphore"] = int(m.group(1), 16), int(m.group(3), 16)
        elif line.startswith("Arguments:") and "location" in cur:
            args = line.split(":", 1)[1].split()
            probes.append(NoteProbe(cur["provider"], cur["name"], cur["location"],
                                    cur["semaphore"], args))
            cur = {}
    return probes


# --- the probe contract -----------------------------------------------------

def contract_probes(path=REPO / "usdt/jvmtrace.d"):
    """{probe_name: [(type, arg_name), ...]} from the D provider file."""
    text = re.sub(r"/\*.*?\*/", "", Path(path).read_text(), flags=re.S)
    probes = {}
    for m in re.finditer(r"probe\s+(\w+)\s*\((.*?)\)\s*;", text, flags=re.S):
        args = []
        for a in m.group(2).split(","):
            a = " ".join(a.split())
            am = re.match(r"(.*?)\s*\b(\w+)$", a)
            args.append((am.group(1).replace(" *", "*").strip(), am.group(2)))
        probes[m.group(1)] = args
    return probes


TYPE_NOTE_SIZE = {"int32_t": -4, "uint32_t": 4, "uint64_t": 8, "const char*": 8}


def abi_enums(path=REPO / "usdt/jvmtrace_abi.h"):
    """{enum_name: {ENUMERATOR: value}} from the ABI header, the one
    declaration of the contract's values (the VM, BPF and user space compile
    it).  Every enumerator has an explicit value there, except *_COUNT."""
    text = re.sub(r"/\*.*?\*/", "", Path(path).read_text(), flags=re.S)
    enums = {}
    for m in re.finditer(r"enum (\w+) \{(.*?)\};", text, flags=re.S):
        values = {}
        for e in m.group(2).split(","):
            e = e.strip()
            if not e:
                continue
            em = re.fullmatch(r"(\w+)\s*=\s*(\d+)", e)
            if em:
                values[em.group(1)] = int(em.group(2))
            else:
                assert e.endswith("_COUNT"), f"{path}: {e} has no explicit value"
                values[e] = max(values.values()) + 1
        enums[m.group(1)] = values
    return enums


ABI = {k: v for values in abi_enums().values() for k, v in values.items()}
SLOW_FAILED = ABI["JVMTRACE_SLOW_FAILED"]
SLOW_NEW_TLAB = (ABI["JVMTRACE_SLOW_NEW_TLAB"], ABI["JVMTRACE_SLOW_NEW_TLAB_AFTER_GC"])
SLOW_OUTSIDE_TLAB = (ABI["JVMTRACE_SLOW_OUTSIDE_TLAB"], ABI["JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC"])
SLOW_AFTER_GC = (ABI["JVMTRACE_SLOW_NEW_TLAB_AFTER_GC"], ABI["JVMTRACE_SLOW_OUTSIDE_TLAB_AFTER_GC"])


def note_arg_size(arg):
    """'-4@%ecx' -> -4 (signed 4 bytes)."""
    return int(arg.split("@", 1)[0])


# --- JVM-side truth -----------------------------------------------------------

GC_LOG_RE = re.compile(r"\bGC\((\d+)\) ((?:Pause|Concurrent) [A-Za-z ]+?)(?= \(| \d| ?$)(.*)$")
GC_HEAP_RE = re.compile(r" \d+[KMG]->\d+[KMG]\(\d+[KMG]\) [\d.]+ms$")


def paren_groups(text):
    """Top-level parenthesised groups of text: "(a) (b(c))" -> ["a", "b(c)"]."""
    groups, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            if depth:
                cur += ch
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth:
                cur += ch
            else:
                groups.append(cur)
                cur = ""
        elif depth:
            cur += ch
    return groups


def go_uptime_s(target_out):
    """When the program got "go" (TestSupport.awaitGo), in JVM uptime seconds."""
    for l in target_out:
        if l.startswith("go at uptime_ms "):
            return int(l.split()[-1]) / 1000.0
    raise AssertionError(f"the program did not print its go time: {target_out[:5]}")


def parse_gc_log(text, since_s=0.0):
    """-Xlog:gc lines -> [(gc_id, what, cause_or_None)], one per GC id, in
    order.  For a pause the cause is its last parenthesised group before the
    heap figures: "GC(3) Pause Full (System.gc()) 1M->1M(40M) 4.2ms" ->
    (3, "Pause Full", "System.gc()").  With since_s, GCs whose first line is
    older than that uptime (the [N.NNNs] prefix) are left out."""
    seen, out = set(), []
    for line in text.splitlines():
        m = GC_LOG_RE.search(line)
        if not m:
            continue
        up = re.match(r"\[(\d+\.\d+)s\]", line)
        if up and float(up.group(1)) < since_s and int(m.group(1)) not in seen:
            seen.add(int(m.group(1)))
            continue
        gc_id = int(m.group(1))
        if gc_id in seen:
            continue
        seen.add(gc_id)
        what, rest = m.group(2).strip(), GC_HEAP_RE.sub("", m.group(3) or "")
        groups = paren_groups(rest)
        cause = groups[-1] if groups and what.startswith("Pause") else None
        out.append((gc_id, what, cause))
    return out


PAUSE_LINE_RE = re.compile(r"GC\((\d+)\) (Pause .*?) (\d+)M->(\d+)M\((\d+)M\) (\d+\.\d+)ms$")


def parse_gc_pauses(text, since_s=0.0):
    """Every stop-the-world pause line of -Xlog:gc, in order, as
    (gc_id, text, used_before_mib, used_after_mib, committed_mib, ms), where
    text is the title with its cause as logged: "Pause Young (Normal) (G1
    Evacuation Pause)", "Pause Remark".  G1 Remark and Cleanup share their
    concurrent cycle's id.  With since_s, lines older than that uptime are
    left out."""
    out = []
    for line in text.splitlines():
        m = PAUSE_LINE_RE.search(line)
        if not m:
            continue
        up = re.match(r"\[(\d+\.\d+)s\]", line)
        if up and float(up.group(1)) < since_s:
            continue
        out.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                    float(m.group(6))))
    return out


def pause_kind_of(title):
    """The probes' pause kind of a logged pause title."""
    for prefix, kind in (("Pause Young", ABI["JVMTRACE_PAUSE_YOUNG"]), ("Pause Full", ABI["JVMTRACE_PAUSE_FULL"]),
                         ("Pause Remark", ABI["JVMTRACE_PAUSE_REMARK"]),
                         ("Pause Cleanup", ABI["JVMTRACE_PAUSE_CLEANUP"])):
        if title.startswith(prefix):
            return kind
    raise AssertionError(f"not a pause title: {title}")


def jfr_events(java_home, recording, event):
    """Events of one type from a JFR recording, as dicts (via `jfr print --json`)."""
    r = run_checked([str(Path(java_home) / "bin/jfr"), "print", "--json", "--events", event,
                     str(recording)])
    return json.loads(r.stdout)["recording"]["events"]


def exec_argv(cmd):
    """The argv a JVM started with cmd runs with: the same, except that a
    JDK 21/25 home's bin/java is a wrapper that execs the image's real java
    in the Debian 13 root (build-patched-jdk.sh), whose lib/ its lib/ links to."""
    java = Path(cmd[0])
    real = (java.parent.parent / "lib").resolve().parent / "bin" / java.name
    return [str(real), *cmd[1:]]


def pause_title(name, cause):
    """A pause as -Xlog:gc titles it: the cause after HotSpot's title,
    unless the title has it (G1's young pauses from JDK 21 on)."""
    return name + (f" ({cause})" if cause and f" ({cause})" not in name else "")


# Every stop-the-world pause line of -Xlog:gc* (default decorations), on
# every collector: G1, Parallel, Serial and Shenandoah print them at
# [info][gc] ("GC(5) Pause Init Mark (unload classes) 0.213ms", heap figures
# for some), ZGC at [info][gc,phases] with generational ZGC's "y:", "Y:" or
# "O:" tag before the title.  Shenandoah's exit table ([gc,stats]) and the
# [gc,start] lines are not pauses: the decoration tells.
ANY_PAUSE_GC_RE = re.compile(r"^\[(\d+\.\d+)s\]\[info\]\[gc\s*\] GC\((\d+)\) (Pause .*?)"
                             r"(?: (\d+)M->(\d+)M\((\d+)M\))? (\d+\.\d+)ms$")
ANY_PAUSE_ZGC_RE = re.compile(r"^\[(\d+\.\d+)s\]\[info\]\[gc,phases\s*\] GC\((\d+)\) (?:([yYO]): )?(Pause .*?) "
                              r"(\d+\.\d+)ms$")


def parse_all_pauses(text):
    """Every pause line of -Xlog:gc* as dicts: gc_id, title (as printed, the
    cause in it for G1/Parallel/Serial), tag ("y", "Y", "O" or None), ms,
    and for lines that print them before/after/committed MiB."""
    out = []
    for line in text.splitlines():
        m = ANY_PAUSE_GC_RE.match(line)
        if m:
            out.append({"uptime": float(m.group(1)), "gc_id": int(m.group(2)), "title": m.group(3), "tag": None,
                        "ms": float(m.group(7)),
                        "heap": tuple(int(x) for x in m.group(4, 5, 6)) if m.group(4) else None})
            continue
        m = ANY_PAUSE_ZGC_RE.match(line)
        if m:
            out.append({"uptime": float(m.group(1)), "gc_id": int(m.group(2)), "title": m.group(4),
                        "tag": m.group(3), "ms": float(m.group(5)), "heap": None})
    return out


# Every line of -Xlog:safepoint (17: with Cleanup; 21: with Cleanup and
# Leaving; 25: no Cleanup, Leaving and the thread counts).
SAFEPOINT_LINE_RE = re.compile(
    r'^\[(\d+\.\d+)s\]\[info\]\[safepoint\s*\] Safepoint "([^"]+)", Time since last: (\d+) ns, '
    r"Reaching safepoint: (\d+) ns, (?:Cleanup: (\d+) ns, )?At safepoint: (\d+) ns, "
    r"(?:Leaving safepoint: (\d+) ns, )?Total: (\d+) ns(?:, Threads: (\d+) runnable, (\d+) total)?$")


def parse_safepoints(text):
    """Every safepoint line as dicts: operation, reaching_ns, cleanup_ns,
    at_safepoint_ns, leaving_ns, total_ns (None where the line has no such
    field), running and threads (25 only)."""
    out = []
    for line in text.splitlines():
        m = SAFEPOINT_LINE_RE.match(line)
        if not m:
            continue
        num = lambda g: int(m.group(g)) if m.group(g) is not None else None
        out.append({"uptime": float(m.group(1)), "operation": m.group(2), "since_last_ns": num(3),
                    "reaching_ns": num(4), "cleanup_ns": num(5), "at_safepoint_ns": num(6), "leaving_ns": num(7),
                    "total_ns": num(8), "running": num(9), "threads": num(10)})
    return out


class SchedTrace:
    """Every time a "VM Thread" (any JVM's) leaves or takes a CPU, from a
    system-wide bpftrace on sched:sched_switch (its nsecs: the clock of the
    trace's events), for telling a pause stretched by the scheduler from one
    stretched by the VM.  With libjvm (a patched libjvm.so), also every entry
    to its jvmtrace_pause_end: where the log's end line has been written and
    the patch's own work before the end probe begins (the probe's arguments;
    the PLAB flush ran there before decision 172).  And every process's calls
    that change its address space (mmap, munmap, mprotect, mremap, madvise),
    which a uprobe's trap can wait behind.  A
    context manager around a recording:

        with SchedTrace(libjvm) as sched:
            ...record...
        sched.off_cpu_ms(tid, from_ns, to_ns)  # the VM thread's time off its CPU there
        sched.own_end_ms(tid, from_ns, to_ns)  # from jvmtrace_pause_end's entry to to_ns
        sched.mm_calls(from_ns, to_ns)         # address-space calls in flight there
    """
    SCRIPT = ('BEGIN { printf("READY\\n"); } '
              'tracepoint:sched:sched_switch /args->prev_comm == "VM Thread"/ '
              '{ printf("off %d %llu %d\\n", args->prev_pid, nsecs, args->prev_state); } '
              'tracepoint:sched:sched_switch /args->next_comm == "VM Thread"/ '
              '{ printf("on %d %llu\\n", args->next_pid, nsecs); }'
              # Every thread's calls that change an address space (a uprobe's
              # trap may wait for them: it falls back to mmap_lock when the
              # mm changed under its lookup), for an excess on the CPU.
              + "".join(f' tracepoint:syscalls:sys_enter_{c} /comm != "bpftrace"/ '
                        f'{{ @mm[tid] = nsecs; }} '
                        f'tracepoint:syscalls:sys_exit_{c} /@mm[tid]/ '
                        f'{{ printf("mm {c} %d %d %llu %llu %s\\n", pid, tid, @mm[tid], nsecs, comm); '
                        f'delete(@mm[tid]); }}'
                        for c in ("mmap", "munmap", "mprotect", "mremap", "madvise")))
    PAUSE_END = "_Z18jvmtrace_pause_endPKcS0_j"  # void jvmtrace_pause_end(const char*, const char*, uint32_t)

    def __init__(self, libjvm=None):
        self.libjvm = Path(libjvm).resolve() if libjvm else None

    def __enter__(self):
        script = self.SCRIPT
        if self.libjvm:
            script += f' uprobe:{self.libjvm}:{self.PAUSE_END} {{ printf("pend %d %llu\\n", tid, nsecs); }}'
        self._bt = subprocess.Popen(["bpftrace", "-e", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        self._out = LineReader(self._bt.stdout)
        self._out.wait_for(lambda l: l == "READY", 60, "bpftrace on sched_switch to attach")
        return self

    def __exit__(self, *exc):
        self._bt.send_signal(signal.SIGINT)
        try:
            self._bt.wait(60)
        except subprocess.TimeoutExpired:
            self._bt.kill()
        # (tid -> [(off_ns, on_ns or None, state)]): intervals off the CPU
        self.intervals = {}
        self.pause_ends = {}  # tid -> [ns of each jvmtrace_pause_end entry]
        self.mm = []  # (start_ns, end_ns, call, pid, tid, comm): calls that changed an address space
        for line in self._out.drain():
            f = line.split()
            if len(f) >= 6 and f[0] == "mm":
                self.mm.append((int(f[4]), int(f[5]), f[1], int(f[2]), int(f[3]), " ".join(f[6:])))
                continue
            if len(f) >= 3 and f[0] == "off":
                self.intervals.setdefault(int(f[1]), []).append([int(f[2]), None, int(f[3])])
            elif len(f) == 3 and f[0] == "on":
                iv = self.intervals.get(int(f[1]))
                if iv and iv[-1][1] is None:
                    iv[-1][1] = int(f[2])
            elif len(f) == 3 and f[0] == "pend":
                self.pause_ends.setdefault(int(f[1]), []).append(int(f[2]))
        return False

    def own_end_ms(self, tid, from_ns, to_ns):
        """ms from thread tid's last jvmtrace_pause_end entry within
        [from_ns, to_ns] to to_ns (the end probe's time): the patch's own work
        after the log's end line; None without one."""
        inside = [t for t in self.pause_ends.get(tid, []) if from_ns <= t <= to_ns]
        return (to_ns - max(inside)) / 1e6 if inside else None

    def mm_calls(self, from_ns, to_ns):
        """The address-space calls of any process in flight within [from_ns,
        to_ns]: [(call, comm, tid, ms from from_ns to its start, its ms)]."""
        return [(c, comm, tid, round((s - from_ns) / 1e6, 3), round((e - s) / 1e6, 3))
                for s, e, c, _, tid, comm in self.mm if s < to_ns and e > from_ns]

    def off_cpu(self, tid, from_ns, to_ns):
        """(ms off the CPU within [from_ns, to_ns], of which preempted while
        runnable (prev_state 0), the intervals) for thread tid."""
        total = preempted = 0
        seen = []
        for off, on, state in self.intervals.get(tid, []):
            on = on if on is not None else to_ns
            overlap = min(on, to_ns) - max(off, from_ns)
            if overlap > 0:
                total += overlap
                preempted += overlap if state == 0 else 0
                seen.append((round((off - from_ns) / 1e6, 3), round((on - off) / 1e6, 3), state))
        return total / 1e6, preempted / 1e6, seen
