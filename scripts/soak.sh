#!/usr/bin/env bash
# Runs the long (soak) variants of the reliability suite, server/tests/reliability.rs, in release mode and
# prints their figures. The short variants of the same tests run in every `cargo test` (scripts/test.sh).
#
#   crash durability: 50 rounds of 32 concurrent writers (approve -> intent -> settle in four turns of one
#   session), SIGKILL at a random moment during the writes, restart on the same data directory; after each
#   restart every settlement answered before any kill is checked (status and revision), revisions per turn
#   are unique and never go backwards, and the full SSE replay of each turn equals its history.
#
# Each test prints one summary line starting with `figures: ` (rounds, answered settlements checked,
# failures, seconds); this script repeats those lines at the end. Extra arguments go to the test binary (e.g. a test name filter).
# OUTCOMES_CRASH_SEED=<n> fixes the crash test's kill delays.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
started=$(date +%s)
set +e
OUTCOMES_SOAK=1 cargo test --release -p server --test reliability -- --nocapture --test-threads=1 "$@" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
set -e

echo
echo "== soak figures ($(($(date +%s) - started)) s including the build)"
grep '^figures: ' "$log" || echo "(no figures lines: see above)"
exit "$rc"
