#!/usr/bin/env bash
# Installs what building and testing need, on a fresh Debian machine of this kind. Idempotent: each step is
# skipped when already done, so a warm run takes a second or two.
#   - Debian: rustc-web, cargo-web, rust-web-src (Rust for wasm32 with -Zbuild-std), lld-22 (wasm linker),
#     chromium (browser tests), postgresql (the suites on Postgres, scripts/postgres.sh), prometheus (it
#     scrapes GET /metrics and fires an alert in e2e/metrics)
#   - cargo: wasm-bindgen-cli at exactly the wasm-bindgen version in Cargo.lock
#   - npm: the Tailwind CLI, Playwright (no browser download: Debian's Chromium), and the MCP SDK and reference
#     MCP servers of the mcp-proxy tests (e2e/mcp), all from package-lock.json
#   - pip: jsonschema and pytest (the contract schema under Python, e2e/contract)
#   - pip: Schemathesis (API fuzzing against the OpenAPI document, scripts/schemathesis.sh)
#   - pip: prometheus_client (its text parser reads GET /metrics, e2e/metrics)
#   - pip: standardwebhooks (a third party's verifier of our webhook deliveries, e2e/webhooks)
#   - pip: mcp, the official MCP Python SDK (its server and client on either side of mcp-proxy --listen,
#     e2e/mcp_python)
#   - pip, in a venv of its own: arize-phoenix, a real OpenTelemetry backend (its OTLP receiver and REST API,
#     e2e/otel); kept out of the shared site-packages, since its many dependencies would move the pins above
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
for pkg in rustc-web cargo-web rust-web-src lld-22 chromium postgresql prometheus python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

wbg=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wbg" ]; then
  echo "setup: installing wasm-bindgen-cli $wbg (a few minutes)"
  # Not --locked: the CLI's own lock file pins a crate version the index no longer serves.
  cargo install -q wasm-bindgen-cli --version "$wbg"
fi

stamp=node_modules/.package-lock.stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  echo "setup: npm ci"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi

if ! python3 -c 'import schemathesis' >/dev/null 2>&1; then
  echo "setup: pip install schemathesis 4.32.5"
  python3 -m pip install -q --disable-pip-version-check "schemathesis==4.32.5"
fi

if ! python3 -c 'import jsonschema, pytest' >/dev/null 2>&1; then
  echo "setup: pip install jsonschema pytest"
  python3 -m pip install -q --disable-pip-version-check jsonschema pytest
fi

if ! python3 -c 'import prometheus_client' >/dev/null 2>&1; then
  echo "setup: pip install prometheus_client 0.26.0"
  python3 -m pip install -q --disable-pip-version-check "prometheus_client==0.26.0"
fi

if ! python3 -c 'import standardwebhooks' >/dev/null 2>&1; then
  echo "setup: pip install standardwebhooks 1.1.0"
  python3 -m pip install -q --disable-pip-version-check "standardwebhooks==1.1.0"
fi

if ! python3 -c 'import importlib.metadata as m, sys; sys.exit(m.version("mcp") != "2.3.0")' >/dev/null 2>&1; then
  echo "setup: pip install mcp 2.3.0"
  python3 -m pip install -q --disable-pip-version-check "mcp==2.3.0"
fi

# Arize Phoenix for e2e/otel (about 2.5 min the first time). The venv's path is the one scripts/test.sh uses.
phoenix_version=20.26.1
phoenix_venv=${OUTCOMES_PHOENIX_VENV:-$HOME/.cache/outcomes/phoenix-$phoenix_version}
if ! "$phoenix_venv/bin/python" -c 'import importlib.metadata as m, sys; import pytest; sys.exit(m.version("arize-phoenix") != "'"$phoenix_version"'")' >/dev/null 2>&1; then
  echo "setup: pip install arize-phoenix $phoenix_version (a venv: $phoenix_venv)"
  python3 -m venv "$phoenix_venv"
  "$phoenix_venv/bin/python" -m pip install -q --disable-pip-version-check "arize-phoenix==$phoenix_version" pytest
fi
