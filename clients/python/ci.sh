#!/usr/bin/env bash
# The Python client's CI: install the package with its pinned test dependencies, then run its pytest
# suite against the real server.
#
# Environment:
#   BASE_URL, OUTCOMES_HOST_TOKEN  a running `outcomes serve` and its host token (most tests use it;
#                                  without them the suite starts its own server from OUTCOMES_BIN)
#   OUTCOMES_BIN                   absolute path of the `outcomes` binary: tests that kill -9 and
#                                  restart a server start their own from it, on a free port with a
#                                  temporary data dir
# No network at test time: the models are scripted (openai-agents: a Model returning fixed tool
# calls; pydantic-ai: FunctionModel). Installing needs PyPI the first time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

: "${OUTCOMES_BIN:?OUTCOMES_BIN must name the outcomes binary}"
[ -x "$OUTCOMES_BIN" ] || { echo "clients/python/ci.sh: $OUTCOMES_BIN is not an executable" >&2; exit 1; }

python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "clients/python needs Python 3.11+")'
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore
# Pinned: the build backend, then the package with the exact versions of its [test] extra.
python3 -m pip install -q "hatchling==1.33.0"
python3 -m pip install -q --no-build-isolation ".[test]"

# The package is typed (py.typed): the client checks clean under mypy --strict. (The adapters do
# too, but checking them analyses both frameworks whole: ~35 s, so CI leaves them to the tests.)
python3 -m mypy --strict --no-incremental --cache-dir=/dev/null --exclude 'adapters/(openai_agents|pydantic_ai)\.py' src/outcomes_ledger

export OPENAI_AGENTS_DISABLE_TRACING=1
# The tests import the installed package (not src/), so this checks what `pip install` gives.
exec python3 -m pytest -q -p no:cacheprovider tests "$@"
