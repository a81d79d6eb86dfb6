#!/usr/bin/env bash
# Install Debian's Chromium for the Bookstore report test (examples/bookstore/test/report.test.ts
# renders the demo's HTML report in headless Chromium and checks the screenshot), on Debian 12,
# as root. Idempotent: does nothing when `chromium` is already on PATH.
#
# The downloaded .deb files are kept in ${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/apt-archives,
# so a later run on a machine with the same package lists installs without downloading them
# again. It first tries the package lists the machine has; only if that fails does it run
# `apt-get update` and try again. About 120 MB of packages; 25 s here with an empty cache.
set -euo pipefail
exec </dev/null
export DEBIAN_FRONTEND=noninteractive
say() { printf '[setup/chromium] %s\n' "$*"; }

if command -v chromium >/dev/null 2>&1; then
  say "present: $(chromium --version 2>/dev/null)"
  exit 0
fi
[ "$(id -u)" = 0 ] || { say "run as root, or install it yourself: apt-get install -y chromium"; exit 1; }

t0=$(date +%s)
ARCHIVES="${TIDEMARK_CACHE_DIR:-$HOME/.cache/tidemark}/apt-archives"
mkdir -p "$ARCHIVES/partial"
install_chromium() {
  # APT::Sandbox::User=root: apt's _apt user cannot write into a cache under /root.
  apt-get install -y -qq --no-install-recommends \
    -o Dir::Cache::archives="$ARCHIVES" -o APT::Sandbox::User=root \
    -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    chromium fonts-dejavu-core >/dev/null
}
if ! install_chromium; then
  say "installing with the current package lists failed; apt-get update and retry"
  apt-get update -qq
  install_chromium
fi
say "installed $(chromium --version 2>/dev/null) in $(( $(date +%s) - t0 )) s (packages cached in $ARCHIVES)"
