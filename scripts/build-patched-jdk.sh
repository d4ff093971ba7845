#!/usr/bin/env bash
# Builds private OpenJDK images (17, 21 or 25) from Debian's own sources:
#   patched   -- HotSpot with the jvmtrace USDT probes (usdt/)
#   unpatched -- the same source, configure flags and compiler, no patch:
#                the fair baseline for overhead measurements.
#   fastdebug -- the patched HotSpot built with HotSpot's own asserts on
#                (--with-debug-level=fastdebug), so the tests that run on it
#                have HotSpot check the probe sites (locks, safepoints).
#   stock     -- Debian's own runtime of the same version, as Debian ships
#                it (its libjvm.so and CDS archive): no build.  What the
#                tests use wherever a stock HotSpot is needed; "unpatched"
#                is only the benchmarks' baseline of the detached cost
#                (the same compiler and flags as the patched build).
# The built ones are Debian's runtime (.debs of the same version) with our
# libjvm.so laid over it and its CDS archive regenerated.  Nothing touches a system
# JDK.  Results are cached outside the clone, keyed by what they are built
# from; a cached image is reused, a missing one is built.
#
# JDK 17 is Debian 12's own and builds and runs on this machine.  JDK 21 and
# 25 come from Debian 13 (trixie), whose binaries need glibc 2.38: they are
# built and run inside a Debian 13 root made with mmdebstrap (cached too).
# Their bin/java etc. are run through $HOME_FOR_TESTS/bin wrappers that enter
# that root (a private mount namespace: the JVM sees the Debian 13 root, with
# the host's /proc, /dev, /sys, /tmp and the cache), so to jvmtrace they are
# JVMs in a container.
#
# Usage: scripts/build-patched-jdk.sh [--jdk 17|21|25] [--cache DIR]
#                                      [--variant V[,V...]|both|all|tests]
#                                      [--print] [--jobs N] [--deb]
#   --jdk      the release line (default 17)
#   --variant  patched, unpatched, fastdebug, stock, a comma list of them,
#              both (patched,unpatched: the default), all (patched,
#              fastdebug,unpatched) or tests (patched,fastdebug,stock:
#              what scripts/test.sh runs on)
#   --print   print the JAVA_HOMEs (variant=path lines) if built; exit 1 if not
#   --print-root  print the Debian 13 root 21 and 25 run in, if made
#   --deb     also make a Debian package of the patched JDK (built first if
#             missing), jvmtrace-jdk-N installing into
#             /usr/lib/jvm/jvmtrace-N-patched beside the system's JDK; prints
#             deb=<path> last.  Cached under the cache's deb/ by the image's
#             key (a cached one is printed even if its image has gone).  17's is for Debian 12; 21's and 25's are for Debian 13
#             (made of its runtime: they depend on its glibc, 2.38 or later).
# Environment: JVMTRACE_CACHE (default /var/cache/jvmtrace)
# Output (stdout, last lines): patched=<JAVA_HOME> / unpatched=<JAVA_HOME> / ...
# Cold on 2 cores: JDK 17 about 20-25 min a variant; 21 or 25 add the Debian
# 13 root once (under a minute) and take about 20 min a variant.
set -euo pipefail

# Bump when a change to this script changes the bytes of an image (build or
# assembly steps); edits that do not (messages, progress) leave it alone so a
# cached 35-minute build stays valid.  Part of the cache key.
RECIPE=2
CONFIGURE_FLAGS=(--enable-dtrace --with-jvm-variants=server --with-debug-level=release
                 --with-native-debug-symbols=none --enable-headless-only
                 --disable-warnings-as-errors --enable-ccache
                 --with-pcsclite=bundled --with-conf-name=jvmtrace)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
contract=$repo/usdt/jvmtrace.d
abi=$repo/usdt/jvmtrace_abi.h           # the contract's values: utilities/jvmtraceAbi.h in the tree
shared_dir=$repo/usdt/hotspot/shared     # new files, the same for every release

cache=${JVMTRACE_CACHE:-/var/cache/jvmtrace}
variants=(patched unpatched)
jdk=17
print_only=0
make_deb=0
jobs=$(nproc)

die() { echo "build-patched-jdk: $*" >&2; exit 1; }
log() { echo "[jdk $(date +%H:%M:%S)] $*" >&2; }

while [ $# -gt 0 ]; do
  case "$1" in
    --cache) cache=$2; shift 2 ;;
    --jdk) case "$2" in 17|21|25) jdk=$2 ;; *) die "--jdk takes 17, 21 or 25, not '$2'" ;; esac; shift 2 ;;
    --variant)
      case "$2" in
        both) variants=(patched unpatched) ;;
        all) variants=(patched fastdebug unpatched) ;;
        tests) variants=(patched fastdebug stock) ;;
        *) IFS=, read -r -a variants <<< "$2"
           for v in "${variants[@]}"; do
             case "$v" in patched|unpatched|fastdebug|stock) ;;
               *) die "--variant takes patched, unpatched, fastdebug, stock (comma-separated), both, all or tests, not '$2'" ;;
             esac
           done ;;
      esac
      shift 2 ;;
    --print) print_only=1; shift ;;
    --print-root) print_only=root; shift ;;
    --deb) make_deb=1; shift ;;
    --jobs) [[ "$2" =~ ^[1-9][0-9]*$ ]] || die "--jobs takes a positive number"; jobs=$2; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

if [ "$make_deb" = 1 ]; then
  [ "$print_only" = 0 ] || die "--deb and --print exclude each other"
  variants=(patched)
fi

# Per release line: Debian's source package and where it is built and run.
# 21 and 25 are fetched from Debian's pool by exact version (trixie's index
# moves on and drops them) and checked against these SHA-256 sums, taken when
# the port was made: the files are not signed once out of the index.
case "$jdk" in
  17) SRC_PKG=openjdk-17 SRC_VERSION=17.0.19+10-1~deb12u2 IN_ROOT=0
      BOOT_JDK=/usr/lib/jvm/java-17-openjdk-amd64 ;;
  21) SRC_PKG=openjdk-21 SRC_VERSION=21.0.12.1+1-1~deb13u1 IN_ROOT=1
      BOOT_JDK=/usr/lib/jvm/java-21-openjdk-amd64
      POOL_SHA256=(
        "openjdk-21_21.0.12.1+1.orig.tar.xz ec270145b9c8870e6f0263597efefc6e2c90d99dbe41135b3d8fb8b887499aa5"
        "openjdk-21_21.0.12.1+1-1~deb13u1.debian.tar.xz b81c5aee89347faf1777b44a487d8ca3e323f5253be6da56b574dbba7cce98a5"
        "openjdk-21-jre-headless_21.0.12.1+1-1~deb13u1_amd64.deb e95f36193e45464ac758e5436f940bf3eaecc77de67188275a42104f58aa7674"
        "openjdk-21-jdk-headless_21.0.12.1+1-1~deb13u1_amd64.deb f3abafb6c644b03df042824e707cd211ea33254761d7f7b75be3f8dc0df97c7a") ;;
  25) SRC_PKG=openjdk-25 SRC_VERSION=25.0.3+9-2~deb13u1 IN_ROOT=1
      BOOT_JDK=/usr/lib/jvm/java-25-openjdk-amd64
      POOL_SHA256=(
        "openjdk-25_25.0.3+9.orig.tar.xz 2dd6c441b49705480db1ebfcd03f43d5dcb7f1d4290e98c1fa6eeefae50cfa07"
        "openjdk-25_25.0.3+9-2~deb13u1.debian.tar.xz a28f9b6c00a05e8de5c040a84e1826d4e1930ba7d22f745269535d20e334d664"
        "openjdk-25-jre-headless_25.0.3+9-2~deb13u1_amd64.deb 26a9ece9acb18eed8ded435fcb7cee478a811c2472cf3aaf82432bd58c6ece0b"
        "openjdk-25-jdk-headless_25.0.3+9-2~deb13u1_amd64.deb ca84d98b0ab085ac367bfc28971f25d6cf9434f4fc7fe1bf81378b993236d4e1") ;;
esac
patch_file=$repo/usdt/hotspot/jdk$jdk.patch
jdk_dir=java-$jdk-openjdk-amd64
# 17 keeps its cache names from before 21 and 25 (a cached image stays valid).
if [ "$jdk" = 17 ]; then tag=""; else tag=$jdk; fi

# The Debian 13 root 21 and 25 are built and run in: its key is what is in it.
ROOT_RECIPE=1
ROOT_PACKAGES=(g++ make autoconf zip unzip file ccache ca-certificates systemtap-sdt-dev
               libcups2-dev libasound2-dev libfontconfig-dev libfreetype-dev libx11-dev libxext-dev
               libxrender-dev libxrandr-dev libxtst-dev libxt-dev)
root_key=$(echo "trixie ${ROOT_PACKAGES[*]} recipe=$ROOT_RECIPE" | sha256sum | cut -c1-12)
trixie_root=$cache/trixie-root-$root_key

# The cache key: everything that decides the bytes of an image.
base_key=$(echo "$SRC_PKG $SRC_VERSION ${CONFIGURE_FLAGS[*]} recipe=$RECIPE" | sha256sum | cut -c1-12)
[ "$IN_ROOT" = 1 ] && base_key=$(echo "$base_key root=$root_key" | sha256sum | cut -c1-12)
# The contract counts without its comments (its documentation: dtrace -h
# makes the same header of it whatever they say), so rewording a probe's
# description costs no rebuild.
patched_key=$( { echo "$base_key"; cat "$patch_file" 2>/dev/null; perl -0777 -pe 's{/\*.*?\*/}{}gs' "$contract"; \
                 cat "$abi" 2>/dev/null; find "$shared_dir" -type f | LC_ALL=C sort | xargs cat; } \
               | sha256sum | cut -c1-12)
# fastdebug: the patched tree configured a second time (its own CONF) with
# the debug level changed.
FASTDEBUG_FLAGS=("${CONFIGURE_FLAGS[@]/--with-debug-level=release/--with-debug-level=fastdebug}")
FASTDEBUG_FLAGS=("${FASTDEBUG_FLAGS[@]/--with-conf-name=jvmtrace/--with-conf-name=fastdebug}")
fastdebug_key=$(echo "$patched_key ${FASTDEBUG_FLAGS[*]}" | sha256sum | cut -c1-12)
# stock: Debian's runtime as shipped (and, for 21/25, the root it runs in).
stock_key=$(echo "$SRC_PKG $SRC_VERSION stock recipe=$RECIPE" | sha256sum | cut -c1-12)
[ "$IN_ROOT" = 1 ] && stock_key=$(echo "$stock_key root=$root_key" | sha256sum | cut -c1-12)
key_of() {
  case "$1" in
    patched) echo "$patched_key" ;; fastdebug) echo "$fastdebug_key" ;; stock) echo "$stock_key" ;;
    *) echo "$base_key" ;;
  esac
}
# (make's CONF= matches by substring: neither name may contain the other)
conf_of() { if [ "$1" = fastdebug ]; then echo fastdebug; else echo jvmtrace; fi; }
out_of() { echo "$cache/jdk$tag-$1-$(key_of "$1")"; }
# 21/25: the wrappers that run the image in the Debian 13 root (see above).
home_of() { if [ "$IN_ROOT" = 1 ]; then echo "$(out_of "$1")/host"; else echo "$(out_of "$1")/root/usr/lib/jvm/$jdk_dir"; fi; }
built() { [ -f "$(out_of "$1")/.complete" ]; }

# How a command enters the root, as a container runtime would: in a private
# mount namespace (it dies with the command: nothing stays mounted on the
# host), the root bind-mounted onto itself and made the namespace's root with
# pivot_root, with the host's /proc, /dev, /sys, /tmp (working directories,
# perf maps) and the cache (sources, images) mounted in it.  pivot_root, not
# chroot: /proc/PID/maps then names files from the root the process sees, so
# tools that read them through /proc/PID/root (bcc, under bpftrace -p) find
# them.  The same lines go into the images' bin/ wrappers.
ROOT_ENTER='r=$1 c=$2 d=$3; shift 3
  mkdir -p "$r/.host" && mount --bind "$r" "$r" && mount -t proc proc "$r/proc" &&
  mount --rbind /dev "$r/dev" && mount --rbind /sys "$r/sys" && mount --rbind /tmp "$r/tmp" &&
  mount --bind "$c" "$r$c" && cd "$r" && pivot_root . .host && umount -l /.host || exit 125
  cd "$d" 2>/dev/null || cd /
  exec "$@"'

# 21/25: bin/ wrappers beside the image that run its tools in the root, and
# lib/ pointing at the image's, so a test or benchmark uses HOME/bin/java and
# HOME/lib/server/libjvm.so as with 17.
write_host_wrappers() {
  local out=$1 home=$2 tool q w
  mkdir -p "$out/host/bin"
  ln -sfn "../root/usr/lib/jvm/$jdk_dir/lib" "$out/host/lib"
  q=$(printf '%q' "$ROOT_ENTER")
  for tool in "$home"/bin/*; do
    tool=$(basename "$tool")
    w=$(cat <<EOF
#!/bin/bash
# $tool of JDK $jdk ($(basename "$out")), run inside the Debian 13 root it needs
# (glibc 2.38 or later) in a private mount namespace; written by
# scripts/build-patched-jdk.sh.  The process keeps this PID (exec all along).
exec unshare --mount --propagation private -- /bin/sh -c $q \\
  jvmtrace-root "$trixie_root" "$cache" "\$PWD" "$home/bin/$tool" "\$@"
EOF
)
    # (rewritten only when this script's way of entering the root changed)
    if [ "$(cat "$out/host/bin/$tool" 2>/dev/null)" != "$w" ]; then
      printf '%s\n' "$w" > "$out/host/bin/$tool.tmp" && chmod 0755 "$out/host/bin/$tool.tmp" &&
        mv "$out/host/bin/$tool.tmp" "$out/host/bin/$tool"
    fi
  done
}

# The wrappers are the script's, not the build's: brought up to date for
# every built image of this line whenever the script runs.
refresh_wrappers() {
  local v
  for v in patched unpatched fastdebug stock; do
    if built "$v"; then write_host_wrappers "$(out_of "$v")" "$(out_of "$v")/root/usr/lib/jvm/$jdk_dir"; fi
  done
}


# The patched image as a Debian package: its JAVA_HOME under
# /usr/lib/jvm/jvmtrace-N-patched, self-contained (the image's links into its
# own /etc and /usr/share become files; cacerts stays the system's), with
# Debian's runtime's dependencies.  Registers no alternatives: the system's
# java stays the system's.  Prints deb=PATH.  The package is for the Debian
# release the runtime is from (17: Debian 12; 21, 25: Debian 13, whose glibc
# its Depends name, so apt refuses it on Debian 12 rather than installing a
# JVM that cannot start).
deb_release() { if [ "$IN_ROOT" = 1 ]; then echo "Debian 13 (trixie)"; else echo "Debian 12 (bookworm)"; fi; }
# The package's own recipe (its maintainer script, control, layout): bump it
# when a change here changes the package but not the image, so that the
# cached .deb is remade and apt sees a new version.  (1 had no suffix.)
DEB_RECIPE=2
deb_version() { echo "${SRC_VERSION}+jvmtrace$(key_of patched).$DEB_RECIPE"; }
deb_of() { echo "$cache/deb/jvmtrace-jdk-${jdk}_$(deb_version)_amd64.deb"; }
build_deb() {
  local home out deb stage dest name=jvmtrace-$jdk-patched l r depends
  out=$(out_of patched)
  home=$(realpath "$out/root/usr/lib/jvm/$jdk_dir")
  deb=$(deb_of)
  if [ ! -f "$deb" ]; then
    log "packaging $home as $(basename "$deb")"
    umask 022
    stage=$(mktemp -d "$cache/deb-stage.XXXXXX")
    trap 'rm -rf "$stage" "$deb.part"' EXIT
    chmod 0755 "$stage"
    dest=$stage/usr/lib/jvm/$name
    mkdir -p "$dest" "$stage/DEBIAN" "$stage/usr/share/doc/jvmtrace-jdk-$jdk"
    cp -a "$home/." "$dest/"
    # Links that leave the JAVA_HOME are resolved inside the image's root,
    # never on the host: a target in the image becomes a copy of the file;
    # docs (a directory) and src.zip (not in the runtime packages) go.
    local img t
    img=$(realpath "$out/root")
    find "$dest" -type l | while read -r l; do
      t=$(readlink "$l")
      [ "$t" = /etc/ssl/certs/java/cacerts ] && continue   # the system's CA store (ca-certificates-java)
      case "$t" in
        /*) r=$(cd "$img" && realpath -m "./$t") ;;
        *) r=$(realpath -m "$home/$(dirname "${l#"$dest"/}")/$t") ;;
      esac
      case "$r" in
        "$home"/*) ;;                                     # inside the JAVA_HOME: stays a link
        "$img"/*)
          rm "$l"
          if [ -f "$r" ] && [ ! -L "$r" ]; then cp "$r" "$l"
          elif [ -d "$r" ] || [ ! -e "$r" ]; then log "  left out: ${l#"$dest"/} -> $t"
          else die "${l#"$dest"/} -> $t: neither a file nor a directory in the image"
          fi ;;
        *) die "${l#"$dest"/} -> $t leaves the image's root: refusing to package it" ;;
      esac
    done
    printf '%s\n' \
      "OpenJDK $SRC_VERSION (Debian's source and runtime) with a HotSpot built with the" \
      "jvmtrace USDT probes (provider jvmtrace) by jvmtrace's scripts/build-patched-jdk.sh," \
      "image key $(key_of patched), for $(deb_release).  Run it as" \
      "/usr/lib/jvm/$name/bin/java; trace it with jvmtrace (package jvmtrace)." \
      "OpenJDK's licences: /usr/lib/jvm/$name/legal/." \
      > "$stage/usr/share/doc/jvmtrace-jdk-$jdk/README"
    depends=$(dpkg-deb -f "$cache/debs/$SRC_VERSION/$SRC_PKG-jre-headless_${SRC_VERSION}_amd64.deb" Depends) \
      || die "Debian's runtime .deb is not in the cache (its Depends are the package's): rebuild the image"
    printf '%s\n' \
      "Package: jvmtrace-jdk-$jdk" \
      "Version: $(deb_version)" \
      "Architecture: amd64" \
      "Maintainer: jvmtrace developers <jvmtrace@localhost>" \
      "Depends: $depends" \
      "Section: java" \
      "Priority: optional" \
      "Installed-Size: $(du -sk "$stage/usr" | cut -f1)" \
      "Description: OpenJDK $jdk with the jvmtrace USDT probes in HotSpot" \
      " Debian's OpenJDK $SRC_VERSION with its HotSpot (libjvm.so) built from the" \
      " same source with the jvmtrace probes: TLAB refills, allocation slow paths," \
      " GC and pause start/end, PLABs, for jvmtrace and bpftrace.  Detached, each" \
      " probe site is a 5-byte nop." \
      " ." \
      " Installs into /usr/lib/jvm/$name, beside the system's JDK, and" \
      " registers no alternatives: run /usr/lib/jvm/$name/bin/java." \
      " Built for $(deb_release), from its openjdk-$jdk packages." \
      > "$stage/DEBIAN/control"
    # (the Java CA store, where no Debian JRE has made it: packaging/jdk/postinst.in)
    sed -e "s|@LINE@|$jdk|g" -e "s|@HOME@|/usr/lib/jvm/$name|g" "$repo/packaging/jdk/postinst.in" \
      > "$stage/DEBIAN/postinst"
    chmod 0755 "$stage/DEBIAN/postinst"
    mkdir -p "$cache/deb"
    dpkg-deb --root-owner-group -Zgzip --build "$stage" "$deb.part" >/dev/null
    mv "$deb.part" "$deb"
    rm -rf "$stage"
    trap - EXIT
    for l in "$cache/deb/jvmtrace-jdk-${jdk}"_*.deb; do [ "$l" = "$deb" ] || rm -f "$l"; done
  fi
  echo "deb=$deb"
}

if [ "$print_only" = root ]; then
  [ -f "$trixie_root/.complete" ] || { echo "the Debian 13 root is not made (would be $trixie_root)" >&2; exit 1; }
  echo "$trixie_root"
  exit 0
fi
if [ "$print_only" = 1 ]; then
  [ "$IN_ROOT" = 1 ] && refresh_wrappers
  rc=0
  for v in "${variants[@]}"; do
    if built "$v"; then echo "$v=$(home_of "$v")"
    else echo "$v: JDK $jdk not built (would be $(out_of "$v"))" >&2; rc=1; fi
  done
  exit $rc
fi

# The .deb of this image key and packaging recipe is what --deb would make
# again: served from the cache even when the image has gone (a build of
# another patch replaces a line's image), with no HotSpot build for it.
if [ "$make_deb" = 1 ] && [ -f "$(deb_of)" ]; then
  echo "deb=$(deb_of)"
  exit 0
fi

all_built=1
for v in "${variants[@]}"; do built "$v" || all_built=0; done
if [ "$all_built" = 1 ]; then
  [ "$IN_ROOT" = 1 ] && refresh_wrappers
  for v in "${variants[@]}"; do echo "$v=$(home_of "$v")"; done
  if [ "$make_deb" = 1 ]; then build_deb; fi
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "must run as root (apt-get source/download, a cache under /var/cache)"
"$here/install-deps.sh" --jdk-build
mkdir -p "$cache"
# Only stock images to make (Debian's runtime unpacked, in a root that
# exists already): no compiler, no source, and a lock of their own, so they
# need not wait an hour for a HotSpot build of another variant.
need_build=0
for v in "${variants[@]}"; do built "$v" || [ "$v" = stock ] || need_build=1; done
if [ "$need_build" = 0 ] && { [ "$IN_ROOT" = 0 ] || [ -f "$trixie_root/.complete" ]; }; then
  exec 9>"$cache/.stock.lock"
  flock 9 || die "cannot lock $cache/.stock.lock"
else
  # One build at a time per release line (its tree is switched between
  # variants in place); lines build side by side (ccache takes care of
  # itself).
  need_build=1
  exec 9>"$cache/.build-$jdk.lock"
  flock 9 || die "cannot lock $cache/.build-$jdk.lock"
fi

# --- 0. The Debian 13 root (21, 25) ------------------------------------------
# run_in_root DIR CMD...: CMD in the root, working directory DIR.
run_in_root() {
  local dir=$1; shift
  unshare --mount --propagation private -- /bin/sh -c "$ROOT_ENTER" jvmtrace-root "$trixie_root" "$cache" "$dir" "$@"
}

ensure_root() {
  [ -f "$trixie_root/.complete" ] && return
  # 21 and 25 share the root: one makes it, the other waits.
  exec 8>"$cache/.root.lock"
  flock 8 || die "cannot lock $cache/.root.lock"
  [ -f "$trixie_root/.complete" ] && return
  log "making the Debian 13 root $trixie_root (mmdebstrap; about 5 min, 600 MB; log: $cache/trixie-root.log)"
  rm -rf "$trixie_root" "$trixie_root.tmp"
  mmdebstrap --variant=minbase --include="$(IFS=,; echo "${ROOT_PACKAGES[*]}")" \
      trixie "$trixie_root.tmp" \
      "deb http://deb.debian.org/debian trixie main" \
      "deb http://deb.debian.org/debian trixie-updates main" \
      "deb http://deb.debian.org/debian-security trixie-security main" \
      >"$cache/trixie-root.log" 2>&1 \
    || { tail -n 30 "$cache/trixie-root.log" >&2; die "mmdebstrap of the Debian 13 root failed (log: $cache/trixie-root.log)"; }
  mkdir -p "$trixie_root.tmp$cache"
  mv "$trixie_root.tmp" "$trixie_root"
  touch "$trixie_root/.complete"
  for old in "$cache"/trixie-root-*; do [ "$old" = "$trixie_root" ] || rm -rf "$old"; done
}

# The boot JDK of 21/25 is that release's own Debian runtime, installed in the
# root from the .debs fetched below (apt pulls their libraries from trixie).
ensure_boot_jdk() {
  [ -x "$trixie_root$BOOT_JDK/bin/javac" ] && return
  log "installing $SRC_PKG $SRC_VERSION into the Debian 13 root as the boot JDK"
  # (mmdebstrap leaves no package lists behind)
  run_in_root / apt-get update -qq >"$cache/boot-jdk-$jdk.log" 2>&1 \
    || { tail -n 20 "$cache/boot-jdk-$jdk.log" >&2; die "apt-get update in the Debian 13 root failed (log: $cache/boot-jdk-$jdk.log)"; }
  run_in_root / env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "$debs_dir/$SRC_PKG-jre-headless_${SRC_VERSION}_amd64.deb" \
      "$debs_dir/$SRC_PKG-jdk-headless_${SRC_VERSION}_amd64.deb" >>"$cache/boot-jdk-$jdk.log" 2>&1 \
    || { tail -n 20 "$cache/boot-jdk-$jdk.log" >&2; die "installing the boot JDK $jdk in the root failed (log: $cache/boot-jdk-$jdk.log)"; }
}

# run DIR CMD...: in the build's world (the host for 17, the root for 21/25).
run() {
  local dir=$1; shift
  if [ "$IN_ROOT" = 1 ]; then run_in_root "$dir" "$@"; else (cd "$dir" && "$@"); fi
}

# --- 1. Debian source and runtime .debs ----------------------------------
src_dir=$cache/src/$SRC_PKG-${SRC_VERSION%%-*}
debs_dir=$cache/debs/$SRC_VERSION

pool_fetch() {   # name sha256 dir: a file of Debian's pool, checked
  local name=$1 sum=$2 dir=$3 url
  if [ -f "$dir/$name" ] && echo "$sum  $dir/$name" | sha256sum -c --quiet >/dev/null 2>&1; then return; fi
  url="http://deb.debian.org/debian/pool/main/o/$SRC_PKG/$name"
  log "downloading $url"
  mkdir -p "$dir"
  curl -sfL --retry 3 -o "$dir/$name.part" "$url" || die "download failed: $url"
  echo "$sum  $dir/$name.part" | sha256sum -c --quiet >/dev/null 2>&1 \
    || { rm -f "$dir/$name.part"; die "$name does not have the SHA-256 this script pins ($sum): not the file the port was made on"; }
  mv "$dir/$name.part" "$dir/$name"
}

fetch_source() {
  [ -f "$src_dir/.fetched" ] && return
  if [ "$IN_ROOT" = 1 ]; then
    local e name orig="" deb_tar="" p
    for e in "${POOL_SHA256[@]}"; do
      name=${e% *}
      case "$name" in
        *.orig.tar.xz) pool_fetch "$name" "${e#* }" "$cache/src/dl"; orig=$cache/src/dl/$name ;;
        *.debian.tar.xz) pool_fetch "$name" "${e#* }" "$cache/src/dl"; deb_tar=$cache/src/dl/$name ;;
      esac
    done
    log "unpacking $SRC_PKG $SRC_VERSION and applying Debian's patches (as dpkg-source would)"
    rm -rf "$src_dir" "$src_dir.tmp" && mkdir -p "$src_dir.tmp"
    tar xJf "$orig" -C "$src_dir.tmp" --strip-components=1 || die "cannot unpack $orig"
    tar xJf "$deb_tar" -C "$src_dir.tmp" || die "cannot unpack $deb_tar"
    : > "$cache/src/unpack-$jdk.log"
    while read -r p _; do
      case "$p" in ''|'#'*) continue ;; esac
      patch -d "$src_dir.tmp" -p1 --forward --batch < "$src_dir.tmp/debian/patches/$p" \
        >>"$cache/src/unpack-$jdk.log" 2>&1 || die "Debian's patch $p does not apply (log: $cache/src/unpack-$jdk.log)"
    done < "$src_dir.tmp/debian/patches/series"
    mv "$src_dir.tmp" "$src_dir"
  else
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
    rm -rf "$src_dir" && mkdir -p "$cache/src"
    (cd "$cache/src" && apt-get source -qq "$SRC_PKG=$SRC_VERSION" >"$cache/src/fetch.log" 2>&1) \
      || { tail -n 20 "$cache/src/fetch.log" >&2; die "apt-get source $SRC_PKG=$SRC_VERSION failed"; }
  fi
  [ -d "$src_dir/src/hotspot" ] || die "unexpected source layout: no $src_dir/src/hotspot"
  touch "$src_dir/.fetched"
}

fetch_debs() {
  [ -f "$debs_dir/.fetched" ] && return
  log "downloading Debian runtime .debs $SRC_VERSION"
  if [ "$IN_ROOT" = 1 ]; then
    local e
    for e in "${POOL_SHA256[@]}"; do
      case "${e% *}" in *.deb) pool_fetch "${e% *}" "${e#* }" "$debs_dir" ;; esac
    done
  else
    rm -rf "$debs_dir" && mkdir -p "$debs_dir"
    (cd "$debs_dir" && apt-get download -qq "$SRC_PKG-jre-headless=$SRC_VERSION" \
       "$SRC_PKG-jdk-headless=$SRC_VERSION" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) || true
  fi
  ls "$debs_dir/$SRC_PKG"-jre-headless_*.deb "$debs_dir/$SRC_PKG"-jdk-headless_*.deb >/dev/null 2>&1 \
    || die "download of the $SRC_VERSION runtime .debs failed"
  touch "$debs_dir/.fetched"
}

# --- 2. Build libjvm.so ------------------------------------------------------
# One source tree serves every variant of a release: the patch is applied or
# reverted in place and make rebuilds only what depends on the files it
# touches.  (Two trees would each need a cold build: ccache hashes the
# precompiled header, which differs between tree paths.)  fastdebug is a
# second configuration (build/fastdebug) of the same tree, patched.
build_dir=$cache/build$tag
tree=$build_dir/src
state=$build_dir/.configured   # base key the tree was made and configured for
applied=$build_dir/.applied    # "unpatched" or "patched <key>"
applied_patch=$build_dir/applied.patch
applied_shared=$build_dir/applied.shared   # the shared files put in the tree

prepare_tree() {
  [ -f "$state" ] && [ "$(cat "$state")" = "$base_key" ] && return
  log "preparing source tree and configure (log: $build_dir/configure.log)"
  rm -rf "$build_dir" && mkdir -p "$build_dir"
  cp -a "$src_dir" "$tree"
  run "$tree" bash configure "${CONFIGURE_FLAGS[@]}" --with-boot-jdk="$BOOT_JDK" \
      --with-jobs="$jobs" >"$build_dir/configure.log" 2>&1 \
    || { tail -n 30 "$build_dir/configure.log" >&2; die "configure failed (log: $build_dir/configure.log)"; }
  echo unpatched > "$applied"
  echo "$base_key" > "$state"
}

prepare_fastdebug_conf() {
  local fd_state=$build_dir/.configured-fastdebug
  [ -f "$fd_state" ] && [ "$(cat "$fd_state")" = "$base_key" ] && return
  log "configuring the fastdebug build (log: $build_dir/configure-fastdebug.log)"
  run "$tree" bash configure "${FASTDEBUG_FLAGS[@]}" --with-boot-jdk="$BOOT_JDK" \
      --with-jobs="$jobs" >"$build_dir/configure-fastdebug.log" 2>&1 \
    || { tail -n 30 "$build_dir/configure-fastdebug.log" >&2
         die "fastdebug configure failed (log: $build_dir/configure-fastdebug.log)"; }
  echo "$base_key" > "$fd_state"
}

switch_tree_to() {
  local variant=$1 want f
  want=unpatched
  [ "$variant" != unpatched ] && want="patched $patched_key"
  [ "$(cat "$applied")" = "$want" ] && return
  if [ "$(cat "$applied")" != unpatched ]; then
    log "reverting the previously applied patch"
    (cd "$tree" && patch -R -p1 --quiet --batch < "$applied_patch") || die "cannot revert $applied_patch in $tree"
    rm -f "$tree/src/hotspot/os/posix/dtrace/jvmtrace.d"
    if [ -f "$applied_shared" ]; then
      while read -r f; do rm -f "$tree/src/hotspot/share/$f"; done < "$applied_shared"
    fi
    echo unpatched > "$applied"
  fi
  if [ "$variant" != unpatched ]; then
    [ -f "$patch_file" ] || die "there is no patch for JDK $jdk ($patch_file)"
    log "applying usdt/hotspot/jdk$jdk.patch, usdt/hotspot/shared/ and usdt/jvmtrace_abi.h"
    # --forward: a hunk that looks already applied fails instead of being
    # silently reversed (--batch alone would reverse it).
    (cd "$tree" && patch -p1 --forward --quiet --batch --dry-run < "$patch_file" >/dev/null) \
      || die "usdt/hotspot/jdk$jdk.patch does not apply to $SRC_PKG $SRC_VERSION"
    (cd "$tree" && patch -p1 --forward --quiet --batch < "$patch_file")
    (cd "$shared_dir" && find . -type f | sed 's#^\./##' | LC_ALL=C sort) > "$applied_shared"
    while read -r f; do
      install -D -m 0644 "$shared_dir/$f" "$tree/src/hotspot/share/$f"
    done < "$applied_shared"
    install -m 0644 "$abi" "$tree/src/hotspot/share/utilities/jvmtraceAbi.h"
    echo utilities/jvmtraceAbi.h >> "$applied_shared"
    # The line the shared code is built for: it picks headers and hooks by
    # this, not by guessing from which headers exist.
    printf '%s\n' "/* Written by jvmtrace's scripts/build-patched-jdk.sh. */" \
      "#ifndef SHARE_UTILITIES_JVMTRACERELEASE_HPP" "#define SHARE_UTILITIES_JVMTRACERELEASE_HPP" \
      "#define JVMTRACE_JDK $jdk" "#endif" > "$tree/src/hotspot/share/utilities/jvmtraceRelease.hpp"
    echo utilities/jvmtraceRelease.hpp >> "$applied_shared"
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
  log "JDK $jdk $variant: make hotspot (log: $build_dir/make-$variant.log)"
  export CCACHE_DIR=$cache/ccache
  ccache -M 12G >/dev/null
  local objs=$tree/build/$conf/hotspot/variant-server/libjvm/objs
  local before unfinished=$build_dir/.unfinished-$conf
  # A build killed mid-compile (a session or CI stopped) can leave truncated
  # object files newer than their sources: make would take them as built and
  # the link fails on undefined symbols.  Objects of an unfinished build are
  # thrown away; ccache only stores whole results, so recompiling them is
  # mostly cache hits.
  if [ -e "$unfinished" ]; then
    log "JDK $jdk $variant: the last build here did not finish; discarding its objects"
    rm -rf "$objs" "$tree/build/$conf/support/modules_libs/java.base/server"
  fi
  touch "$unfinished"
  before=$(date +%s)
  run "$tree" env CCACHE_DIR="$CCACHE_DIR" make CONF="$conf" JOBS="$jobs" LOG=warn hotspot \
    >"$build_dir/make-$variant.log" 2>&1 &
  local pid=$! n=0
  while kill -0 $pid 2>/dev/null; do
    sleep 30; n=$((n + 30))
    log "JDK $jdk $variant: building, ${n}s, $(find "$objs" -name '*.o' -newermt "@$before" 2>/dev/null | wc -l) objects compiled so far"
  done
  wait $pid || { tail -n 40 "$build_dir/make-$variant.log" >&2; die "JDK $jdk $variant: make hotspot failed (log: $build_dir/make-$variant.log)"; }
  rm -f "$unfinished"
  libjvm=$tree/build/$conf/support/modules_libs/java.base/server/libjvm.so
  [ -f "$libjvm" ] || die "$variant: make succeeded but $libjvm is missing"
}

# --- 3. Assemble the private JDK --------------------------------------------
assemble() {
  local variant=$1 out tmp home t
  out=$(out_of "$variant")
  tmp=$out.tmp
  log "JDK $jdk $variant: assembling $out"
  rm -rf "$tmp" && mkdir -p "$tmp/root"
  for d in "$debs_dir/$SRC_PKG"-jre-headless_*.deb "$debs_dir/$SRC_PKG"-jdk-headless_*.deb; do
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
  home=$out/root/usr/lib/jvm/$jdk_dir
  if [ "$IN_ROOT" = 1 ]; then write_host_wrappers "$out" "$home"; fi
  if [ "$variant" = stock ]; then   # Debian's own libjvm.so and CDS archives, as shipped
    run / "$home/bin/java" -Xshare:on -version >/dev/null 2>&1 || die "stock: Debian's runtime does not start with its CDS archive"
    touch "$out/.complete"
    return
  fi
  install -m 0644 "$libjvm" "$home/lib/server/libjvm.so"
  # The shipped CDS archives belong to Debian's libjvm.so; a mismatched one
  # is silently ignored and startup gets slower, so dump ours -- in the final
  # place, since an archive records the runtime image it was dumped from.
  rm -f "$home"/lib/server/classes*.jsa
  run / "$home/bin/java" -Xshare:dump >"$out/cds.log" 2>&1 || die "$variant: CDS dump failed ($out/cds.log)"
  run / "$home/bin/java" -XX:-UseCompressedOops -Xshare:dump >>"$out/cds.log" 2>&1 \
    || die "$variant: CDS (no compressed oops) dump failed ($out/cds.log)"
  run / "$home/bin/java" -Xshare:on -version >/dev/null 2>&1 || die "$variant: the assembled JDK does not start with CDS"
  touch "$out/.complete"
}

if [ "$IN_ROOT" = 1 ]; then
  command -v mmdebstrap >/dev/null || die "mmdebstrap is missing (scripts/install-deps.sh --jdk-build installs it)"
  ensure_root
fi
[ "$need_build" = 1 ] && fetch_source
fetch_debs
if [ "$IN_ROOT" = 1 ] && [ "$need_build" = 1 ]; then ensure_boot_jdk; fi
for v in "${variants[@]}"; do
  built "$v" && continue
  start=$(date +%s)
  [ "$v" = stock ] || build_libjvm "$v"
  assemble "$v"
  log "JDK $jdk $v: done in $(( $(date +%s) - start ))s"
  # Older images of this variant are stale: keep the disk bounded (unless
  # JVMTRACE_KEEP_IMAGES=1: a branch's images beside the main line's).
  if [ "${JVMTRACE_KEEP_IMAGES:-0}" != 1 ]; then
    for old in "$cache/jdk$tag-$v"-*; do
      [ "$old" = "$(out_of "$v")" ] || rm -rf "$old"
    done
  fi
done
for v in "${variants[@]}"; do echo "$v=$(home_of "$v")"; done
if [ "$make_deb" = 1 ]; then build_deb; fi
