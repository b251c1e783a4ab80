#!/usr/bin/env bash
# Builds the product: the browser bundle (wasm + JS glue + CSS) into target/site/pkg and, beside it, the server.
#   wasm: Debian's Rust (rustc-web) with -Zbuild-std, because rustup's wasm32 target cannot be relied on
#         here; the `app` crate is compiled as a cdylib with its `hydrate` feature.
#   css:  the Tailwind v4 CLI from npm.       server: the rustup toolchain, release profile.
#   names: each file is renamed after its content (outcomes.<hash>.js, outcomes_bg.<hash>.wasm,
#         outcomes.<hash>.css; the hash is the first 16 hex digits of its SHA-256), compressed once beside
#         itself (x.br brotli 11 by scripts/compress.mjs, x.gz by gzip -9) and listed in pkg/assets.json, which
#         the server reads at start-up (server/src/assets.rs, docs/performance.md "Bundle size").
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=outcomes
PKG=target/site/pkg
OUT=target/front/bundle
mkdir -p "$PKG"
rm -rf "$OUT" && mkdir -p "$OUT"

# The server builds beside the bundle: the two share no files (target/front vs target/release), and each
# ends in long steps on one core (the wasm's fat LTO with one codegen unit; the `app` and `server` crates),
# so on a 2-core machine one build uses the core the other leaves idle (docs/testing.md "CI time").
cargo build -q --release -p server &
server_build=$!
trap 'kill "$server_build" 2>/dev/null || true' EXIT

(
  export PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc RUSTC_BOOTSTRAP=1
  if ! rust-lld -flavor wasm --version >/dev/null 2>&1; then
    export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=/usr/lib/llvm-19/bin/wasm-ld
  fi
  /usr/bin/cargo rustc -q -p app --lib --crate-type cdylib --features hydrate \
    --target wasm32-unknown-unknown --profile wasm-release --target-dir target/front \
    -Zbuild-std=std,panic_abort
)
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section \
  --out-dir "$OUT" --out-name "$NAME" target/front/wasm32-unknown-unknown/wasm-release/app.wasm
# Tailwind prints its banner on stderr; keep it quiet, but say why when it fails (e.g. no `npm ci` yet).
if [[ ! -x ./node_modules/.bin/tailwindcss ]]; then
  echo "build: ./node_modules/.bin/tailwindcss is missing: run scripts/setup.sh (or npm ci) first" >&2
  exit 1
fi
if ! tw_log=$(./node_modules/.bin/tailwindcss -i style/main.css -o "$OUT/$NAME.css" --minify 2>&1); then
  echo "$tw_log" >&2
  echo "build: tailwindcss failed" >&2
  exit 1
fi
if [[ -d $OUT/snippets ]]; then
  echo "build: wasm-bindgen wrote snippets/, which the hashed glue would import by plain names" >&2
  exit 1
fi
# The bundle of this build only: an older build's files go (a page naming one of them is itself old).
rm -f "$PKG"/"$NAME".* "$PKG"/"$NAME"_bg.* "$PKG"/assets.json
hashed() { # <file> <stem> <ext>: copies the file to $PKG/<stem>.<hash>.<ext>, prints that name
  local h
  h=$(sha256sum "$1" | cut -c1-16)
  cp "$1" "$PKG/$2.$h.$3"
  echo "$2.$h.$3"
}
js=$(hashed "$OUT/$NAME.js" "$NAME" js)
wasm=$(hashed "$OUT/${NAME}_bg.wasm" "${NAME}_bg" wasm)
css=$(hashed "$OUT/$NAME.css" "$NAME" css)
node scripts/compress.mjs "$PKG/$js" "$PKG/$wasm" "$PKG/$css"
for f in "$js" "$wasm" "$css"; do gzip -9 -n -c "$PKG/$f" >"$PKG/$f.gz"; done
printf '{"js":"%s","wasm":"%s","css":"%s"}\n' "$js" "$wasm" "$css" >"$PKG/assets.json"
cp -r public/. target/site/
wait "$server_build" # its exit status is the script's (set -e)
trap - EXIT
