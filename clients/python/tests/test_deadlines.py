"""Deadlines (docs/api.md "Deadlines"): no write stays in flight for ever.

- A client process killed with SIGKILL mid-write: the ledger settles the write `outcome_unknown`
  (`execution_timeout`, settled by `ledger`) at its deadline, counts it in
  `outcomes_deadline_settlements_total` and sends one `outcome.unknown` webhook.
- A live client extends its deadline every third of it while the block runs (sync `Ledger`, and
  `AsyncLedger` with a block that blocks its event loop): never settled by the ledger, ends `completed`.
- A client cut off from the ledger past its deadline: the ledger settles it, the client's late report
  (`failed`) is still taken once, the extension failures are logged and never reach the block, a
  second late report is refused (409), and a retry of the same report counts as done.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from urllib.parse import quote

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from standardwebhooks import Webhook

from conftest import OwnServer, Reads, Server, outcomes_bin
from outcomes_ledger import AsyncLedger, Conflict, Ledger, ProviderFailed

TOOL = "mcp__dashboards__create"


def history(reads: Reads, session_key: str, mutation_id: str) -> list[dict[str, Any]]:
    r = reads.http.get(f"/api/sessions/{quote(session_key, safe='')}/mutations/{quote(mutation_id, safe='')}/history")
    assert r.status_code == 200, r.text
    return r.json()["changes"]


def entry(reads: Reads, session_key: str, turn: str, mutation_id: str) -> dict[str, Any]:
    found = [e for e in reads.entries(session_key, turn) if e["outcome"]["mutation_id"] == mutation_id]
    assert len(found) == 1, found
    return found[0]


def wait_for(what: str, check: Any, within: float, every: float = 0.1) -> Any:
    end = time.monotonic() + within
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {within} s")
        time.sleep(every)


# 1. A client process killed mid-write ---------------------------------------------------------------

CLIENT = """
import sys, time
from outcomes_ledger import Ledger
base, token, session, turn, mutation = sys.argv[1:6]
with Ledger(base, token) as ledger:
    with ledger.protected_write(session_key=session, logical_turn_id=turn, mutation_id=mutation,
                                tool="mcp__dashboards__create", deadline_secs=3):
        print("in the block", flush=True)
        time.sleep(30)
print("the block ended", flush=True)
"""


class Receiver:
    """A webhook endpoint on loopback: each delivery verified with `standardwebhooks` (a third
    party's verifier of Standard Webhooks signatures), answered 204."""

    def __init__(self) -> None:
        self.secret: Optional[str] = None
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                event = Webhook(outer.secret).verify(body, headers)
                with outer.lock:
                    outer.events.append(event)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def got(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.events)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_client_killed_mid_write_is_settled_unknown_by_the_ledger_at_its_deadline():
    own = OwnServer(f"py-{uuid.uuid4().hex}", ("--webhook-allow-private",))
    rx = Receiver()
    added = subprocess.run(
        [outcomes_bin(), "webhooks", "add", rx.url, "--data-dir", own.data_dir, "--webhook-allow-private"],
        capture_output=True, text=True, check=True)
    rx.secret = added.stdout.strip().splitlines()[-1]
    assert rx.secret.startswith("whsec_"), added.stdout
    own.start()
    reads = Reads(own.base_url, own.token)
    session, turn, mutation = f"py-killed-{uuid.uuid4().hex[:8]}", "t-1", "op-killed"
    client = subprocess.Popen([sys.executable, "-c", CLIENT, own.base_url, own.token, session, turn, mutation],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None
        assert client.stdout.readline() == "in the block\n", client.stderr.read() if client.stderr else ""
        started = entry(reads, session, turn, mutation)
        assert (started["ledger_status"], started["settled_by"]) == ("execution_started", None)
        assert started["deadline_at"] is not None

        client.send_signal(signal.SIGKILL)
        assert client.wait(5) == -signal.SIGKILL
        killed = time.monotonic()

        settled = wait_for("the ledger's settlement",
                           lambda: (e := entry(reads, session, turn, mutation))["ledger_status"] != "execution_started" and e,
                           within=8)
        assert time.monotonic() - killed < 8
        assert settled["ledger_status"] == "outcome_unknown"
        assert settled["outcome"]["status"] == "outcome_unknown"
        assert settled["outcome"]["reason"] == "execution_timeout"
        assert settled["settled_by"] == "ledger"
        assert settled["established_by"] is None

        changes = history(reads, session, mutation)
        assert [c["kind"] for c in changes] == ["approval", "intent", "settlement"]
        last = changes[-1]
        assert (last["actor"], last["settled_by"], last["ledger_status"], last["reason"]) == (
            "ledger", "ledger", "outcome_unknown", "execution_timeout")

        metrics = reads.http.get("/metrics")
        assert metrics.status_code == 200, metrics.text
        samples = {s.name: s.value for f in text_string_to_metric_families(metrics.text) for s in f.samples}
        assert samples["outcomes_deadline_settlements_total"] == 1.0

        events = wait_for("the outcome.unknown webhook", rx.got, within=5)
        time.sleep(1.5)  # a second delivery would come within this
        events = rx.got()
        assert [e["type"] for e in events] == ["outcome.unknown"], events
        data = events[0]["data"]
        assert (data["session_key"], data["mutation_id"], data["status"]) == (session, mutation, "outcome_unknown")
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        reads.http.close()
        rx.close()
        own.stop()


# 2. A live client ------------------------------------------------------------------------------------


def test_a_live_client_extends_its_deadline_while_a_10_s_block_runs(server: Server, reads: Reads, session_key: str):
    # deadline_secs=3 and a 10 s block: without the extensions (every 1 s) the ledger would settle
    # both writes about 3 s in. One sync Ledger (its block sleeping in a thread), one AsyncLedger
    # whose block blocks its event loop for 5 s then awaits 5 s: the extensions come from a thread.
    done: dict[str, Any] = {}

    def sync_write() -> None:
        with Ledger(server.base_url, server.token) as ledger:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t-sync", mutation_id="op-sync",
                                        tool=TOOL, deadline_secs=3) as op:
                time.sleep(10)
        done["sync"] = op

    async def async_write() -> None:
        async with AsyncLedger(server.base_url, server.token) as ledger:
            async with ledger.protected_write(session_key=session_key, logical_turn_id="t-async",
                                              mutation_id="op-async", tool=TOOL, deadline_secs=3) as op:
                time.sleep(5)
                await asyncio.sleep(5)
        done["async"] = op

    threads = [threading.Thread(target=sync_write), threading.Thread(target=lambda: asyncio.run(async_write()))]
    for t in threads:
        t.start()
    polls = 0
    seen: set[tuple[str, str, Optional[str]]] = set()
    while any(t.is_alive() for t in threads):
        for turn, mutation in (("t-sync", "op-sync"), ("t-async", "op-async")):
            r = reads.http.get(f"/api/sessions/{quote(session_key, safe='')}/turns/{turn}/entries")
            if r.status_code == 404:  # not approved yet
                continue
            assert r.status_code == 200, r.text
            for e in r.json()["entries"]:
                seen.add((e["outcome"]["mutation_id"], e["ledger_status"], e["settled_by"]))
        polls += 1
        time.sleep(0.25)
    for t in threads:
        t.join()
    assert polls >= 30
    # In flight throughout (or already completed by its host at the last poll), never settled by the ledger.
    assert seen <= {("op-sync", "execution_started", None), ("op-sync", "completed", "host"),
                    ("op-async", "execution_started", None), ("op-async", "completed", "host")}, seen
    assert ("op-sync", "execution_started", None) in seen and ("op-async", "execution_started", None) in seen
    for name, turn in (("sync", "t-sync"), ("async", "t-async")):
        op = done[name]
        assert op.outcome == "completed"
        assert op.entry.ledger_status == "completed"
        assert op.extender.failures == 0
        assert op.extender.extended >= 7, (name, op.extender.extended)  # 9 at 1 s apart; slack for a loaded machine
        final = entry(reads, session_key, turn, op.mutation_id)
        assert (final["ledger_status"], final["settled_by"]) == ("completed", "host")
        changes = history(reads, session_key, op.mutation_id)
        assert [(c["kind"], c["actor"]) for c in changes] == [("approval", "host"), ("intent", "host"),
                                                              ("settlement", "host")]


def test_bad_deadline_secs_is_refused_before_anything_is_sent(server: Server, reads: Reads, session_key: str):
    with Ledger(server.base_url, server.token) as ledger:
        for bad in (0, 604801, 2.5, True, "3"):
            with pytest.raises(ValueError, match="deadline_secs is a whole number of seconds from 1 to 604800"):
                ledger.protected_write(session_key=session_key, logical_turn_id="t", tool=TOOL, deadline_secs=bad)  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="deadline_secs"):
                ledger.protect(tool=TOOL, deadline_secs=bad)  # type: ignore[arg-type]
    assert reads.outcomes_status(session_key) == 404
    # The longest one is taken.
    with Ledger(server.base_url, server.token) as ledger:
        with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="op-week",
                                    tool=TOOL, deadline_secs=604800) as op:
            pass
    assert op.outcome == "completed"


# 3. A client cut off from the ledger past its deadline ------------------------------------------------


class BlackHole:
    """A TCP proxy in front of the ledger that can black-hole: while `paused`, every byte either side
    sends is dropped and no answer comes (the client's own timeout ends each try); the connections
    that saw it stay dead. New connections after `resume()` are forwarded again."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.paused = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.sockets: list[socket.socket] = []
        self.dropped = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            self.sockets += [client, upstream]
            dead = threading.Event()
            threading.Thread(target=self._pump, args=(client, upstream, dead), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, dead), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, dead: threading.Event) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                return
            if not data:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            if self.paused.is_set() or dead.is_set():
                dead.set()
                self.dropped += 1
                continue
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for s in self.sockets:
            try:
                s.close()
            except OSError:
                pass


def test_a_client_cut_off_past_its_deadline_settles_failed_afterwards(server: Server, reads: Reads,
                                                                       session_key: str,
                                                                       caplog: pytest.LogCaptureFixture):
    proxy = BlackHole(server.base_url)
    caplog.set_level(logging.WARNING, logger="outcomes_ledger")
    in_block = threading.Event()
    seen_by_ledger: list[dict[str, Any]] = []

    def cut_off() -> None:
        in_block.wait(10)
        proxy.paused.set()
        time.sleep(6.5)
        # Before the link comes back, the ledger settled the write at its deadline (3 s).
        seen_by_ledger.append(entry(reads, session_key, "t-1", "op-cut"))
        proxy.paused.clear()

    cutter = threading.Thread(target=cut_off)
    cutter.start()
    try:
        with Ledger(proxy.base_url, server.token) as ledger:
            with pytest.raises(ProviderFailed):
                with ledger.protected_write(session_key=session_key, logical_turn_id="t-1", mutation_id="op-cut",
                                            tool=TOOL, deadline_secs=3) as op:
                    in_block.set()
                    time.sleep(8)
                    raise ProviderFailed("the provider refused it")
            cutter.join()
            assert proxy.dropped >= 1
            by_ledger = seen_by_ledger[0]
            assert (by_ledger["ledger_status"], by_ledger["outcome"]["reason"], by_ledger["settled_by"]) == (
                "outcome_unknown", "execution_timeout", "ledger")

            # The late report was taken: failed, by the host.
            assert op.outcome == "failed"
            assert op.entry is not None and op.entry.ledger_status == "failed"
            final = entry(reads, session_key, "t-1", "op-cut")
            assert (final["ledger_status"], final["outcome"]["status"], final["outcome"].get("reason"),
                    final["settled_by"]) == ("failed", "failed", None, "host")
            changes = history(reads, session_key, "op-cut")
            assert [(c["kind"], c["actor"], c["ledger_status"]) for c in changes] == [
                ("approval", "host", "approved"), ("intent", "host", "execution_started"),
                ("settlement", "ledger", "outcome_unknown"), ("settlement", "host", "failed")]

            # The extensions that failed were logged, none reached the block.
            assert op.extender is not None and op.extender.failures >= 1
            logged = [r.getMessage() for r in caplog.records if r.name == "outcomes_ledger"]
            assert any("could not extend the deadline of operation 'op-cut'" in m for m in logged), logged

            # The same report again (a retry after a lost answer) is recognised as done...
            again = ledger.settle(session_key, "op-cut", op.attempt_id, "failed")
            assert (again.ledger_status, again.attempt_id) == ("failed", op.attempt_id)
            # ...and a second, different late report is refused.
            with pytest.raises(Conflict) as info:
                ledger.settle(session_key, "op-cut", op.attempt_id, "completed")
            assert (info.value.status, info.value.code) == (409, "not_in_flight")
            assert info.value.current is not None and info.value.current.ledger_status == "failed"
            assert [c["kind"] for c in history(reads, session_key, "op-cut")][-1] == "settlement"
            assert len(history(reads, session_key, "op-cut")) == 4
    finally:
        proxy.paused.clear()
        cutter.join()
        proxy.close()


def test_a_late_settle_whose_answer_is_lost_is_retried_and_counts_as_done(server: Server, reads: Reads,
                                                                          session_key: str, lossy_proxy: Any):
    # Intent with a 1 s deadline, no extensions (the single calls): the ledger settles it; then the
    # host's late report reaches the ledger (taken once) but its answer is lost; the retry gets 409
    # `not_in_flight` whose `current` shows that report: success.
    with Ledger(server.base_url, server.token) as direct:
        direct.approve(session_key, "t-1", "op-late", TOOL)
        started = direct.intent(session_key, "op-late", "att-1", deadline_secs=1)
        assert started.ledger_status == "execution_started"
    wait_for("the ledger's settlement",
             lambda: entry(reads, session_key, "t-1", "op-late")["settled_by"] == "ledger", within=6)
    proxy = lossy_proxy({1: "drop"})
    with Ledger(proxy.base_url, server.token) as ledger:
        settled = ledger.settle(session_key, "op-late", "att-1", "failed")
        assert (settled.ledger_status, settled.attempt_id, settled.reason) == ("failed", "att-1", None)
        assert [(m, a) for m, _, a in proxy.seen] == [("POST", "drop"), ("POST", "forward")]
        with pytest.raises(Conflict) as info:
            ledger.settle(session_key, "op-late", "att-1", "completed")
        assert (info.value.status, info.value.code) == (409, "not_in_flight")
    final = entry(reads, session_key, "t-1", "op-late")
    assert (final["ledger_status"], final["settled_by"]) == ("failed", "host")
    assert [(c["kind"], c["actor"]) for c in history(reads, session_key, "op-late")] == [
        ("approval", "host"), ("intent", "host"), ("settlement", "ledger"), ("settlement", "host")]


def test_an_extension_is_one_call_too(server: Server, session_key: str):
    with Ledger(server.base_url, server.token) as ledger:
        ledger.approve(session_key, "t-1", "op-ext", TOOL)
        ledger.intent(session_key, "op-ext", "att-1", deadline_secs=5)
        extended = ledger.extend_deadline(session_key, "op-ext", "att-1", deadline_secs=60)
        assert (extended.ledger_status, extended.attempt_id) == ("execution_started", "att-1")
        with pytest.raises(Conflict) as info:
            ledger.extend_deadline(session_key, "op-ext", "att-other", deadline_secs=60)
        assert (info.value.status, info.value.code) == (409, "attempt_mismatch")
        ledger.settle(session_key, "op-ext", "att-1", "completed")
        with pytest.raises(Conflict) as info:
            ledger.extend_deadline(session_key, "op-ext", "att-1", deadline_secs=60)
        assert info.value.code == "not_in_flight"


def test_the_adapters_send_deadline_secs_and_extend_it(server: Server, reads: Reads, session_key: str):
    # Each adapter's tool with deadline_secs=2 runs 3.5 s: its intent carries the 2 s deadline (the
    # history's intent row: deadline_at = at + 2 s), the extensions keep it in flight, it completes.
    from agents import Agent, RunConfig
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from outcomes_ledger.adapters import openai_agents, pydantic_ai
    from test_openai_agents import ScriptedModel

    def pydantic_model() -> FunctionModel:
        def answer(messages: Any, info: Any) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart(tool_name="slow_write", args={}, tool_call_id="pyd_slow")])
            return ModelResponse(parts=[TextPart("done")])
        return FunctionModel(answer)

    async def main() -> None:
        async with AsyncLedger(server.base_url, server.token) as ledger:
            @openai_agents.protected_function_tool(ledger, tool="mcp__slow__write", deadline_secs=2)
            async def slow_write() -> str:
                """Write slowly."""
                await asyncio.sleep(3.5)
                return "written"

            async def slow_write_pyd() -> str:
                await asyncio.sleep(3.5)
                return "written"

            slow_write_pyd.__name__ = "slow_write"  # the tool's name, as the model calls it
            pyd_tool = pydantic_ai.protected_tool(ledger, tool="mcp__slow__write", deadline_secs=2)(slow_write_pyd)

            agent = Agent(name="slow", instructions="write", model=ScriptedModel([("oai_slow", "slow_write", {})]),
                          tools=[slow_write])
            pyd = PydanticAgent(pydantic_model(), tools=[pyd_tool])
            await asyncio.gather(
                openai_agents.run_turn(ledger, agent, "go", session_key=session_key, logical_turn_id="run-oai",
                                       run_config=RunConfig(tracing_disabled=True)),
                pydantic_ai.run_turn(ledger, pyd, "go", session_key=session_key, logical_turn_id="run-pyd"),
            )

    asyncio.run(main())
    from datetime import datetime
    for turn, mutation in (("run-oai", "oai_slow"), ("run-pyd", "pyd_slow")):
        final = entry(reads, session_key, turn, mutation)
        assert (final["ledger_status"], final["settled_by"]) == ("completed", "host"), final
        changes = history(reads, session_key, mutation)
        assert [(c["kind"], c["actor"]) for c in changes] == [("approval", "host"), ("intent", "host"),
                                                              ("settlement", "host")]
        intent = changes[1]
        given = (datetime.fromisoformat(intent["deadline_at"]) - datetime.fromisoformat(intent["at"])).total_seconds()
        assert 1.5 <= given <= 2.5, (mutation, intent)
