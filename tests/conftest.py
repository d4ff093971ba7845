"""Shared fixtures: the two private JDKs, the compiled Java test programs, the
USDT fixture binary, and helpers that run a traced target end to end.

These tests need root, eBPF and the patched JDK; they fail (never skip) when
those are missing, with the reason, because CI runs them as root on a machine
that has all three (`scripts/test.sh` builds what is missing first).
"""
import os
import subprocess
from pathlib import Path

import pytest

from helpers import REPO, run_checked

BUILD_DIR = Path(os.environ.get("JVMTRACE_BUILD_DIR", REPO / "build"))


def pytest_sessionstart(session):
    if os.geteuid() != 0:
        raise pytest.UsageError("jvmtrace tests attach eBPF programs: run them as root")


@pytest.fixture(scope="session")
def jdks():
    """{'patched': JAVA_HOME, 'unpatched': JAVA_HOME} from the build cache, or
    from JVMTRACE_PATCHED_HOME / JVMTRACE_UNPATCHED_HOME when both are set."""
    env = {v: os.environ.get(f"JVMTRACE_{v.upper()}_HOME") for v in ("patched", "unpatched")}
    if all(env.values()):
        return env
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("the patched/unpatched JDKs are not built; run scripts/build-patched-jdk.sh "
                    f"(it said: {r.stderr.strip()})")
    homes = dict(line.split("=", 1) for line in r.stdout.split())
    for v, home in homes.items():
        assert (Path(home) / "bin/java").is_file(), f"{v} JDK has no bin/java: {home}"
    return homes


@pytest.fixture(scope="session")
def patched_libjvm(jdks):
    return Path(jdks["patched"]) / "lib/server/libjvm.so"


@pytest.fixture(scope="session")
def unpatched_libjvm(jdks):
    return Path(jdks["unpatched"]) / "lib/server/libjvm.so"


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory, jdks):
    """tests/java/*.java compiled with the patched JDK's javac."""
    out = tmp_path_factory.mktemp("classes")
    sources = sorted(str(p) for p in (REPO / "tests/java").glob("*.java"))
    run_checked([str(Path(jdks["patched"]) / "bin/javac"), "-d", str(out), *sources])
    return out


@pytest.fixture(scope="session")
def usdt_fixture():
    exe = BUILD_DIR / "tests/fixtures/usdt_fixture"
    if not exe.is_file():
        pytest.fail(f"{exe} is not built; run cmake -S . -B build && cmake --build build")
    return exe


@pytest.fixture(scope="session")
def fastdebug_home():
    """The patched HotSpot built with its asserts on (build-patched-jdk.sh
    --variant fastdebug), or JVMTRACE_FASTDEBUG_HOME."""
    home = os.environ.get("JVMTRACE_FASTDEBUG_HOME")
    if home:
        return Path(home)
    r = subprocess.run([str(REPO / "scripts/build-patched-jdk.sh"), "--print", "--variant", "fastdebug"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail("the fastdebug JDK is not built; run scripts/build-patched-jdk.sh --variant fastdebug "
                    f"(it said: {r.stderr.strip()})")
    return Path(r.stdout.split("=", 1)[1].strip())
