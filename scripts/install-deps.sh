#!/usr/bin/env bash
# Installs the Debian 12 packages jvmtrace needs to build, run and test.
# Idempotent: asks apt only for what is missing.  Needs root.
#
#   scripts/install-deps.sh            # build + run + test packages
#   scripts/install-deps.sh --jdk-build  # also what building HotSpot needs
#   scripts/install-deps.sh --bench      # also the benchmarks' programs (bench/)
#   scripts/install-deps.sh --build      # only what building the jvmtrace program needs
#   scripts/install-deps.sh --first      # only what trace-demo.sh's first look runs:
#                                        # bpftrace, Debian's JDK 17 and Saxon-HE
#   scripts/install-deps.sh --tools      # only what building and running jvmtrace needs
set -euo pipefail

# Building the jvmtrace program (cmake's configure step asks for all of it;
# systemtap-sdt-dev's dtrace is a Python script).
build=(build-essential cmake pkg-config help2man clang libbpf-dev libelf-dev zlib1g-dev nlohmann-json3-dev bpftool
       systemtap-sdt-dev python3)
# Building and running jvmtrace and its tools (the packages, the fuzzer).
tools=("${build[@]}" dpkg-dev llvm libclang-rt-14-dev bpftrace binutils bc openjdk-17-jdk-headless)
# The tests, besides: the HTML report's rendering, decoding the Perfetto
# export with its schema, a fresh Debian 12 root for the packages' test, a FUSE
# file system that stops answering (tests/fixtures/stall_fs.py), a real
# Prometheus scraping jvmtraced and promtool checking its exposition and the
# shipped rules (tests/test_fleet.py), go tool pprof reading the exported
# allocation profiles (tests/test_allocation_sites.py).
tests=(python3-pytest chromium python3-pil protobuf-compiler python3-protobuf mmdebstrap systemd-container python3-llfuse
       prometheus golang-go)
runtime=("${tools[@]}" "${tests[@]}")
# trace-demo.sh's first look: bpftrace stock tools on a Debian program on
# Debian's JDK (installed while the jvmtrace program builds: jvmtrace-bt
# reads the target's libjvm.so through `jvmtrace target`).
first=(bpftrace binutils openjdk-17-jdk-headless python3 libsaxonhe-java)
# Real Java programs the tests run (tests/corpus.py; test_corpus_programs.py
# checks that this list is the corpus's).
corpus=(libeclipse-jdt-core-java libh2-java liblucene8-java librhino-java libsaxonhe-java)
jdk_build=(autoconf zip unzip file ccache dpkg-dev mmdebstrap curl
           libcups2-dev libasound2-dev libfontconfig1-dev libfreetype-dev
           libx11-dev libxext-dev libxrender-dev libxrandr-dev libxtst-dev libxt-dev)

# Real programs only the benchmarks run (bench/cpu_overhead.py --program sunflow).
bench=(sunflow)

want=("${runtime[@]}" "${corpus[@]}")
case "${1:-}" in
  --jdk-build) want+=("${jdk_build[@]}") ;;
  --bench) want+=("${bench[@]}") ;;
  --build) want=("${build[@]}") ;;
  --first) want=("${first[@]}") ;;
  --tools) want=("${tools[@]}") ;;
  "") ;;
  -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: must run as root to install packages" >&2
  exit 1
fi

# tracefs is where uprobes show up; some machines do not mount it.
if [ ! -d /sys/kernel/tracing/events ]; then
  mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi

missing=()
for p in "${want[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "[deps] installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt (the demo's background set-up, unattended-upgrades) may hold
# the lock for a while: wait for it rather than fail.
apt=(apt-get -o DPkg::Lock::Timeout=600)
if ! "${apt[@]}" install -y -qq "${missing[@]}" >/tmp/jvmtrace-apt.log 2>&1; then
  "${apt[@]}" update -qq >>/tmp/jvmtrace-apt.log 2>&1 || true
  if ! "${apt[@]}" install -y -qq "${missing[@]}" >>/tmp/jvmtrace-apt.log 2>&1; then
    echo "install-deps.sh: apt-get install failed; see /tmp/jvmtrace-apt.log:" >&2
    tail -n 15 /tmp/jvmtrace-apt.log >&2
    exit 1
  fi
fi
