"""Where it was allocated (issue 22): `record --stacks` on a patched JVM
takes the VM's own Java stacks (alloc__sample: the VM walks its vframes,
inlined and interpreted frames included, no -XX:+PreserveFramePointer), and
its allocation sites agree with JFR's own allocation samples
(jdk.ObjectAllocationSample, the VM's stack walk too) of the same run.

On the corpus of real programs (Saxon, Lucene, H2, ecj, Rhino; Debian's
packages), on JDK 17, 21 and 25, under G1 and Parallel, each JVM held at
start-up while `record --stacks` attaches and JFR records from its start:

- the allocating methods' shares of the bytes (the leaf-most Java frame,
  weighted by bytes) agree with JFR's at 0.90 or better (the sum over
  methods of the smaller of the two shares), and at least 9 of JFR's 10
  heaviest methods are among jvmtrace's 10, a method within jvmtrace's
  own sampling error of its 10th counting as among them (decision 125).
  JFR's reference is its event for every slow path
  (jdk.ObjectAllocationInNewTLAB and jdk.ObjectAllocationOutsideTLAB: each
  new TLAB's size and each object outside TLABs, by the stack the VM
  walked): the very bytes jvmtrace samples, all of them, so the only error
  allowed is jvmtrace's own sampling.  JFR's own samples
  (jdk.ObjectAllocationSample) are an estimate of those with its own error
  (on Lucene they agree with JFR's every-slow-path events at only 0.88):
  the agreement with them is printed, not asserted (decision 125);
- 99% of the bytes the samples stand for are under a named Java leaf frame;
- `jvmtrace export --pprof` reads in `go tool pprof`, whose alloc_space total
  is the trace's allocated bytes and whose heaviest functions are report's.

The names' lifetime (classes unloaded and their metadata reused, hidden
classes, lambdas) is test_method_names_stay_right, on MetadataChurn."""
import datetime
import bisect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from conftest import BUILD_DIR, JDK_LINES, debian_jdk17, jdk_homes
from corpus import PROGRAMS, record_held
from helpers import LineReader, reap, start_held_and_attach, wait_until

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import replay_sampler  # noqa: E402

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"

# JFR's event for every allocation slow path, with stacks, and its
# allocation samples as often as the VM offers them (one chance per new
# TLAB or object outside TLABs, each weighing the thread's bytes since its
# previous sample).
JFC = """<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="jvmtrace allocation sites" description="allocation events with stacks">
  <event name="jdk.ObjectAllocationInNewTLAB">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
  </event>
  <event name="jdk.ObjectAllocationOutsideTLAB">
    <setting name="enabled">true</setting>
    <setting name="stackTrace">true</setting>
  </event>
  <event name="jdk.ObjectAllocationSample">
    <setting name="enabled">true</setting>
    <setting name="throttle">100000/s</setting>
    <setting name="stackTrace">true</setting>
  </event>
</configuration>
"""
COLLECTORS = ("G1", "Parallel")
CASES = [(p, line, gc) for line in JDK_LINES for p in PROGRAMS for gc in COLLECTORS]
MIN_AGREEMENT = 0.90
QUIET_SHARE = 0.35  # samples of a stack named already, at least (test_samples_of_a_named_stack_wake_nobody)


def class_of(name):
    """A class name as both sides can match it: dots, and a hidden class
    (a lambda proxy) without the address or hash JFR and the VM add."""
    name = name.replace("/", ".")
    return re.sub(r"[+.]0x[0-9a-f]+.*$", "", name)


def shares(weights):
    total = sum(weights.values())
    return {k: v / total for k, v in weights.items()} if total else {}


def agreement(a, b):
    """Sum over methods of the smaller share: 1 when equal, 0 when disjoint."""
    return sum(min(a.get(k, 0.0), b.get(k, 0.0)) for k in set(a) | set(b))


def top(share, n=10):
    return [k for k, _ in sorted(share.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


# How many standard errors of jvmtrace's sampling a method may lie below
# jvmtrace's 10th and still count as among its top 10 (decision 125): at 3,
# a method truly level with the 10th is left out by chance about once in
# 800 comparisons; one truly a third below it is caught.
TIE_SIGMAS = 3.0


def top_overlap(a, b, b_var=None, n=10):
    """JFR's (a) top n methods that are in jvmtrace's (b) top n, a method
    whose share in b lies within TIE_SIGMAS standard errors of b's n-th
    counting as in it: near the boundary the ranks of methods that tie
    decide nothing (Saxon on 21: JFR's 7th to 15th within about 1 point of
    each other; ecj on 25: its 9th to 12th within 0.03 points).  b_var:
    each method's variance of its share in b, from jvmtrace's own samples
    (sampling_variance); the difference of two independent shares has the
    sum of their variances."""
    tb = top(b, n)
    if not tb:
        return set()
    tenth = b[tb[-1]]
    var = b_var or {}
    def tied(k):
        return b.get(k, 0.0) >= tenth - TIE_SIGMAS * (var.get(k, 0.0) + var.get(tb[-1], 0.0)) ** 0.5
    return {k for k in top(a, n) if k in tb or tied(k)}


def sampling_variance(weights, squares):
    """Each method's variance of its estimated share, from its samples: a
    Horvitz-Thompson total sum(w) has variance about sum(w^2) (Poisson
    sampling, the VM's byte countdown), and the share divides it by the
    total squared (the total's own error is far smaller)."""
    total = sum(weights.values())
    return {k: squares.get(k, 0.0) / total ** 2 for k in weights} if total else {}


def wall_ns(stamp):
    """ns since the epoch of one of `jfr print --json`'s ISO times
    ("2026-11-25T16:36:41.123456789Z", offset or Z)."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)", stamp)
    assert m, stamp
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    whole = datetime.datetime.fromisoformat(m.group(1) + tz)
    return int(whole.timestamp()) * 10**9 + int((m.group(2) or "0").ljust(9, "0")[:9])


def jfr_sites(home, recording):
    """method -> bytes by the top (allocating) frame: of JFR's event for
    every slow path (a new TLAB's size, an object's outside TLABs), of its
    samples (their weights); how many events of each; and the wall-clock
    span of the every-slow-path events."""
    every, sampled, counts, span = Counter(), Counter(), Counter(), [None, None]
    for kind, v, cls, name in replay_sampler.jfr_top_frames(
            str(Path(home) / "bin/jfr"), recording,
            ["jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB", "jdk.ObjectAllocationSample"]):
        method = class_of(cls) + "." + name
        counts[kind] += 1
        if kind == "jdk.ObjectAllocationSample":
            sampled[method] += v["weight"]
            continue
        every[method] += v["tlabSize"] if kind == "jdk.ObjectAllocationInNewTLAB" else v["allocationSize"]
        t = wall_ns(v["startTime"])
        span = [t if span[0] is None else min(span[0], t), t if span[1] is None else max(span[1], t)]
    return every, sampled, counts, span


def trace_samples(trace):
    """(sample, wall-clock ns) of each alloc__sample of the trace, from dump
    --json (its time on the meta's realtime clock, JFR's)."""
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    offset = None
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x["type"] == "meta":
            offset = int(x["start_realtime_ns"]) - int(x["start_monotonic_ns"])
        elif x.get("probe") == "alloc__sample":
            yield x, x["ts_ns"] + offset


def jvmtrace_sites(trace, span=None):
    """method -> bytes of the trace's samples by their allocation site (the
    leaf-most Java frame), by the VM's weights (unbiased estimates), only
    those within span (wall-clock ns; JFR records from a little after the
    JVM started, and its own start-up allocates); and report's summary of
    the whole trace."""
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", "--top", "100000", str(trace)],
                                    capture_output=True, text=True, timeout=300, check=True).stdout)
    by_method, squares = Counter(), Counter()
    for x, wall in trace_samples(trace):
        if span and not span[0] <= wall <= span[1]:
            continue
        java = [f for f in x["args"]["stack"] if f["kind"] != "vm"]
        if java and java[0]["method"] != "[unknown method]":
            name, _, method = java[0]["method"].rpartition(".")
            by_method[class_of(name) + "." + method] += x["args"]["weight_bytes"]
            squares[class_of(name) + "." + method] += x["args"]["weight_bytes"] ** 2
    return by_method, squares, rep


def run_with_jfr(program, home, line, gc, work):
    """The program held at start-up, `record --stacks` attached, JFR from the
    start; returns the recorder's stderr."""
    (work / "alloc.jfc").write_text(JFC)
    # The VM samples at up to 1,000 a second here, from its start (decision 148): the near ties of
    # Rhino's and Saxon's sites need every slow path of a short run, which the default 250 leaves out.
    flags = [f"-XX:StartFlightRecording=filename={work}/rec.jfr,settings={work}/alloc.jfc,dumponexit=true",
             "-XX:JvmtraceSampleRate=1000", *program.gc[gc]]
    assert not any("PreserveFramePointer" in f for f in flags)
    return record_held(program, home, line, flags, work, JVMTRACE, "--stacks", "-v")


@pytest.fixture(scope="module", params=CASES, ids=[f"{p.name}-jdk{l}-{g}" for p, l, g in CASES])
def sites_run(request, corpus_inputs, tmp_path_factory):
    program, line, gc = request.param
    work = tmp_path_factory.mktemp(f"sites-{program.name}-{line}-{gc}")
    shutil.copytree(corpus_inputs(program), work, copy_function=os.link, dirs_exist_ok=True)
    home = jdk_homes(line)["patched"]
    rec_err = run_with_jfr(program, home, line, gc, work)
    return {"program": program, "line": line, "gc": gc, "home": home, "work": work, "rec_err": rec_err,
            "trace": work / "trace.jvmtrace"}


def test_allocation_sites_agree_with_jfr(sites_run):
    r = sites_run
    r["program"].check(r["work"], str(debian_jdk17()))
    assert "allocation samples with the VM's own stacks" in r["rec_err"], r["rec_err"]
    every, sampled, counts, span = jfr_sites(r["home"], r["work"] / "rec.jfr")
    ours, squares, rep = jvmtrace_sites(r["trace"], span)
    a, b, j = shares(every), shares(ours), shares(sampled)
    b_var = sampling_variance(ours, squares)
    agree = agreement(a, b)
    overlap = top_overlap(a, b, b_var)
    # For the record, not asserted (decision 125): JFR's samples against its
    # every-slow-path events, and jvmtrace's against JFR's samples.
    jfr_self, ours_jfr = agreement(a, j), agreement(b, j)
    table = "\n".join(f"  JFR {a[k] * 100:6.2f}%  jvmtrace {b.get(k, 0) * 100:6.2f}% "
                      f"(+-{b_var.get(k, 0) ** 0.5 * 100:4.2f})  JFR samples {j.get(k, 0) * 100:6.2f}%  {k}"
                      for k in top(a, 15))
    tb = top(b)
    info = (f"{r['program'].name} JDK {r['line']} {r['gc']}: agreement {agree:.3f}, {len(overlap)} of JFR's top 10 "
            f"in jvmtrace's (its 10th {b[tb[-1]] * 100 if tb else 0:.2f}%); against JFR's samples {ours_jfr:.3f} "
            f"(JFR's own events {jfr_self:.3f}); JFR {dict(counts)}, jvmtrace {rep['allocation_samples']}\n{table}")
    print("\n" + info)
    assert sum(counts.values()) > 200 and rep["allocation_samples"]["samples"] > 200, info
    # Every one of JFR's top 10 (by the tie rule): so in all 180 runs of the spread (issue 38,
    # docs/testing.md), the farthest 1.15 standard errors below the 10th against the 3 allowed.
    assert agree >= MIN_AGREEMENT and len(overlap) == len(top(a)), info


def test_bytes_are_under_named_java_frames(sites_run):
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", "--top", "100000", str(sites_run["trace"])],
                                    capture_output=True, text=True, timeout=300, check=True).stdout)
    s = rep["allocation_samples"]
    # (a sample of a thread without Java frames, a compiler thread's, has no site to name)
    java = [x for x in rep["allocation_sites"] if x["method"]]
    named = sum(x["bytes"] for x in java if x["method"] != "[unknown method]")
    assert s["sampled_bytes"] + s["unsampled_bytes"] == s["traced_bytes"], s
    assert named >= 0.99 * sum(x["bytes"] for x in java), (named, s)
    # Every unnamed Java frame is counted (a JVM that lives to the end of
    # the recording unloads nothing here: none; 0 in each of the 30 cases'
    # runs of session 25).
    assert s["java_frames_unknown"] == 0, s


def test_samples_of_a_named_stack_wake_nobody(sites_run):
    """A sample whose Java frames the recorder has all named in this metadata
    epoch is submitted without waking it (decision 116: a wakeup a sample
    cost the allocating thread 7.5 us); a stack with a method not yet named
    still wakes it at once.  Each stack the recorder names whole is handed
    to the kernel once per epoch, so most samples of a real program come
    back quiet, and never more named stacks than samples that woke it."""
    err = sites_run["rec_err"]
    samples = int(re.search(r"(\d+) allocation samples with the VM's own stacks", err).group(1))
    m = re.search(r"(\d+) of the samples were of a stack already named \(no wakeup\); (\d+) stacks named", err)
    assert m, err
    quiet, named = int(m.group(1)), int(m.group(2))
    info = f"{samples} samples, {quiet} quiet, {named} stacks named"
    print(info)
    assert named >= 1 and quiet + named <= samples, info
    assert quiet >= QUIET_SHARE * samples, info


def test_pprof_profile_reads_in_go_tool_pprof(sites_run, tmp_path):
    out = tmp_path / "alloc.pb.gz"
    r = subprocess.run([str(JVMTRACE), "export", "--pprof", str(sites_run["trace"]), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = {**os.environ, "HOME": str(tmp_path), "PPROF_TMPDIR": str(tmp_path)}
    top_text = subprocess.run(["go", "tool", "pprof", "-top", "-nodecount=15", "-sample_index=alloc_space",
                               "-unit=B", str(out)], capture_output=True, text=True, timeout=300, env=env)
    assert top_text.returncode == 0, top_text.stderr
    m = re.search(r"Showing nodes accounting for \d+B?, [\d.]+% of (\d+)B total", top_text.stdout)
    assert m, top_text.stdout[:2000]
    rep = json.loads(subprocess.run([str(JVMTRACE), "report", "--json", "--top", "100000", str(sites_run["trace"])],
                                    capture_output=True, text=True, timeout=300, check=True).stdout)
    assert int(m.group(1)) == rep["allocation_samples"]["traced_bytes"], (m.group(0), rep["allocation_samples"])
    # pprof's heaviest functions by flat bytes are report's heaviest methods.
    flat = []
    for line in top_text.stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[0].endswith("B") and f[1].endswith("%"):
            # pprof marks a function inlined at a location "(inline)", or "(partial-inline)".
            flat.append((int(f[0][:-1]), re.sub(r" \((partial-)?inline\)$", "", " ".join(f[5:]))))
    by_method = Counter()
    for s in rep["allocation_sites"]:
        if s["method"]:
            by_method[s["method"]] += s["bytes"]
    want = [m for m, _ in sorted(by_method.items(), key=lambda kv: -kv[1])[:5]]
    got = [name for b, name in sorted(flat, key=lambda x: -x[0])[:5]]
    assert want == got, (want, got, top_text.stdout)


GEN_FRAME_RE = re.compile(r"^Gen(\d{6})(?:[+/.]0x[0-9a-f]+)?\.(alloc(\d{6})|run)$")


@pytest.mark.parametrize("delay_ms", [0, 400], ids=["prompt", "late-reader"])
def test_method_names_stay_right(jdks, java_classes, tmp_path, delay_ms):
    """MetadataChurn allocates from classes that die: one class loader per
    round (unloaded by the next collections, their metadata's memory reused
    by later rounds' classes), hidden classes, lambdas, and classes
    redefined with their own bytes (the VM frees the old methods).  Each
    generated class Gen<N> allocates in alloc<N>(), called by run().  Every
    Java frame of every sample is named right -- Gen<N>.alloc<N> as the
    leaf, then Gen<N>.run with the same N -- or marked unknown and counted;
    never named wrongly.  late-reader: the recorder names each sample's
    methods only once the sample is 400 ms old (a test seam), so classes
    are unloaded and their memory reused before it reads: names read then
    must be refused (the metadata epoch moved), not trusted."""
    agent = tmp_path / "redefine.jar"
    (tmp_path / "manifest.txt").write_text("Premain-Class: RedefineAgent\nCan-Redefine-Classes: true\n")
    subprocess.run([str(debian_jdk17() / "bin/jar"), "cfm", str(agent), str(tmp_path / "manifest.txt"),
                    "-C", str(java_classes), "RedefineAgent.class"], check=True, capture_output=True)
    trace = tmp_path / "churn.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    # The rate on the command line: a JVM held at start-up takes a tracer's
    # --sample-rate only once it answers the attach, after its first rounds.
    cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:JvmtraceSampleRate=5000",
           "-XX:+UseG1GC", "-Xmx64m", f"-javaagent:{agent}", f"-Xlog:class+unload:file={tmp_path}/unload.log",
           "-cp", str(java_classes), "MetadataChurn", "300"]
    env = {**os.environ, **({"JVMTRACE_TEST_NAME_DELAY_MS": str(delay_ms)} if delay_ms else {})}
    jvm, rec, err = start_held_and_attach(
        cmd, tmp_path, lambda pid: [str(JVMTRACE), "record", "--stacks", "--buffer-mb", "256", "-p", str(pid), "-o",
                                    str(trace)], env=env)
    try:
        out, jerr = jvm.communicate("go\n", timeout=600)
        assert jvm.returncode == 0 and "rounds 300" in out, jerr[-2000:]
        assert rec.wait(120) == 0
        rec_err = "\n".join(err.drain())
    finally:
        reap(jvm, rec)
    assert (tmp_path / "unload.log").read_text().count("unloading class Gen") > 100, "classes were not unloaded"
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    samples = [json.loads(l) for l in r.stdout.splitlines() if '"alloc__sample"' in l]
    gen_samples, unknown, wrong = 0, 0, []
    for s in samples:
        java_frames = [f for f in s["args"]["stack"] if f["kind"] != "vm"]
        names = [f["method"] for f in java_frames]
        unknown += names.count("[unknown method]")
        for i, name in enumerate(names):
            m = GEN_FRAME_RE.match(name)
            if not m:
                if name.startswith("Gen"):
                    wrong.append((name, names[:4]))
                continue
            n = m.group(1)
            if m.group(3) is not None:  # Gen<N>.alloc<M>: M is N, and its caller Gen<N>.run
                gen_samples += i == 0
                caller = names[i + 1] if i + 1 < len(names) else None
                if m.group(3) != n or caller not in (f"Gen{n}.run", "[unknown method]") and not (
                        caller and GEN_FRAME_RE.match(caller) and GEN_FRAME_RE.match(caller).group(1) == n):
                    wrong.append((name, names[:4]))
            elif i > 0:  # Gen<N>.run: what it called is Gen<N>.alloc<N> (or unknown)
                callee = GEN_FRAME_RE.match(names[i - 1])
                if names[i - 1] != "[unknown method]" and (not callee or callee.group(1) != n):
                    wrong.append((name, names[:4]))
    assert not wrong, f"{len(wrong)} frames named wrongly: {wrong[:10]}"
    if not delay_ms:
        # A rate of 5000 a second, from the first round, keeps the rate limit
        # out of reach, so the count follows the bytes (one sample per 64 KiB
        # of slow paths), not how fast the machine ran the rounds: at the
        # default 250 CI's faster run took 46 (50 asked).
        assert gen_samples > 150, f"only {gen_samples} samples in the generated classes: the test lost its point"
    # Unknown frames are counted where record reports them.
    m = re.search(r"(\d+) Java frames, (\d+) of them of a method not named", rec_err)
    assert m and int(m.group(2)) == unknown, (rec_err, unknown)
    if delay_ms:
        # Read 400 ms late, with classes unloaded meanwhile: some names were
        # refused rather than read from reused memory.
        assert unknown > 50, f"only {unknown} names refused: the late reader did not race the unloading"


# The VM's sampler (jvmtraceStack.cpp, decision 148): JvmtraceSampleRate a
# second, never more than twice that in any second.
DEFAULT_RATE = 250
RATE_SECONDS = 6  # record -d: AllocWorker runs until the test stops it (issue 38)


def sample_stamps(trace):
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return sorted(json.loads(l)["ts_ns"] for l in r.stdout.splitlines() if '"alloc__sample"' in l)


def jvm_flag(jdks, pid, name):
    """The flag's value as the JVM reports it (VM.flags -all)."""
    r = subprocess.run([str(Path(jdks["patched"]) / "bin/jcmd"), str(pid), "VM.flags", "-all"],
                       capture_output=True, text=True, timeout=60)
    m = re.search(rf"\b{name}\s*=\s*(\d+)", r.stdout)
    assert m, r.stdout[-2000:]
    return int(m.group(1))


@pytest.mark.parametrize("rate", [None, 1000], ids=["default", "rate-1000"])
def test_sample_rate_is_held_from_the_start(jdks, java_classes, tmp_path, rate):
    """The VM holds alloc__sample at its target from the start and never
    over twice it in any second, however fast the program allocates
    (decision 148; issue 35's first item).  AllocWorker allocates gigabytes
    a second, where the starting mean (64 KiB) would give 20,000 samples a
    second or more: the token bucket (0.2 x the target deep, refilled at
    1.8 x a second) caps every second at twice the target and the first
    window that empties it sets the mean.  Over the run the rate is within
    40% of the target: decisions 118/121's VM, which left any rate between
    62 and 1,000 alone, held AllocWorker anywhere in that band (614-857 a
    second on a deep-stack server program, issue 35).  --sample-rate sets
    the target for the recording through the attach mechanism and puts the
    JVM's own back when it ends."""
    target = rate or DEFAULT_RATE
    trace = tmp_path / "rate.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:+UseG1GC", "-Xmx256m",
           "-cp", str(java_classes), "AllocWorker", "forever"]
    extra = ["--sample-rate", str(rate)] if rate else []
    jvm, rec, err = start_held_and_attach(
        cmd, tmp_path, lambda pid: [str(JVMTRACE), "record", "--stacks", *extra, "-p", str(pid), "-d",
                                    str(RATE_SECONDS), "-o", str(trace)])
    try:
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        assert rec.wait(120) == 0, "\n".join(err.drain())
        assert jvm.poll() is None, f"AllocWorker forever exited ({jvm.returncode}): {jvm.stderr.read()[-2000:]}"
        # The JVM's own value is back.
        assert jvm_flag(jdks, jvm.pid, "JvmtraceSampleRate") == DEFAULT_RATE
    finally:
        reap(jvm, rec)
    stamps = sample_stamps(trace)
    assert len(stamps) > 100, f"{len(stamps)} samples: AllocWorker did not allocate as the test needs"
    span = (stamps[-1] - stamps[0]) / 1e9
    per_second = Counter(int((t - stamps[0]) / 1e9) for t in stamps)
    # The busiest second anywhere (a sliding window), not only from the first sample.
    busiest = max(bisect.bisect_right(stamps, t + 10**9) - i for i, t in enumerate(stamps))
    info = f"{len(stamps)} samples over {span:.2f} s, busiest second {busiest}; by second: {sorted(per_second.items())}"
    print(info)
    assert span >= 4, f"the run was too short to measure a rate: {info}"
    # (the bucket's coins may overshoot by about two samples each time it runs dry)
    assert busiest <= 2 * target * 1.02 + 4, info
    assert 0.6 * target * span <= len(stamps) <= 1.4 * target * span, info


# Issue 35, item 2: the VM seeds each thread's generator by splitmix64 of the
# time, its thread id and address and a global count (jvmtrace_random), so
# threads started together draw unrelated countdowns.  The regime: the mean at
# its floor (64 KiB, JVMTRACE_SAMPLE_BASE_BYTES) for the whole run and no
# token ever short, so each thread's first sample is its first candidate (the
# slow path where its first countdown ran out), and TLABs of 4 KiB, so the
# mean spans 16 of them: where the first countdown runs out shows in the
# thread's own slow-path bytes, which the trace has exactly.
SEED_THREADS = 16
SEED_MEAN = 64 * 1024
SEED_RATE = 100_000  # the mean stays at its floor below 6.5 GB/s (R / T < 64 KiB) and the bucket never empties


def first_sample_positions(trace, prefix):
    """name -> (position, weight, bytes, slow paths, first time) of each thread
    whose name starts with prefix: its slow paths' bytes in order (a new TLAB's size, an
    object's outside TLABs: what the VM's countdown counts), the bytes they
    handed out up to and including the slow path its first alloc__sample was
    of (paired by time: a sample's ts_ns is its slow path's end_ns), and that
    sample's weight and slow path's bytes, and its first slow path's time."""
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    paths, first, names = defaultdict(list), {}, {}
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("type") != "event" or not x.get("thread", "").startswith(prefix):
            continue
        tid = x["tid"]
        names[tid] = x["thread"]
        if x["probe"] == "tlab__refill":
            paths[tid].append((x["ts_ns"], x["args"]["tlab_bytes"]))
        elif x["probe"] == "alloc__slow__exit" and x["args"]["outcome"] in (2, 4):  # outside TLABs
            paths[tid].append((x["ts_ns"], x["args"]["alloc_bytes"]))
        elif x["probe"] == "alloc__sample":
            if tid not in first or x["ts_ns"] < first[tid][0]:
                first[tid] = (x["ts_ns"], x["args"]["weight_bytes"])
    out = {}
    for tid, stream in paths.items():
        stream.sort()
        if tid not in first:
            out[names[tid]] = (None, None, None, [b for _, b in stream], stream[0][0])
            continue
        ts, weight = first[tid]
        own = [b for t, b in stream if t == ts]
        assert len(own) == 1, f"{names[tid]}: {len(own)} slow paths at its first sample's time"
        out[names[tid]] = (sum(b for t, b in stream if t <= ts), weight, own[0], [b for _, b in stream],
                           stream[0][0])
    return out


def separated_share(positions, width):
    """The share of pairs of threads whose first samples lie at least width
    bytes apart in their own slow-path bytes."""
    pairs = [(a, b) for i, a in enumerate(positions) for b in positions[i + 1:]]
    return sum(1 for a, b in pairs if abs(a - b) >= width) / len(pairs)


def position_of(countdown, stream):
    """Where a countdown drawn at a thread's first slow path runs out in its
    slow paths' bytes (jvmtrace_alloc_sample: the countdown goes down by each
    slow path's bytes; the one that takes it to 0 or below is the candidate)."""
    done = 0
    for b in stream:
        done += b
        if done >= countdown:
            return done
    return None


def xorshift_first_draw(seed, mean):
    """The first countdown the VM drew before issue 35 (seed javaTimeNanos() | 1,
    one xorshift64 step, jvmtrace_next_interval)."""
    x = seed | 1
    x ^= (x << 13) & (2**64 - 1)
    x ^= x >> 7
    x ^= (x << 17) & (2**64 - 1)
    u = (x >> 11) * (1.0 / 9007199254740992.0)
    return int(-math.log(1.0 - u) * mean) + 1


def test_threads_started_together_sample_at_different_bytes(jdks, java_classes, tmp_path):
    """Threads released at one moment do not take their first samples at the
    same byte counts (issue 35, item 2).  StartTogether's 16 threads spin
    until one store releases them, then allocate 4 MiB each of 80-byte
    arrays in 4 KiB TLABs; at JvmtraceSampleRate=100000 the mean stays at
    its 64 KiB floor and the bucket never empties (checked: each first
    sample's weight is B / (1 - e^(-B / 64 KiB)), no coin in it), so a
    thread's first sample is where its first countdown, exponential of mean
    64 KiB, ran out: about the 16th TLAB, anywhere from the 1st to the 50th.

    The check: at least half the pairs of threads have first samples at
    least one slow path apart (the largest any of them had).  Independent
    draws put two threads in the same 4 KiB of a 64 KiB exponential with
    probability about 1/32, so about 97% of pairs are apart.  Identical
    draws make it fail for certain: a common countdown C runs out at the
    first slow path whose running total reaches C, in [C, C + the slow
    path) for every thread, so no pair is apart (checked below on this
    run's own slow paths).  The VM's old seeding (javaTimeNanos() | 1 and
    one xorshift step: draws within 2^-14 of each other for threads seeded
    within a millisecond) is replayed from each thread's first slow path's
    time and printed."""
    trace = tmp_path / "seeds.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:+UseSerialGC", "-Xmx256m",
           "-XX:-ResizeTLAB", "-XX:TLABSize=4k", f"-XX:JvmtraceSampleRate={SEED_RATE}",
           "-cp", str(java_classes), "StartTogether", str(SEED_THREADS), str(4 << 20)]
    jvm, rec, err = start_held_and_attach(
        cmd, tmp_path, lambda pid: [str(JVMTRACE), "record", "--stacks", "-p", str(pid), "-o", str(trace)])
    try:
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        out, jerr = jvm.communicate(timeout=120)
        assert jvm.returncode == 0 and f"done {SEED_THREADS}" in out, jerr[-2000:]
        assert rec.wait(120) == 0, "\n".join(err.drain())
    finally:
        reap(jvm, rec)
    threads = first_sample_positions(trace, "seed-")
    assert len(threads) == SEED_THREADS, sorted(threads)
    missing = [n for n, (pos, *_) in threads.items() if pos is None]
    assert not missing, f"threads with no sample in 4 MiB (mean 64 KiB): {missing}"
    # The regime: the floor's mean and no coin in any first sample.
    for name, (pos, weight, b, *_) in threads.items():
        assert abs(weight - b / -math.expm1(-b / SEED_MEAN)) <= 1, (name, weight, b)
    positions = [t[0] for t in threads.values()]
    streams = [t[3] for t in threads.values()]
    width = max(max(s) for s in streams)  # the largest slow path of any of them
    share = separated_share(positions, width)
    info = (f"first samples at {sorted(positions)} bytes (slow paths up to {width} B): {share:.0%} of pairs "
            f"at least one slow path apart")
    print(info)
    assert share >= 0.5, info
    # The check fails on this run's own slow paths with identical countdowns...
    for c in sorted(positions):
        same = [position_of(c, s) for s in streams]
        assert None not in same and separated_share(same, width) == 0, (c, same)
    # ... and what the old seeding would have done, each thread seeded by its first slow
    # path's time: printed, not asserted (it fails the check for threads seeded within a
    # millisecond, but two cores spread 16 threads' first slow paths over 20-45 ms, where a
    # carry into the draw's high bits sometimes parts them: 0-40% of pairs in five runs).
    firsts = [t[4] for t in threads.values()]
    old = [position_of(xorshift_first_draw(ts, SEED_MEAN), s) for ts, s in zip(firsts, streams)]
    print(f"identical countdowns: no pair apart; the old seeding (first slow paths within "
          f"{(max(firsts) - min(firsts)) / 1e6:.2f} ms): {separated_share(old, width):.0%} of pairs apart")


def test_libjvm_symbols_are_read_once_before_the_banner(jdks17, java_classes, tmp_path):
    """`record --stacks` needs libjvm.so's symbol table (58,000 symbols,
    20-35 ms to build) three times at attach: to name the VM's own frames,
    to find the tables that name Java methods, and for G1's region size.
    It builds it once (shared_elf_symbols), and before its banner: built
    again on the JVM's first sample, it took CPU beside a JVM just released
    (session 18: 305 ms after the banner), and built thrice it tripled the
    attach.  A uprobe on ElfSymbols::load_fd, in the recorder's binary,
    counts the builds; the trace's stacks show the one table served both
    the VM's frames and the Java methods' names."""
    bt = shutil.which("bpftrace")
    assert bt, "bpftrace is needed"
    # The function that builds a table (load_fd; in a binary from before
    # tables were shared, load: so the test can be run against one), itself:
    # not its .cold part, nor std::sort's instances for its lambdas.
    names = subprocess.run(["nm", str(JVMTRACE)], capture_output=True, text=True, check=True).stdout.split()
    load_fd = [n for n in names if n.startswith("_ZN8jvmtrace10ElfSymbols7load_fdE") and "." not in n] or \
        [n for n in names if n.startswith("_ZN8jvmtrace10ElfSymbols4loadE") and "." not in n]
    assert len(load_fd) == 1, load_fd
    tracer = subprocess.Popen([bt, "-e", f'BEGIN {{ printf("ready\\n"); }} '
                               f'uprobe:{JVMTRACE.resolve()}:{load_fd[0]} '
                               f'{{ printf("load %d %llu\\n", pid, nsecs); }}'],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = LineReader(tracer.stdout)
    jvm = rec = None
    trace = tmp_path / "once.jvmtrace"
    try:
        out.wait_for(lambda l: l == "ready", 60, "bpftrace to attach its uprobe")
        java = Path(jdks17["patched"]) / "bin/java"
        jvm = subprocess.Popen([str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:+UseG1GC",
                                "-cp", str(java_classes), "AllocWorker", "3000000"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        held = tmp_path / f"vm.paused.{jvm.pid}"
        wait_until(lambda: held.exists() or jvm.poll() is not None, 60, "HotSpot to hold at start-up")
        assert jvm.poll() is None, jvm.stderr.read()[-2000:]
        rec = subprocess.Popen([str(JVMTRACE), "record", "--stacks", "-p", str(jvm.pid), "-o", str(trace)],
                               stderr=subprocess.PIPE, text=True)
        err = LineReader(rec.stderr)
        err.wait_for(lambda l: l.startswith("Recording PID"), 60, "jvmtrace record to attach")
        banner_ns = time.monotonic_ns()  # (bpftrace's nsecs is CLOCK_MONOTONIC too); the JVM is still held
        held.unlink()
        _, jerr = jvm.communicate(timeout=300)
        assert jvm.returncode == 0, jerr[-2000:]
        assert rec.wait(120) == 0, "\n".join(err.drain())
    finally:
        reap(jvm, rec)
        tracer.terminate()
        tracer.wait(30)
    loads = [int(ns) for p, ns in (l.split()[1:] for l in out.drain() if l.startswith("load "))
             if int(p) == rec.pid]
    before = [ns for ns in loads if ns < banner_ns]
    # Before the banner the recorder reads no ELF file but libjvm.so (the
    # libraries of other frames come later, when a stack first shows one).
    assert len(before) == 1, f"libjvm.so's symbols were built {len(before)} times before the banner (want 1)"
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    frames = [f for l in r.stdout.splitlines() if '"alloc__sample"' in l for f in json.loads(l)["args"]["stack"]]
    vm = [f for f in frames if f["kind"] == "vm"]
    java_named = [f for f in frames if f["kind"] != "vm" and f["method"].startswith("AllocWorker.")]
    assert java_named, "no Java frame of AllocWorker was named"
    assert any("::" in f["method"] for f in vm), f"no VM frame named from libjvm.so's symbols: {vm[:5]}"


def test_lines_are_jfrs(sites_run):
    """The VM walks bytecode indexes only and jvmtrace maps each to its line
    through the method's line table, read from outside (decision 150).  JFR
    walks its own stacks, with an event for every slow path, and gives each
    frame's line: every line jvmtrace gives an allocation site is one JFR
    saw there, and jvmtrace names a line (not 0) for nearly every sampled
    frame of a method that has a line table.  A decoder off by one byte, or
    reading 17's table the 21 way, moves lines to ones nothing allocates at."""
    r = sites_run
    home = r["home"]
    jfr_lines = defaultdict(Counter)
    for kind, v, cls, name in replay_sampler.jfr_top_frames(
            str(Path(home) / "bin/jfr"), r["work"] / "rec.jfr",
            ["jdk.ObjectAllocationInNewTLAB", "jdk.ObjectAllocationOutsideTLAB"]):
        b = v["tlabSize"] if kind == "jdk.ObjectAllocationInNewTLAB" else v["allocationSize"]
        line = max(v["stackTrace"]["frames"][0].get("lineNumber", 0), 0)  # (JFR: -1 for none; ours 0)
        jfr_lines[class_of(cls) + "." + name][line] += b
    ours = defaultdict(Counter)
    named = zero = 0
    # Only what JFR's events saw too: JFR starts after the JVM (the trace
    # holds its start-up) and stops before its end.
    span = jfr_sites(home, r["work"] / "rec.jfr")[3]
    for x, wall in trace_samples(r["trace"]):
        for f in x["args"]["stack"]:
            if f["kind"] not in ("vm", "native") and f["file"]:
                named += 1
                zero += f["line"] == 0
        if not span[0] <= wall <= span[1]:
            continue
        # (the leaf as JFR takes it: a native method's frame too, which has no line)
        java = [f for f in x["args"]["stack"] if f["kind"] != "vm"]
        if java and java[0]["method"] != "[unknown method]":
            name, _, method = java[0]["method"].rpartition(".")
            ours[class_of(name) + "." + method][java[0]["line"]] += x["args"]["weight_bytes"]
    assert named > 100, named
    assert zero <= 0.01 * named, f"{zero} of {named} frames of methods with a source file have no line"
    # Every line jvmtrace gives a site (with 5% or more of its bytes) is one
    # JFR saw allocating at that site: JFR has an event for every slow path,
    # so its lines are all there are.  (Which of two near lines holds most
    # is sampling noise: not compared.)
    checked, wrong = 0, []
    for m in set(jfr_lines) & set(ours):
        total = sum(ours[m].values())
        for line, b in ours[m].items():
            if b < 0.05 * total or line == 0:
                continue
            checked += 1
            if line not in jfr_lines[m]:
                wrong.append((m, line, dict(ours[m].most_common(3)), dict(jfr_lines[m].most_common(5))))
    assert checked >= 10, f"only {checked} site lines to compare"
    assert not wrong, f"{checked} site lines, not JFR's: {wrong}"
