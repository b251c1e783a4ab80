#!/usr/bin/env bash
# Runs the long (soak) variants of the reliability suite, server/tests/api/reliability.rs and the
# reliability_lock.rs, reliability_connections.rs and reliability_render.rs beside it, in release mode and
# prints their figures. The short variants of the same tests run in every `cargo test` (scripts/test.sh).
#
#   crash durability: 50 rounds of 32 concurrent writers (approve -> intent -> settle in four turns of one
#   session), SIGKILL at a random moment during the writes, restart on the same data directory; after each
#   restart every settlement answered before any kill is checked (status and revision), revisions per turn
#   are unique and never go backwards, and the full SSE replay of each turn equals its history.
#   one serve per SQLite file: 50 simultaneous double starts on one data directory.
#   subscription leak: 30,000 live streams opened and reset on a quiet session; RSS before and after.
#   slow headers: 5,000 half-sent request heads against a server limited to 1,024 open files.
#   concurrent render: 8 clients, 20,000 page requests over every page kind.
#
# Each test prints one summary line starting with `figures: ` (rounds, answered settlements checked,
# failures, seconds); this script repeats those lines at the end. Extra arguments go to the test binary (e.g. a test name filter).
# The suite is the `reliability` modules of the server's one test binary (`api`): without a name filter among
# the arguments, the filter `reliability` is added, so only their tests run (the `reliability` module and the
# `reliability_*` modules beside it: lock, connections, render, disk full, clock jumps, memory).
# OUTCOMES_CRASH_SEED=<n> fixes the crash test's kill delays.
set -euo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
started=$(date +%s)
set +e
suite=(reliability)
for arg in "$@"; do
  case $arg in -*) ;; *) suite=() ;; esac
done
OUTCOMES_SOAK=1 cargo test --release -p server --test api -- --nocapture --test-threads=1 "${suite[@]}" "$@" 2>&1 |
  tee "$log"
rc=${PIPESTATUS[0]}
set -e

echo
echo "== soak figures ($(($(date +%s) - started)) s including the build)"
grep -o 'figures: .*' "$log" || echo "(no figures lines: see above)"
exit "$rc"
