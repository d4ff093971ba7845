#!/usr/bin/env bash
# Builds private OpenJDK 17 images from Debian's openjdk-17 source:
#   patched   -- HotSpot with the jvmtrace USDT probes (usdt/)
#   unpatched -- the same source, configure flags and compiler, no patch:
#                the fair baseline for overhead measurements.
#   fastdebug -- the patched HotSpot built with HotSpot's own asserts on
#                (--with-debug-level=fastdebug), so the tests that run on it
#                have HotSpot check the probe sites (locks, safepoints).
# Each is Debian's runtime (.debs of the same version) with our libjvm.so
# laid over it and its CDS archive regenerated.  Nothing touches the system
# JDK.  Results are cached outside the clone, keyed by what they are built
# from; a cached image is reused, a missing one is built (about 20-25 min a
# variant cold on 2 cores, a few minutes with a warm ccache).
#
# Usage: scripts/build-patched-jdk.sh [--cache DIR] [--variant V[,V...]|both|all]
#                                      [--print] [--jobs N]
#   --variant  patched, unpatched, fastdebug, a comma list of them,
#              both (patched,unpatched: the default) or all
#   --print   print the JAVA_HOMEs (variant=path lines) if built; exit 1 if not
# Environment: JVMTRACE_CACHE (default /var/cache/jvmtrace)
# Output (stdout, last lines): patched=<JAVA_HOME> / unpatched=<JAVA_HOME> / ...
set -euo pipefail

SRC_PKG=openjdk-17
SRC_VERSION=17.0.19+10-1~deb12u2
# Bump when a change to this script changes the bytes of an image (build or
# assembly steps); edits that do not (messages, progress) leave it alone so a
# cached 35-minute build stays valid.  Part of the cache key.
RECIPE=2
BOOT_JDK=/usr/lib/jvm/java-17-openjdk-amd64
CONFIGURE_FLAGS=(--enable-dtrace --with-jvm-variants=server --with-debug-level=release
                 --with-native-debug-symbols=none --enable-headless-only
                 --disable-warnings-as-errors --enable-ccache
                 --with-pcsclite=bundled --with-conf-name=jvmtrace)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
patch_file=$repo/usdt/hotspot/jvmtrace-probes.patch
contract=$repo/usdt/jvmtrace.d

cache=${JVMTRACE_CACHE:-/var/cache/jvmtrace}
variants=(patched unpatched)
print_only=0
jobs=$(nproc)

die() { echo "build-patched-jdk: $*" >&2; exit 1; }
log() { echo "[jdk $(date +%H:%M:%S)] $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache=$2; shift 2 ;;
    --variant)
      case "$2" in
        both) variants=(patched unpatched) ;;
        all) variants=(patched fastdebug unpatched) ;;
        *) IFS=, read -r -a variants <<< "$2"
           for v in "${variants[@]}"; do
             case "$v" in patched|unpatched|fastdebug) ;;
               *) die "--variant takes patched, unpatched, fastdebug (comma-separated), both or all, not '$2'" ;;
             esac
           done ;;
      esac
      shift 2 ;;
    --print) print_only=1; shift ;;
    --jobs) [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--jobs takes a positive number"; jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

# The cache key: everything that decides the bytes of an image.
base_key=$(echo "$SRC_PKG $SRC_VERSION ${CONFIGURE_FLAGS[*]} recipe=$RECIPE" | sha256sum | cut -c1-12)
patched_key=$( { echo "$base_key"; cat "$patch_file" "$contract"; } | sha256sum | cut -c1-12)
# fastdebug: the patched tree configured a second time (its own CONF) with
# the debug level changed.
FASTDEBUG_FLAGS=("${CONFIGURE_FLAGS[@]/--with-debug-level=release/--with-debug-level=fastdebug}")
FASTDEBUG_FLAGS=("${FASTDEBUG_FLAGS[@]/--with-conf-name=jvmtrace/--with-conf-name=fastdebug}")
fastdebug_key=$(echo "$patched_key ${FASTDEBUG_FLAGS[*]}" | sha256sum | cut -c1-12)
key_of() {
  case "$1" in patched) echo "$patched_key" ;; fastdebug) echo "$fastdebug_key" ;; *) echo "$base_key" ;; esac
}
# (make's CONF= matches by substring: neither name may contain the other)
conf_of() { if [ "$1" = fastdebug ]; then echo fastdebug; else echo jvmtrace; fi; }
home_of() { echo "$cache/jdk-$1-$(key_of "$1")/root/usr/lib/jvm/java-17-openjdk-amd64"; }
built() { [ -f "$cache/jdk-$1-$(key_of "$1")/.complete" ]; }

if [ "$print_only" = 1 ]; then
  rc=0
  for v in "${variants[@]}"; do
    if built "$v"; then echo "$v=$(home_of "$v")"
    else echo "$v: not built (would be $cache/jdk-$v-$(key_of "$v"))" >&2; rc=1; fi
  done
  exit $rc
fi

all_built=1
for v in "${variants[@]}"; do built "$v" || all_built=0; done
if [ "$all_built" = 1 ]; then
  for v in "${variants[@]}"; do echo "$v=$(home_of "$v")"; done
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get source/download, a cache under /var/cache)"
"$here/install-deps.sh" --jdk-build
mkdir -p "$cache"
exec 9>"$cache/.build.lock"
flock 9 || die "cannot lock $cache/.build.lock"

# --- 1. Debian source and runtime .debs ----------------------------------
src_dir=$cache/src/openjdk-17-${SRC_VERSION%%-*}
fetch_source() {
  [ -f "$src_dir/.fetched" ] && return
  # (grep without -q: under pipefail an early-exiting grep kills apt-cache
  # with SIGPIPE and the pipeline reads as "not found")
  if ! apt-cache showsrc "$SRC_PKG" 2>/dev/null | grep -x "Version: $SRC_VERSION" >/dev/null; then
    log "adding a deb-src entry for Debian bookworm"
    cat > /etc/apt/sources.list.d/jvmtrace-deb-src.sources <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt-get update -qq || die "apt-get update failed"
  fi
  log "fetching $SRC_PKG=$SRC_VERSION source (about 65 MB)"
  rm -rf "$cache/src" && mkdir -p "$cache/src"
  (cd "$cache/src" && apt-get source -qq "$SRC_PKG=$SRC_VERSION" >"$cache/src/fetch.log" 2>&1) \
    || { tail -n 20 "$cache/src/fetch.log" >&2; die "apt-get source $SRC_PKG=$SRC_VERSION failed"; }
  [ -d "$src_dir/src/hotspot" ] || die "unexpected source layout: no $src_dir/src/hotspot"
  touch "$src_dir/.fetched"
}

debs_dir=$cache/debs/$SRC_VERSION
fetch_debs() {
  [ -f "$debs_dir/.fetched" ] && return
  log "downloading Debian runtime .debs $SRC_VERSION"
  rm -rf "$debs_dir" && mkdir -p "$debs_dir"
  (cd "$debs_dir" && apt-get download -qq "openjdk-17-jre-headless=$SRC_VERSION" \
     "openjdk-17-jdk-headless=$SRC_VERSION" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
  ls "$debs_dir"/openjdk-17-jre-headless_*.deb "$debs_dir"/openjdk-17-jdk-headless_*.deb >/dev/null 2>&1 \
    || die "apt-get download of the $SRC_VERSION runtime .debs failed"
  touch "$debs_dir/.fetched"
}

# --- 2. Build libjvm.so ------------------------------------------------------
# One source tree serves every variant: the patch is applied or reverted in
# place and make rebuilds only what depends on the files it touches.  (Two
# trees would each need a cold build: ccache hashes the precompiled header,
# which differs between tree paths.)  fastdebug is a second configuration
# (build/fastdebug) of the same tree, patched.
tree=$cache/build/src
state=$cache/build/.configured   # base key the tree was made and configured for
applied=$cache/build/.applied    # "unpatched" or "patched <key>"
applied_patch=$cache/build/applied.patch

prepare_tree() {
  [ -f "$state" ] && [ "$(cat "$state")" = "$base_key" ] && return
  log "preparing source tree and configure (log: $cache/build/configure.log)"
  rm -rf "$cache/build" && mkdir -p "$cache/build"
  cp -a "$src_dir" "$tree"
  (cd "$tree" && bash configure "${CONFIGURE_FLAGS[@]}" --with-boot-jdk="$BOOT_JDK" \
      --with-jobs="$jobs" >"$cache/build/configure.log" 2>&1) \
    || { tail -n 30 "$cache/build/configure.log" >&2; die "configure failed (log: $cache/build/configure.log)"; }
  echo unpatched > "$applied"
  echo "$base_key" > "$state"
}

prepare_fastdebug_conf() {
  local fd_state=$cache/build/.configured-fastdebug
  [ -f "$fd_state" ] && [ "$(cat "$fd_state")" = "$base_key" ] && return
  log "configuring the fastdebug build (log: $cache/build/configure-fastdebug.log)"
  (cd "$tree" && bash configure "${FASTDEBUG_FLAGS[@]}" --with-boot-jdk="$BOOT_JDK" \
      --with-jobs="$jobs" >"$cache/build/configure-fastdebug.log" 2>&1) \
    || { tail -n 30 "$cache/build/configure-fastdebug.log" >&2
         die "fastdebug configure failed (log: $cache/build/configure-fastdebug.log)"; }
  echo "$base_key" > "$fd_state"
}

switch_tree_to() {
  local variant=$1 want
  want=unpatched
  [ "$variant" != unpatched ] && want="patched $patched_key"
  [ "$(cat "$applied")" = "$want" ] && return
  if [ "$(cat "$applied")" != unpatched ]; then
    log "reverting the previously applied patch"
    (cd "$tree" && patch -R -p1 --quiet --batch < "$applied_patch") || die "cannot revert $applied_patch in $tree"
    rm -f "$tree/src/hotspot/os/posix/dtrace/jvmtrace.d"
    echo unpatched > "$applied"
  fi
  if [ "$variant" != unpatched ]; then
    log "applying usdt/hotspot/jvmtrace-probes.patch"
    (cd "$tree" && patch -p1 --quiet --batch --dry-run < "$patch_file" >/dev/null) \
      || die "the jvmtrace patch does not apply to $SRC_PKG $SRC_VERSION"
    (cd "$tree" && patch -p1 --quiet --batch < "$patch_file")
    cp "$contract" "$tree/src/hotspot/os/posix/dtrace/jvmtrace.d"
    cp "$patch_file" "$applied_patch"
    echo "$want" > "$applied"
  fi
}

build_libjvm() {
  local variant=$1 conf
  conf=$(conf_of "$variant")
  prepare_tree
  [ "$variant" = fastdebug ] && prepare_fastdebug_conf
  switch_tree_to "$variant"
  log "$variant: make hotspot (log: $cache/build/make-$variant.log)"
  export CCACHE_DIR=$cache/ccache
  ccache -M 8G >/dev/null
  local objs=$tree/build/$conf/hotspot/variant-server/libjvm/objs
  local before
  before=$(date +%s)
  (cd "$tree" && make CONF="$conf" JOBS="$jobs" LOG=warn hotspot >"$cache/build/make-$variant.log" 2>&1) &
  local pid=$! n=0
  while kill -0 $pid 2>/dev/null; do
    sleep 30; n=$((n + 30))
    log "$variant: building, ${n}s, $(find "$objs" -name '*.o' -newermt "@$before" 2>/dev/null | wc -l) objects compiled so far"
  done
  wait $pid || { tail -n 40 "$cache/build/make-$variant.log" >&2; die "$variant: make hotspot failed (log: $cache/build/make-$variant.log)"; }
  libjvm=$tree/build/$conf/support/modules_libs/java.base/server/libjvm.so
  [ -f "$libjvm" ] || die "$variant: make succeeded but $libjvm is missing"
}

# --- 3. Assemble the private JDK --------------------------------------------
assemble() {
  local variant=$1 out tmp home t
  out=$cache/jdk-$variant-$(key_of "$variant")
  tmp=$out.tmp
  log "$variant: assembling $out"
  rm -rf "$tmp" && mkdir -p "$tmp/root"
  for d in "$debs_dir"/openjdk-17-jre-headless_*.deb "$debs_dir"/openjdk-17-jdk-headless_*.deb; do
    dpkg-deb -x "$d" "$tmp/root"
  done
  # Debian's JDK points conf files at /etc; point them at our own copy.
  find "$tmp/root" -type l -lname '/*' | while read -r l; do
    t=$(readlink "$l")
    if [ -e "$tmp/root$t" ] || [ -L "$tmp/root$t" ]; then
      ln -sfn "$(realpath --relative-to="$(dirname "$l")" -m "$tmp/root$t")" "$l"
    fi
  done
  rm -rf "$out"
  mv "$tmp" "$out"      # links are relative: the tree can move
  home=$out/root/usr/lib/jvm/java-17-openjdk-amd64
  install -m 0644 "$libjvm" "$home/lib/server/libjvm.so"
  # The shipped CDS archives belong to Debian's libjvm.so; a mismatched one
  # is silently ignored and startup gets slower, so dump ours -- in the final
  # place, since an archive records the runtime image it was dumped from.
  rm -f "$home/lib/server/classes.jsa" "$home/lib/server/classes_nocoops.jsa"
  "$home/bin/java" -Xshare:dump >"$out/cds.log" 2>&1 || die "$variant: CDS dump failed ($out/cds.log)"
  "$home/bin/java" -XX:-UseCompressedOops -Xshare:dump >>"$out/cds.log" 2>&1 \
    || die "$variant: CDS (no compressed oops) dump failed ($out/cds.log)"
  "$home/bin/java" -Xshare:on -version >/dev/null 2>&1 || die "$variant: the assembled JDK does not start with CDS"
  touch "$out/.complete"
}

fetch_source
fetch_debs
for v in "${variants[@]}"; do
  built "$v" && continue
  start=$(date +%s)
  build_libjvm "$v"
  assemble "$v"
  log "$v: done in $(( $(date +%s) - start ))s"
  # Older images of this variant are stale: keep the disk bounded.
  for old in "$cache"/jdk-"$v"-*; do
    [ "$old" = "$cache/jdk-$v-$(key_of "$v")" ] || rm -rf "$old"
  done
done
for v in "${variants[@]}"; do echo "$v=$(home_of "$v")"; done
