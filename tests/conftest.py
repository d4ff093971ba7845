"""Shared fixtures: the two private JDKs, the compiled Java test programs, the
USDT fixture binary, and helpers that run a traced target end to end.

These tests need root, eBPF and the patched JDK; they fail (never skip) when
those are missing, with the reason, because CI runs them as root on a machine
that has all three (`scripts/test.sh` builds what is missing first).  Those
marked `no_root` (the trace format, the probe contract's texts and the
fixture's notes) need none of it: `python3 -m pytest -m no_root` runs them as
any user.
"""
import os
import subprocess
from pathlib import Path

import pytest

from helpers import REPO, run_checked

BUILD_DIR = Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))


def pytest_configure(config):
    config.addinivalue_line("markers", "no_root: needs neither root, eBPF nor a JVM (runs as any user)")
    config.addinivalue_line("markers", "jdk_line(line): runs a JVM of that release line: not collected unless "
                                       "JVMTRACE_JDKS names it")


@pytest.fixture(autouse=True)
def _root_unless_marked(request):
    """Every test but the `no_root` ones needs root: as another user it
    fails with the reason (CI runs as root: nothing is skipped there)."""
    if os.geteuid() != 0 and request.node.get_closest_marker("no_root") is None:
        pytest.fail("this test needs root (eBPF, a JVM, namespaces or the build tree): run it as root, "
                    "or select the others with -m no_root")


# The release lines the JVM tests run on (JVMTRACE_JDKS="17,21,25" by
# default): a test that takes `jdks` runs once per line.  21 and 25 run in the
# Debian 13 root build-patched-jdk.sh makes (their homes are its bin/
# wrappers), so to jvmtrace they are JVMs in a container.
JDK_LINES = [j for j in os.environ.get("JVMTRACE_JDKS", "17,21,25").split(",") if j]
# The lines whose fastdebug HotSpot the tests run (test_fastdebug.py and the
# second pass of scripts/test.sh): all three by default (docs/decisions.md, 111).
FASTDEBUG_LINES = [j for j in os.environ.get("JVMTRACE_FASTDEBUG_JDKS", "17,21,25").split(",") if j in JDK_LINES]


# Debian 12's own JDK 17 (openjdk-17-jdk-headless, scripts/install-deps.sh):
# the tests' javac and the JDK that prepares and checks the corpus's inputs,
# tools rather than a JVM under test, so that a run of other lines
# (JVMTRACE_JDKS=21,25) needs no JDK 17 of ours.
DEBIAN_JDK17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def debian_jdk17():
    if not (DEBIAN_JDK17 / "bin/javac").is_file():
        pytest.fail(f"{DEBIAN_JDK17}/bin/javac is missing: scripts/install-deps.sh installs openjdk-17-jdk-headless")
    return DEBIAN_JDK17


def on_line(line, *values):
    """A parametrize value (`line` itself unless values are given) of a test
    that runs a JVM of that release line: not collected unless
    JVMTRACE_JDKS names the line (pytest.mark.jdk_line)."""
    return pytest.param(*(values or (line,)), marks=pytest.mark.jdk_line(line))


def pytest_collection_modifyitems(config, items):
    """JVMTRACE_JDKS decides every test of a release line: one that needs a
    line it does not name (pytest.mark.jdk_line, or the jdks17 fixture) is
    deselected, not collected to fail for want of that line's JDK or to be
    skipped."""
    keep, drop = [], []
    for item in items:
        needs = {m.args[0] for m in item.iter_markers("jdk_line")}
        if "jdks17" in getattr(item, "fixturenames", ()):
            needs.add("17")
        (drop if needs - set(JDK_LINES) else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def jdk_homes(line):
    """{'patched': JAVA_HOME, 'stock': JAVA_HOME, 'line': '21'} of a
    release line, from the build cache, or from JVMTRACE_PATCHED_HOME /
    JVMTRACE_STOCK_HOME (17) and JVMTRACE_PATCHED_HOME_21 ... when set.
    stock is Debian's own runtime of the source the patched one is built
    from (no build: build-patched-jdk.sh --variant stock)."""
    suffix = "" if line == "17" else f"_{line}"
    env = {v: os.environ.get(f"JVMTRACE_{v.upper()}_HOME{suffix}") for v in ("patched", "stock")}
    if all(env.values()):
        return {**env, "line": line}
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print", "--jdk", line,
                        "--variant", "patched,stock"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"the patched/stock JDK {line} are not ready; run scripts/build-patched-jdk.sh "
                    f"--jdk {line} --variant patched,stock (it said: {r.stderr.strip()})")
    homes = dict(line.split("=", 1) for line in r.stdout.split())
    for v, home in homes.items():
        assert (Path(home) / "bin/java").is_file(), f"{v} JDK has no bin/java: {home}"
    return {**homes, "line": line}


@pytest.fixture(scope="session", params=JDK_LINES, ids=lambda line: f"jdk{line}")
def jdks(request):
    """The patched and the stock (Debian's own) JDK of each release line in turn."""
    return jdk_homes(request.param)


@pytest.fixture(scope="session")
def jdks17():
    """JDK 17 only: for tests of jvmtrace itself rather than of the probes
    (its security against hostile targets, the corpus's Debian 12 programs,
    fastdebug), where running three lines would test the same code thrice.
    A test that takes it is not collected unless JVMTRACE_JDKS names 17
    (pytest_collection_modifyitems)."""
    return jdk_homes("17")


@pytest.fixture(scope="session")
def patched_libjvm(jdks):
    # (resolved: 21/25's home is a wrapper directory whose lib/ is a link)
    return (Path(jdks["patched"]) / "lib/server/libjvm.so").resolve()


@pytest.fixture(scope="session")
def stock_libjvm(jdks):
    return (Path(jdks["stock"]) / "lib/server/libjvm.so").resolve()


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory):
    """tests/java/*.java compiled with Debian's JDK 17 javac: class files
    every line runs (17, 21, 25), whichever lines JVMTRACE_JDKS names."""
    out = tmp_path_factory.mktemp("classes")
    sources = sorted(str(p) for p in (REPO / "tests/java").glob("*.java"))
    run_checked([str(debian_jdk17() / "bin/javac"), "-d", str(out), *sources])
    return out


@pytest.fixture(scope="session")
def usdt_fixture():
    exe = BUILD_DIR / "tests/fixtures/usdt_fixture"
    if not exe.is_file():
        pytest.fail(f"{exe} is not built; run cmake -S . -B build && cmake --build build")
    return exe


def fastdebug_home_of(line):
    """The patched HotSpot of a release line built with its asserts on
    (build-patched-jdk.sh --variant fastdebug), or JVMTRACE_FASTDEBUG_HOME
    (17) / JVMTRACE_FASTDEBUG_HOME_21 ..."""
    home = os.environ.get("JVMTRACE_FASTDEBUG_HOME" + ("" if line == "17" else f"_{line}"))
    if home:
        return Path(home)
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print", "--jdk", line, "--variant", "fastdebug"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"the fastdebug JDK {line} is not built; run scripts/build-patched-jdk.sh --jdk {line} "
                    f"--variant fastdebug (it said: {r.stderr.strip()})")
    return Path(r.stdout.split("=", 1)[1].strip())


@pytest.fixture(scope="session", params=FASTDEBUG_LINES, ids=lambda line: f"jdk{line}")
def fastdebug(request):
    """(release line, fastdebug JAVA_HOME) of each line in turn."""
    return request.param, fastdebug_home_of(request.param)


@pytest.fixture(scope="session")
def corpus_inputs(tmp_path_factory):
    """program (tests/corpus.py) -> a directory holding its prepared inputs
    (made with Debian's JDK 17, whichever line then runs the program), made
    once; a run hard-links them into its own directory."""
    made = {}

    def get(program):
        if program.name not in made:
            d = tmp_path_factory.mktemp(f"input-{program.name}")
            program.prepare(d, str(debian_jdk17()))
            made[program.name] = d
        return made[program.name]
    return get
