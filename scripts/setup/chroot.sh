#!/usr/bin/env bash
# Build a Debian chroot once into the tidemark cache directory, for server binaries that need a
# newer glibc than the host's (sid / experimental packages on a bookworm host).
#
#   chroot.sh --name NAME [--suite sid] [--extra-suite experimental] [--target-release SUITE]
#             [--user NAME]... [--prepare 'shell commands run inside the chroot before install']
#             PACKAGE...
#
# Result: ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/chroot-NAME. Idempotent: does nothing when
# that directory exists. The chroot is built in a temporary sibling directory and renamed into
# place only when complete, so a half-built chroot is never used. Concurrent callers serialise on
# a lock file; the second finds the finished chroot. Needs root. Nothing in here is specific to
# one database.
set -euo pipefail

NAME=""
SUITE="sid"
EXTRA_SUITES=()
TARGET_RELEASE=""
USERS=()
PREPARE=""
PACKAGES=()
while [ $# -gt 0 ]; do
  case "$1" in
    --name) NAME="$2"; shift 2 ;;
    --suite) SUITE="$2"; shift 2 ;;
    --extra-suite) EXTRA_SUITES+=("$2"); shift 2 ;;
    --target-release) TARGET_RELEASE="$2"; shift 2 ;;
    --user) USERS+=("$2"); shift 2 ;;
    --prepare) PREPARE="$2"; shift 2 ;;
    --) shift; PACKAGES+=("$@"); break ;;
    -*) echo "chroot.sh: unknown option $1" >&2; exit 2 ;;
    *) PACKAGES+=("$1"); shift ;;
  esac
done
[ -n "$NAME" ] || { echo "chroot.sh: --name is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "chroot.sh: must run as root (debootstrap, chroot, mount)" >&2; exit 1; }

CACHE_DIR="${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}"
FINAL="$CACHE_DIR/chroot-$NAME"
mkdir -p "$CACHE_DIR"

log() { printf '[chroot %s] %s\n' "$NAME" "$*" >&2; }

# debian_mirror: the Debian mirror this machine's apt already uses (lib.sh).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ -d "$FINAL" ]; then
  log "present: $FINAL"
  exit 0
fi

exec 9>"$CACHE_DIR/chroot-$NAME.lock"
flock 9
if [ -d "$FINAL" ]; then
  log "built by a concurrent caller: $FINAL"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  t0=$(date +%s)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null; }
  log "debootstrap installed in $(( $(date +%s) - t0 )) s"
fi

MIRROR=$(debian_mirror)
BUILD=$(mktemp -d "$CACHE_DIR/.chroot-$NAME.build.XXXXXX")
# mktemp makes it 0700; it becomes the chroot's "/", which unprivileged servers must traverse.
chmod 755 "$BUILD"

# A failed build must not leave /proc mounted inside a directory we are about to delete.
cleanup() {
  local rc=$?
  if mountpoint -q "$BUILD/proc" 2>/dev/null; then umount "$BUILD/proc" || umount -l "$BUILD/proc" || true; fi
  if [ $rc -ne 0 ] && [ -d "$BUILD" ] && ! mountpoint -q "$BUILD/proc" 2>/dev/null; then
    log "build failed (exit $rc); removing $BUILD"
    rm -rf --one-file-system "$BUILD"
  fi
}
trap cleanup EXIT

START=$(date +%s)
log "debootstrap --variant=minbase $SUITE from $MIRROR into $BUILD"
debootstrap --variant=minbase "$SUITE" "$BUILD" "$MIRROR" >"$BUILD.debootstrap.log" 2>&1 || {
  tail -n 30 "$BUILD.debootstrap.log" >&2; rm -f "$BUILD.debootstrap.log"; exit 1;
}
rm -f "$BUILD.debootstrap.log"
log "debootstrap done in $(( $(date +%s) - START )) s"

{
  echo "deb $MIRROR $SUITE main"
  for s in "${EXTRA_SUITES[@]}"; do echo "deb $MIRROR $s main"; done
} >"$BUILD/etc/apt/sources.list"
# The mirror is a frozen snapshot whose Release files are past Valid-Until.
cat >"$BUILD/etc/apt/apt.conf.d/99tidemark" <<'EOF'
Acquire::Check-Valid-Until "false";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
Dpkg::Use-Pty "false";
APT::Sandbox::User "root";
EOF
# Package scripts must never start services inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$BUILD/usr/sbin/policy-rc.d"
chmod 755 "$BUILD/usr/sbin/policy-rc.d"
mkdir -p "$BUILD/dev/shm"
chmod 1777 "$BUILD/dev/shm" "$BUILD/tmp"

# Some maintainer scripts read /proc; mount it for apt only, never while servers run.
mount -t proc proc "$BUILD/proc"
in_chroot() { chroot "$BUILD" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }

t0=$(date +%s)
in_chroot apt-get update -qq
if [ -n "$PREPARE" ]; then in_chroot /bin/sh -ec "$PREPARE"; fi
if [ ${#PACKAGES[@]} -gt 0 ]; then
  TR=()
  [ -n "$TARGET_RELEASE" ] && TR=(-t "$TARGET_RELEASE")
  log "apt-get install ${TR[*]} ${PACKAGES[*]}"
  in_chroot apt-get install -y -qq "${TR[@]}" "${PACKAGES[@]}" >"$BUILD/var/log/tidemark-apt.log" 2>&1 || {
    tail -n 40 "$BUILD/var/log/tidemark-apt.log" >&2; exit 1;
  }
fi
for u in "${USERS[@]}"; do
  if ! in_chroot getent passwd "$u" >/dev/null; then
    in_chroot groupadd --system "$u" 2>/dev/null || true
    in_chroot useradd --system --gid "$u" --home-dir "/var/lib/$u" --shell /bin/sh "$u"
  fi
done
in_chroot apt-get clean
log "packages installed in $(( $(date +%s) - t0 )) s"
umount "$BUILD/proc"

mv -T "$BUILD" "$FINAL"
log "built $FINAL in $(( $(date +%s) - START )) s ($(du -sh "$FINAL" | cut -f1))"
