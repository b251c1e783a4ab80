#!/usr/bin/env bash
# Installs what is missing, builds, and serves the dashboard on http://127.0.0.1:3000 with the ledger in
# ./data/ledger.sqlite. The demo sessions are played when the ledger is empty. Extra arguments go to
# `outcomes serve` (e.g. --addr 127.0.0.1:8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
# scripts/build.sh builds into CARGO_TARGET_DIR when it is set, as cargo does.
exec "${CARGO_TARGET_DIR:-target}/release/outcomes" serve --demo-when-empty "$@"
