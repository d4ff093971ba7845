"""What stays alive (issue 34): sampled objects' fates (sample__fates) on every
collector, against objects of known lifetimes (tests/java/Lifetimes.java):
what is kept is never reported dead, what is churned is, and only the
collectors with an old generation report promotions."""
import json
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import BUILD_DIR
import perfetto_trace
from helpers import LineReader, reap, start_held_and_attach, wait_until

JVMTRACE = BUILD_DIR / "userspace/jvmtrace"
ROUNDS = 300_000  # Lifetimes' rounds: ~1-3 s of work, a few dozen collections in a 256 MiB heap
COLLECTORS = {
    "G1": (["-XX:+UseG1GC"], True),
    "Parallel": (["-XX:+UseParallelGC"], True),
    "Serial": (["-XX:+UseSerialGC"], True),
    "ZGC": (["-XX:+UseZGC"], False),  # 17 and 21: one generation; 25: generational
    "Shenandoah": (["-XX:+UseShenandoahGC"], False),
}


def record_live_run(cmd, tmp_path, trace, name, done):
    """Runs cmd (a held fixture that prints "ready PID", waits for "go",
    prints a line that done() accepts and waits for a line) under
    `record --live -v` from its first allocation; returns (its done line,
    record's stderr)."""
    jvm, rec, err = start_held_and_attach(cmd, tmp_path, lambda pid: [str(JVMTRACE), "record", "--live", "-v", "-p",
                                                                       str(pid), "-o", str(trace)])
    try:
        out = LineReader(jvm.stdout)
        out.wait_for(lambda l: l.startswith("ready "), 60, f"{name} to start")
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        line = out.wait_for(done, 300, f"{name}'s work")
        rec.send_signal(signal.SIGINT)
        assert rec.wait(60) == 0, "\n".join(err.drain())
        rec_err = "\n".join(err.drain())
        jvm.stdin.write("\n")
        jvm.stdin.close()
        assert jvm.wait(60) == 0, jvm.stderr.read()[-2000:]
    finally:
        reap(jvm, rec)
    return line, rec_err


def record_lifetimes(jdks, java_classes, tmp_path, flags):
    """Lifetimes under `record --live`, from its first allocation to its
    "done"; returns (sample site by id, fate records, batches, record's stderr)."""
    trace = tmp_path / "live.jvmtrace"
    java = Path(jdks["patched"]) / "bin/java"
    # Every slow path sampled (JvmtraceSampleRate=0, from the start): each
    # sample weighs its own bytes, so what is kept adds up to its bytes.
    cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:JvmtraceSampleRate=0",
           "-Xmx256m", *flags,
           "-cp", str(java_classes), "Lifetimes", str(ROUNDS)]
    _, rec_err = record_live_run(cmd, tmp_path, trace, "Lifetimes", lambda l: l == "done")
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    site, fates, batches, started = {}, [], 0, set()
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("probe") == "gc__start":
            started.add(x["args"]["gc_id"])
        # The file keeps causes first: a collection's fates come after its
        # gc__start (the recorder holds what follows a safepoint's begin
        # until the safepoint's last batch, fates too).
        if x.get("type") == "fates":
            assert x["gc_id"] in started, f"fates of GC {x['gc_id']} before its gc__start (offset order)"
        if x.get("probe") == "alloc__sample" and x["args"].get("sample_id"):
            java = [f for f in x["args"]["stack"] if f["kind"] != "vm"]
            site[x["args"]["sample_id"]] = java[0]["method"] if java else ""
        elif x.get("type") == "fates":
            batches += 1
            fates += x["records"]
    return site, fates, batches, trace, rec_err


@pytest.mark.parametrize("gc", COLLECTORS)
def test_known_lifetimes(jdks, java_classes, tmp_path, gc):
    flags, generations = COLLECTORS[gc]
    modes = [flags]
    if gc == "ZGC" and int(jdks["line"]) == 21:  # 21 has both ZGCs
        modes = [flags + ["-XX:-ZGenerational"], flags + ["-XX:+ZGenerational"]]
    for mode in modes:
        site, fates, batches, trace, rec_err = record_lifetimes(jdks, java_classes, tmp_path, mode)
        kinds = Counter(f["kind"] for f in fates)
        by_site = Counter(site.values())
        died = Counter(site.get(f["sample_id"]) for f in fates if f["kind"] == "died")
        promoted = Counter(site.get(f["sample_id"]) for f in fates if f["kind"] == "promoted")
        info = f"{mode}: {batches} batches, {dict(kinds)}; samples {dict(by_site)}; died {dict(died)}; " \
               f"promoted {dict(promoted)}"
        print(info)
        assert batches > 0 and kinds["died"] >= 20, info
        keep, medium = "Lifetimes.keep", "Lifetimes.medium"
        assert by_site[keep] >= 5 and by_site[medium] >= 20, info
        assert "lost" not in rec_err or " 0 lost" in rec_err, rec_err[-1500:]
        # Every safepoint's hold ends with its own last batch (at most the
        # VM's exit safepoint, which has no after, is cut short).
        cut = re.search(r"\((\d+) cut short", rec_err)
        assert cut and int(cut.group(1)) <= 1, rec_err[-1500:]
        # What is kept until the end never dies; what is replaced nearly all does
        # (the ring's last 512 arrays are alive at the end, a few per cent).
        assert died[keep] == 0, info
        # (a sample thinned away from a full table has no fate after: out of the count;
        # generational ZGC's table holds 4,096, so it thins where the others do not)
        thinned = Counter(site.get(f["sample_id"]) for f in fates if f["kind"] == "thinned")
        assert died[medium] >= 0.7 * (by_site[medium] - thinned[medium]), info
        # Only collectors with an old generation report promotions, and they
        # report what was kept (a young collection copies it into the old).
        if generations:
            assert promoted[keep] >= 0.8 * (by_site[keep] - thinned[keep]), info
        else:
            assert kinds["promoted"] == 0, info
        # report --live puts what is kept first among the sites that hold bytes.
        r = subprocess.run([str(JVMTRACE), "report", "--live", "--json", str(trace)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        live = json.loads(r.stdout)
        sites = {s["name"].split(":")[0]: s for s in live["sites"]}
        assert sites[keep]["died"] == 0, (info, live)
        # keep()'s 32 MiB are live from the start to the end.  With every slow
        # path sampled the estimate is exact but for the TLABs keep() shares
        # (a TLAB's bytes go with its first object's fate): within 10%.
        # A table thinned to level L keeps each sample with 2^-L: the estimate's
        # relative standard error is then about sqrt((2^L - 1) / n).
        truth, est, level = 32 << 20, sites[keep]["live_bytes"], live["level"]
        tol = 0.1 if level == 0 else max(0.1, 3 * ((2 ** level - 1) / by_site[keep]) ** 0.5)
        print(f"keep(): estimated {est / 2**20:.2f} MiB, truth 32, level {level}, tolerance {tol:.0%}")
        assert abs(est - truth) <= tol * truth, (info, live)
        # pprof's inuse_space (Go's heap-profile types) is the same estimate:
        # `go tool pprof -sample_index=inuse_space` puts keep() first with its bytes.
        pb = tmp_path / "live.pb.gz"
        r = subprocess.run([str(JVMTRACE), "export", "--pprof", str(trace), "-o", str(pb)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        top = subprocess.run(["go", "tool", "pprof", "-top", "-unit=B", "-nodecount=5",
                              "-sample_index=inuse_space", str(pb)], capture_output=True, text=True, timeout=300)
        assert top.returncode == 0, top.stderr
        rows = [l.split() for l in top.stdout.splitlines() if l.strip().endswith(keep)]
        assert rows and abs(int(rows[0][0].rstrip("B")) - est) <= 1024, (top.stdout, est)


LEAKY_UNITS = 5        # units of allocation, each ended by System.gc(): at least 5 old or full collections
LEAKY_UNIT_MB = 512    # the leak: 3.98% of them, 20.4 MiB a unit


def old_growth(live, first_n):
    """Least-squares growth (bytes/s) of each site in report --live's
    site_series over its first first_n old or full collections."""
    old = [i for i, c in enumerate(live["collections"]) if c["old"] and i < live["site_series_points"]][:first_n]
    ts = [live["collections"][i]["t_s"] for i in old]
    tm = sum(ts) / len(ts)
    sxx = sum((t - tm) ** 2 for t in ts)
    out = {}
    for s in live["site_series"]:
        ys = [s["live_bytes"][i] for i in old]
        ym = sum(ys) / len(ys)
        out[s["name"]] = sum((t - tm) * (y - ym) for t, y in zip(ts, ys)) / sxx
    return old, out


@pytest.mark.parametrize("gc", COLLECTORS)
def test_a_leak_ranks_first_among_growing_sites(jdks, java_classes, tmp_path, gc):
    """tests/java/Leaky.java: one site leaks 3.98% of the bytes among churning,
    medium- and long-lived ones, at the default sampling rate.  report --live
    ranks it first among growing sites, over the whole recording and over its
    first 5 old or full collections; the churning sites hold nothing."""
    flags, _ = COLLECTORS[gc]
    modes = [flags]
    if gc == "ZGC" and int(jdks["line"]) == 21:
        modes = [flags + ["-XX:-ZGenerational"], flags + ["-XX:+ZGenerational"]]
    for mode in modes:
        trace = tmp_path / "leaky.jvmtrace"
        java = Path(jdks["patched"]) / "bin/java"
        cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-Xmx768m", *mode,
               "-cp", str(java_classes), "Leaky", str(LEAKY_UNITS), str(LEAKY_UNIT_MB), "1"]
        done, _ = record_live_run(cmd, tmp_path, trace, "Leaky", lambda l: l.startswith("done "))
        leaked = int(done.split()[4])
        r = subprocess.run([str(JVMTRACE), "report", "--live", "--json", "--top", "20", str(trace)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        live = json.loads(r.stdout)
        growing = [(g["name"], round(g["bytes_per_s"] / 2**20, 1)) for g in live["growing"]]
        sites = {s["name"].split(":")[0]: s for s in live["sites"]}
        info = f"{mode}: {live['old_collections']} old of {len(live['collections'])} collections; " \
               f"growing (MiB/s) {growing}; leak {sites.get('Leaky.register', {}).get('live_bytes', 0) / 2**20:.1f} " \
               f"MiB estimated, {leaked / 2**20:.1f} leaked; {live['tracked']} tracked, level {live['level']}"
        print(info)
        assert live["old_collections"] >= 5, info
        assert growing and growing[0][0].startswith("Leaky.register:"), info
        old, first5 = old_growth(live, 5)
        assert len(old) == 5 and max(first5, key=first5.get).startswith("Leaky.register:"), (info, first5)
        # The churning sites' objects are dead at every collection after them.
        for churn in ("Leaky.parse", "Leaky.format"):
            assert sites.get(churn, {"live_bytes": 0})["live_bytes"] <= 0.02 * leaked, info
        # The same series in Perfetto (a counter per top site, a value per
        # collection) and on the HTML page (the plot, the growing sites first).
        leak_series = next(x for x in live["site_series"] if x["name"].startswith("Leaky.register:"))
        pf = tmp_path / "leaky.pftrace"
        r = subprocess.run([str(JVMTRACE), "export", "--perfetto", str(trace), "-o", str(pf)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        counters = [e for e in perfetto_trace.trace_events(pf)
                    if e["ph"] == "C" and e["name"] == "live: " + leak_series["name"]]
        assert [round(next(iter(e["args"].values()))) for e in sorted(counters, key=lambda e: e["ts"])] == \
            leak_series["live_bytes"], (info, counters[:3])
        page = tmp_path / "leaky.html"
        r = subprocess.run([str(JVMTRACE), "report", "--html", str(trace), "-o", str(page)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        html = page.read_text()
        assert 'id="plot-live-heap"' in html and "Leaky.register:" in html.split('id="growing-sites"')[1][:2000]


# The class-histogram check runs where the VM's sampler can see a program
# like Catalog at its default rate: under Parallel and Serial one thread's
# TLABs are megabytes, so its 200 MB take 70-80 slow paths in all, too few
# candidates for the small classes (docs/notes.md, session 22).
HISTOGRAM_COLLECTORS = ["G1", "ZGC", "Shenandoah"]


def class_histogram(home, pid):
    """jcmd GC.class_histogram -all (no collection of its own: ZGC and
    Shenandoah would not run one from it): {class: bytes}, total bytes."""
    h = subprocess.run([str(Path(home) / "bin/jcmd"), str(pid), "GC.class_histogram", "-all"], capture_output=True,
                       text=True, timeout=300)
    assert h.returncode == 0, h.stdout[-2000:] + h.stderr[-2000:]
    by_class, total = {}, None
    for line in h.stdout.splitlines():
        m = re.match(r"\s*\d+:\s+\d+\s+(\d+)\s+(\S+)", line)
        if m:
            by_class[m.group(2)] = int(m.group(1))
        m = re.match(r"Total\s+\d+\s+(\d+)", line)
        if m:
            total = int(m.group(1))
    assert by_class and total, h.stdout[-2000:]
    return by_class, total


def fates_after_gc_run(trace):
    """True once the recording (as written so far: blocks go out within a
    second) holds jcmd GC.run's collection (cause "Diagnostic Command") and
    a fates batch of it or later."""
    r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
    gc_id = None
    for line in r.stdout.splitlines():
        x = json.loads(line)
        if x.get("probe") == "gc__start" and x["args"]["cause"] == "Diagnostic Command":
            gc_id = x["args"]["gc_id"]
        elif x.get("type") == "fates" and gc_id is not None and x["gc_id"] >= gc_id:
            return True
    return False


def catalog_trace(tmp_path, mode):
    """Catalog's trace under a collector's flags: one each, kept, so that one
    that fails is there to replay."""
    return tmp_path / f"catalog{''.join(mode).replace('-XX:', '').replace('+', '-')}.jvmtrace"


def catalog_against_histogram(home, java_classes, tmp_path, mode):
    """Catalog under record --live from its first allocation; after jcmd
    GC.run's collection has reported, the JVM's class histogram; returns
    (histogram by class, its total, report --live's JSON)."""
    trace = catalog_trace(tmp_path, mode)
    trace.unlink(missing_ok=True)
    cmd = [str(home / "bin/java"), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-Xmx768m", *mode,
           "-cp", str(java_classes), "Catalog"]
    jvm, rec, err = start_held_and_attach(cmd, tmp_path, lambda pid: [str(JVMTRACE), "record", "--live", "-p",
                                                                       str(pid), "-o", str(trace)])
    try:
        out = LineReader(jvm.stdout)
        out.wait_for(lambda l: l.startswith("ready "), 60, "Catalog to start")
        jvm.stdin.write("go\n")
        jvm.stdin.flush()
        out.wait_for(lambda l: l.startswith("built "), 300, "Catalog to build")
        r = subprocess.run([str(home / "bin/jcmd"), str(jvm.pid), "GC.run"], capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        wait_until(lambda: fates_after_gc_run(trace), 60, "the fates of GC.run's collection in the trace",
                   interval=0.5)
        hist, hist_total = class_histogram(home, jvm.pid)
        rec.send_signal(signal.SIGINT)
        assert rec.wait(60) == 0, "\n".join(err.drain())
        jvm.stdin.write("\n")
        jvm.stdin.close()
        assert jvm.wait(60) == 0, jvm.stderr.read()[-2000:]
    finally:
        reap(jvm, rec)
    r = subprocess.run([str(JVMTRACE), "report", "--live", "--json", "--top", "40", str(trace)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return hist, hist_total, json.loads(r.stdout)


def test_live_heap_by_class_agrees_with_the_jvms_class_histogram(jdks, java_classes, tmp_path):
    """tests/java/Catalog.java keeps about 100 MiB of ten classes and more
    (items, strings, arrays, boxes, lists, map nodes) and makes as much
    garbage, at the default sampling rate, under each collector of the line
    in HISTOGRAM_COLLECTORS.  After a full collection (jcmd GC.run), report
    --live's estimate by class against the JVM's own class histogram (jcmd
    GC.class_histogram), for each run: the total within 10%, at least 8 of
    the histogram's top 10 classes in jvmtrace's top 10, each of those 10
    within three times its printed 90% half-width (about 5 standard errors);
    and over the line's runs, at least 75% of those classes inside their 90%
    intervals (decision 159: "9 of 10 in each run" would fail a quarter of
    runs with exact intervals)."""
    home = Path(jdks["patched"])
    modes = [COLLECTORS[gc][0] for gc in HISTOGRAM_COLLECTORS]
    if int(jdks["line"]) == 21:  # both ZGCs
        modes = [m for m in modes if m != ["-XX:+UseZGC"]] + [["-XX:+UseZGC", "-XX:-ZGenerational"],
                                                               ["-XX:+UseZGC", "-XX:+ZGenerational"]]
    problems, pooled, inside_all = [], 0, 0
    for mode in modes:
        hist, hist_total, live = catalog_against_histogram(home, java_classes, tmp_path, mode)
        est = {c["name"].replace("/", "."): c for c in live["classes"]}
        top = sorted(hist, key=hist.get, reverse=True)[:10]
        ours = [c["name"].replace("/", ".") for c in live["classes"]][:10]
        rows, inside, wide = [], 0, []
        for c in top:
            v, ci = (est[c]["live_bytes"], est[c]["ci90_bytes"]) if c in est else (0, 0)
            inside += abs(v - hist[c]) <= ci
            if abs(v - hist[c]) > 3 * ci:
                wide.append(c)
            # (its samples: few tracked is the sampler's doing, many died the fates')
            rows.append(f"{c} {hist[c] / 2**20:.2f} MiB, estimated {v / 2**20:.2f} +- {ci / 2**20:.2f} "
                        f"({est[c]['alive'] if c in est else 0} of {est[c]['tracked'] if c in est else 0} "
                        f"samples alive)")
        pooled += len(top)
        inside_all += inside
        info = (f"{mode}: histogram {hist_total / 2**20:.1f} MiB, estimated {live['live_bytes'] / 2**20:.1f} MiB "
                f"({live['live_bytes'] / hist_total - 1:+.1%}) from {live['tracked']} samples (level "
                f"{live['level']}); {sum(c in ours for c in top)} of its top 10 in ours, {inside} inside their 90% "
                f"intervals:\n  " + "\n  ".join(rows))
        print(info)
        info += f"\n  (the trace: {catalog_trace(tmp_path, mode)})"
        if abs(live["live_bytes"] - hist_total) > 0.10 * hist_total:
            problems.append(f"total beyond 10%: {info}")
        if sum(c in ours for c in top) < 8:
            problems.append(f"fewer than 8 of the top 10: {info}")
        if wide:
            problems.append(f"{wide} beyond 3x their 90% half-width: {info}")
    print(f"{inside_all} of {pooled} classes inside their 90% intervals")
    if inside_all < 0.75 * pooled:
        problems.append(f"only {inside_all} of {pooled} classes inside their 90% intervals")
    assert not problems, "\n".join(problems)


def death_cdf(live):
    """report --live's bytes that died by age (bytes allocated since birth,
    log2 buckets), as a cumulative distribution."""
    w = live["deaths_by_age_bytes_log2"]
    total = sum(w)
    assert total > 0, live
    out, acc = [], 0
    for x in w:
        acc += x
        out.append(acc / total)
    return out


def survival_run(home, java_classes, tmp_path, gc, every, tag=""):
    """Leaky's survival curve (death_cdf) and tracked samples, one run at the
    default rate or (every) with every slow path sampled."""
    flags, _ = COLLECTORS[gc]
    if gc == "G1":
        # An age at death is counted to the collection that found the death,
        # and G1 sizes its young generation, and starts marking cycles, by
        # the run's own timing: the every-slow-path run is slower, so its
        # collections fall elsewhere and the same deaths read other ages
        # (KS 0.08-0.12 with G1's ergonomics, against 0.005-0.03 for the
        # other collectors).  A fixed young generation and no cycle by
        # occupancy give both runs one schedule: the curves then differ by
        # sampling alone.
        flags = flags + ["-Xmn128m", "-XX:-G1UseAdaptiveIHOP", "-XX:InitiatingHeapOccupancyPercent=100"]
    # And every collector sizes its heap by the run's timing (G1 with only
    # the flags above: 28 young collections in one default-rate run, 39 in
    # the next; KS 0.01-0.25 over 12 runs, bench/survival_spread.py): the
    # heap is fixed.  ZGC starts cycles by its allocation rate, in time: in
    # 2 GiB only its warm-up cycles (by bytes) and the program's System.gc
    # remain (768 MiB: 8 or 9 collections, KS up to 0.106).
    heap = "2g" if gc == "ZGC" else "768m"
    rate = ["-XX:JvmtraceSampleRate=0"] if every else []
    trace = tmp_path / f"survival-{'every' if every else 'default'}{tag}.jvmtrace"
    cmd = [str(Path(home) / "bin/java"), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", *rate,
           f"-Xms{heap}", f"-Xmx{heap}", *flags, "-cp", str(java_classes), "Leaky", str(LEAKY_UNITS), str(LEAKY_UNIT_MB), "1"]
    record_live_run(cmd, tmp_path, trace, "Leaky", lambda l: l.startswith("done "))
    r = subprocess.run([str(JVMTRACE), "report", "--live", "--json", str(trace)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    live = json.loads(r.stdout)
    trace.unlink()
    return death_cdf(live), live["tracked"], len(live["collections"])


def ks_distance(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


@pytest.mark.parametrize("gc", COLLECTORS)
def test_survival_at_the_default_rate_matches_every_slow_path(jdks, java_classes, tmp_path, gc):
    """The survival curve (the bytes that died, by age at death in bytes
    allocated since birth) of Leaky at the default sampling rate against the
    same program with every slow path sampled: Kolmogorov-Smirnov distance
    (over the log2 buckets) at most 0.1 (issue 34, item 4).  With one
    collection schedule in both runs (survival_run) it read 0.004-0.036 over
    6-10 runs of each collector (bench/survival_spread.py, docs/testing.md);
    a run whose schedule differs reads up to 0.25."""
    cdfs = {name: survival_run(jdks["patched"], java_classes, tmp_path, gc, name == "every")
            for name in ("default", "every")}
    (a, na, _), (b, nb, _) = cdfs["default"], cdfs["every"]
    ks = ks_distance(a, b)
    median = lambda c: next(i for i, x in enumerate(c) if x >= 0.5)
    span = [i for i in range(1, len(a)) if (a[i], b[i]) != (a[i - 1], b[i - 1])]
    curves = " ".join(f"2^{i}:{a[i]:.2f}/{b[i]:.2f}" for i in span)
    info = (f"{gc}: KS {ks:.3f}; median age at death 2^{median(a)} bytes ({na} samples) against 2^{median(b)} "
            f"({nb} samples, every slow path); cumulative, default/every: {curves}")
    print(info)
    assert ks <= 0.1, info


def can_reclaim_old(gc, start):
    """Whether a collection (its gc__start args) can reclaim an old object:
    a full collection; G1's marking cycle; every cycle of ZGC without
    generations and of Shenandoah; generational ZGC's major cycles."""
    if start["kind"] == 1:
        return True
    if gc in ("Parallel", "Serial"):
        return False
    if gc == "G1":
        return start["kind"] == 2
    if "Minor" in start["name"]:
        return False
    return start["kind"] == 2 or "Major" in start["name"]


@pytest.mark.parametrize("gc", COLLECTORS)
def test_an_old_objects_death_is_reported_by_the_first_collection_that_can_reclaim_it(jdks, java_classes,
                                                                                      tmp_path, gc):
    """tests/java/DropOld.java makes 32 MiB of keep() arrays old, drops them at
    a moment its trace marks (a 7,777,777-byte array's slow path), churns
    (young collections), and calls System.gc().  Every tracked keep() array
    is reported dead by the first collection started after the drop that can
    reclaim an old object (a full collection, G1's marking cycle, any cycle
    of ZGC without generations or of Shenandoah, generational ZGC's major
    cycle), never by a young one, never before (docs/probes.md, sample__fates)."""
    flags, _ = COLLECTORS[gc]
    java = Path(jdks["patched"]) / "bin/java"
    modes = [flags]
    if gc == "ZGC" and int(jdks["line"]) == 21:
        modes = [flags + ["-XX:-ZGenerational"], flags + ["-XX:+ZGenerational"]]
    for mode in modes:
        trace = tmp_path / "drop.jvmtrace"
        cmd = [str(java), "-XX:+UnlockDiagnosticVMOptions", "-XX:+PauseAtStartup", "-XX:JvmtraceSampleRate=0",
               "-Xmx256m", *mode, "-cp", str(java_classes), "DropOld"]
        record_live_run(cmd, tmp_path, trace, "DropOld", lambda l: l.startswith("done "))
        r = subprocess.run([str(JVMTRACE), "dump", "--json", str(trace)], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        mark_ts, starts, ends, keep, died = None, [], {}, set(), {}
        for line in r.stdout.splitlines():
            x = json.loads(line)
            p, a = x.get("probe"), x.get("args", {})
            if p == "alloc__slow__exit" and mark_ts is None and a.get("alloc_bytes", 0) >= 7_777_777:
                mark_ts = x["ts_ns"]
            elif p == "gc__start":
                starts.append((x["ts_ns"], a))
            elif p == "gc__end":
                ends[a["gc_id"]] = x["ts_ns"]
            elif p == "alloc__sample" and a.get("sample_id"):
                java_frames = [f for f in a["stack"] if f["kind"] != "vm"]
                if java_frames and java_frames[0]["method"] == "DropOld.keep":
                    keep.add(a["sample_id"])
            elif x.get("type") == "fates":
                for f in x["records"]:
                    if f["kind"] == "died":
                        died[f["sample_id"]] = f["gc_id"]
        assert mark_ts is not None, "no slow path of the 7,777,777-byte mark in the trace"
        first = next((a for ts, a in starts if ts > mark_ts and can_reclaim_old(gc, a)), None)
        assert first is not None, [a for _, a in starts]
        # A concurrent cycle already marking when the arrays were dropped may
        # find them dead or not (ZGC marks what it reaches; G1's and
        # Shenandoah's snapshot keeps them): that cycle, or the first after.
        running = [a["gc_id"] for ts, a in starts
                   if ts <= mark_ts and ends.get(a["gc_id"], float("inf")) > mark_ts and can_reclaim_old(gc, a)]
        allowed = set(running[:1]) | {first["gc_id"]}
        got = sorted({died.get(s) for s in keep})
        names = {a["gc_id"]: f"{a['name']} ({a['cause']})" for _, a in starts}
        info = (f"{mode}: {len(keep)} keep() samples; died at {[(g, names.get(g)) for g in got]}; the first "
                f"collection after the drop that can reclaim them: GC({first['gc_id']}) {names[first['gc_id']]}"
                + (f" (GC({running[0]}) was running at the drop)" if running else ""))
        print(info)
        assert len(keep) >= 100, info
        assert len(got) == 1 and got[0] in allowed, info
