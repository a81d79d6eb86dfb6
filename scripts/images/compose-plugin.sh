#!/usr/bin/env bash
# Make `docker compose` (Compose v2) available on Debian 12, whose own docker-compose package is
# the old 1.29 (`docker-compose`, no `docker compose` plugin). Does nothing if `docker compose
# version` already works. Otherwise installs the Compose v2 binary from Debian sid's
# docker-compose package (2.40; it needs only glibc >= 2.34, so it runs on bookworm) as a
# system-wide Docker CLI plugin, /usr/local/lib/docker/cli-plugins/docker-compose.
#
# The package is fetched with apt itself, from the Debian mirror this machine's apt uses
# (TIDEMARK_DEBIAN_MIRROR overrides), using a private sources list and state directory: the
# machine's apt configuration is not touched. The extracted binary is kept in
# ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/docker-compose/ for later runs. Needs root.
set -euo pipefail
exec </dev/null
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../setup/lib.sh
. "$HERE/../setup/lib.sh"
CACHE_DIR="${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}"
PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
say() { printf '[compose-plugin] %s\n' "$*" >&2; }

if docker compose version >/dev/null 2>&1; then
  say "present: $(docker compose version)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { say "run as root (installs into $PLUGIN_DIR)"; exit 1; }

CACHED="$CACHE_DIR/docker-compose/docker-compose"
if [ ! -x "$CACHED" ]; then
  t0=$(date +%s)
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/lists/partial" "$WORK/cache/archives/partial" "$WORK/x"
  echo "deb $(debian_mirror) sid main" >"$WORK/sources.list"
  APT=(-qq -o Dir::Etc::SourceList="$WORK/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o Dir::State::Lists="$WORK/lists" -o Dir::Cache="$WORK/cache"
    -o Acquire::Check-Valid-Until=false -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
  say "fetching docker-compose from Debian sid"
  apt-get "${APT[@]}" update
  (cd "$WORK" && apt-get "${APT[@]}" download docker-compose)
  dpkg-deb -x "$WORK"/docker-compose_*.deb "$WORK/x"
  mkdir -p "$(dirname "$CACHED")"
  install -m 755 "$WORK/x/usr/libexec/docker/cli-plugins/docker-compose" "$CACHED.tmp"
  mv "$CACHED.tmp" "$CACHED"
  say "fetched $(basename "$WORK"/docker-compose_*.deb) in $(( $(date +%s) - t0 )) s"
fi
mkdir -p "$PLUGIN_DIR"
install -m 755 "$CACHED" "$PLUGIN_DIR/docker-compose"
say "installed: $(docker compose version)"
