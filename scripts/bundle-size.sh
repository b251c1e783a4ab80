#!/usr/bin/env bash
# The browser bundle's size (README "Bundle size"): raw and gzip -9 bytes of the wasm, the JS glue and the CSS
# in target/site/pkg, and a failure when the gzipped wasm is over the limit, so the bundle does not grow back
# unnoticed. Run after scripts/build.sh; scripts/test.sh does. Takes a second.
#   BUNDLE_LIMIT  the most gzip -9 bytes the wasm may have (default 700000; README "Bundle size" says why not 200 KB yet)
#   URL           also fetch the wasm from a running server (e.g. http://127.0.0.1:3000) and print the bytes
#                 it sends with `Accept-Encoding: gzip`, and with `br, gzip` (what a browser asks for)
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=target/site/pkg
limit=${BUNDLE_LIMIT:-700000}
wasm=$PKG/outcomes_bg.wasm
if [[ ! -f $wasm ]]; then
  echo "bundle-size: $wasm is missing: run scripts/build.sh first" >&2
  exit 1
fi
printf '%-24s %10s %10s\n' file raw gzip-9
for f in "$wasm" "$PKG/outcomes.js" "$PKG/outcomes.css"; do
  [[ -f $f ]] || continue
  printf '%-24s %10d %10d\n' "$(basename "$f")" "$(stat -c %s "$f")" "$(gzip -9 -c "$f" | wc -c)"
done
if [[ -n ${URL:-} ]]; then
  for enc in gzip 'br, gzip'; do
    sent=$(curl -sf -H "Accept-Encoding: $enc" -o /dev/null -w '%{size_download} %header{content-encoding}' "$URL/pkg/outcomes_bg.wasm")
    echo "sent by $URL for Accept-Encoding '$enc': ${sent% *} bytes (content-encoding: ${sent#* })"
  done
fi
gz=$(gzip -9 -c "$wasm" | wc -c)
if (( gz > limit )); then
  echo "bundle-size: outcomes_bg.wasm is $gz bytes gzipped, over the limit of $limit (README \"Bundle size\")" >&2
  exit 1
fi
echo "bundle-size: outcomes_bg.wasm $gz bytes gzipped, within $limit"
