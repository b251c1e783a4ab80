#!/usr/bin/env bash
# The first-load benchmark (docs/performance.md "First load"): starts the built server on a fresh ledger, writes the
# benchmark's sessions, and loads the home, viewer-link session, 200-row turn and unknown-operation pages
# in Debian's Chromium with the CPU slowed 4× and a 1.6 Mbit/s, 150 ms network (scripts/first-load.mjs), cold
# and warm. Prints a table, PASS/MISS for the targets, and a `figures:` line.
#   scripts/first-load.sh                 # uses the last scripts/build.sh (target/release/outcomes)
#   RUNS=5 PORT=3400 BIN=… scripts/first-load.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/outcomes}
PORT=${PORT:-3400}
if [[ ! -x $BIN || ! -f target/site/pkg/assets.json ]]; then
  echo "first-load: no build found ($BIN, target/site/pkg/assets.json): run scripts/build.sh first" >&2
  exit 1
fi
data=$(mktemp -d)
export OUTCOMES_HOST_TOKEN="first-load-$RANDOM$RANDOM"
"$BIN" serve --addr "127.0.0.1:$PORT" --data-dir "$data" >"$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$data"' EXIT
for _ in $(seq 1 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && break
  sleep 0.1
done
BASE_URL="http://127.0.0.1:$PORT" node scripts/first-load.mjs
