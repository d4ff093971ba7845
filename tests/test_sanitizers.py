"""`jvmtrace stat` and `record` built with AddressSanitizer and UBSan, run
against the USDT fixture with each probe set until their end (`-d`): no
memory error from attach to teardown.  The order in which a tool lets go of
its links and its BPF object matters to libbpf (a USDT link detaches through
the object's bookkeeping); session 10's first BpfSession destroyed the
object first, and `stat`'s default (batched) set ended in a double free that
no other test saw.  The sanitizer build lives in build-asan/ beside the
normal one (built on first use, then incrementally)."""
import os
import subprocess

import pytest

from helpers import REPO

ASAN_BUILD = REPO / "build-asan"
FLAGS = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"


@pytest.fixture(scope="module")
def asan_jvmtrace():
    subprocess.run(["cmake", "-S", str(REPO), "-B", str(ASAN_BUILD), "-DCMAKE_BUILD_TYPE=Debug",
                    f"-DCMAKE_CXX_FLAGS={FLAGS}", f"-DCMAKE_C_FLAGS={FLAGS}",
                    f"-DCMAKE_EXE_LINKER_FLAGS={FLAGS}"], check=True, capture_output=True)
    r = subprocess.run(["cmake", "--build", str(ASAN_BUILD), "-j", str(os.cpu_count()), "--target", "jvmtrace"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return ASAN_BUILD / "userspace/jvmtrace"


@pytest.mark.parametrize("command", ["stat", "record"])
@pytest.mark.parametrize("probe_set", ["batched", "combined", "separate"])
def test_stat_and_record_end_without_memory_errors(asan_jvmtrace, usdt_fixture, tmp_path, command, probe_set):
    fx = subprocess.Popen([str(usdt_fixture), "--rounds", "100000000", "--rate", "2000", "--wait-for", "none"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        argv = [str(asan_jvmtrace), command, "-p", str(fx.pid), "-b", str(usdt_fixture), "--probe-set", probe_set,
                "-d", "1"]
        if command == "record":
            argv += ["-q", "-o", str(tmp_path / "t.jvmtrace")]
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
        r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    finally:
        fx.kill()
        fx.wait()
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-2000:]
