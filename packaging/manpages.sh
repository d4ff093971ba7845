#!/usr/bin/env bash
# Man pages from the programs' own --help (help2man), so they never say
# other than the programs: jvmtrace(1) with every subcommand's --help as
# its own section, jvmtraced(8).  Called by the build (CMake) as
#   packaging/manpages.sh BUILD_BIN_DIR OUT_DIR
set -euo pipefail
bin=$1 out=$2
mkdir -p "$out"
inc=$(mktemp)
trap 'rm -f "$inc"' EXIT
{
  echo "[COMMANDS]"
  for cmd in stat record dump report export flame calibrate daemon; do
    echo ".SS jvmtrace $cmd"
    echo ".nf"
    "$bin/jvmtrace" "$cmd" --help | sed 's/\\/\\e/g; s/^\./\\\&./'
    echo ".fi"
  done
  echo "[FILES]"
  echo "/usr/share/jvmtrace/bpftrace/ \- the bpftrace tools that jvmtrace-bt runs"
  echo "[SEE ALSO]"
  echo "jvmtraced(8), bpftrace(8); /usr/share/doc/jvmtrace/"
} > "$inc"
help2man -N -s 1 -n "observe a HotSpot JVM's allocation and GC with eBPF" --include "$inc" \
  "$bin/jvmtrace" | gzip -9n > "$out/jvmtrace.1.gz"
{
  echo "[FILES]"
  echo "/etc/jvmtrace/jvmtraced.conf \- options (see --config)"
  echo ".br"
  echo "/var/lib/jvmtraced/ \- recordings"
  echo "[SEE ALSO]"
  echo "jvmtrace(1); /usr/share/doc/jvmtrace/daemon.md"
} > "$inc"
help2man -N -s 8 -n "the jvmtrace collector daemon" --include "$inc" "$bin/jvmtraced" | gzip -9n > "$out/jvmtraced.8.gz"
