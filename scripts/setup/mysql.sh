#!/usr/bin/env bash
# Install what the MySQL-family test targets of @tidemark/test-clusters need, on Debian 12, as
# root. Idempotent: each step is skipped when its result is already there. Non-interactive
# (CI=true, no stdin). Prints how long each step took.
#
#   mariadb1011  Debian bookworm's mariadb-server-core and mariadb-client-core (10.11): the
#                server binary, mariadb-install-db and the client, without the service package.
#                Nothing is started and no data directory is created; a MariaDB this machine
#                already runs (on 3306) is left alone.
#   mysql97      a sid chroot with mysql-server-core and mysql-client-core 9.7, built once into
#                ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/chroot-mysql97 (about 70 s, 600 MB)
#                by scripts/setup/mysql97-chroot.sh.
#
# Environment: TIDEMARK_SETUP_SKIP_MYSQL97=1 skips the chroot; TIDEMARK_CACHE_DIR and
# TIDEMARK_DEBIAN_MIRROR as for scripts/setup/chroot.sh.
set -euo pipefail
exec </dev/null
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive

[ "$(id -u)" = 0 ] || { echo "setup/mysql.sh: run as root" >&2; exit 1; }

T_ALL=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
say() { printf '[setup/mysql] %s\n' "$*"; }

APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" = 0 ]; then
    apt-get update -qq
    APT_UPDATED=1
  fi
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >/dev/null
}

# --- mariadb1011 ------------------------------------------------------------------------------
t=$(date +%s.%N)
if [ -x /usr/sbin/mariadbd ] && [ -x /usr/bin/mariadb-install-db ] && [ -x /usr/bin/mariadb ]; then
  say "mariadb1011: already installed ($(/usr/sbin/mariadbd --version))"
else
  say "mariadb1011: installing mariadb-server-core mariadb-client-core (no service, no data directory)"
  made_policy=0
  restore() { if [ "$made_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi; }
  trap restore EXIT
  # The -core packages ship no service, but keep any package script from starting one.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  apt_install mariadb-server-core mariadb-client-core
  restore
  trap - EXIT
  say "mariadb1011: installed $(/usr/sbin/mariadbd --version) in $(elapsed "$t")"
fi
case "$(/usr/sbin/mariadbd --version)" in
  *" Ver 10.11."*) ;;
  *) say "mariadb1011: WARNING: /usr/sbin/mariadbd is not 10.11; the mariadb1011 target will refuse to start" ;;
esac

# --- mysql97 ----------------------------------------------------------------------------------
if [ "${TIDEMARK_SETUP_SKIP_MYSQL97:-}" = 1 ]; then
  say "mysql97: skipped (TIDEMARK_SETUP_SKIP_MYSQL97=1)"
else
  t=$(date +%s.%N)
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "mysql97: installing debootstrap"
    apt_install debootstrap
    say "mysql97: debootstrap installed in $(elapsed "$t")"
  fi
  t=$(date +%s.%N)
  "$HERE/mysql97-chroot.sh"
  say "mysql97: chroot ready in $(elapsed "$t")"
fi

say "done in $(elapsed "$T_ALL")"
