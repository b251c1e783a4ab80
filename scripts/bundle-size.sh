#!/usr/bin/env bash
# The browser bundle's size (docs/performance.md "Bundle size"): raw, gzip -9 and brotli-11 bytes of the wasm, the JS glue and
# the CSS that target/site/pkg/assets.json names (the content-hashed files scripts/build.sh wrote, with the
# .gz and .br twins the server sends), and a failure when the gzipped wasm is over the limit, so the bundle
# does not grow back unnoticed. Run after scripts/build.sh; scripts/test.sh does. Takes a second.
#   BUNDLE_LIMIT  the most gzip -9 bytes the wasm may have (default 475000; docs/performance.md "Bundle size" says why not 200 KB yet)
#   URL           also fetch each file from a running server (e.g. http://127.0.0.1:3000) and print the bytes it
#                 sends, its Content-Encoding and Cache-Control for `Accept-Encoding` br, gzip, `br, gzip`
#                 (what a browser asks for) and identity
set -euo pipefail
cd "$(dirname "$0")/.."
PKG=target/site/pkg
limit=${BUNDLE_LIMIT:-475000}
manifest=$PKG/assets.json
if [[ ! -f $manifest ]]; then
  echo "bundle-size: $manifest is missing: run scripts/build.sh first" >&2
  exit 1
fi
name() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" "$manifest"; }
files=("$(name wasm)" "$(name js)" "$(name css)")
wasm=$PKG/${files[0]}
for f in "${files[@]}"; do
  if [[ -z $f || ! -f $PKG/$f || ! -f $PKG/$f.gz || ! -f $PKG/$f.br ]]; then
    echo "bundle-size: $manifest names '$f', which is missing in $PKG (with its .gz and .br): run scripts/build.sh" >&2
    exit 1
  fi
done
printf '%-36s %10s %10s %10s\n' file raw gzip-9 br-11
for f in "${files[@]}"; do
  printf '%-36s %10d %10d %10d\n' "$f" "$(stat -c %s "$PKG/$f")" "$(stat -c %s "$PKG/$f.gz")" "$(stat -c %s "$PKG/$f.br")"
done
if [[ -n ${URL:-} ]]; then
  for f in "${files[@]}"; do
    for enc in br gzip 'br, gzip' identity; do
      sent=$(curl -sf -H "Accept-Encoding: $enc" -o /dev/null \
        -w '%{size_download}|%header{content-encoding}|%header{cache-control}' "$URL/pkg/$f")
      IFS='|' read -r bytes coding cache <<<"$sent"
      printf 'sent by %s for %-36s Accept-Encoding %-10s %10d bytes, content-encoding: %-5s cache-control: %s\n' \
        "$URL" "$f" "'$enc'" "$bytes" "${coding:-none}" "$cache"
    done
  done
fi
gz=$(stat -c %s "$wasm.gz")
if (( gz > limit )); then
  echo "bundle-size: ${files[0]} is $gz bytes gzipped, over the limit of $limit (docs/performance.md \"Bundle size\")" >&2
  exit 1
fi
echo "bundle-size: ${files[0]} $gz bytes gzipped ($(stat -c %s "$wasm.br") brotli), within $limit"
