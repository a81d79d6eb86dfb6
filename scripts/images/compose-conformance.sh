#!/usr/bin/env bash
# Run the conformance suite (external provider) against the compose clusters in docker/, on the
# local images (scripts/images/build.sh), with exactly the commands the compose files document:
#
#   scripts/images/compose-conformance.sh [CLUSTER...]   CLUSTER: pg15 pg19 mysql97 mariadb1011
#                                                        (default: all four)
#
#   pg15, pg19   docker/postgres.compose.yaml + docker/postgres.local.yaml (TIDEMARK_PG_MAJOR)
#   mysql97      docker/mysql.compose.yaml + docker/mysql.local.yaml
#   mariadb1011  docker/mariadb.compose.yaml + docker/mariadb.local.yaml
#
# For each: `up -d --wait`, then the conformance suite with the `export` lines of the compose
# file's header (read from the file, so the documented commands are the tested ones), then
# `down -v` (also when the suite fails). The external provider can only pause replay, so the
# scenarios that stop, kill, promote, freeze or cut off servers are reported not applicable
# (skipped, never passed). Exits non-zero if any step failed. Needs a
# running Docker engine with `docker compose` (v2) and the images (scripts/images/build.sh).
# Run from anywhere; the commands run from the repository root.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

say() { printf '[compose] %s\n' "$*" >&2; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }

run_cluster() { # $1 target
  local target="$1" file t rc=0
  case "$target" in
    pg15 | pg19) file=postgres; export TIDEMARK_PG_MAJOR="${target#pg}" ;;
    mysql97) file=mysql ;;
    mariadb1011) file=mariadb ;;
    *) say "unknown cluster '$target' (known: pg15 pg19 mysql97 mariadb1011)"; return 2 ;;
  esac
  local compose=(docker compose -f "docker/$file.compose.yaml" -f "docker/$file.local.yaml")
  t=$(date +%s.%N)
  # Containers and volumes left by an interrupted earlier run would be reused as they are (a data
  # directory half-initialised, a replica already pointed elsewhere): start from nothing.
  "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
  say "$target: ${compose[*]} up -d --wait"
  if ! "${compose[@]}" up -d --wait; then
    say "$target: the cluster did not come up"
    "${compose[@]}" logs --tail 30 >&2 || true
    "${compose[@]}" down -v >/dev/null 2>&1 || true
    return 1
  fi
  say "$target: cluster up in $(elapsed "$t")"
  (
    # The exports documented at the top of the compose file, exactly as written there.
    exports=$(sed -n 's/^#   export \(TIDEMARK_[A-Z_]*=[^ ]*\)$/\1/p' "docker/$file.compose.yaml")
    [ -n "$exports" ] || { say "$target: no '#   export' lines in docker/$file.compose.yaml"; exit 1; }
    while IFS= read -r line; do export "${line?}"; done <<<"$exports"
    export TIDEMARK_TARGETS="$target"
    [ "${TIDEMARK_PROVIDER:-}" = external ] || { say "$target: the file's exports do not select the external provider"; exit 1; }
    say "$target: $(echo "$exports" | tr '\n' ' ')TIDEMARK_TARGETS=$target pnpm test:conformance"
    pnpm test:conformance
  ) || rc=$?
  "${compose[@]}" down -v || rc=1
  say "$target: done in $(elapsed "$t") (exit $rc)"
  return $rc
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(pg15 pg19 mysql97 mariadb1011)
docker compose version >/dev/null 2>&1 || {
  say "docker compose (v2) is not available: scripts/images/compose-plugin.sh installs it"
  exit 1
}
failed=()
for target in "${targets[@]}"; do run_cluster "$target" || failed+=("$target"); done
if [ ${#failed[@]} -gt 0 ]; then
  say "FAILED: ${failed[*]}"
  exit 1
fi
say "all passed: ${targets[*]}"
