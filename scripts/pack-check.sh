#!/usr/bin/env bash
# Packaging check: pack nova-guard from a clean clone of HEAD (so `prepare` must build dist/), lint the
# tarball with publint and @arethetypeswrong/cli, install it into an empty project and use it there:
# `import { NovaClient } from 'nova-guard'`, `require('nova-guard')` (require(esm), Node 20.19+) and
# `npx nova-guard --help`. Exits non-zero on the first failure.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/nova-guard-pack.XXXXXX")"
trap 'rm -rf "$work"' EXIT

echo "pack-check: clean clone of HEAD in $work/clone"
git clone --quiet --no-hardlinks "$repo" "$work/clone"
git -C "$work/clone" checkout --quiet "$(git -C "$repo" rev-parse HEAD)"
cd "$work/clone"
# The clone installs from the lockfile; `npm pack` runs `prepare`, which builds dist/.
npm ci --no-audit --no-fund --ignore-scripts --silent
npm pack --silent --pack-destination "$work" >"$work/packed.txt"
tarball="$work/$(tail -n1 "$work/packed.txt")"
test -f "$tarball" || { echo "pack-check: npm pack made no tarball"; exit 1; }
tar -tzf "$tarball" >"$work/files.txt"
grep -qx 'package/dist/index.js' "$work/files.txt" || { echo "pack-check: the tarball has no dist/index.js"; exit 1; }
grep -qx 'package/dist/cli/main.js' "$work/files.txt" || { echo "pack-check: the tarball has no dist/cli/main.js"; exit 1; }

echo "pack-check: publint"
npx --no-install publint run --strict "$tarball"
echo "pack-check: attw (ESM-only package: the node10 resolution and CommonJS-from-ESM via require() are not claimed)"
npx --no-install attw "$tarball" --profile esm-only

echo "pack-check: install into an empty project"
mkdir "$work/app"
cd "$work/app"
printf '{"name":"app","version":"1.0.0","private":true,"type":"module"}\n' >package.json
npm install --no-audit --no-fund --silent "$tarball"
node --input-type=module -e "import { NovaClient, deleteServer } from 'nova-guard'; import { FakeNova } from 'nova-guard/testing'; if (typeof NovaClient !== 'function' || typeof deleteServer !== 'function' || typeof FakeNova !== 'function') process.exit(1); console.log('import ok');"
node -e "const g = require('nova-guard'); if (typeof g.NovaClient !== 'function') process.exit(1); console.log('require ok');"
npx --no-install nova-guard --help >"$work/help.txt"
grep -q 'Usage: nova-guard' "$work/help.txt" || { echo "pack-check: npx nova-guard --help printed no usage"; cat "$work/help.txt"; exit 1; }
npx --no-install nova-guard --version
echo "pack-check: ok"
