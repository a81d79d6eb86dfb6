#!/usr/bin/env bash
# The pg19 target: PostgreSQL 19 from Debian experimental, in a sid chroot (its binaries need a
# newer glibc than bookworm's). Built once into ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/chroot-pg19;
# the test harness runs this script itself when that directory is missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Only the PostgreSQL 19 packages come from experimental (libpq5 19 is a hard dependency); with
# `-t experimental` apt would pull experimental's perl too, which conflicts with sid's.
# No main cluster: the package would otherwise initdb one we never use (and it costs time/space).
exec "$HERE/chroot.sh" --name pg19 --suite sid --extra-suite experimental \
  --user postgres \
  --prepare 'mkdir -p /etc/postgresql-common/createcluster.d && echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/tidemark.conf' \
  postgresql-19/experimental postgresql-client-19/experimental libpq5/experimental
