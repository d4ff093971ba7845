"""The README's main command, its first step as a user runs it:
`scripts/trace-demo.sh --first-look-only` (stock mode on Debian's own JDK 17,
nothing of ours built before its first result).  What it prints must be
true: every collection the JVM logged is in the bpftrace tool's output, the
refills add up, the program's own output is checked, and `jvmtrace stat`
reports on a second run.  (The timings of a bare machine are measured in a
fresh Debian root, README; here the packages are already installed.)"""
import re
import subprocess

from helpers import REPO


def section(text, title):
    """The lines under '=== title...' up to the next '===' header."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("=== "):
            inside = line.startswith("=== " + title)
            continue
        if inside:
            out.append(line)
    return out


def test_first_look_shows_every_collection_of_a_debian_program_on_debians_jdk():
    r = subprocess.run([str(REPO / "scripts/trace-demo.sh"), "--first-look-only"], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = [l for l in r.stderr.splitlines() if l.startswith("[demo ")]
    assert any("first result shown" in l for l in steps) and steps[-1].endswith("done (--first-look-only)"), steps

    # A first run shows no error that is none (bpftrace's RLIMIT_MEMLOCK line).
    assert "RLIMIT_MEMLOCK" not in r.stdout + r.stderr and "ERROR" not in r.stdout, r.stdout[:3000]

    # gcpause_stock: one line per collection; -Xlog:gc of the same run: the
    # same GC ids (a concurrent cycle's Remark and Cleanup share its id), and
    # every pause's cause by the name the log gives it.
    gcs = [m for l in section(r.stdout, "scripts/jvmtrace-bt gcpause_stock")
           for m in [re.match(r"(\d+)\s+(\S.*?)\s+(\d+)$", l)] if m]
    log = section(r.stdout, "-Xlog:gc of the same run")
    ids = {int(m.group(1)) for l in log for m in [re.search(r"GC\((\d+)\)", l)] if m}
    assert len(ids) >= 5 and len(gcs) == len(ids), ([m.group(0) for m in gcs], sorted(ids))
    assert [int(m.group(1)) for m in gcs] == list(range(1, len(gcs) + 1))
    causes = {m.group(2) for m in gcs}
    logged = {c for l in log for c in re.findall(r"Pause Young \([^)]*\) \(([^)]*)\)", l)}
    assert logged and logged <= causes, (causes, logged)

    # tlabstat_stock: the per-thread refills add up to the total.
    tlab = section(r.stdout, "scripts/jvmtrace-bt tlabstat_stock")
    total = int(next(l for l in tlab if l.startswith("@refills_total:")).split()[1])
    per_thread = sum(int(l.rsplit(":", 1)[1]) for l in tlab if l.startswith("@refills_by_tid["))
    assert total > 100 and per_thread == total
    assert "(Saxon's output checked" in r.stdout

    # Then jvmtrace itself, stock mode, on a second run of the program.
    assert re.search(r"Attached 4 uprobes \(stock mode\) to PID \d+", r.stderr), r.stderr[-2000:]
    stat = dict(re.findall(r"^  (\w+) +(\d+)$", r.stderr, re.M))
    assert int(stat["tlab_refills"]) > 100 and int(stat["gc_starts"]) == int(stat["gc_ends"]) >= 5


def test_whole_picture_names_where_saxon_allocates():
    """The main command's last step on the patched JVM (`--no-first-look`):
    Saxon-HE recorded with `record --stacks` from its first allocation, with
    no JVM flag; its allocation sites are named Java methods with lines, its
    heaviest stack is Java frames by kind (inlined ones among the stacks),
    and the trace passes report --check."""
    r = subprocess.run([str(REPO / "scripts/trace-demo.sh"), "--no-first-look"], capture_output=True, text=True,
                       timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    sites = [l for l in section(r.stdout, "jvmtrace report " + str(REPO / "build/saxon.jvmtrace") + ": where Saxon")
             if re.match(r"\s+\d+\s+[\d.]+%\s+\d+\s+\S", l)]
    assert len(sites) >= 10, r.stdout[-4000:]
    # method:line (file): a Java method, named, with its line.
    named = [l for l in sites if re.search(r"\s[\w.$]+\.[\w$<>]+:\d+ \(\w+\.java\)$", l)]
    assert len(named) >= 9, sites
    assert any("net.sf.saxon." in l for l in sites[:10]), sites
    stack = section(r.stdout, "its heaviest stack")
    assert any(l.strip().startswith("net.sf.saxon.") for l in stack), stack
    assert all(re.search(r"_\[[01ji]\]$", l.strip()) for l in stack if "." in l and "::" not in l
               and not l.strip().startswith("[")), stack
    folded = subprocess.run([str(REPO / "build/userspace/jvmtrace"), "flame", str(REPO / "build/saxon.jvmtrace"), "-o",
                             "-", "--collapsed"], capture_output=True, text=True, check=True).stdout
    assert "_[i];" in folded, "no inlined frame in any of Saxon's stacks"
    check = section(r.stdout, "jvmtrace report --check " + str(REPO / "build/saxon.jvmtrace"))
    assert "OK: no violations" in check, check
