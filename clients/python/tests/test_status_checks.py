"""Status checks (README "Status checks"), against the real ledger and a real payment-like provider: an
HTTP server started here that keeps idempotency keys, processes a charge and then drops the
connection before answering, and answers `GET /charges?idempotency_key=K`. The README's worked example
is run as written (only the URLs and the session key replaced)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qs, quote, urlparse

import httpx
import pytest

from outcomes_ledger import (
    AsyncLedger,
    Completed,
    Inconclusive,
    Ledger,
    NotAccepted,
    UnknownOperation,
    idempotency_key,
    ops,
    recorded_outcome,
)

README = Path(__file__).resolve().parents[1] / "README.md"
LEDGER_URL = "http://127.0.0.1:3000"
PAYMENTS_URL = "http://127.0.0.1:8200"
TOOL = "payments.charge"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class PaymentProvider:
    """`POST /charges` with an `Idempotency-Key`: a key it has seen answers the original charge
    without charging again; otherwise, by `mode`: `drop` charges, then closes the socket without an
    answer; `refuse` refuses the key (not accepted), then closes the socket; `answer` charges and
    answers 201. `GET /charges?idempotency_key=K`: the charge, or an explicit `not_accepted` for a
    refused key, or 404 for a key it never saw; 503 "cannot tell" while `status_down`."""

    def __init__(self) -> None:
        self.mode = "drop"
        self.status_down = False
        self.charges: dict[str, dict[str, Any]] = {}
        self.refused: dict[str, dict[str, Any]] = {}
        self.charged = 0
        self.status_queries = 0
        self.dropped_at: Optional[float] = None
        provider = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, body: Any) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                key = self.headers.get("Idempotency-Key")
                if not key:
                    self._json(400, {"error": "Idempotency-Key is required"})
                    return
                with lock:
                    if key in provider.charges:
                        self._json(200, provider.charges[key])  # the original result, not a second charge
                        return
                    if provider.mode == "refuse":
                        provider.refused[key] = {"id": f"rf_{len(provider.refused) + 1}", "idempotency_key": key,
                                                 "status": "not_accepted", "created": now()}
                    else:
                        provider.charged += 1
                        provider.charges[key] = {"id": f"ch_{provider.charged:04d}", "idempotency_key": key,
                                                 "status": "succeeded", "amount": request.get("amount"),
                                                 "created": now()}
                    mode = provider.mode
                if mode in ("drop", "refuse"):
                    provider.dropped_at = time.monotonic()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)  # no answer at all
                    return
                self._json(201, provider.charges[key])

            def do_GET(self) -> None:
                url = urlparse(self.path)
                key = (parse_qs(url.query).get("idempotency_key") or [""])[0]
                provider.status_queries += 1
                if url.path != "/charges" or not key:
                    self._json(400, {"error": "GET /charges?idempotency_key=K"})
                elif provider.status_down:
                    self._json(503, {"error": "cannot tell right now"})
                elif key in provider.charges:
                    self._json(200, provider.charges[key])
                elif key in provider.refused:
                    self._json(200, provider.refused[key])
                else:
                    self._json(404, {"error": "no charge with this key"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def provider():
    p = PaymentProvider()
    yield p
    p.stop()


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"<!-- python-example: status-check -->\n```python\n(.*?)```", text, re.S)
    assert m, "clients/python/README.md has no python-example status-check"
    return m.group(1)


def run_example(server, provider, session_key: str) -> dict[str, Any]:
    source = readme_example()
    assert LEDGER_URL in source and PAYMENTS_URL in source and '"chat-42"' in source
    source = (source.replace(LEDGER_URL, server.base_url).replace(PAYMENTS_URL, provider.url)
              .replace('"chat-42"', json.dumps(session_key)))
    namespace: dict[str, Any] = {"token": server.token}
    exec(compile(source, "clients/python/README.md", "exec"), namespace)
    namespace["ledger"].close()
    return namespace


def history(reads, session_key: str, mutation_id: str) -> list[dict[str, Any]]:
    r = reads.http.get(f"/api/sessions/{quote(session_key, safe='')}/mutations/{quote(mutation_id, safe='')}/history")
    assert r.status_code == 200, r.text
    return r.json()["changes"]


def entry(reads, session_key: str, turn: str, mutation_id: str) -> dict[str, Any]:
    [found] = [e for e in reads.entries(session_key, turn) if e["outcome"]["mutation_id"] == mutation_id]
    return found


def test_a_lost_reply_ends_completed_by_the_providers_status_within_2_s(server, reads, provider, session_key, capsys):
    namespace = run_example(server, provider, session_key)
    settled = time.monotonic()
    assert provider.dropped_at is not None and settled - provider.dropped_at < 2.0
    op = namespace["op"]
    assert provider.charged == 1  # charged once; nobody else involved
    assert capsys.readouterr().out.strip() == "completed"
    assert op.outcome == "completed" and isinstance(op.status_answer, Completed)
    charge = provider.charges[op.idempotency_key]
    found = entry(reads, session_key, "turn-7", "charge-1")
    assert (found["outcome"]["status"], found["ledger_status"], found["established_by"]) == (
        "completed", "completed", "status_check")
    changes = history(reads, session_key, "charge-1")
    assert [c["kind"] for c in changes] == ["approval", "intent", "settlement", "reconciliation"]
    assert changes[2]["ledger_status"] == "outcome_unknown"  # what the host saw, first
    last = changes[-1]
    assert last["established_by"] == "status_check" and last["attempt_id"] == op.attempt_id
    evidence = last["evidence"]
    assert {k: evidence[k] for k in ("source", "reference", "observed_at")} == {
        "source": "status:payments.charge", "reference": charge["id"], "observed_at": charge["created"]}
    # The client sends provider_status "completed" (the server validates it); the ledger keeps it
    # with the evidence, on the reconciliation's history row.
    assert evidence["provider_status"] == "completed"
    # The exception the block raised says what the ledger now holds (what an adapter tells a model).
    assert op.idempotency_key.startswith("ol_") and len(op.idempotency_key) == 35


def test_a_charge_the_provider_never_accepted_ends_not_executed(server, reads, provider, session_key):
    provider.mode = "refuse"
    check = run_example_check(server, provider)
    with Ledger(server.base_url, server.token, status_delay=0.1) as ledger:
        with pytest.raises(httpx.TransportError) as info:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="charge-2",
                                        tool=TOOL, status=check) as op:
                httpx.post(f"{provider.url}/charges", json={"amount": 5},
                           headers={"Idempotency-Key": op.idempotency_key}, timeout=5)
    assert op.outcome == "not_executed" and isinstance(op.status_answer, NotAccepted)
    assert recorded_outcome(info.value).outcome == "not_executed"
    assert provider.charged == 0
    found = entry(reads, session_key, "t", "charge-2")
    assert (found["outcome"]["status"], found["established_by"]) == ("not_executed", "status_check")
    last = history(reads, session_key, "charge-2")[-1]
    assert last["kind"] == "reconciliation"
    assert last["evidence"]["provider_status"] == "not_accepted"
    assert last["evidence"]["reference"] == provider.refused[op.idempotency_key]["id"]


def run_example_check(server, provider):
    """The README's `charge_status`, taken from the example (nothing else of it run)."""
    source = readme_example()
    check_src = source[source.index("def charge_status"):source.index("ledger.status_checks")]
    namespace: dict[str, Any] = {"PAYMENTS": provider.url}
    exec(compile("import httpx\nfrom outcomes_ledger import *\n" + check_src, "README.md", "exec"), namespace)
    return namespace["charge_status"]


def test_a_provider_that_cannot_tell_leaves_it_unknown(server, reads, provider, session_key):
    provider.status_down = True
    check = run_example_check(server, provider)
    with Ledger(server.base_url, server.token, status_delay=0.05, status_attempts=3) as ledger:
        ledger.status_checks[TOOL] = check
        with pytest.raises(httpx.TransportError) as info:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="charge-3",
                                        tool=TOOL) as op:
                httpx.post(f"{provider.url}/charges", json={"amount": 5},
                           headers={"Idempotency-Key": op.idempotency_key}, timeout=5)
    assert provider.status_queries == 3  # status_attempts
    assert op.outcome == "outcome_unknown" and op.status_answer is None
    assert recorded_outcome(info.value).outcome == "outcome_unknown"
    found = entry(reads, session_key, "t", "charge-3")
    assert (found["outcome"]["status"], found["ledger_status"], found["established_by"]) == (
        "outcome_unknown", "outcome_unknown", None)
    assert [c["kind"] for c in history(reads, session_key, "charge-3")] == ["approval", "intent", "settlement"]

    # A search that finds nothing is not evidence: recover leaves a key the provider never saw unknown.
    with Ledger(server.base_url, server.token) as ledger:
        ledger.batch([ops.approve(session_key, "t", "charge-never-sent", TOOL),
                      ops.intent(session_key, "charge-never-sent", "att-x"),
                      ops.settle(session_key, "charge-never-sent", "att-x", "outcome_unknown")])
        provider.status_down = False
        summary = ledger.recover(sessions=[session_key], checks={TOOL: check})
    by_id = {i.mutation_id: i for i in summary.items}
    assert by_id["charge-never-sent"].result == "inconclusive"
    assert by_id["charge-3"].result == "completed"  # the provider can tell now
    assert (summary.completed, summary.inconclusive, summary.errors) == (1, 1, 0)
    assert reads.by_id(session_key)["charge-never-sent"]["status"] == "outcome_unknown"


def _unknown_charge(server, provider, session_key: str, mutation_id: str) -> str:
    """A charge whose reply was lost and whose check could not tell then (provider down): an open
    unknown. Answers its idempotency key."""
    provider.status_down = True
    with Ledger(server.base_url, server.token, status_delay=0, status_attempts=1) as ledger:
        ledger.status_checks[TOOL] = run_example_check(server, provider)
        with pytest.raises(httpx.TransportError):
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id=mutation_id,
                                        tool=TOOL) as op:
                httpx.post(f"{provider.url}/charges", json={"amount": 5},
                           headers={"Idempotency-Key": op.idempotency_key}, timeout=5)
    provider.status_down = False
    return op.idempotency_key


def test_recover_twice_and_concurrently_changes_nothing_more(server, reads, provider, session_key):
    for m in ("charge-a", "charge-b"):
        _unknown_charge(server, provider, session_key, m)
    check = run_example_check(server, provider)
    other_session = session_key + "-other"
    _unknown_charge(server, provider, other_session, "charge-c")

    summaries = []

    def run() -> None:
        with Ledger(server.base_url, server.token) as ledger:
            summaries.append(ledger.recover(sessions=[session_key], checks={TOOL: check}))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s.errors == 0 and s.inconclusive == 0 for s in summaries)
    records = reads.by_id(session_key)
    assert {m: records[m]["status"] for m in ("charge-a", "charge-b")} == {"charge-a": "completed",
                                                                          "charge-b": "completed"}
    # Only the sessions asked for: the other session's unknown is untouched.
    assert reads.by_id(other_session)["charge-c"]["status"] == "outcome_unknown"
    rows = {m: history(reads, session_key, m) for m in ("charge-a", "charge-b")}
    for m, changes in rows.items():
        assert [c["kind"] for c in changes].count("reconciliation") == 1, m

    with Ledger(server.base_url, server.token) as ledger:
        again = ledger.recover(sessions=[session_key], checks={TOOL: check})
    assert again.counts() == {"completed": 0, "not_accepted": 0, "inconclusive": 0, "errors": 0, "skipped": 0}
    assert {m: history(reads, session_key, m) for m in rows} == rows

    # The async client, with the client's registered checks: the other session, then nothing more.
    async def main() -> tuple[Any, Any]:
        async with AsyncLedger(server.base_url, server.token) as aledger:
            aledger.status_checks[TOOL] = check
            first = await aledger.recover(sessions=[other_session])
            second = await aledger.recover(sessions=[other_session])
            return first, second

    first, second = asyncio.run(main())
    assert (first.completed, second.completed, len(second.items)) == (1, 0, 0)
    assert reads.by_id(other_session)["charge-c"]["status"] == "completed"


def test_recover_reconciles_a_write_the_ledger_settled_at_its_deadline(server, reads, provider, session_key):
    # The host 'died' after the intent: nothing settles or extends it, the ledger settles it at 1 s.
    with Ledger(server.base_url, server.token) as ledger:
        ledger.batch([ops.approve(session_key, "t", "charge-d", TOOL),
                      ops.intent(session_key, "charge-d", "att-d", deadline_secs=1)])
        ikey = idempotency_key(ledger._get_ledger_id(), session_key, "charge-d")
    # ... but the provider did charge it before the host died.
    provider.charges[ikey] = {"id": "ch_dead_host", "idempotency_key": ikey, "status": "succeeded",
                              "created": now()}
    deadline = time.monotonic() + 10
    while entry(reads, session_key, "t", "charge-d")["ledger_status"] != "outcome_unknown":
        assert time.monotonic() < deadline, "the ledger did not settle the write at its deadline"
        time.sleep(0.2)
    assert entry(reads, session_key, "t", "charge-d")["settled_by"] == "ledger"
    with Ledger(server.base_url, server.token) as ledger:
        summary = ledger.recover(sessions=[session_key], checks={TOOL: run_example_check(server, provider)})
    assert (summary.completed, summary.errors) == (1, 0)
    found = entry(reads, session_key, "t", "charge-d")
    assert (found["outcome"]["status"], found["established_by"]) == ("completed", "status_check")
    last = history(reads, session_key, "charge-d")[-1]
    assert (last["attempt_id"], last["evidence"]["reference"]) == ("att-d", "ch_dead_host")


class _Recording(httpx.HTTPTransport):
    """The client's transport, keeping each request's method and path."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return super().handle_request(request)


class _AsyncRecording(httpx.AsyncHTTPTransport):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[tuple[str, str]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path))
        return await super().handle_async_request(request)


def test_recover_reconciles_the_attempt_the_unknowns_item_names_without_reading_history(
        server, reads, provider, session_key):
    # The queue's items name the entry's current attempt (`attempt_id`): recover reconciles that one,
    # one GET of the queue and one reconciliation per item, no history read.
    with Ledger(server.base_url, server.token) as ledger:
        ledger.batch([ops.approve(session_key, "t", "charge-e", TOOL),
                      ops.intent(session_key, "charge-e", "att-e"),
                      ops.settle(session_key, "charge-e", "att-e", "outcome_unknown")])
        ikey = idempotency_key(ledger._get_ledger_id(), session_key, "charge-e")
        page, _ = ledger._run(_unknowns_call(session_key))
    assert [m["attempt_id"] for m in page] == ["att-e"]
    provider.charges[ikey] = {"id": "ch_e", "idempotency_key": ikey, "status": "succeeded", "created": now()}
    recording = _Recording()
    with Ledger(server.base_url, server.token, transport=recording) as ledger:
        summary = ledger.recover(sessions=[session_key], checks={TOOL: run_example_check(server, provider)})
    assert (summary.completed, summary.errors) == (1, 0)
    assert not [p for _, p in recording.requests if p.endswith("/history")], recording.requests
    assert [m for m, p in recording.requests if p.endswith("/mutations/charge-e/reconciliation")] == ["POST"]
    last = history(reads, session_key, "charge-e")[-1]
    assert (last["kind"], last["attempt_id"], last["evidence"]["provider_status"]) == (
        "reconciliation", "att-e", "completed")

    # The async client likewise.
    with Ledger(server.base_url, server.token) as ledger:
        ledger.batch([ops.approve(session_key, "t", "charge-f", TOOL),
                      ops.intent(session_key, "charge-f", "att-f"),
                      ops.settle(session_key, "charge-f", "att-f", "outcome_unknown")])
        ikey = idempotency_key(ledger._get_ledger_id(), session_key, "charge-f")
    provider.charges[ikey] = {"id": "ch_f", "idempotency_key": ikey, "status": "succeeded", "created": now()}
    arecording = _AsyncRecording()

    async def main() -> Any:
        async with AsyncLedger(server.base_url, server.token, transport=arecording) as aledger:
            return await aledger.recover(sessions=[session_key], checks={TOOL: run_example_check(server, provider)})

    summary = asyncio.run(main())
    assert (summary.completed, summary.errors) == (1, 0)
    assert not [p for _, p in arecording.requests if p.endswith("/history")], arecording.requests
    assert history(reads, session_key, "charge-f")[-1]["attempt_id"] == "att-f"


def _unknowns_call(session_key: str) -> Any:
    from outcomes_ledger import _calls
    return _calls.unknowns(session_key, None)


def test_recover_never_touches_a_write_in_flight(server, reads, provider, session_key):
    check_calls: list[str] = []

    def check(op: UnknownOperation) -> Any:
        if op.session_key != session_key:  # sessions="all" below: other tests' unknowns stay as they are
            return Inconclusive("not this test's")
        check_calls.append(op.mutation_id)
        return Completed(reference="ch_should_not_be_used")

    with Ledger(server.base_url, server.token) as ledger:
        ledger.batch([ops.approve(session_key, "t", "charge-live", TOOL),
                      ops.intent(session_key, "charge-live", "att-live", deadline_secs=600)])
        summary = ledger.recover(sessions=[session_key], checks={TOOL: check})
        everywhere = ledger.recover(sessions="all", checks={TOOL: check})
    assert summary.items == [] and check_calls == []
    assert session_key not in [i.session_key for i in everywhere.items]
    found = entry(reads, session_key, "t", "charge-live")
    assert found["ledger_status"] == "execution_started"


def test_the_cli_recovers_with_a_module_of_checks(server, reads, provider, session_key, tmp_path):
    _unknown_charge(server, provider, session_key, "charge-cli")
    (tmp_path / "payment_checks.py").write_text(
        "import os\n"
        "import httpx\n"
        "from outcomes_ledger import Completed, Inconclusive, NotAccepted, UnknownOperation\n\n"
        "PAYMENTS = os.environ['PAYMENTS_URL']\n\n"
        + readme_example()[readme_example().index("def charge_status"):readme_example().index("ledger.status_checks")]
        + "\nchecks = {'payments.charge': charge_status}\n",
        encoding="utf-8")
    env = dict(os.environ, BASE_URL=server.base_url, OUTCOMES_HOST_TOKEN=server.token, PAYMENTS_URL=provider.url)
    cmd = [sys.executable, "-m", "outcomes_ledger", "recover", "--checks", "payment_checks:checks",
           "--session", session_key, "--session", session_key + "-none"]
    done = subprocess.run(cmd + ["--json"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["completed"], summary["errors"], summary["inconclusive"]) == (1, 0, 0)
    assert summary["items"][0]["mutation_id"] == "charge-cli"
    assert reads.by_id(session_key)["charge-cli"]["status"] == "completed"
    # Again, human-readable: nothing more to do.
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == (
        "reconciled completed: 0, reconciled not_accepted: 0, inconclusive: 0, errors: 0, skipped: 0")
    # The ledger cannot be read: exit 1.
    env["OUTCOMES_HOST_TOKEN"] = "not-the-token"
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "could not read the open unknowns" in done.stderr


def test_an_async_check_after_an_async_block(server, reads, provider, session_key):
    async def check(op: UnknownOperation):
        async with httpx.AsyncClient() as http:
            r = await http.get(f"{provider.url}/charges", params={"idempotency_key": op.idempotency_key})
        body = r.json()
        if r.status_code == 200 and body.get("idempotency_key") == op.idempotency_key:
            return Completed(reference=body["id"], observed_at=body["created"])
        return Inconclusive(f"HTTP {r.status_code}")

    async def main():
        async with AsyncLedger(server.base_url, server.token, status_delay=0.1) as ledger:
            try:
                async with ledger.protected_write(session_key=session_key, logical_turn_id="t",
                                                  mutation_id="charge-async", tool=TOOL, status=check) as op:
                    async with httpx.AsyncClient() as http:
                        await http.post(f"{provider.url}/charges", json={"amount": 1},
                                        headers={"Idempotency-Key": op.idempotency_key})
            except httpx.TransportError as exc:
                return op, exc

    op, exc = asyncio.run(main())
    assert op.outcome == "completed" and recorded_outcome(exc).outcome == "completed"
    assert entry(reads, session_key, "t", "charge-async")["established_by"] == "status_check"


def test_status_on_the_decorator_and_both_adapters(server, reads, provider, session_key):
    """`status=` on `protect`, `protected_function_tool` and `protected_tool`: the lost reply is settled
    by the check, and an adapter tells the model what the provider's status established."""
    from agents import Agent as AgentsAgent
    from pydantic_ai import Agent as PydanticAgent

    from outcomes_ledger.adapters.openai_agents import protected_function_tool
    from outcomes_ledger.adapters.openai_agents import run_turn as agents_run_turn
    from outcomes_ledger.adapters.pydantic_ai import protected_tool
    from outcomes_ledger.adapters.pydantic_ai import run_turn as pydantic_run_turn
    from test_openai_agents import NO_TRACING, ScriptedModel, function_outputs
    from test_pydantic_ai import scripted, tool_returns

    check = run_example_check(server, provider)

    def pay(key: str) -> None:
        httpx.post(f"{provider.url}/charges", json={"amount": 3}, headers={"Idempotency-Key": key}, timeout=5)

    with Ledger(server.base_url, server.token, status_delay=0.05) as ledger, ledger.turn(session_key, "t-dec"):
        @ledger.protect(tool=TOOL, status=check)
        def charge() -> None:
            from outcomes_ledger import current_write
            pay(current_write().idempotency_key)

        with pytest.raises(httpx.TransportError):
            charge(mutation_id="dec-1")

    agents_model = ScriptedModel([("call_pay_1", "charge_oa", {"amount": 3})])
    seen: list[Any] = []

    async def main() -> None:
        async with AsyncLedger(server.base_url, server.token, status_delay=0.05) as al:
            @protected_function_tool(al, tool=TOOL, status=check)
            async def charge_oa(amount: int) -> str:
                from outcomes_ledger import current_write
                await asyncio.to_thread(pay, current_write().idempotency_key)
                return "charged"

            await agents_run_turn(al, AgentsAgent(name="p", model=agents_model, tools=[charge_oa]), "go",
                                  session_key=session_key, logical_turn_id="t-oa", run_config=NO_TRACING)

            @protected_tool(al, tool=TOOL, status=check)
            async def charge_pyd(amount: int) -> str:
                from outcomes_ledger import current_write
                await asyncio.to_thread(pay, current_write().idempotency_key)
                return "charged"

            agent = PydanticAgent(scripted([("pyd_pay_1", "charge_pyd", {"amount": 3})], seen), tools=[charge_pyd])
            await pydantic_run_turn(al, agent, "go", session_key=session_key, logical_turn_id="t-pyd")

    asyncio.run(main())
    assert provider.charged == 3
    for turn, mutation in (("t-dec", "dec-1"), ("t-oa", "call_pay_1"), ("t-pyd", "pyd_pay_1")):
        found = entry(reads, session_key, turn, mutation)
        assert (found["outcome"]["status"], found["established_by"]) == ("completed", "status_check"), mutation
    took_effect = "the provider's own record shows it took effect"
    assert took_effect in function_outputs(agents_model)["call_pay_1"]
    assert took_effect in tool_returns(seen[1])["pyd_pay_1"]
