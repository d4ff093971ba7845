"""jvmtraced for a fleet (issue 24): the exposition that promtool accepts,
the JVMs' identity labels, a bounded number of series per JVM, the shipped
Prometheus rules, and a real Prometheus (Debian's, 2.42) scraping the daemon
while real JVMs run: its PromQL answers agree with the JVMs' -Xlog:gc."""
import json
import math
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from conftest import REPO
from helpers import LineReader, go_uptime_s, parse_gc_log
from test_daemon import Daemon, parse_exposition
from test_jvm_probes import java_cmd
from test_stop_the_world import STW_SHORT_MS, STW_SLACK_MS

RULES = REPO / "packaging/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
# The pause histogram's finite bounds (seconds): 2^(k+1) us for the cut slots.
PAUSE_BOUNDS = [2 ** (k + 1) / 1e6 for k in (5, 7, 9, 11, 13, 15, 17, 19, 21, 23)]
PAUSE_LINE = re.compile(r"\[(\d+\.\d+)s\].*\bGC\((\d+)\) Pause Young .* (\d+\.\d+)ms$")


def need_prometheus():
    for tool in (PROMTOOL, PROMETHEUS):
        if not os.access(tool, os.X_OK):
            pytest.fail(f"{tool} is missing: scripts/install-deps.sh installs Debian's prometheus package")


def promtool_check_metrics(text):
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return r.returncode, (r.stdout + r.stderr).strip()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(what, fn, timeout=60, every=0.25):
    """fn()'s first truthy value, polled; fails naming `what` after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"{what}: not within {timeout} s (last: {last!r})")


def attach(daemon, pid):
    """stat attached to a JVM the daemon has found."""
    daemon.wait_listed(pid)
    r = daemon.client("attach", pid, "--stat")
    assert r.returncode == 0 and r.stdout.startswith("ok: stat attached"), r.stdout + r.stderr


def series_of(samples, pid):
    return {k: v for k, v in samples.items() if ("pid", str(pid)) in k[1]}


class Jvm:
    """An AllocWorker JVM logging its collections (-Xlog:gc), held until "go"
    (and after its work until a line on stdin: "hold")."""

    def __init__(self, home, classes, log, iterations, *jvm_opts, heap_mb=64, prefix=(), jar=None):
        cmd = java_cmd(home, classes, "G1", heap_mb, "AllocWorker", iterations, "-", "hold", gc_log=log)
        cmd[1:1] = list(jvm_opts)
        if jar:  # java ... -jar JAR ARGS instead of -cp CLASSES AllocWorker ARGS
            at = cmd.index("-cp")
            cmd[at:at + 3] = ["-jar", str(jar)]
        self.log = log
        self.proc = subprocess.Popen([*prefix, *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l.startswith("ready"), 60, "ready")
        self.pid = self.proc.pid

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.out.wait_for(lambda l: l == "done", 180, "the workload")

    def collections(self):
        """-Xlog:gc's collections after "go": (all of them, the pauses, the young pauses' ms)."""
        text = self.log.read_text()
        since = go_uptime_s(self.out.lines)
        logged = parse_gc_log(text, since)
        young = [float(m.group(3)) for m in map(PAUSE_LINE.search, text.splitlines())
                 if m and float(m.group(1)) >= since]
        return logged, sum(1 for _, what, _ in logged if what.startswith("Pause")), young

    def exit(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("exit\n")
            self.proc.stdin.flush()
            self.proc.wait(60)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(60)


# --- the shipped rules ----------------------------------------------------------------------------------


@pytest.mark.no_root
def test_shipped_rules_pass_promtool_check_and_their_unit_tests(tmp_path):
    """packaging/prometheus: promtool check rules, and promtool test rules
    (the recording rules' values and the alerts, on input series with known
    answers).  A rule that computes something else fails its unit test."""
    need_prometheus()
    files = [RULES / "jvmtrace-rules.yml", RULES / "jvmtrace-alerts.yml"]
    r = subprocess.run([PROMTOOL, "check", "rules", *map(str, files)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("SUCCESS") == 2, r.stdout + r.stderr
    r = subprocess.run([PROMTOOL, "test", "rules", "jvmtrace-rules.test.yml"], cwd=RULES, capture_output=True,
                       text=True)
    assert r.returncode == 0 and "SUCCESS" in r.stdout, r.stdout + r.stderr
    # The unit test can fail: the p99 rule taken at the 90th percentile.
    for f in RULES.glob("*.yml"):
        shutil.copy(f, tmp_path / f.name)
    broken = tmp_path / "jvmtrace-rules.yml"
    broken.write_text(broken.read_text().replace("histogram_quantile(0.99", "histogram_quantile(0.90"))
    r = subprocess.run([PROMTOOL, "test", "rules", "jvmtrace-rules.test.yml"], cwd=tmp_path, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "p99_5m" in r.stdout + r.stderr, r.stdout + r.stderr


# --- the exposition -------------------------------------------------------------------------------------


def test_exposition_passes_promtool_with_identity_labels_and_few_series(tmp_path, jdks17, java_classes):
    """A real scrape of jvmtraced with stat attached to a patched and two stock
    JVMs (attached by request, not --auto-stat: other JVMs on the host are
    not the test's to trace):
    `promtool check metrics` says nothing (base units, _total counters, help
    texts), also with --metrics-full.  Each JVM carries application (from
    -Djvmtrace.app, escaped: quotes, a backslash and a newline in it; else its
    main class or -jar file's name; the second daemon sets --application), container (a
    64-hex-digit id in its cgroup path, as docker names it; "" when there is
    none) and pid labels, its start time as a gauge, and by default 14
    counters, the start time and 13 series per pause kind it has had: at most
    67 on G1 (young, full, remark, cleanup)."""
    need_prometheus()
    cid = secrets.token_hex(32)
    cgroup = Path(f"/sys/fs/cgroup/pids/docker-{cid}.scope")
    cgroup.mkdir()
    hostile = 'we"b\\shop\nx'
    jvms = []
    try:
        for full in (False, True):
            (tmp_path / f"d{int(full)}").mkdir()
            # The second daemon names JVMs without -Djvmtrace.app: --application.
            d = Daemon(tmp_path / f"d{int(full)}",
                       *(["--metrics-full", "--application", "fleet"] if full else []))
            try:
                if not jvms:
                    # In the "container": the launcher joins the cgroup before it execs java.
                    jvms.append(Jvm(jdks17["patched"], java_classes, tmp_path / "a.log", 300_000,
                                    f"-Djvmtrace.app={hostile}",
                                    prefix=("sh", "-c", f'echo $$ > {cgroup}/cgroup.procs && exec "$@"', "sh")))
                    jvms.append(Jvm(jdks17["stock"], java_classes, tmp_path / "b.log", 300_000))
                    jar = tmp_path / "lib/shop-1.2.jar"
                    jar.parent.mkdir()
                    subprocess.run([str(Path(jdks17["patched"]) / "bin/jar"), "--create", "--file", str(jar),
                                    "--main-class", "AllocWorker", "-C", str(java_classes), "."], check=True)
                    jvms.append(Jvm(jdks17["stock"], java_classes, tmp_path / "c.log", 300_000, jar=jar))
                for j in jvms:
                    attach(d, j.pid)
                if not full:  # they work while the first daemon watches
                    for j in jvms:
                        j.go()

                def both_served():
                    text = d.metrics()
                    m = parse_exposition(text)
                    return (text, m) if all(series_of(m, j.pid) for j in jvms) else None
                text, m = wait_until("both JVMs' metrics", both_served)
                if not full:  # for docs/daemon.md: some of the patched JVM's series, as served
                    print("\n".join(l for l in text.splitlines() if f'pid="{jvms[0].pid}"' in l and
                                     re.match(r"jvmtrace_(gc_ends|tlab_bytes|losses|jvm_start|gc_pause_seconds)", l)))
                rc, said = promtool_check_metrics(text)
                assert rc == 0 and said == "", said
                a, b, c = (series_of(m, j.pid) for j in jvms)
                if not full:
                    for series in (a, b, c):
                        kinds = {dict(lab).get("kind") for (_, lab) in series} - {None}
                        assert "young" in kinds and len(series) == 15 + 13 * len(kinds) <= 67, (kinds, len(series))
                else:
                    assert len(a) > 200, len(a)
                # Identity: every series of a JVM has the same labels.
                for series, app, container in ((a, hostile.replace("\n", "\\x0a"), cid[:12]), (b, "fleet" if full else "AllocWorker", ""),
                                               (c, "fleet" if full else "shop-1.2", "")):
                    for (_, labels) in series:
                        lab = dict(labels)
                        assert lab["application"] == app and lab["container"] == container, lab
                # The escaping as it is in the text: \" and \\ (the newline made printable first: \x0a).
                assert 'application="we\\"b\\\\shop\\\\x0ax"' in text
                for j in jvms:
                    start = next(v for (n, lab), v in m.items()
                                 if n == "jvmtrace_jvm_start_time_seconds" and ("pid", str(j.pid)) in lab)
                    ticks = int(Path(f"/proc/{j.pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
                    btime = int(re.search(r"^btime (\d+)", Path("/proc/stat").read_text(), re.M).group(1))
                    assert abs(start - (btime + ticks / os.sysconf("SC_CLK_TCK"))) < 0.02, start
                    assert abs(start - time.time()) < 600
                names = {n for (n, _) in m}
                assert "jvmtrace_gc_pause_seconds_bucket" in names and not any("microseconds" in n for n in names)
            finally:
                d.stop()
    finally:
        for j in jvms:
            j.kill()
        cgroup.rmdir()


def test_max_workers_refusals_are_counted(tmp_path, jdks17, java_classes):
    """With --max-workers 1, a second JVM's attach is refused with the reason
    and counted in jvmtraced_attaches_refused_total; the first JVM is served."""
    d = Daemon(tmp_path, "--max-workers", "1")
    jvms = []
    key = ("jvmtraced_attaches_refused_total", frozenset({("reason", "max_workers")}))
    try:
        assert parse_exposition(d.metrics())[key] == 0
        jvms = [Jvm(jdks17["stock"], java_classes, tmp_path / f"{i}.log", 1000) for i in range(2)]
        attach(d, jvms[0].pid)
        d.wait_listed(jvms[1].pid)
        r = d.client("attach", jvms[1].pid, "--stat")
        assert r.returncode != 0 and "error: 1 attachments already (max-workers 1)" in r.stdout, r.stdout + r.stderr
        m = wait_until("the first JVM's metrics", lambda: (lambda m: m if series_of(m, jvms[0].pid) else None)(
            parse_exposition(d.metrics())))
        assert m[key] == 1 and not series_of(m, jvms[1].pid)
    finally:
        for j in jvms:
            j.kill()
        d.stop()


def test_an_exited_jvms_final_figures_stay_served_for_the_linger(tmp_path, jdks17, java_classes):
    """With a stat interval longer than the JVM's life, the only figures are the
    worker's final report, printed once its JVM has exited: --metrics-linger
    serves them (they equal the JVM's -Xlog:gc), then they expire.  With
    --metrics-linger 0 they are never served."""
    for linger in ("3", "0"):
        (tmp_path / linger).mkdir()
        d = Daemon(tmp_path / linger, "--stat-interval", "60", "--metrics-linger", linger)
        j = Jvm(jdks17["patched"], java_classes, tmp_path / linger / "gc.log", 3_000_000, heap_mb=32)
        try:
            attach(d, j.pid)
            j.go()
            logged, _, _ = j.collections()
            assert series_of(parse_exposition(d.metrics()), j.pid) == {}  # no report yet
            j.exit()
            d.log.wait_for(lambda l: f"worker" in l and f"for PID {j.pid} ended" in l, 30, "the worker to end")
            m = parse_exposition(d.metrics())
            if linger == "0":
                assert series_of(m, j.pid) == {}
                continue
            ends = [v for (n, lab), v in series_of(m, j.pid).items() if n == "jvmtrace_gc_ends_total"]
            assert ends == [len(logged)] and len(logged) >= 3, (ends, len(logged))
            assert any(n == "jvmtrace_jvm_start_time_seconds" for (n, _) in series_of(m, j.pid))
            wait_until("the lingering figures to expire",
                       lambda: series_of(parse_exposition(d.metrics()), j.pid) == {}, 10)
        finally:
            j.kill()
            d.stop()


# --- a real Prometheus --------------------------------------------------------------------------------


class Prometheus:
    """Debian's prometheus with its own configuration and a temporary
    storage directory, on loopback, scraping jvmtraced every `interval` s."""

    def __init__(self, tmp_path, target_port, interval=0.25):
        self.port = free_port()
        self.interval = interval
        conf = tmp_path / "prometheus.yml"
        conf.write_text(f"""global:
  scrape_interval: {round(interval * 1000)}ms
  scrape_timeout: {round(interval * 1000)}ms
scrape_configs:
  - job_name: jvmtraced
    static_configs:
      - targets: ['127.0.0.1:{target_port}']
""")
        (tmp_path / "tsdb").mkdir()
        self.logf = open(tmp_path / "prometheus.log", "w")
        self.proc = subprocess.Popen([PROMETHEUS, f"--config.file={conf}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                      f"--web.listen-address=127.0.0.1:{self.port}"],
                                     stdout=self.logf, stderr=subprocess.STDOUT)
        wait_until("prometheus to be ready", self.ready, 60)

    def ready(self):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited {self.proc.returncode}")
            return False

    def query(self, q, at=None):
        """An instant query's vector: [(labels, value)]."""
        args = {"query": q, **({"time": f"{at:.3f}"} if at else {})}
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(args),
                                    timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return [(s["metric"], float(s["value"][1])) for s in body["data"]["result"]]

    def one(self, q, at=None):
        v = self.query(q, at)
        assert len(v) == 1, (q, v)
        return v[0][1]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(60)
        self.logf.close()


def bucket_of(seconds):
    """The pause histogram's bucket holding a value: (lower, upper] bounds."""
    lo = 0.0
    for hi in PAUSE_BOUNDS + [math.inf]:
        if seconds <= hi:
            return lo, hi
        lo = hi
    raise AssertionError(seconds)


def test_real_prometheus_agrees_with_the_jvms_gc_logs(tmp_path, jdks17, java_classes):
    """Prometheus 2.42 scrapes jvmtraced (stat attached to each JVM) every 0.25 s while
    AllocWorker JVMs run; over a window from before their work to after it:
    - the GC counts' samples in the window rise by exactly each JVM's -Xlog:gc
      collections, and increase() of them equals that up to its extrapolation
      to the window's edges (at most 1.1 scrape intervals at each);
    - the young pauses' histogram counts as many as the log; histogram_quantile(0.99)
      lies in the bucket where its own counts put the 99th percentile, and that
      bucket is the log's p99's, or the next one with the log's p99 within the
      probes' measured bracket of the edge between them;
    - the exited JVM's series go stale (an instant query no longer has them);
    - sum by (application) adds up across that JVM's restart (the JVMs of
      one application, one after the other)."""
    need_prometheus()
    d = Daemon(tmp_path, "--metrics-linger", "1")  # (an exited JVM's last figures: 1 s, then stale)
    prom = Prometheus(tmp_path, d.port)
    jvms = []
    try:
        def scraped(pid):
            return lambda: prom.query(f'jvmtrace_gc_ends_total{{pid="{pid}"}}')

        def settled_at(pid, logged):
            """When Prometheus holds the JVM's final count (the stat worker's
            last report scraped)."""
            q = f'jvmtrace_gc_ends_total{{pid="{pid}"}}'
            wait_until(f"Prometheus to hold PID {pid}'s {logged} collections",
                       lambda: prom.query(q) and prom.query(q)[0][1] == logged, 60)
            return time.time()

        counts = []
        t0 = None
        for i in range(2):  # "shop", then its restart
            j = Jvm(jdks17["patched"], java_classes, tmp_path / f"shop{i}.log", 8_000_000, "-Djvmtrace.app=shop",
                    heap_mb=32)
            jvms.append(j)
            attach(d, j.pid)
            wait_until(f"PID {j.pid} scraped", scraped(j.pid), 60)
            before = prom.one(f'jvmtrace_gc_ends_total{{pid="{j.pid}"}}')
            if t0 is None:
                t0 = time.time()
            j.go()
            logged, pauses, young = j.collections()
            assert len(logged) >= 10, logged
            t1 = settled_at(j.pid, before + len(logged))
            counts.append((j, logged, pauses, young, t1))
            if i == 0:
                # The restart: the first JVM exits, and its series go stale
                # (an instant query no longer has them) before the second starts.
                j.exit()
                wait_until(f"PID {j.pid}'s series to go stale",
                           lambda: not prom.query(f'{{__name__=~"jvmtrace_.*",pid="{j.pid}"}}'), 30)
        # The window: from before the first JVM's work to after the second's.
        t_end = time.time() + prom.interval
        wait_until("the window's end", lambda: time.time() >= t_end, 10, 0.1)
        window = math.ceil(t_end - t0 + 2 * prom.interval)
        # increase() extrapolates a series' rise over its samples (S seconds
        # from its first to its last in the window) towards the window's edges,
        # by at most 1.1 average intervals at each (Prometheus'
        # extrapolatedRate): it can only add, at most (S + 2.2 avg) / S.
        def raw(q):
            with urllib.request.urlopen(f"http://127.0.0.1:{prom.port}/api/v1/query?" + urllib.parse.urlencode(
                    {"query": f"{q}[{window}s]", "time": f"{t_end:.3f}"}), timeout=10) as r:
                result = json.load(r)["data"]["result"]
            assert len(result) == 1, (q, result)
            return [(float(t), float(v)) for t, v in result[0]["values"]]

        def raw_by(q, label):
            """{label value: samples} of each series of q over the window."""
            with urllib.request.urlopen(f"http://127.0.0.1:{prom.port}/api/v1/query?" + urllib.parse.urlencode(
                    {"query": f"{q}[{window}s]", "time": f"{t_end:.3f}"}), timeout=10) as r:
                result = json.load(r)["data"]["result"]
            return {s["metric"][label]: [(float(t), float(v)) for t, v in s["values"]] for s in result}

        bounds = {}
        for j, logged, pauses, young, t1 in counts:
            samples = raw(f'jvmtrace_gc_ends_total{{pid="{j.pid}"}}')
            (ta, first), (tb, last) = samples[0], samples[-1]
            assert last - first == len(logged), (first, last, len(logged))
            slack = (tb - ta + 2.2 * (tb - ta) / (len(samples) - 1)) / (tb - ta)
            bounds[j.pid] = slack
            inc = prom.one(f'increase(jvmtrace_gc_ends_total{{pid="{j.pid}"}}[{window}s])', t_end)
            assert len(logged) - 0.001 <= inc <= len(logged) * slack, (j.pid, inc, len(logged), slack)
            pause_inc = sum(v for _, v in prom.query(
                f'increase(jvmtrace_gc_pause_seconds_count{{pid="{j.pid}"}}[{window}s])', t_end))
            assert pauses - 0.001 <= pause_inc <= pauses * slack, (pause_inc, pauses)
            # p99 of the young pauses: the log's (nearest rank) and Prometheus' estimate, in one bucket.
            log_p99 = sorted(young)[math.ceil(0.99 * len(young)) - 1] / 1000
            est = prom.one(f'histogram_quantile(0.99, sum by (le) (increase(jvmtrace_gc_pause_seconds_bucket'
                           f'{{pid="{j.pid}",kind="young"}}[{window}s])))', t_end)
            lo, hi = bucket_of(log_p99)
            print(f"PID {j.pid}: -Xlog:gc {len(logged)} collections, {pauses} pauses, young p99 {log_p99 * 1e3:.3f} ms "
                  f"(bucket {lo * 1e3:g}..{hi * 1e3:g} ms); PromQL over {window}s: increase {inc:.3f}, "
                  f"pauses {pause_inc:.3f}, p99 {est * 1e3:.3f} ms")
            # The estimate, against the histogram's own counts: the buckets'
            # raw samples rise, over the window, by exact counts (as the GC
            # count does); their total is the log's young pauses, and
            # histogram_quantile interpolates inside the bucket where the
            # cumulative count reaches 0.99 of it.
            rises = {}
            for le, series in raw_by(f'jvmtrace_gc_pause_seconds_bucket{{pid="{j.pid}",kind="young"}}',
                                     "le").items():
                rises[float(le)] = series[-1][1] - series[0][1]
            cum = sorted(rises.items())
            assert cum[-1][0] == math.inf and cum[-1][1] == len(young), (cum, len(young))
            rank = 0.99 * len(young)
            h_hi = next(b for b, n in cum if n >= rank)
            h_lo = max([b for b, _ in cum if b < h_hi], default=0.0)
            assert h_lo <= est <= h_hi, (j.pid, est, (h_lo, h_hi), cum)
            # The histogram's p99 bucket, against the log's: the same, or the
            # next one when the log's p99 is within G1's bounds in
            # check_against_log (traced in [log - STW_SHORT_MS, log +
            # STW_SLACK_MS]: where G1's probes sit against the log's stamps,
            # test_stop_the_world.py) of the edge between them.  The k-th
            # smallest traced pause lies in the k-th smallest logged pause's
            # bounds, since every pause lies in its own.
            if (h_lo, h_hi) != (lo, hi):
                if h_lo == hi:      # the histogram's is the next bucket up
                    ok = hi <= log_p99 + STW_SLACK_MS / 1000
                elif h_hi == lo:    # the next bucket down
                    ok = lo >= log_p99 - STW_SHORT_MS / 1000
                else:
                    ok = False
                assert ok, (f"PID {j.pid}: the histogram's p99 bucket {h_lo * 1e3:g}..{h_hi * 1e3:g} ms, the log's "
                            f"p99 {log_p99 * 1e3:.3f} ms in {lo * 1e3:g}..{hi * 1e3:g} ms, beyond the probes' bounds")
                print(f"PID {j.pid}: p99 one bucket apart, the log's within the probes' bounds of the edge")
        # The application's sum across the restart: both JVMs' collections.
        total = sum(len(logged) for _, logged, _, _, _ in counts)
        by_app = dict((s["application"], v) for s, v in prom.query(
            f'sum by (application) (increase(jvmtrace_gc_ends_total[{window}s]))', t_end))
        assert total - 0.001 <= by_app["shop"] <= sum(len(logged) * bounds[j.pid] for j, logged, *_ in counts), \
            (by_app, total, bounds)
        print(f"sum by (application): {by_app}; the logs: {total}")
        # The first JVM's series stayed stale; the second's are there.
        assert not prom.query(f'{{__name__=~"jvmtrace_.*",pid="{jvms[0].pid}"}}')
        assert prom.query(f'jvmtrace_gc_ends_total{{pid="{jvms[1].pid}"}}')
        # And the scrape itself is healthy.
        assert prom.one('up{job="jvmtraced"}') == 1
    finally:
        for j in jvms:
            j.kill()
        prom.stop()
        d.stop()
