#!/bin/sh
# install-deps.sh DEPS_DIR: installs what the OpenClaw tests need, from the
# npm registry, with the pinned versions of the lockfiles.
#   - the plugin's own dependencies (koffi) in adapters/openclaw/node_modules,
#     exactly as a user installs them;
#   - the test's (openclaw, node@24, koffi) in DEPS_DIR, outside the plugin
#     folder: OpenClaw refuses a linked plugin folder that contains another
#     OpenClaw installation.
# openclaw's install scripts insist on Node 24, which the `node` package
# provides: everything is installed without scripts first, node's own script
# then fetches the Node 24 binary, and the remaining scripts run under it.
# A stamp (the lockfile's copy) skips work already done.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
plugin=$(dirname "$here")
deps=${1:?usage: install-deps.sh DEPS_DIR}
npm_flags="--no-audit --no-fund --loglevel=error"

command -v npm >/dev/null 2>&1 || { echo "e2e-openclaw: npm is required (apt-get install npm)" >&2; exit 1; }

if ! cmp -s "$plugin/package-lock.json" "$plugin/node_modules/.clarity-installed-lock" 2>/dev/null; then
  echo "e2e-openclaw: npm ci in $plugin (koffi)"
  (cd "$plugin" && npm ci --omit=dev $npm_flags)
  cp "$plugin/package-lock.json" "$plugin/node_modules/.clarity-installed-lock"
fi

mkdir -p "$deps"
if ! cmp -s "$here/package-lock.json" "$deps/node_modules/.clarity-installed-lock" 2>/dev/null; then
  echo "e2e-openclaw: npm ci in $deps (openclaw, node@24, koffi)"
  cp "$here/package.json" "$here/package-lock.json" "$deps/"
  (cd "$deps" && npm ci --ignore-scripts $npm_flags)
  (cd "$deps" && npm rebuild node $npm_flags)
  [ -x "$deps/node_modules/.bin/node" ] || { echo "e2e-openclaw: the node package did not install its binary" >&2; exit 1; }
  (cd "$deps" && PATH="$deps/node_modules/.bin:$PATH" npm rebuild $npm_flags)
  cp "$here/package-lock.json" "$deps/node_modules/.clarity-installed-lock"
fi
"$deps/node_modules/.bin/node" -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a!==24||b<16) { console.error("e2e-openclaw: node "+process.version+" installed, 24.16+ needed"); process.exit(1) }'
