#!/usr/bin/env bash
# The console's front-end libraries, from the npm registry (web/package-lock.json pins them), copied into
# kgrag/console/static/vendor/ where the page loads them: no CDN, the page works with no internet.
# Called by `make install`; a no-op when the vendored files match the lockfile's versions.
set -euo pipefail
cd "$(dirname "$0")/.."
vendor=kgrag/console/static/vendor
stamp="$vendor/.lock-$(sha1sum web/package-lock.json | cut -c1-12)"
[ -f "$stamp" ] && exit 0
command -v npm >/dev/null 2>&1 || { echo "npm is missing: install Node.js (20+) to build the console's assets" >&2; exit 1; }
npm ci --prefix web --no-audit --no-fund --loglevel=error
mkdir -p "$vendor"
rm -f "$vendor"/.lock-*
cp web/node_modules/cytoscape/dist/cytoscape.min.js "$vendor/"
cp web/node_modules/cytoscape/LICENSE "$vendor/cytoscape.LICENSE"
touch "$stamp"
echo "console assets: $(ls "$vendor" | tr '\n' ' ')"
