#!/usr/bin/env bash
# CI for clients/typescript (the npm package outcomes-ledger): install pinned, build, check that the
# committed types and build output are current, run the node --test suite against the real server.
#
# Environment (scripts/test.sh sets them):
#   OUTCOMES_BIN         absolute path of the `outcomes` binary (tests that kill and restart a server,
#                        or need wrong tokens, start their own on a free loopback port)
#   BASE_URL             a running `outcomes serve` (the suite's shared server)
#   OUTCOMES_HOST_TOKEN  its host token
# Without BASE_URL the suite starts its own server from OUTCOMES_BIN.
# Needs node >= 18 (with npm), git, and python3 (the busy-ledger test holds SQLite's write lock with its sqlite3 module).
set -euo pipefail
cd "$(dirname "$0")"

: "${OUTCOMES_BIN:?OUTCOMES_BIN must name the outcomes binary}"
[ -x "$OUTCOMES_BIN" ] || { echo "ci.sh: OUTCOMES_BIN=$OUTCOMES_BIN is not executable" >&2; exit 2; }
command -v python3 >/dev/null || { echo "ci.sh: python3 is needed (the busy-ledger test holds the ledger's write lock with it)" >&2; exit 2; }

# 1. install exactly what package-lock.json pins (idempotent: npm ci starts from a clean node_modules)
npm ci --no-audit --no-fund --loglevel=error

# 1b. The README's install (README "Install") on a fresh checkout holding only the committed files (no
#     node_modules, no build): `npm pack` it, then `npm install` the tarball with @openai/agents, ai and
#     zod in a new project elsewhere (not around the checkout); every entry point imports. This is an
#     install step like npm ci (npm may use the registry); test/install.test.mjs then repeats it offline
#     and also runs the installed package (and `npx outcomes-ledger`) against the server.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  mkdir -p "$scratch/checkout" "$scratch/app"
  (cd "$(git rev-parse --show-toplevel)" && git archive HEAD clients/typescript) | tar -x -C "$scratch/checkout"
  echo '{"name": "fresh-checkout-check", "private": true, "type": "module"}' > "$scratch/app/package.json"
  dev() { node -p "require('./package.json').devDependencies['$1']"; } # the pinned versions
  frameworks=("@openai/agents@$(dev @openai/agents)" "ai@$(dev ai)" "zod@$(dev zod)")
  (cd "$scratch/checkout/clients/typescript" && npm pack --silent --pack-destination "$scratch" >/dev/null) || {
    echo "ci.sh: npm pack failed on a fresh checkout" >&2
    exit 1
  }
  (cd "$scratch/app" && npm install --prefer-offline --no-audit --no-fund --loglevel=error "$scratch"/outcomes-ledger-*.tgz \
      "${frameworks[@]}" >/dev/null \
    && node -e "import('outcomes-ledger').then((m) => { if (typeof m.Ledger !== 'function') process.exit(1); })" \
    && node -e "import('outcomes-ledger/ai-sdk').then((m) => { if (typeof m.protectTools !== 'function') process.exit(1); })" \
    && node -e "import('outcomes-ledger/openai-agents').then((m) => { if (typeof m.runTurn !== 'function') process.exit(1); })" \
    && npx --offline outcomes-ledger --help >/dev/null) || {
    echo "ci.sh: the README's install (npm pack, npm install the tarball) failed on a fresh checkout" >&2
    exit 1
  }
  echo "npm pack + npm install of the tarball works on a fresh checkout (all three entry points, the CLI)"
fi

# 2. build src/ -> dist/ and regenerate the types from the running server: both must match what is
#    committed (test/generated-types.test.mjs fails on any difference; this step says it first)
npm run --silent build
if [ -n "${BASE_URL:-}" ]; then
  BASE_URL="$BASE_URL" node scripts/generate-types.mjs --check
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git diff --exit-code --stat -- dist src/generated || {
    echo "ci.sh: dist/ or src/generated/ differ from what is committed: npm run generate && npm run build, then commit" >&2
    exit 1
  }
fi

# 3. the suite (no network: scripted models only; servers on loopback)
export OUTCOMES_BIN
node --test --test-concurrency=2 test/*.test.mjs
