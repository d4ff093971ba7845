#!/usr/bin/env bash
# Installs the Debian 12 packages jvmtrace needs to build, run and test.
# Idempotent: asks apt only for what is missing.  Needs root.
#
#   scripts/install-deps.sh            # build + run + test packages
#   scripts/install-deps.sh --jdk-build  # also what building HotSpot needs
#   scripts/install-deps.sh --bench      # also the benchmarks' programs (bench/)
set -euo pipefail

runtime=(build-essential cmake pkg-config clang llvm libclang-rt-14-dev libbpf-dev libelf-dev zlib1g-dev nlohmann-json3-dev
         bpftool bpftrace systemtap-sdt-dev binutils bc
         openjdk-17-jdk-headless python3 python3-pytest
         chromium python3-pil       # the HTML report's rendering test
         protobuf-compiler python3-protobuf)  # decoding the Perfetto export with its schema in the tests
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
  "") ;;
  -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
if ! apt-get install -y -qq "${missing[@]}" >/tmp/jvmtrace-apt.log 2>&1; then
  apt-get update -qq >>/tmp/jvmtrace-apt.log 2>&1 || true
  if ! apt-get install -y -qq "${missing[@]}" >>/tmp/jvmtrace-apt.log 2>&1; then
    echo "install-deps.sh: apt-get install failed; see /tmp/jvmtrace-apt.log:" >&2
    tail -n 15 /tmp/jvmtrace-apt.log >&2
    exit 1
  fi
fi
