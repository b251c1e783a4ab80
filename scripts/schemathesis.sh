#!/usr/bin/env bash
# Fuzzes a running server against its own OpenAPI document with Schemathesis (PyPI; scripts/setup.sh
# installs it), with the host token, for a bounded time. Fails on any 5xx (`not_a_server_error`), on any
# response that breaks the documented schema (`response_schema_conformance`), and on a schema-valid request
# answered with anything but 2xx, 401, 404, 409, 429 or 503 (`positive_data_acceptance`, configured in
# scripts/schemathesis.toml): the request schemas state every rule they can (required fields, enums,
# lengths, the batch item shapes). Strings are generated as ASCII (`--generation-codec ascii`): the
# identifier rule is in bytes (at most 256), the schema's maxLength in characters, and for ASCII the two
# are the same.
#
#   BASE_URL=http://127.0.0.1:3100 OUTCOMES_HOST_TOKEN=... scripts/schemathesis.sh [extra schemathesis args]
#
# Env: BASE_URL (required), OUTCOMES_HOST_TOKEN (required), SCHEMATHESIS_MAX_TIME (seconds, default 60),
# SCHEMATHESIS_MAX_EXAMPLES (per operation, default 100), SCHEMATHESIS_WORKERS (default 2).
# Point it only at a throwaway server: it creates and deletes sessions through the host API.
set -euo pipefail
: "${BASE_URL:?BASE_URL is the running server, e.g. http://127.0.0.1:3100}"
: "${OUTCOMES_HOST_TOKEN:?OUTCOMES_HOST_TOKEN is the host token of the server}"
base=${BASE_URL%/}
here="$(cd "$(dirname "$0")" && pwd)"
config="$here/schemathesis.toml"
# Drops generated path parameters that break the identifier pattern (see the file).
export SCHEMATHESIS_HOOKS="$here/schemathesis_hooks.py"

# The CLI ships with the package; fall back to the module when its script is not on PATH.
if command -v schemathesis >/dev/null 2>&1; then
  st=(schemathesis)
else
  st=(python3 -m schemathesis.cli)
fi

# Run from a scratch directory: Schemathesis and Hypothesis keep caches (.schemathesis, .hypothesis) in
# the working directory.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"
"${st[@]}" --config-file "$config" run "$base/api/openapi.json" \
  --url "$base" \
  --header "Authorization: Bearer $OUTCOMES_HOST_TOKEN" \
  --generation-codec ascii \
  --max-time "${SCHEMATHESIS_MAX_TIME:-60}" \
  --max-examples "${SCHEMATHESIS_MAX_EXAMPLES:-100}" \
  --workers "${SCHEMATHESIS_WORKERS:-2}" \
  --request-timeout 10 \
  --generation-database none \
  --wait-for-schema 10 \
  --no-color \
  "$@"
