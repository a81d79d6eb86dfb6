#!/usr/bin/env bash
# Shell helpers shared by the scripts under scripts/ (source this file; it defines functions only).

# The mirror is whatever this machine's apt already uses: it is the one Debian mirror reachable
# here, and it also serves sid and experimental.
debian_mirror() {
  if [ -n "${TIDEMARK_DEBIAN_MIRROR:-}" ]; then echo "$TIDEMARK_DEBIAN_MIRROR"; return; fi
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk 'tolower($1)=="uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" |
      grep -E '/debian/?$' | head -n1 || true)
    if [ -n "$uri" ]; then echo "${uri%/}"; return; fi
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri=$(sed -E 's/\[[^]]*\]//' "$f" | awk '$1=="deb" { print $2 }' |
      grep -E '/debian/?$' | head -n1 || true)
    if [ -n "$uri" ]; then echo "${uri%/}"; return; fi
  done
  echo "http://deb.debian.org/debian"
}
