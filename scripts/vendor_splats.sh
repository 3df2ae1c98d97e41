#!/bin/sh
# Vendor the Spark Gaussian-splat renderer (MIT, World Labs) from the npm registry into
# app/static/vendor/spark (served by the app, no CDN). Spark runs on the three.js already vendored in
# app/static/vendor/three (Spark 2.x needs three >= 0.180) and animates splats on the GPU with per-splat
# bone skinning, which the Avatar viewer uses to re-pose the avatar live. Only the minified ES module
# (worker and WebAssembly inlined) is kept; its bare 'three' imports are rewritten to the vendored
# module, and the one three.js add-on it imports (postprocessing/Pass.js) is copied from the vendored
# three.js version.
set -eu
VERSION="${1:-2.2.0}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/app/static/vendor/spark"
THREE_VERSION="$(cat "$ROOT/app/static/vendor/three/VERSION")"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack "@sparkjsdev/spark@$VERSION" --silent >/dev/null && tar xzf "sparkjsdev-spark-$VERSION.tgz" \
  && mkdir three && npm pack "three@$THREE_VERSION" --silent >/dev/null \
  && tar xzf "three-$THREE_VERSION.tgz" -C three)
rm -rf "$DEST"
mkdir -p "$DEST"
sed -e 's#from "three/addons/postprocessing/Pass.js"#from "./Pass.js"#' \
    -e 's#from "three"#from "../three/three.module.js"#g' \
    "$TMP/package/dist/spark.module.min.js" > "$DEST/spark.module.min.js"
sed "s#from 'three';#from '../three/three.module.js';#" \
    "$TMP/three/package/examples/jsm/postprocessing/Pass.js" > "$DEST/Pass.js"
if grep -q 'from "three' "$DEST/spark.module.min.js"; then
  echo "vendor_splats: an import of 'three' was left unrewritten" >&2
  exit 1
fi
cp "$TMP/package/LICENSE" "$DEST/LICENSE"
{
  echo "@sparkjsdev/spark $VERSION (MIT, see LICENSE)"
  echo "Pass.js from three $THREE_VERSION (MIT, see ../three/LICENSE)"
} > "$DEST/VERSION"
