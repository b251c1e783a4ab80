"""`python -m outcomes_ledger recover --checks module:obj (--session KEY ... | --all)`: run the status
checks of the open unknowns and reconcile what they settle (README "Status checks").

`module:obj` names a mapping of tool name -> status check (`obj` defaults to `checks`); the module is
imported with the current directory on `sys.path`. The ledger is `--base-url` / `BASE_URL` with the host
token `--token` / `OUTCOMES_HOST_TOKEN`. Prints one line per open unknown looked at, then the counts
(`--json`: the summary as one JSON object). Exit codes: 0 done (whatever the checks answered); 1 the
ledger could not be read or reached (the open unknowns could not be read, or the ledger went away
during the run: the run stops, the rest is not looked at); 2 a usage error (one line on stderr: bad
arguments, a checks module that cannot be found or imported, a checks object that is not a mapping
of tool name -> callable).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Mapping
from typing import Any, Optional, Sequence

from ._client import Ledger
from ._status import RecoverySummary
from .errors import LedgerError, LedgerUnavailable


PROG = "python -m outcomes_ledger"


class _Usage(Exception):
    """A usage error: one line on stderr, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, exit 2 (argparse prints the whole usage)
        raise _Usage(message)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def load_checks(spec: str) -> Mapping[str, Any]:
    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise ValueError(f"--checks is module:object (e.g. my_checks:checks), not {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - not found, a syntax error, or raised at import
        raise ValueError(f"cannot import {module_name!r}: {type(err).__name__}: {err}") from err
    obj = getattr(module, attr or "checks", None)
    if not isinstance(obj, Mapping) or not all(isinstance(k, str) and callable(v) for k, v in obj.items()):
        raise ValueError(f"{spec} is not a mapping of tool name -> status check")
    return obj


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        return _main(argv)
    except _Usage as err:
        print(f"{PROG}: {_one_line(str(err))}", file=sys.stderr)
        return 2


def _main(argv: Optional[Sequence[str]]) -> int:
    parser = _Parser(prog=PROG)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    recover = commands.add_parser("recover", help="run the status checks of the open unknowns and reconcile them")
    recover.add_argument("--checks", required=True, metavar="MODULE:OBJ",
                         help="a mapping of tool name -> status check (OBJ defaults to checks)")
    which = recover.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", action="append", metavar="KEY", help="a session key (repeatable)")
    which.add_argument("--all", action="store_true", help="every session")
    recover.add_argument("--base-url", default=os.environ.get("BASE_URL"),
                         help="the ledger server (default: $BASE_URL)")
    recover.add_argument("--token", default=os.environ.get("OUTCOMES_HOST_TOKEN"),
                         help="the host token (default: $OUTCOMES_HOST_TOKEN)")
    recover.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    args = parser.parse_args(argv)

    if not args.base_url or not args.token:
        parser.error("the ledger's URL and host token: --base-url / BASE_URL and --token / OUTCOMES_HOST_TOKEN")
    try:
        checks = load_checks(args.checks)
    except ValueError as err:
        parser.error(f"--checks: {err}")
    with Ledger(args.base_url, args.token) as ledger:
        try:
            summary = ledger.recover(sessions="all" if args.all else args.session, checks=checks)
        except LedgerUnavailable as err:
            if err.summary is not None and err.summary.items:
                _print(err.summary, args.json)
            print(f"outcomes_ledger recover: the ledger at {ledger.base_url} could not be reached; the run "
                  f"stopped, the remaining open unknowns were not looked at: {_one_line(str(err))}", file=sys.stderr)
            return 1
        except LedgerError as err:
            print(f"outcomes_ledger recover: could not read the open unknowns from the ledger at "
                  f"{ledger.base_url}: {_one_line(str(err))}", file=sys.stderr)
            return 1
    _print(summary, args.json)
    if not summary.items:
        print("outcomes_ledger recover: no open unknowns were found in the given sessions", file=sys.stderr)
    return 0


def _print(summary: RecoverySummary, as_json: bool) -> None:
    if as_json:
        print(json.dumps(summary.to_json(), ensure_ascii=False))
    else:
        for item in summary.items:
            print(f"{item.result:<12} {item.session_key} {item.mutation_id} ({item.tool}): {item.detail}")
        print(summary)


if __name__ == "__main__":
    sys.exit(main())
