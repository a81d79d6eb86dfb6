#!/usr/bin/env bash
# The mysql97 target: MySQL 9.7 (mysql-server-core, mysql-client-core) from Debian sid, in a sid
# chroot (its binaries need a newer glibc than bookworm's). Built once into
# ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/chroot-mysql97; the test harness runs this script
# itself when that directory is missing.
#
# Only the -core packages: no service, no init scripts, no default data directory. The packages
# do not create a `mysql` user, so chroot.sh does (the servers run as it, never as root).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec "$HERE/chroot.sh" --name mysql97 --suite sid --user mysql \
  mysql-server-core mysql-client-core
