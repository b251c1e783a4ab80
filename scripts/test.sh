#!/usr/bin/env bash
# Runs every test: installs what is missing, builds, runs the Rust tests (ledger, importer, host, server, app), then starts
# the built server on a fresh data directory and runs the node client tests (e2e/clients, e2e/mcp) and the
# Playwright browser tests against it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's name with the time so far and what the step before it took (CI's time budget is 50 minutes).
started=$SECONDS
last=$SECONDS
section() {
  echo "== $* [at $((SECONDS - started)) s; the step before took $((SECONDS - last)) s]"
  last=$SECONDS
}
# A clean build in CI gains nothing from incremental compilation, whose caches would double target/debug
# (the disk of a shared CI machine ran out at a stop on 2026-12-01).
if [[ -n "${CI:-}" ]]; then
  export CARGO_INCREMENTAL=0
fi
section "setup (apt, npm, pip, the wasm-bindgen CLI)"
scripts/setup.sh
# The lint gates first: a formatting slip or a clippy warning fails in minutes, not after the suites.
section "lint: cargo fmt --check, cargo clippy --workspace --all-targets -D warnings"
cargo fmt --all -- --check
cargo clippy -q --workspace --all-targets -- -D warnings
section "build (wasm, CSS, the release server)"
scripts/build.sh
# The browser bundle stays within its size limit (docs/performance.md "Bundle size"); a second.
scripts/bundle-size.sh
# The server binary scripts/build.sh made (it follows CARGO_TARGET_DIR, like cargo); absolute, so the
# browser tests that start servers of their own (e2e/tests/own-server.ts) find it too.
mkdir -p "${CARGO_TARGET_DIR:-target}"
OUTCOMES_BIN="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release/outcomes"
export OUTCOMES_BIN

section "cargo test"
cargo test --workspace
# The ledger's rules build without its store (feature `rules`, docs/ledger.md "Layers"), and its wire types
# without either (what the browser bundle uses).
cargo check -q -p ledger --no-default-features --features rules
cargo check -q -p ledger --no-default-features

# The ledger and HTTP suites again, on Postgres (docs/ledger.md "Backends"): a throwaway cluster of
# Debian's postgresql package on loopback, each test in a schema of its own.
section "cargo test on Postgres"
pg_dir=$(mktemp -d)
chmod 755 "$pg_dir" # the postgres user reaches its cluster directory inside
OUTCOMES_TEST_POSTGRES=$(scripts/postgres.sh start "$pg_dir/cluster" "${PG_PORT:-54329}")
export OUTCOMES_TEST_POSTGRES
trap 'scripts/postgres.sh stop "$pg_dir/cluster" >/dev/null 2>&1 || true; rm -rf "$pg_dir"' EXIT
# Only the two test binaries that read OUTCOMES_TEST_POSTGRES (through testkit): the ledger's and the
# server's integration suites. The unit tests, the app's and the importer's tests and the doc tests never
# open a database, so a second run of them on Postgres would repeat the SQLite pass exactly (about 15 s).
# Still `--workspace`, not `-p ledger -p server`: the same package selection resolves the same features,
# so the test binaries built above are run again instead of being built a second time (about 90 s of CI).
cargo test --workspace --test ledger --test api
# ...and nothing else reads it, so nothing else is skipped by that selection.
if pg_readers=$(grep -rlE 'testkit|OUTCOMES_TEST_POSTGRES' --include='*.rs' ledger server app importer host |
  grep -vE '^(ledger/tests/ledger|server/tests/api)/'); then
  echo "test.sh: these read OUTCOMES_TEST_POSTGRES outside the two suites run on Postgres; add their test target above:" >&2
  echo "$pg_readers" >&2
  exit 1
fi
section "webhooks: two instances on Postgres deliver each event once (e2e/webhooks)"
PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider e2e/webhooks -k postgres
unset OUTCOMES_TEST_POSTGRES
scripts/postgres.sh stop "$pg_dir/cluster"

section "contract schema (python jsonschema)"
PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider e2e/contract

section "GET /metrics: prometheus_client's parser, and Debian's Prometheus firing an alert (e2e/metrics, ~15 s)"
PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider e2e/metrics

section "webhooks verified by the standardwebhooks package (e2e/webhooks, ~20 s)"
PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider e2e/webhooks

section "OpenTelemetry export into a real Arize Phoenix (e2e/otel, ~2 min)"
phoenix_venv=${OUTCOMES_PHOENIX_VENV:-$HOME/.cache/outcomes/phoenix-20.26.1}
PHOENIX_BIN="$phoenix_venv/bin/phoenix" PYTHONDONTWRITEBYTECODE=1 \
  "$phoenix_venv/bin/python" -m pytest -q -p no:cacheprovider e2e/otel

section "start the server for the client and browser tests"
port=${E2E_PORT:-3100}
data=$(mktemp -d)
export OUTCOMES_HOST_TOKEN="e2e-$(date +%s)-$RANDOM"
"$OUTCOMES_BIN" serve --addr "127.0.0.1:$port" --data-dir "$data" > "$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$data" "$pg_dir"' EXIT
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
section "third-party replay client (npm eventsource, node --test)"
BASE_URL="http://127.0.0.1:$port" node --test e2e/clients/

section "MCP proxy: the official MCP SDK client through outcomes mcp-proxy to real MCP servers (node --test)"
BASE_URL="http://127.0.0.1:$port" node --test e2e/mcp/
# The official MCP Python SDK on both sides of mcp-proxy --listen --url (e2e/mcp_python, ~5 s).
BASE_URL="http://127.0.0.1:$port" PYTHONDONTWRITEBYTECODE=1 python3 -m pytest -q -p no:cacheprovider e2e/mcp_python
# Its latency benchmark, a short run so the script keeps working (figures only; the full run is docs/performance.md "MCP proxy latency").
node scripts/bench-mcp-proxy.mjs --calls 200 --warmup 20
# Its memory per line, a short run (figures only; the full run is docs/performance.md "MCP proxy memory per line").
node scripts/bench-mcp-proxy-memory.mjs --mib 4

section "Schemathesis against the OpenAPI document (about 60 s, a server of its own)"
fuzz_port=$((port + 1))
fuzz_data=$(mktemp -d)
"$OUTCOMES_BIN" serve --addr "127.0.0.1:$fuzz_port" --data-dir "$fuzz_data" > "$fuzz_data/server.log" 2>&1 &
fuzz_server=$!
trap 'kill $server $fuzz_server 2>/dev/null || true; rm -rf "$data" "$fuzz_data" "$pg_dir"' EXIT
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$fuzz_port/healthz" && break; sleep 0.1; done
BASE_URL="http://127.0.0.1:$fuzz_port" scripts/schemathesis.sh
kill $fuzz_server 2>/dev/null || true

section "a second server for the browser tests: reads closed (--access signed-in), one staff account"
signed_port=$((port + 2))
signed_data=$(mktemp -d)
"$OUTCOMES_BIN" serve --access signed-in --addr "127.0.0.1:$signed_port" --data-dir "$signed_data" \
  > "$signed_data/server.log" 2>&1 &
signed_server=$!
trap 'kill $server $fuzz_server $signed_server 2>/dev/null || true; rm -rf "$data" "$fuzz_data" "$signed_data" "$pg_dir"' EXIT
for _ in $(seq 1 100); do curl -sf -o /dev/null "http://127.0.0.1:$signed_port/healthz" && break; sleep 0.1; done
if ! curl -sf -o /dev/null "http://127.0.0.1:$signed_port/healthz"; then
  echo "the signed-in server did not start:" >&2
  cat "$signed_data/server.log" >&2
  exit 1
fi
staff_name=e2e-staff
# `staff add` prints the generated password alone on its last line.
staff_password=$("$OUTCOMES_BIN" staff add "$staff_name" --data-dir "$signed_data" | tail -n 1)
if [ -z "$staff_password" ]; then
  echo "outcomes staff add printed no password" >&2
  exit 1
fi

section "browser tests (Playwright, Debian Chromium)"
cd e2e
BASE_URL="http://127.0.0.1:$port" OUTCOMES_DATA_DIR="$data" OUTCOMES_PORT="$port" \
  SIGNED_IN_URL="http://127.0.0.1:$signed_port" STAFF_NAME="$staff_name" STAFF_PASSWORD="$staff_password" \
  ../node_modules/.bin/playwright test "$@"
cd ..

# The host clients against the same server, after the browser tests (they add sessions and open unknowns
# that the pages' counts must not see). Each script installs its pinned packages, then runs its suite;
# tests that kill and restart a server start their own from OUTCOMES_BIN.
section "Python client (clients/python/ci.sh: pytest, OpenAI Agents SDK and Pydantic AI with scripted models)"
BASE_URL="http://127.0.0.1:$port" bash clients/python/ci.sh
section "TypeScript client (clients/typescript/ci.sh: node --test, AI SDK and OpenAI Agents SDK for JS)"
BASE_URL="http://127.0.0.1:$port" bash clients/typescript/ci.sh
section "done"
