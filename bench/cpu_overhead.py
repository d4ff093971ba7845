#!/usr/bin/env python3
"""Benchmark: how much CPU a JVM spends extra while jvmtrace is attached,
resolved to about one percent on a noisy machine (docs/research-fewer-hits.md,
section 6; method in docs/performance.md, "CPU overhead").

Wall clock here spreads by +-5-20% from run to run, so this measures CPU time
instead: the JVM's user and system seconds, from os.wait4() on it (a uprobe's
trap and its BPF program run in the JVM thread, so their cost lands in the
JVM's system time), and the tracer's own user and system seconds, apart.

Configurations (--configs, comma-separated; default: all six):
  unpatched     the unpatched JVM, nothing attached
  patched       the patched JVM, nothing attached (the patch's own cost)
  stat          patched + `jvmtrace stat --mode usdt --json -p PID`
  record        patched + `jvmtrace record --mode usdt -q -p PID -o FILE`
  stock-stat    unpatched + `jvmtrace stat --mode stock --json -p PID`
  stock-record  unpatched + `jvmtrace record --mode stock -q -p PID -o FILE`
and, not by default, with a jvmtrace that has --probe-set (issue 14):
  stat-separate, record-separate   stat/record --probe-set separate: the old
                probes (three hits per refill) on a JVM with the combined ones
  stat-combined, record-combined   --probe-set combined: one hit per slow path
                (alloc__slow) instead of one per batch (alloc__batch, the default)
  bt-gc, bt-slow  bpftrace count() on gc__start (a few hits: the cost of
                merely having a USDT probe attached) or on alloc__slow (one bare hit
                per slow path: the floor)
  record-stacks record --stacks: the VM's sampled Java stacks (issue 22)
  bt-sample     bpftrace count() on alloc__sample: the VM samples and walks its
                stacks and nothing reads them (--stacks' cost without the recorder)

Each round runs every configuration once, in a shuffled order.  Every JVM
starts held: AllocBench prints "ready PID" and waits for "go" on stdin; a
corpus program runs with -XX:+UnlockDiagnosticVMOptions -XX:+PauseAtStartup
and waits until vm.paused.PID in its working directory is deleted.  The JVM and
the tracer are both this script's children (not `stat -- COMMAND`).  A traced
run starts the tracer with -p PID, waits for its banner ("Attached ..." or
"Recording PID ..." on stderr), then releases the JVM; an untraced run
releases it as soon as it is held.  The tracer ends by itself when its target
exits (SIGINT after --tracer-timeout, if not).

Per run: JVM user/sys (wait4), tracer user/sys (wait4), wall time from the
release to the JVM's exit, /proc/loadavg before and after, and the CPU every
other process used meanwhile (/proc/stat's busy time minus the JVM's, the
tracer's and this script's).  A round in which that exceeds --max-other-cpu
cores on average (or the hypervisor stole as much) is flagged "disturbed" and
left out of the statistics (--keep-disturbed keeps it).

Statistics, per program and collector, over rounds: each round's ratio of a
configuration's JVM CPU to the same round's `patched` and `unpatched`, shown
as extra CPU in percent, (cpu - cpu_base) / cpu_base; extra system time as a
percentage of the baseline's total CPU, (sys - sys_base) / cpu_base (the JSON
also has sys / sys_base).  Summary: the median over rounds and a 95% bootstrap
CI (--bootstrap resamples of the rounds with replacement, the median of each,
the 2.5th and 97.5th percentiles).

The independent bound: from each `stat` run's counters, probe hits x
--per-hit-us (a hit's cost measured on the fixture, bench/probe_hit_cost.sh)
(+ PLAB batch records x --per-record-us, combined probes) / the same round's
`patched` JVM CPU; for `stock-stat`, its uprobe hits x --per-hit-int3-us /
`unpatched`.  Which probes stat attached comes from its report (probe_set).  It should agree with the measured median
within its CI; if not, a hit inside a JVM costs more than on the fixture.

Programs (--program):
  allocbench  bench/java/AllocBench.java: --threads allocating threads x
              --iterations (measured phase) after --warmup, --heap; --gc
              G1,Parallel by default
  h2          tests/corpus.py's H2 program (RunScript on an in-memory database),
              its script run --h2-repeat times in one JVM (DROP ALL OBJECTS
              after each); the test's script alone (the default, 1) takes about
              10 s of CPU; --gc G1 by default
  lucene      tests/corpus.py's Lucene program with --lucene-threads (4) indexing
              threads and --lucene-docs documents (default 120,000 against the
              test's 25,000) for about 10 s, heap scaled from the test's 64 MB
              per 25,000 documents (--heap-mb to override); --gc G1 by default
  ecj         tests/corpus.py's ecj program as the test runs it: the fallback of
              docs/research-fewer-hits.md if Lucene refills too seldom
  sunflow     Debian's sunflow ray tracer, its built-in benchmark scene
              (SunflowGUI -bench, one rendering thread per CPU): about 20 s of
              CPU, thousands of TLAB refills a second; --gc G1 by default
Corpus programs are checked after every run (the program's own output
against figures computed in Python), so a tracer that changed what the program
does fails the benchmark.

Needs root, the patched and unpatched JDKs (JVMTRACE_PATCHED_HOME and
JVMTRACE_UNPATCHED_HOME, or scripts/build-patched-jdk.sh's cache) and a built
jvmtrace (JVMTRACE_BUILD_DIR, default build/; or --jvmtrace).  Nothing else
may run on the machine meanwhile: the disturbed-round check only reports it.

  sudo bench/cpu_overhead.py --program allocbench --rounds 20
  sudo bench/cpu_overhead.py --program lucene --rounds 15 --json lucene.json
  sudo bench/cpu_overhead.py --program h2 --configs patched,stat,record --rounds 1
"""
import argparse
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
import corpus  # noqa: E402
from helpers import LineReader  # noqa: E402

# name: (JDK, jvmtrace command or None, its extra arguments)
CONFIG_TABLE = {
    "unpatched": ("unpatched", None, []),
    "patched": ("patched", None, []),
    "stat": ("patched", "stat", ["--mode", "usdt"]),
    "record": ("patched", "record", ["--mode", "usdt"]),
    # Allocation sites (issue 22): the VM's own stacks, sampled by bytes.
    "record-stacks": ("patched", "record", ["--mode", "usdt", "--stacks"]),
    "stock-stat": ("unpatched", "stat", ["--mode", "stock"]),
    "stock-record": ("unpatched", "record", ["--mode", "stock"]),
    # Only with a jvmtrace that has --probe-set (issue 14): the old probes
    # (three hits per refill) on a JVM that also has the combined ones.
    "stat-separate": ("patched", "stat", ["--mode", "usdt", "--probe-set", "separate"]),
    "record-separate": ("patched", "record", ["--mode", "usdt", "--probe-set", "separate"]),
    # One hit per slow path (alloc__slow), the set before alloc__batch.
    "stat-combined": ("patched", "stat", ["--mode", "usdt", "--probe-set", "combined"]),
    "record-combined": ("patched", "record", ["--mode", "usdt", "--probe-set", "combined"]),
    # The cost split in two (not by default): bpftrace count() on one probe.
    # bt-gc: gc__start, a few hits a run: what merely having a USDT probe
    # attached costs.  bt-slow: alloc__slow, one bare hit per slow path:
    # the floor of any tracer of every slow path.
    "bt-gc": ("patched", "bpftrace", ["gc__start"]),
    "bt-slow": ("patched", "bpftrace", ["alloc__slow"]),
    # bt-sample: alloc__sample, so the VM's sampler walks its stacks (it runs
    # only while that probe is attached) and nothing reads them: what
    # `--stacks` costs inside the JVM, without the recorder's share.
    "bt-sample": ("patched", "bpftrace", ["alloc__sample"]),
}
CONFIGS = ("unpatched", "patched", "stat", "record", "stock-stat", "stock-record")   # the default set
JDK_OF = {c: jdk for c, (jdk, _, _) in CONFIG_TABLE.items()}
BASELINES = ("patched", "unpatched")
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print(*a, file=OUT, flush=True)


OUT = sys.stdout


# --- the tracers --------------------------------------------------------------------

def tracer_argv(config, jvmtrace, pid, trace_file):
    """argv of a configuration's tracer, and the start of its banner on stderr
    (None: nothing attached; for bpftrace, its "Attaching" line on stdout)."""
    _, tool, extra = CONFIG_TABLE[config]
    if tool == "bpftrace":
        lib = os.path.realpath(f"/proc/{pid}/exe").rsplit("/bin/", 1)[0] + "/lib/server/libjvm.so"
        return ["bpftrace", "-p", str(pid), "-e",
                f"usdt:{lib}:jvmtrace:{extra[0]} {{ @hits = count(); }}"], "Attaching"
    if tool == "stat":
        return [jvmtrace, "stat", *extra, "--json", "-p", str(pid)], "Attached "
    if tool == "record":
        return [jvmtrace, "record", "-q", *extra, "-p", str(pid), "-o", str(trace_file)], "Recording PID"
    return None, None


def stat_hits(report):
    """(probe hits, records in PLAB batches, how they were counted) behind one
    `stat --json` report.  The separate probes (and a jvmtrace without
    --probe-set): enter + exit per slow path, a refill, two per PLAB (alloc,
    retire: every PLAB is retired within its pause), one per direct
    promotion, two per collection and two per pause.  The combined probes
    (probe_set "combined", docs/research-fewer-hits.md): one alloc__slow per
    slow path, one plab__batch per batch (its PLAB and direct-promotion
    records cost BPF work, not hits), and the four GC probes.  Stock mode: one
    uprobe per refill, per outside-TLAB allocation, and per collection's start
    and end."""
    c = report["counters"]
    if report.get("probe_set") == "batched":
        return (c["alloc_batches"] + c["plab_batches"] + c["gc_starts"] + c["gc_ends"] + 2 * c["gc_pauses"],
                c["slow_paths"] + c["plabs"] + c["promoted_direct"],
                "alloc_batches + plab_batches + gc_starts + gc_ends + 2*gc_pauses; "
                "records: slow_paths + plabs + promoted_direct")
    if report.get("mode") == "stock":
        return (c["tlab_refills"] + c["outside_allocs"] + c["gc_starts"] + c["gc_ends"], 0,
                "tlab_refills + outside_allocs + gc_starts + gc_ends")
    if report.get("probe_set") == "combined":
        return (c["slow_paths"] + c["plab_batches"] + c["gc_starts"] + c["gc_ends"] + 2 * c["gc_pauses"],
                c["plabs"] + c["promoted_direct"],
                "slow_paths + plab_batches + gc_starts + gc_ends + 2*gc_pauses; records: plabs + promoted_direct")
    slow = 2 * c["slow_paths"] if report.get("slow_path_probes", True) else 0
    return (slow + c["tlab_refills"] + c["gc_starts"] + c["gc_ends"] + 2 * c["gc_pauses"] + 2 * c["plabs"]
            + c["promoted_direct"], 0,
            "2*slow_paths + tlab_refills + gc_starts + gc_ends + 2*gc_pauses + 2*plabs + promoted_direct")


# --- processes: waiting with a timeout, CPU from wait4 and /proc ---------------------

class Child:
    """A child started with Popen, reaped with os.wait4 (Popen.wait would
    discard its rusage); a pidfd lets us wait with a timeout and signal it
    without racing its reaping."""

    def __init__(self, popen):
        self.p = popen
        self.pid = popen.pid
        self.fd = os.pidfd_open(popen.pid)
        self.status = None
        self.rusage = None

    def exited(self, timeout=0):
        if self.rusage is not None:
            return True
        return bool(select.select([self.fd], [], [], timeout)[0])

    def reap(self, timeout):
        """wait4 once it has exited; None if it has not within timeout."""
        if self.rusage is None:
            if not self.exited(timeout):
                return None
            _, status, ru = os.wait4(self.pid, 0)
            self.status = os.waitstatus_to_exitcode(status)
            self.p.returncode = self.status
            self.rusage = ru
            os.close(self.fd)
        return self.rusage

    def signal(self, sig):
        if self.rusage is None:
            try:
                signal.pidfd_send_signal(self.fd, sig)
            except ProcessLookupError:
                pass

    def end(self, grace, what):
        """Reap it, asking it to stop with SIGINT after grace seconds and
        killing it grace seconds later; returns (rusage, how it ended)."""
        if self.reap(grace) is not None:
            return self.rusage, "exited"
        self.signal(signal.SIGINT)
        if self.reap(grace) is not None:
            return self.rusage, "SIGINT"
        log(f"cpu_overhead: {what} ignored SIGINT for {grace} s: killing it")
        self.signal(signal.SIGKILL)
        return self.reap(60), "SIGKILL"


def proc_cpu(pid):
    """A live process's user+sys seconds so far (/proc/PID/stat, clock ticks)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def system_cpu():
    """(busy seconds of all CPUs, stolen seconds) from /proc/stat."""
    f = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (f + [0] * 8)[:8]
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


def self_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def loadavg():
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def wait_until(pred, timeout, what, jvm):
    deadline = time.monotonic() + timeout
    while not pred():
        if jvm.exited():
            raise RuntimeError(f"{what}: the JVM exited first")
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


# --- the programs ----------------------------------------------------------------------

@contextmanager
def corpus_globals(**values):
    """tests/corpus.py's programs read their sizes from module globals when
    they prepare and build their command lines; this sets some for a while,
    so the definitions are reused, not copied."""
    old = {k: getattr(corpus, k) for k in values}
    for k, v in values.items():
        setattr(corpus, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(corpus, k, v)


def with_heap(flags, heap_mb):
    return [f for f in flags if not f.startswith(("-Xms", "-Xmx"))] + [f"-Xms{heap_mb}m", f"-Xmx{heap_mb}m"]


class AllocBench:
    held_by = "ready/go"

    def __init__(self, a, homes, work):
        self.a = a
        self.classes = work / "allocbench-classes"
        subprocess.run([f"{homes['patched']}/bin/javac", "-d", str(self.classes),
                        str(REPO / "bench/java/AllocBench.java"), str(REPO / "tests/java/TestSupport.java")],
                       check=True)
        self.checksums = set()
        self.name = f"allocbench threads={a.threads} iterations={a.iterations}/thread warmup={a.warmup} heap={a.heap}"

    def start(self, home, gc, run_dir):
        a = self.a
        argv = [f"{home}/bin/java", f"-XX:+Use{gc}GC", f"-Xms{a.heap}", f"-Xmx{a.heap}", "-cp", str(self.classes),
                "AllocBench", str(a.threads), str(a.iterations), str(a.warmup), "wait"]
        p = subprocess.Popen(argv, cwd=run_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.out = LineReader(p.stdout)
        self.jvm = p
        return p

    def wait_held(self, jvm, timeout):
        line = self.out.wait_for(lambda l: l.startswith("ready "), timeout, "AllocBench's ready line")
        assert int(line.split()[1]) == jvm.pid, line

    def release(self, jvm):
        self.jvm.stdin.write("go\n")
        self.jvm.stdin.close()

    def check(self, run_dir, home):
        lines = self.out.drain()
        fields = dict(l.split(" ", 1) for l in lines if l.startswith(("elapsed_ms ", "checksum ")))
        if "checksum" not in fields:
            raise RuntimeError(f"AllocBench printed no checksum: {lines[-5:]}")
        self.checksums.add(fields["checksum"])
        if len(self.checksums) != 1:
            raise RuntimeError(f"AllocBench's checksum differs between runs: {self.checksums}")
        return {"elapsed_ms": int(fields["elapsed_ms"])}


class CorpusProgram:
    held_by = "PauseAtStartup"

    def __init__(self, program, a, homes, work, globals_, heap_mb, prepare_extra=None, argv_check=None):
        self.program, self.a, self.globals, self.argv_check = program, a, globals_, argv_check
        self.heap_mb = heap_mb
        self.inputs = work / f"input-{program.name}"
        self.inputs.mkdir()
        with corpus_globals(**globals_):
            program.prepare(self.inputs, homes["patched"])
        if prepare_extra:
            prepare_extra(self.inputs)
        self.name = program.name

    def start(self, home, gc, run_dir):
        # Inputs hard-linked, as the corpus test does: the programs only read them.
        shutil.copytree(self.inputs, run_dir, copy_function=os.link, dirs_exist_ok=True)
        flags = ["-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", *self.program.gc[gc]]
        if self.heap_mb:
            flags = with_heap(flags, self.heap_mb)
        with corpus_globals(**self.globals):
            argv = self.program.command(home, flags)
        if self.argv_check:
            self.argv_check(argv)
        with open(run_dir / corpus.STDOUT, "w") as out, open(run_dir / "stderr.txt", "w") as err:
            return subprocess.Popen(argv, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def check(self, run_dir, home):
        self.program.check(run_dir, home)
        return {}


class Sunflow:
    """Debian's sunflow (a ray tracer): `SunflowGUI -bench`, its built-in
    benchmark scene rendered by one thread per CPU, about 20 s of CPU here,
    refilling thousands of TLABs a second.  Held at
    start-up like the corpus programs.  Debian's build fails the benchmark's
    own check against its reference image (about 170,000 pixels differ, a few
    more or less from run to run, traced or not; docs/notes.md), so the check
    here is that the render finished and was compared, with the count of
    differing pixels within 1% of the first run's."""
    held_by = "PauseAtStartup"
    JARS = "/usr/share/java/sunflow.jar:/usr/share/java/sunflowGUI.jar"
    exit_status = 1  # the failed image check throws out of main

    def __init__(self, a):
        if not Path("/usr/share/java/sunflow.jar").exists():
            sys.exit("cpu_overhead: sunflow is not installed (scripts/install-deps.sh --bench installs it)")
        self.a = a
        self.name = "sunflow -bench"
        self.errors = None

    def start(self, home, gc, run_dir):
        argv = [str(Path(home) / "bin/java"), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup",
                {"G1": "-XX:+UseG1GC", "Parallel": "-XX:+UseParallelGC"}[gc], "-Xms1g", "-Xmx1g",
                "-cp", self.JARS, "SunflowGUI", "-bench"]
        with open(run_dir / "stdout.txt", "w") as out, open(run_dir / "stderr.txt", "w") as err:
            return subprocess.Popen(argv, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out, stderr=err)

    def check(self, run_dir, home):
        text = (run_dir / "stdout.txt").read_text() + (run_dir / "stderr.txt").read_text()
        m = re.search(r"Image check (?:passed|failed! - #errors: (\d+))", text)
        if not m:
            raise RuntimeError(f"sunflow did not finish its render: {text[-500:]}")
        errors = int(m.group(1) or 0)
        if self.errors is None:
            self.errors = errors
        elif abs(errors - self.errors) > 0.01 * max(self.errors, 100):
            raise RuntimeError(f"sunflow's image differs from the first run's: {errors} vs {self.errors} pixels off")
        return {"pixels_off_reference": errors}


def make_corpus(kind, a, homes, work):
    if kind == "ecj":
        return CorpusProgram(corpus.ECJ, a, homes, work, {}, a.heap_mb)
    if kind == "h2":
        def repeat(inputs):
            # The test's script, run --h2-repeat times on one in-memory
            # database; DROP ALL OBJECTS between keeps its live set the test's,
            # so the test's heap suits it.  Its results repeat as often.
            if a.h2_repeat == 1:
                return
            script = (inputs / "script.sql").read_text()
            (inputs / "script.sql").write_text((script + "DROP ALL OBJECTS;\n") * a.h2_repeat)
            corpus.write_expected(inputs, corpus.read_expected(inputs) * a.h2_repeat)
        p = CorpusProgram(corpus.H2, a, homes, work, {}, a.heap_mb, repeat)
        p.name = f"h2-sql x{a.h2_repeat}"
        return p
    docs = a.lucene_docs
    heap = a.heap_mb or max(64, round(64 * docs / corpus.LUCENE_DOCS / 16) * 16)

    def threads_given(argv):  # the driver's arguments: DOCS THREADS QUERIES
        i = argv.index("LuceneIndexSearch")
        assert argv[i + 2] == str(a.lucene_threads), f"tests/corpus.py's Lucene command has changed: {argv}"
    p = CorpusProgram(corpus.LUCENE, a, homes, work,
                      {"LUCENE_DOCS": docs, "LUCENE_THREADS": a.lucene_threads}, heap, argv_check=threads_given)
    got = corpus.read_expected(p.inputs)["docs"]
    assert got == docs, f"tests/corpus.py prepared {got} Lucene documents, not {docs}: has it changed?"
    p.name = f"lucene-index-search docs={docs} threads={a.lucene_threads} heap={heap}m"
    return p


# --- one run --------------------------------------------------------------------------

@dataclass
class Run:
    program: str
    gc: str
    round: int
    config: str
    order: int
    jvm_user: float = 0.0
    jvm_sys: float = 0.0
    jvm_cpu_at_release: float = None     # /proc ticks, 10 ms resolution
    wall: float = 0.0                    # release -> the JVM's exit
    held: float = 0.0                    # start -> release (tracer start-up included)
    tracer_user: float = None
    tracer_sys: float = None
    tracer_cpu_at_release: float = None
    tracer_ended: str = None
    tracer_rc: int = None
    other_cpu: float = 0.0               # seconds of CPU used by everything else during wall
    steal: float = 0.0
    load_before: list = field(default_factory=list)
    load_after: list = field(default_factory=list)
    stat: dict = None                    # stat's last JSON report (counters only)
    record: dict = None                  # record's last line: events, bytes, lost
    extra: dict = field(default_factory=dict)

    @property
    def jvm_cpu(self):
        return self.jvm_user + self.jvm_sys

    @property
    def tracer_cpu(self):
        return None if self.tracer_user is None else self.tracer_user + self.tracer_sys


RECORD_END = re.compile(r"^jvmtrace record: .* after [\d.]+ s: (\d+) events, (\d+) bytes .*?, (\d+) lost")


def run_once(prog, config, gc, rnd, order, a, homes, work):
    home = homes[JDK_OF[config]]
    run_dir = Path(tempfile.mkdtemp(prefix=f"{config}-", dir=work))
    r = Run(program=prog.name, gc=gc, round=rnd, config=config, order=order, load_before=loadavg())
    t_start = time.monotonic()
    jvm = Child(prog.start(home, gc, run_dir))
    tracer = None
    try:
        if isinstance(prog, AllocBench):
            prog.wait_held(jvm, a.start_timeout)
            release = prog.release
        else:
            paused = run_dir / f"vm.paused.{jvm.pid}"
            wait_until(paused.exists, a.start_timeout, f"HotSpot to create {paused} (-XX:+PauseAtStartup)", jvm)
            release = lambda _jvm: paused.unlink()  # noqa: E731  (os::pause polls for the file)
        argv, banner = tracer_argv(config, a.jvmtrace, jvm.pid, run_dir / "trace.jvmtrace")
        if argv:
            tracer = Child(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            t_out, t_err = LineReader(tracer.p.stdout), LineReader(tracer.p.stderr)
            try:
                (t_out if argv[0] == "bpftrace" else t_err).wait_for(
                    lambda l: l.startswith(banner), a.start_timeout, f"{config} to attach")
            except AssertionError as e:
                raise RuntimeError(f"{e}; tracer stderr: {' | '.join(t_err.drain(5)[-5:])}") from None
            if jvm.exited():
                raise RuntimeError("the JVM exited while the tracer attached: was it not held?")
        # The window: from the release to the JVM's exit.
        r.jvm_cpu_at_release = proc_cpu(jvm.pid)
        r.tracer_cpu_at_release = proc_cpu(tracer.pid) if tracer else None
        sys0, steal0, self0 = *system_cpu(), self_cpu()
        t0 = time.monotonic()
        r.held = t0 - t_start
        release(jvm)
        ru = jvm.reap(a.run_timeout)
        if ru is None:
            jvm.signal(signal.SIGKILL)
            jvm.reap(60)
            raise RuntimeError(f"the JVM ran longer than --run-timeout {a.run_timeout} s: killed")
        r.wall = time.monotonic() - t0
        sys1, steal1, self1 = *system_cpu(), self_cpu()
        tracer_now = proc_cpu(tracer.pid) if tracer else None
        r.load_after = loadavg()
        r.jvm_user, r.jvm_sys = ru.ru_utime, ru.ru_stime
        if jvm.status != getattr(prog, "exit_status", 0):
            raise RuntimeError(f"the JVM exited with status {jvm.status}; see {run_dir}")
        ours = (r.jvm_cpu - (r.jvm_cpu_at_release or 0)) + (self1 - self0)
        if tracer and tracer_now is not None and r.tracer_cpu_at_release is not None:
            ours += tracer_now - r.tracer_cpu_at_release
        r.other_cpu = (sys1 - sys0) - ours   # may dip below 0: /proc/stat is tick-sampled, rusage is not
        r.steal = steal1 - steal0
        if tracer:
            tru, how = tracer.end(a.tracer_timeout, config)
            r.tracer_ended, r.tracer_rc = how, tracer.status
            if tru is not None:
                r.tracer_user, r.tracer_sys = tru.ru_utime, tru.ru_stime
            out, err = t_out.drain(), t_err.drain()
            if tracer.status != 0:
                log(f"cpu_overhead: {config} exited with status {tracer.status} ({how}): {' | '.join(err[-5:])}")
            if CONFIG_TABLE[config][1] == "stat":
                reports = [l for l in out if l.startswith("{")]
                if reports:
                    rep = json.loads(reports[-1])
                    r.stat = {k: rep.get(k) for k in ("mode", "probe_set", "seconds", "slow_path_probes",
                                                     "pause_probes", "counters")}
                else:
                    log(f"cpu_overhead: {config} printed no JSON report: {' | '.join(err[-5:])}")
            else:
                m = next((RECORD_END.match(l) for l in reversed(err) if RECORD_END.match(l)), None)
                if m:
                    r.record = {"events": int(m.group(1)), "bytes": int(m.group(2)), "lost": int(m.group(3))}
                    if r.record["lost"]:
                        log(f"cpu_overhead: {config} lost {r.record['lost']} events: its CPU is understated")
                else:
                    log(f"cpu_overhead: {config} printed no summary line: {' | '.join(err[-5:])}")
        r.extra = prog.check(run_dir, home) or {}
    finally:
        for c in (jvm, tracer):
            if c is not None and c.rusage is None:
                c.signal(signal.SIGKILL)
                c.reap(60)
    if not a.keep_files:
        shutil.rmtree(run_dir, ignore_errors=True)
    return r


# --- statistics -------------------------------------------------------------------------

def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def percentile(sorted_xs, p):
    """Linear interpolation between closest ranks (numpy's default)."""
    k = (len(sorted_xs) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (k - lo)


def bootstrap_ci(xs, resamples, rng):
    """95% CI of the median: resample with replacement, median each, 2.5/97.5%."""
    n = len(xs)
    meds = sorted(median(rng.choices(xs, k=n)) for _ in range(resamples))
    return percentile(meds, 0.025), percentile(meds, 0.975)


def summarise(runs, configs, a, rng):
    """Per configuration and baseline: per-round extra CPU and sys (percent),
    their medians and CIs; tracer CPU; the hit bound."""
    by_round = {}
    for r in runs:
        by_round.setdefault(r.round, {})[r.config] = r
    disturbed = {n for n, rs in by_round.items() if any(is_disturbed(r, a) for r in rs.values())}
    used = sorted(n for n, rs in by_round.items() if len(rs) == len(configs)
                  and (a.keep_disturbed or n not in disturbed))
    note = None
    if not used:
        used = sorted(n for n, rs in by_round.items() if len(rs) == len(configs))
        note = "every round was disturbed: the statistics below use them all and mean little"
    out = {"rounds_used": used, "rounds_disturbed": sorted(disturbed), "note": note, "configs": {}}
    for c in configs:
        rows = [by_round[n][c] for n in used]
        s = {"rounds": len(rows),
             "jvm_cpu_median": median([r.jvm_cpu for r in rows]),
             "jvm_sys_median": median([r.jvm_sys for r in rows]),
             "wall_median": median([r.wall for r in rows])}
        if rows and rows[0].tracer_cpu is not None:
            s["tracer_user_median"] = median([r.tracer_user or 0 for r in rows])
            s["tracer_sys_median"] = median([r.tracer_sys or 0 for r in rows])
            # What it used once the JVM ran: its attach (BPF load, symbols) left out.
            s["tracer_after_release_median"] = median([(r.tracer_cpu or 0) - (r.tracer_cpu_at_release or 0)
                                                       for r in rows])
        for b in BASELINES:
            if b not in configs or b == c:
                continue
            base = [by_round[n][b] for n in used]
            extra = [100 * (r.jvm_cpu - q.jvm_cpu) / q.jvm_cpu for r, q in zip(rows, base)]
            extra_sys = [100 * (r.jvm_sys - q.jvm_sys) / q.jvm_cpu for r, q in zip(rows, base)]
            sys_ratio = [r.jvm_sys / q.jvm_sys for r, q in zip(rows, base) if q.jvm_sys > 0]
            s[f"vs_{b}"] = {
                "extra_cpu_pct": extra, "extra_cpu_pct_median": median(extra),
                "extra_cpu_pct_ci95": bootstrap_ci(extra, a.bootstrap, rng),
                "extra_sys_pct": extra_sys, "extra_sys_pct_median": median(extra_sys),
                "extra_sys_pct_ci95": bootstrap_ci(extra_sys, a.bootstrap, rng),
                "sys_ratio_median": median(sys_ratio) if sys_ratio else None}
        # The independent bound, from the counters of this configuration's stat runs.
        jdk, tool, _ = CONFIG_TABLE[c]
        per_hit = a.per_hit_int3_us if c.startswith("stock-") else a.per_hit_us
        if tool == "stat" and jdk in configs and rows and all(r.stat for r in rows):
            hits = [stat_hits(r.stat) for r in rows]
            bound = [100 * (h * per_hit + rec * a.per_record_us) * 1e-6 / by_round[n][jdk].jvm_cpu
                     for (h, rec, _), n in zip(hits, used)]
            s["bound"] = {"baseline": jdk, "per_hit_us": per_hit, "per_record_us": a.per_record_us,
                          "formula": hits[0][2], "hits": [h for h, _, _ in hits],
                          "hits_median": median([h for h, _, _ in hits]),
                          "records_median": median([rec for _, rec, _ in hits]),
                          "bound_pct": bound, "bound_pct_median": median(bound)}
        out["configs"][c] = s
    # What --stacks adds over `record` (issue 22's target: within 1% of JVM
    # CPU), as each round's own difference, over the same round's `patched`
    # (or, when `patched` was not run, over the round's `record`).
    if {"record", "record-stacks"} <= set(configs) and used:
        denom = "patched" if "patched" in configs else "record"
        rows = [(by_round[n]["record-stacks"], by_round[n]["record"], by_round[n][denom]) for n in used]
        cpu = [100 * (x.jvm_cpu - y.jvm_cpu) / b.jvm_cpu for x, y, b in rows]
        sys_ = [100 * (x.jvm_sys - y.jvm_sys) / b.jvm_cpu for x, y, b in rows]
        out["stacks_over_record"] = {
            "over": denom,
            "extra_cpu_pct": cpu, "extra_cpu_pct_median": median(cpu),
            "extra_cpu_pct_ci95": bootstrap_ci(cpu, a.bootstrap, rng),
            "extra_sys_pct": sys_, "extra_sys_pct_median": median(sys_),
            "extra_sys_pct_ci95": bootstrap_ci(sys_, a.bootstrap, rng)}
    return out


def is_disturbed(r, a):
    return r.wall > 0 and (r.other_cpu / r.wall > a.max_other_cpu or r.steal / r.wall > a.max_other_cpu)


def print_summary(title, summ, configs):
    log(f"\n## {title}")
    log(f"rounds used: {len(summ['rounds_used'])}; disturbed: {summ['rounds_disturbed'] or 'none'}")
    if summ["note"]:
        log(f"NOTE: {summ['note']}")
    for b in BASELINES:
        if b not in configs:
            continue
        log(f"\nExtra JVM CPU against `{b}` (per round, then the median over rounds; 95% bootstrap CI). "
            f"Extra sys: the system time added, as a percentage of `{b}`'s total CPU.\n")
        log("| configuration | JVM CPU s (median) | extra CPU % | 95% CI | extra sys % | 95% CI "
            "| tracer CPU s: user+sys (after release) |")
        log("|---|---|---|---|---|---|---|")
        for c in configs:
            s = summ["configs"][c]
            tr = (f"{s['tracer_user_median']:.3f}+{s['tracer_sys_median']:.3f} "
                  f"({s['tracer_after_release_median']:.2f})" if "tracer_user_median" in s else "-")
            v = s.get(f"vs_{b}")
            if v is None:
                log(f"| {c} | {s['jvm_cpu_median']:.3f} | (baseline) | | | | {tr} |")
                continue
            lo, hi = v["extra_cpu_pct_ci95"]
            slo, shi = v["extra_sys_pct_ci95"]
            log(f"| {c} | {s['jvm_cpu_median']:.3f} | {v['extra_cpu_pct_median']:+.2f} | {lo:+.2f} .. {hi:+.2f} "
                f"| {v['extra_sys_pct_median']:+.2f} | {slo:+.2f} .. {shi:+.2f} | {tr} |")
    so = summ.get("stacks_over_record")
    if so:
        log(f"\n`record-stacks` over `record`, each round's own difference over its `{so['over']}` JVM CPU: "
            f"CPU {so['extra_cpu_pct_median']:+.2f}% (CI {so['extra_cpu_pct_ci95'][0]:+.2f} .. "
            f"{so['extra_cpu_pct_ci95'][1]:+.2f}), sys {so['extra_sys_pct_median']:+.2f}% "
            f"(CI {so['extra_sys_pct_ci95'][0]:+.2f} .. {so['extra_sys_pct_ci95'][1]:+.2f})")
    for c in configs:
        bd = summ["configs"][c].get("bound")
        if not bd:
            continue
        v = summ["configs"][c].get(f"vs_{bd['baseline']}")
        measured = (f"measured {v['extra_cpu_pct_median']:+.2f}% "
                    f"(CI {v['extra_cpu_pct_ci95'][0]:+.2f} .. {v['extra_cpu_pct_ci95'][1]:+.2f})" if v else "")
        recs = (f" + {bd['records_median']:,.0f} batch records x {bd['per_record_us']} us"
                if bd["records_median"] else "")
        log(f"\nIndependent bound for `{c}`: ({bd['hits_median']:,.0f} probe hits x {bd['per_hit_us']} us{recs}) "
            f"/ `{bd['baseline']}` JVM CPU = {bd['bound_pct_median']:.2f}% (median over rounds; hits: "
            f"{bd['formula']}); {measured}")


# --- main --------------------------------------------------------------------------------

def jdk_homes():
    env = {v: os.environ.get(f"JVMTRACE_{v.upper()}_HOME") for v in ("patched", "unpatched")}
    if all(env.values()):
        return env
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cpu_overhead: JDKs not built ({r.stderr.strip()}); run scripts/build-patched-jdk.sh "
                 "or set JVMTRACE_PATCHED_HOME and JVMTRACE_UNPATCHED_HOME")
    return dict(l.split("=", 1) for l in r.stdout.split())


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--program", default="allocbench", help="allocbench, h2, lucene, ecj, sunflow (comma-separated)")
    ap.add_argument("--gc", help="comma-separated collectors (default: G1,Parallel for allocbench, G1 otherwise)")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--target-ci", type=float, metavar="POINTS",
                    help="after --rounds, go on until every 95%% CI of extra CPU is at most +-POINTS wide")
    ap.add_argument("--max-rounds", type=int, default=30, help="with --target-ci (default 30)")
    ap.add_argument("--seed", type=int, default=42, help="for the orders and the bootstrap")
    ap.add_argument("--bootstrap", type=int, default=10_000, help="resamples (default 10000)")
    ap.add_argument("--per-hit-us", type=float, default=1.3,
                    help="cost of one USDT probe hit, for the bound (default 1.3: probe_hit_cost.sh)")
    ap.add_argument("--per-hit-int3-us", type=float, default=4.9,
                    help="cost of one function-entry uprobe hit, for stock-stat's bound (default 4.9)")
    ap.add_argument("--per-record-us", type=float, default=0.0,
                    help="BPF cost of one PLAB batch record (combined probes), for the bound (default 0: "
                         "not measured yet)")
    ap.add_argument("--max-other-cpu", type=float, default=0.10,
                    help="cores other processes may use on average before a round is disturbed (default 0.10)")
    ap.add_argument("--keep-disturbed", action="store_true", help="count disturbed rounds in the statistics")
    ap.add_argument("--json", metavar="FILE", help="write every run and the summaries as JSON ('-': stdout, "
                                                  "and the readable output to stderr)")
    ap.add_argument("--jvmtrace", help="the jvmtrace binary (default: $JVMTRACE_BUILD_DIR/userspace/jvmtrace)")
    ap.add_argument("--work", help="directory for inputs and runs (default: a new one under /tmp)")
    ap.add_argument("--keep-files", action="store_true", help="keep every run's directory (traces, output)")
    ap.add_argument("--start-timeout", type=float, default=120, help="s to wait for a hold or a banner")
    ap.add_argument("--run-timeout", type=float, default=900, help="s a JVM may run once released")
    ap.add_argument("--tracer-timeout", type=float, default=30,
                    help="s a tracer may take to end after its JVM (then SIGINT, then SIGKILL)")
    g = ap.add_argument_group("allocbench")
    g.add_argument("--threads", type=int, default=2)
    g.add_argument("--iterations", type=int, default=60_000_000, help="per thread, measured phase")
    g.add_argument("--warmup", type=int, help="per thread (default: iterations / 4)")
    g.add_argument("--heap", default="256m")
    g = ap.add_argument_group("corpus programs")
    g.add_argument("--h2-repeat", type=int, default=1, help="times the H2 test script runs in one JVM")
    g.add_argument("--lucene-docs", type=int, default=120_000)
    g.add_argument("--lucene-threads", type=int, default=4)
    g.add_argument("--heap-mb", type=int, help="override the corpus program's heap (MB)")
    a = ap.parse_args()

    if a.json == "-":
        OUT = sys.stderr
    configs = a.configs.split(",")
    for c in configs:
        if c not in CONFIG_TABLE:
            sys.exit(f"cpu_overhead: unknown configuration {c!r} (known: {', '.join(CONFIG_TABLE)})")
    programs = a.program.split(",")
    for p in programs:
        if p not in ("allocbench", "h2", "lucene", "ecj", "sunflow"):
            sys.exit(f"cpu_overhead: unknown program {p!r}")
    if a.warmup is None:
        a.warmup = a.iterations // 4
    build = Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))
    a.jvmtrace = a.jvmtrace or str(build / "userspace/jvmtrace")
    traced = any(CONFIG_TABLE[c][1] for c in configs)
    if traced and not os.access(a.jvmtrace, os.X_OK):
        sys.exit(f"cpu_overhead: no jvmtrace at {a.jvmtrace} (set JVMTRACE_BUILD_DIR or --jvmtrace)")
    if os.geteuid() != 0 and traced:
        sys.exit("cpu_overhead: the tracers attach eBPF programs: run as root")
    homes = jdk_homes()
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="jvmtrace-cpubench-"))
    work.mkdir(parents=True, exist_ok=True)
    rng_order, rng_boot = random.Random(a.seed), random.Random(a.seed + 1)

    log(f"# cpu_overhead: configs {','.join(configs)}; {a.rounds} rounds"
        f"{f' (up to {a.max_rounds} for a CI of +-{a.target_ci})' if a.target_ci else ''}, order shuffled per "
        f"round; jvmtrace {a.jvmtrace}; work {work}")
    log(f"# {os.cpu_count()} CPUs, loadavg {loadavg()} at the start")
    results = {"args": vars(a), "homes": homes, "series": []}
    for name in programs:
        prog = (AllocBench(a, homes, work) if name == "allocbench" else Sunflow(a) if name == "sunflow"
                else make_corpus(name, a, homes, work))
        gcs = (a.gc or ("G1,Parallel" if name == "allocbench" else "G1")).split(",")
        for gc in gcs:
            log(f"\n# {prog.name}, {gc}, held by {prog.held_by}")
            runs = []
            rnd = 0
            while True:
                rnd += 1
                order = list(configs)
                rng_order.shuffle(order)
                for i, c in enumerate(order):
                    r = run_once(prog, c, gc, rnd, i, a, homes, work)
                    runs.append(r)
                    tr = f"tracer {r.tracer_user:.3f}+{r.tracer_sys:.3f} s" if r.tracer_user is not None else ""
                    flag = " DISTURBED" if is_disturbed(r, a) else ""
                    log(f"{gc:8s} round {rnd:2d} {c:12s} JVM {r.jvm_cpu:7.3f} s CPU (user {r.jvm_user:7.3f} "
                        f"sys {r.jvm_sys:6.3f}) wall {r.wall:6.2f} s held {r.held:5.2f} s {tr:24s} "
                        f"other {r.other_cpu / max(r.wall, 1e-9):4.2f} cores steal {r.steal:5.2f} s "
                        f"load {r.load_before[0]:.2f}->{r.load_after[0]:.2f}{flag}")
                if rnd < a.rounds:
                    continue
                if not a.target_ci or rnd >= a.max_rounds:
                    break
                s = summarise(runs, configs, argparse.Namespace(**{**vars(a), "bootstrap": 2000}), rng_boot)
                widths = [(v["extra_cpu_pct_ci95"][1] - v["extra_cpu_pct_ci95"][0]) / 2
                          for cs in s["configs"].values() for k, v in cs.items() if k.startswith("vs_")]
                if len(s["rounds_used"]) >= a.rounds and widths and max(widths) <= a.target_ci:
                    break
            summ = summarise(runs, configs, a, rng_boot)
            print_summary(f"{prog.name}, {gc}", summ, configs)
            results["series"].append({"program": prog.name, "gc": gc, "held_by": prog.held_by,
                                      "runs": [asdict(r) | {"jvm_cpu": r.jvm_cpu, "disturbed": is_disturbed(r, a)}
                                               for r in runs],
                                      "summary": summ})
    if a.json:
        text = json.dumps(results, indent=1, default=str)
        if a.json == "-":
            print(text)
        else:
            Path(a.json).write_text(text + "\n")
            log(f"\nJSON: {a.json}")
    if not a.keep_files and not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
