"""The limits of status checks and recover (issue 40, second attack), against the real ledger: an
answer with an invalid `observed_at` is an error item, a check that hangs is cut off at
`status_timeout`, the options are validated at construction, recover stops when the ledger goes away,
the CLI's exit codes, and `connect_budget` against a server that trickles its answer."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from outcomes_ledger import AsyncLedger, Completed, Ledger, LedgerUnavailable, UnknownOperation, recorded_outcome

TOOL = "t.pay"


class Boom(RuntimeError):
    pass


def _unknowns(base_url: str, token: str, session_key: str, mutations: list[str]) -> None:
    """Writes whose block raised (outcome_unknown), with no status check: open unknowns."""
    with Ledger(base_url, token) as ledger:
        for m in mutations:
            with pytest.raises(Boom):
                with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id=m, tool=TOOL):
                    raise Boom("lost reply")


@pytest.mark.parametrize("observed_at", [datetime(2026, 1, 2, 3, 4, 5), "nope", "2026-13-01T00:00:00Z", 12345])
def test_an_invalid_observed_at_is_an_error_item_and_never_replaces_the_blocks_error(
        server, reads, session_key, observed_at):
    calls = []

    def check(op: UnknownOperation) -> Completed:
        calls.append(op.mutation_id)
        return Completed(reference="ch_1", observed_at=observed_at)

    with Ledger(server.base_url, server.token, status_delay=0, status_attempts=2) as ledger:
        ledger.status_checks[TOOL] = check
        with pytest.raises(Boom) as raised:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="m1", tool=TOOL):
                raise Boom("lost reply")
        assert recorded_outcome(raised.value).outcome == "outcome_unknown"
        assert calls == ["m1", "m1"]
        summary = ledger.recover(sessions=[session_key], checks={TOOL: check})
    assert summary.errors == 1 and summary.completed == 0, summary.items
    assert "observed_at" in summary.items[0].detail
    assert reads.by_id(session_key)["m1"]["status"] == "outcome_unknown"


def test_a_valid_observed_at_is_taken(server, reads, session_key):
    _unknowns(server.base_url, server.token, session_key, ["m1"])
    with Ledger(server.base_url, server.token) as ledger:
        summary = ledger.recover(sessions=[session_key],
                                 checks={TOOL: lambda op: Completed("ch_1", observed_at="2026-01-02T03:04:05.5+01:00")})
    assert summary.completed == 1, summary.items
    assert reads.by_id(session_key)["m1"]["status"] == "completed"


@pytest.mark.parametrize("cls", [Ledger, AsyncLedger])
@pytest.mark.parametrize("option,value", [
    ("status_delay", float("nan")), ("status_delay", -1), ("status_delay", float("inf")), ("status_delay", 3601),
    ("status_delay", "1"), ("status_attempts", 1.5), ("status_attempts", 0), ("status_attempts", True),
    ("status_timeout", 0), ("status_timeout", float("nan")), ("status_timeout", -2), ("status_timeout", 7200),
])
def test_status_options_are_refused_at_construction_naming_the_option(server, cls, option, value):
    with pytest.raises(ValueError, match=option):
        cls(server.base_url, server.token, **{option: value})


def test_the_status_option_bounds_are_taken(server):
    Ledger(server.base_url, server.token, status_delay=0, status_attempts=1, status_timeout=3600).close()
    Ledger(server.base_url, server.token, status_delay=3600.0, status_attempts=10, status_timeout=0.5).close()


def test_a_check_that_hangs_is_cut_off_at_status_timeout(server, reads, session_key):
    release = threading.Event()
    calls = []

    def hangs(op: UnknownOperation) -> Completed:
        calls.append(op.mutation_id)
        release.wait(30)
        return Completed("ch_late")

    try:
        with Ledger(server.base_url, server.token, status_delay=0, status_attempts=2, status_timeout=0.3) as ledger:
            ledger.status_checks[TOOL] = hangs
            started = time.monotonic()
            with pytest.raises(Boom):
                with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="m1", tool=TOOL):
                    raise Boom("lost reply")
            assert time.monotonic() - started < 5
            assert calls == ["m1", "m1"]  # both tries, each cut off
            _unknowns(server.base_url, server.token, session_key, ["m2"])
            started = time.monotonic()
            summary = ledger.recover(sessions=[session_key])
            assert time.monotonic() - started < 5
        assert summary.errors == 2, summary.items
        assert all("did not answer within 0.3 s" in i.detail for i in summary.items)
        assert {m: reads.by_id(session_key)[m]["status"] for m in ("m1", "m2")} == {
            "m1": "outcome_unknown", "m2": "outcome_unknown"}
    finally:
        release.set()


def test_an_async_check_that_hangs_is_cut_off_at_status_timeout(server, reads, session_key):
    async def hangs(op: UnknownOperation) -> Completed:
        await asyncio.sleep(30)
        return Completed("ch_late")

    def sync_hangs(op: UnknownOperation) -> Completed:
        time.sleep(3)
        return Completed("ch_late")

    async def run() -> Any:
        async with AsyncLedger(server.base_url, server.token, status_delay=0, status_attempts=2,
                               status_timeout=0.3) as ledger:
            started = time.monotonic()
            with pytest.raises(Boom):
                async with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="m1",
                                                  tool=TOOL, status=hangs):
                    raise Boom("lost reply")
            assert time.monotonic() - started < 5
            started = time.monotonic()
            summary = await ledger.recover(sessions=[session_key], checks={TOOL: sync_hangs})
            assert time.monotonic() - started < 2
            return summary

    summary = asyncio.run(run())
    assert summary.errors == 1 and "did not answer within 0.3 s" in summary.items[0].detail
    assert reads.by_id(session_key)["m1"]["status"] == "outcome_unknown"


@pytest.mark.parametrize("use_async", [False, True])
def test_recover_stops_when_the_ledger_goes_away(own_server, use_async):
    session_key = "gone"
    _unknowns(own_server.base_url, own_server.token, session_key, ["m1", "m2", "m3"])
    calls = []

    def check(op: UnknownOperation) -> Completed:
        calls.append(op.mutation_id)
        own_server.kill9()
        return Completed("ch_1")

    started = time.monotonic()
    with pytest.raises(LedgerUnavailable) as raised:
        if use_async:
            async def run() -> None:
                async with AsyncLedger(own_server.base_url, own_server.token, retry_total_secs=1) as ledger:
                    await ledger.recover(sessions=[session_key], checks={TOOL: check})
            asyncio.run(run())
        else:
            with Ledger(own_server.base_url, own_server.token, retry_total_secs=1) as ledger:
                ledger.recover(sessions=[session_key], checks={TOOL: check})
    assert time.monotonic() - started < 10
    assert len(calls) == 1  # the other two were not looked at
    summary = raised.value.summary
    assert summary is not None and summary.errors == 1 and len(summary.items) == 1
    assert "could not be reached" in summary.items[0].detail


def _cli(server, tmp_path, module: str, *args: str, env_extra: dict[str, str] | None = None) -> Any:
    env = dict(os.environ, BASE_URL=server.base_url, OUTCOMES_HOST_TOKEN=server.token, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "outcomes_ledger", "recover", "--checks", module, *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("source,spec,expected", [
    (None, "no_such_module:checks", "No module named 'no_such_module'"),
    ("def broken(:\n", "mod:checks", "SyntaxError"),
    ("raise RuntimeError('cannot start')\n", "mod:checks", "RuntimeError: cannot start"),
    ("checks = {'t.pay': 5}\n", "mod:checks", "not a mapping of tool name -> status check"),
    ("checks = [1]\nother = {'t.pay': print}\n", "mod:checks", "not a mapping of tool name -> status check"),
    ("checks = {'t.pay': print}\n", ":checks", "module:object"),
])
def test_cli_usage_errors_exit_2_with_one_line(server, tmp_path, session_key, source, spec, expected):
    if source is not None:
        (tmp_path / "mod.py").write_text(source, encoding="utf-8")
    done = _cli(server, tmp_path, spec, "--session", session_key)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert done.stdout == ""


def test_cli_bad_arguments_exit_2_with_one_line(server, tmp_path):
    env = dict(os.environ, BASE_URL=server.base_url, OUTCOMES_HOST_TOKEN=server.token)
    done = subprocess.run([sys.executable, "-m", "outcomes_ledger", "recover", "--checks", "m:c"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_cli_a_session_without_unknowns_says_so(server, tmp_path, session_key):
    (tmp_path / "mod.py").write_text("checks = {'t.pay': print}\n", encoding="utf-8")
    done = _cli(server, tmp_path, "mod:checks", "--session", session_key + "-none", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"] == []
    assert "no open unknowns were found in the given sessions" in done.stderr


def test_cli_exits_1_naming_the_ledger_when_it_goes_away(own_server, tmp_path):
    _unknowns(own_server.base_url, own_server.token, "gone", ["m1", "m2"])
    (tmp_path / "mod.py").write_text(
        "import os, signal\n"
        "from outcomes_ledger import Completed\n"
        "def check(op):\n"
        "    os.kill(int(os.environ['LEDGER_PID']), signal.SIGKILL)\n"
        "    return Completed('ch_1')\n"
        "checks = {'t.pay': check}\n", encoding="utf-8")
    assert own_server.proc is not None
    env = dict(os.environ, BASE_URL=own_server.base_url, OUTCOMES_HOST_TOKEN=own_server.token,
               LEDGER_PID=str(own_server.proc.pid))
    done = subprocess.run([sys.executable, "-m", "outcomes_ledger", "recover", "--checks", "mod:checks",
                           "--session", "gone"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    own_server.proc.wait()
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"the ledger at {own_server.base_url} could not be reached" in done.stderr
    assert "the remaining open unknowns were not looked at" in done.stderr
    assert done.stdout.strip().splitlines()[-1].endswith("errors: 1, skipped: 0")


class Trickle:
    """An HTTP server that sends its headers at once, then its body one byte every 0.2 s (for 60 s);
    `headers=True`: its headers themselves one byte every 0.2 s."""

    def __init__(self, headers: bool = False) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if headers:
                    try:
                        for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: " + b"a" * 300:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.2)
                    except OSError:
                        pass
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "300")
                self.end_headers()
                try:
                    for _ in range(300):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.2)
                except OSError:
                    pass

            do_GET = do_POST

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("headers", [False, True])
@pytest.mark.parametrize("use_async", [False, True])
def test_connect_budget_bounds_a_server_that_trickles_its_answer(use_async, headers):
    trickle = Trickle(headers)
    ran = []
    try:
        started = time.monotonic()
        with pytest.raises(LedgerUnavailable):
            if use_async:
                async def run() -> None:
                    async with AsyncLedger(trickle.url, "tok", connect_budget=1.5) as ledger:
                        async with ledger.protected_write(session_key="s", logical_turn_id="t", tool="x"):
                            ran.append(1)
                asyncio.run(run())
            else:
                with Ledger(trickle.url, "tok", connect_budget=1.5) as ledger:
                    with ledger.protected_write(session_key="s", logical_turn_id="t", tool="x"):
                        ran.append(1)
        took = time.monotonic() - started
    finally:
        trickle.stop()
    assert ran == []
    assert took < 3, took
