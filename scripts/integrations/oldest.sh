#!/usr/bin/env bash
# The integrations' tests (their real-cluster tests and the conformance suite through each front
# door) on the oldest supported version of each tool (scripts/integrations/versions.json). The
# newest supported version is the one in the lockfile, tested by `pnpm test`.
#
# Works on a copy: a local clone of this repository's committed state, in a temporary directory,
# whose package.json files get the old versions and whose lockfile is re-resolved there. The
# checkout you run it from is not touched. Needs what `pnpm test` needs (servers installed by
# scripts/setup/*.sh) and the npm registry (or a pnpm store that has the old versions).
#
#   bash scripts/integrations/oldest.sh                        # drizzle, kysely, prisma
#   TIDEMARK_TARGETS=pg15 bash scripts/integrations/oldest.sh @tidemark/kysely
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
packages=("$@")
[ ${#packages[@]} -gt 0 ] || packages=(@tidemark/drizzle @tidemark/kysely @tidemark/prisma)
export TIDEMARK_TARGETS="${TIDEMARK_TARGETS:-pg15,mysql97}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/repo"
cd "$work/repo"

node - <<'NODE'
const fs = require('node:fs');
const versions = JSON.parse(fs.readFileSync('scripts/integrations/versions.json', 'utf8'));
for (const [dir, pins] of Object.entries(versions)) {
  if (dir === '_') continue;
  const file = `${dir}/package.json`;
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const [name, version] of Object.entries(pins)) {
    if (!manifest.devDependencies?.[name]) throw new Error(`${file} has no devDependency ${name}`);
    manifest.devDependencies[name] = version;
    console.log(`oldest: ${dir} ${name}@${version}`);
  }
  fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
}
NODE

pnpm install --no-frozen-lockfile --prefer-offline --reporter=silent

# What the packages resolve is what is tested: stop if any pin did not take.
node - <<'NODE'
const fs = require('node:fs');
const path = require('node:path');
const versions = JSON.parse(fs.readFileSync('scripts/integrations/versions.json', 'utf8'));
for (const [dir, pins] of Object.entries(versions)) {
  if (dir === '_') continue;
  for (const [name, version] of Object.entries(pins)) {
    const manifest = path.join(dir, 'node_modules', name, 'package.json');
    const installed = JSON.parse(fs.readFileSync(fs.realpathSync(manifest), 'utf8')).version;
    console.log(`installed: ${dir} ${name}@${installed}`);
    if (installed !== version) throw new Error(`${dir} resolved ${name}@${installed}, not ${version}`);
  }
}
NODE
filters=()
for p in "${packages[@]}"; do filters+=(--filter "${p}^..."); done
pnpm exec turbo run build "${filters[@]}" --output-logs=errors-only

for p in "${packages[@]}"; do
  echo "=== oldest versions: $p (TIDEMARK_TARGETS=$TIDEMARK_TARGETS)"
  pnpm --filter "$p" test
done
