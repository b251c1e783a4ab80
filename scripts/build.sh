#!/usr/bin/env bash
# Builds the product: the browser bundle (wasm + JS glue + CSS) into target/site/pkg, then the server.
#   wasm: Debian's Rust (rustc-web) with -Zbuild-std, because rustup's wasm32 target cannot be relied on
#         here; the `app` crate is compiled as a cdylib with its `hydrate` feature.
#   css:  the Tailwind v4 CLI from npm.       server: the rustup toolchain, release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=outcomes
PKG=target/site/pkg
mkdir -p "$PKG"

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
  --out-dir "$PKG" --out-name "$NAME" target/front/wasm32-unknown-unknown/wasm-release/app.wasm
# Tailwind prints its banner on stderr; keep it quiet, but say why when it fails (e.g. no `npm ci` yet).
if [[ ! -x ./node_modules/.bin/tailwindcss ]]; then
  echo "build: ./node_modules/.bin/tailwindcss is missing: run scripts/setup.sh (or npm ci) first" >&2
  exit 1
fi
if ! tw_log=$(./node_modules/.bin/tailwindcss -i style/main.css -o "$PKG/$NAME.css" --minify 2>&1); then
  echo "$tw_log" >&2
  echo "build: tailwindcss failed" >&2
  exit 1
fi
cp -r public/. target/site/
cargo build -q --release -p server
