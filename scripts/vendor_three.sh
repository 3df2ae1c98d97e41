#!/bin/sh
# Vendor three.js from the npm registry into app/static/vendor/three (served by the app, no CDN).
# The controls import the bare specifier 'three'; rewrite it to the vendored module path.
set -eu
VERSION="${1:-0.187.0}"
DEST="$(cd "$(dirname "$0")/.." && pwd)/app/static/vendor/three"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack "three@$VERSION" --silent >/dev/null && tar xzf "three-$VERSION.tgz")
mkdir -p "$DEST"
cp "$TMP/package/build/three.module.js" "$TMP/package/build/three.core.js" "$TMP/package/LICENSE" "$DEST/"
for f in OrbitControls TransformControls; do
  sed "s#from 'three';#from './three.module.js';#" "$TMP/package/examples/jsm/controls/$f.js" > "$DEST/$f.js"
done
echo "$VERSION" > "$DEST/VERSION"
