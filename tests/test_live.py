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
from helpers import LineReader, reap, start_held_and_attach

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
