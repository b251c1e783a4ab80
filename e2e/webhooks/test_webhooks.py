"""Webhooks as a third party's receiver sees them (docs/api.md "Webhooks").

Every delivery is verified with the `standardwebhooks` package (PyPI; the Standard Webhooks project's own
library, not ours): `Webhook(secret).verify(body, headers)` raises on a bad signature or timestamp.

1. `test_unknown_stale_and_resolved`: `outcome.unknown` arrives within 2 s of the settle;
   `outcome.unknown_stale` once after the threshold (`--stale-after-secs 2`), not again;
   `outcome.resolved` after a reconciliation. The endpoint is added with `outcomes webhooks add`, whose
   last line is the secret.
2. `test_retries_keep_the_webhook_id`: a receiver answering 500 three times then 200 gets the same
   `webhook-id` (and body) four times.
3. `test_kill_9_between_the_change_and_the_delivery`: the receiver is down when the outcome settles and the
   server is killed with SIGKILL; after a restart the event is delivered, once.
4. `test_two_instances_on_postgres_deliver_each_event_once` (only with `OUTCOMES_TEST_POSTGRES`, a
   database URL; scripts/test.sh runs it in its Postgres step): two servers on one ledger, 20 unknowns
   written through both, each `webhook-id` arrives once.
5. Deadlines (docs/api.md "Deadlines"), real servers: a write whose host died is settled by the ledger at
   its deadline and alerted once, its late report taken once; a live host's extensions keep it in flight;
   a deadline that passed while no server ran gets 60 s after the start; two instances on Postgres settle
   each deadline once (one history row, one delivery).

Run: `OUTCOMES_BIN=target/release/outcomes python3 -m pytest -q e2e/webhooks` (scripts/test.sh does).
Needs `standardwebhooks` and `pytest` (scripts/setup.sh installs them).
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook

TOKEN = "webhooks-e2e-token"
TOOL = "mcp__dashboards__create"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def outcomes_bin():
    path = os.environ.get("OUTCOMES_BIN")
    if not path:
        root = pathlib.Path(__file__).resolve().parents[2]
        for candidate in (root / "target/release/outcomes", root / "target/debug/outcomes"):
            if candidate.exists():
                return str(candidate)
        pytest.fail("OUTCOMES_BIN must name the outcomes binary")
    return path


class Receiver:
    """A receiver on a loopback port: verifies each delivery with `standardwebhooks` once the secret is
    known, answers with the next status of `answers` (the last one repeated)."""

    def __init__(self, answers=(200,), port=None):
        self.answers = list(answers)
        self.secret = None
        self.got = []  # (monotonic time, headers dict, body bytes, verified payload)
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                event = Webhook(outer.secret).verify(body, headers)
                with outer.lock:
                    n = len(outer.got)
                    outer.got.append((time.monotonic(), headers, body, event))
                self.send_response(outer.answers[min(n, len(outer.answers) - 1)])
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port or 0), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, n, within):
        end = time.monotonic() + within
        while time.monotonic() < end:
            with self.lock:
                if len(self.got) >= n:
                    break
            time.sleep(0.02)
        with self.lock:
            return list(self.got)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Server:
    """`outcomes serve` on a free loopback port with webhooks to private addresses allowed."""

    def __init__(self, data_dir, extra=(), database=None):
        self.dir = data_dir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir, f"server-{self.port}.log"), "ab")
        db = ["--database", database] if database else []
        self.proc = subprocess.Popen(
            [outcomes_bin(), "serve", "--addr", f"127.0.0.1:{self.port}", "--data-dir", self.dir,
             "--host-token", TOKEN, "--webhook-allow-private", *db, *extra],
            stdout=self.log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        pytest.fail("the server did not start")

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
            req.add_header("Authorization", f"Bearer {TOKEN}")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def ok(self, method, path, body, expected=200):
        status, text = self.call(method, path, body)
        assert status == expected, (method, path, status, text)

    def unknown(self, session, m):
        base = f"/api/host/sessions/{urllib.parse.quote(session, safe='')}/mutations"
        self.ok("POST", base, {"logical_turn_id": "t-1", "mutation_id": m, "tool": TOOL}, expected=201)
        self.ok("POST", f"{base}/{m}/intent", {"attempt_id": "a1"})
        self.ok("POST", f"{base}/{m}/settlement", {"attempt_id": "a1", "status": "outcome_unknown"})

    def reconcile(self, session, m):
        base = f"/api/host/sessions/{urllib.parse.quote(session, safe='')}/mutations"
        self.ok("POST", f"{base}/{m}/reconciliation", {
            "attempt_id": "a1", "completed": True,
            "evidence": {"source": "github", "reference": "issue #7", "observed_at": "2026-01-01T00:00:00Z"}})

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


def add_endpoint(data_dir, url, database=None):
    db = ["--database", database] if database else []
    out = subprocess.run(
        [outcomes_bin(), "webhooks", "add", url, "--data-dir", data_dir, "--webhook-allow-private", *db],
        capture_output=True, text=True, check=True)
    secret = out.stdout.strip().splitlines()[-1]
    assert secret.startswith("whsec_"), out.stdout
    return secret


@pytest.fixture
def data_dir():
    d = tempfile.mkdtemp(prefix="outcomes-webhooks-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_unknown_stale_and_resolved(data_dir):
    rx = Receiver()
    rx.secret = add_endpoint(data_dir, rx.url)
    srv = Server(data_dir, ["--stale-after-secs", "2"])
    try:
        settled = time.monotonic()
        srv.unknown("s-1", "m-1")
        got = rx.wait(1, 3)
        assert len(got) == 1
        at, headers, body, event = got[0]
        assert at - settled < 2.0, at - settled
        assert event["type"] == "outcome.unknown"
        assert event["data"] == {
            "session_key": "s-1", "logical_turn_id": "t-1", "mutation_id": "m-1", "tool": TOOL,
            "status": "outcome_unknown", "age_secs": 0, "dashboard_path": "/sessions/s-1/operations/m-1"}
        print("headers:", {k: v for k, v in headers.items() if k.startswith("webhook-") or k == "content-type"})
        print("body:", body.decode())

        got = rx.wait(2, 5)
        assert len(got) == 2
        assert got[1][3]["type"] == "outcome.unknown_stale"
        assert 2.0 <= got[1][0] - settled < 4.0, got[1][0] - settled
        assert got[1][3]["data"]["age_secs"] >= 2
        time.sleep(2.5)
        assert len(rx.wait(3, 0)) == 2, "the stale alert is sent once"

        srv.reconcile("s-1", "m-1")
        got = rx.wait(3, 3)
        assert len(got) == 3
        assert got[2][3]["type"] == "outcome.resolved"
        assert got[2][3]["data"]["status"] == "completed"
        ids = {g[1]["webhook-id"] for g in got}
        assert len(ids) == 3
    finally:
        srv.stop()
        rx.close()


def test_retries_keep_the_webhook_id(data_dir):
    rx = Receiver(answers=(500, 500, 500, 200))
    rx.secret = add_endpoint(data_dir, rx.url)
    srv = Server(data_dir, ["--webhook-retry-base-ms", "200"])
    try:
        srv.unknown("s-1", "m-1")
        got = rx.wait(4, 10)
        assert len(got) == 4
        assert len({g[1]["webhook-id"] for g in got}) == 1
        assert len({g[2] for g in got}) == 1, "the same body every time"
        time.sleep(1.5)
        assert len(rx.wait(5, 0)) == 4, "delivered: no fifth attempt"
    finally:
        srv.stop()
        rx.close()


def test_kill_9_between_the_change_and_the_delivery(data_dir):
    port = free_port()
    secret = add_endpoint(data_dir, f"http://127.0.0.1:{port}/hook")
    srv = Server(data_dir)
    srv.unknown("s-1", "m-1")
    # No receiver yet: the first attempt fails (connection refused), then the server dies.
    time.sleep(0.5)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.stop()
    rx = Receiver(port=port)
    rx.secret = secret
    srv = Server(data_dir, ["--webhook-retry-base-ms", "200"])
    try:
        got = rx.wait(1, 15)
        assert len(got) == 1
        assert got[0][3]["data"]["mutation_id"] == "m-1"
        time.sleep(2)
        assert len(rx.wait(2, 0)) == 1, "delivered once"
    finally:
        srv.stop()
        rx.close()


def test_two_instances_on_postgres_deliver_each_event_once(data_dir):
    base = os.environ.get("OUTCOMES_TEST_POSTGRES")
    if not base:
        pytest.skip("Postgres only (OUTCOMES_TEST_POSTGRES)")
    sep = "&" if "?" in base else "?"
    database = f"{base}{sep}options=-c%20search_path%3Dwebhooks_e2e_{os.getpid()}_{int(time.time())}"
    rx = Receiver()
    rx.secret = add_endpoint(data_dir, rx.url, database)
    a = Server(data_dir, database=database)
    b = Server(data_dir, database=database)
    try:
        for i in range(20):
            (a if i % 2 else b).unknown(f"s-{i % 3}", f"m-{i}")
        got = rx.wait(20, 10)
        time.sleep(2)
        got = rx.wait(21, 0)
        ids = [g[1]["webhook-id"] for g in got]
        assert len(ids) == 20 and len(set(ids)) == 20, ids
        assert sorted(g[3]["data"]["mutation_id"] for g in got) == sorted(f"m-{i}" for i in range(20))
        # Which instance delivered what (their logs): together 20, whatever the split.
        counts = []
        for srv in (a, b):
            srv.log.flush()
            with open(srv.log.name, "rb") as f:
                counts.append(f.read().count(b"webhook delivered"))
        print("deliveries per instance:", counts)
        assert sum(counts) == 20, counts
    finally:
        a.stop()
        b.stop()
        rx.close()


def intent_only(srv, session, m, deadline_secs):
    """Approves `m` and records its intent with `deadline_secs`; nothing settles it (its host died)."""
    base = f"/api/host/sessions/{urllib.parse.quote(session, safe='')}/mutations"
    srv.ok("POST", base, {"logical_turn_id": "t-1", "mutation_id": m, "tool": TOOL}, expected=201)
    srv.ok("POST", f"{base}/{m}/intent", {"attempt_id": "a1", "deadline_secs": deadline_secs})
    return f"{base}/{m}"


def entry_of(srv, session, m):
    status, text = srv.call("GET", f"/api/sessions/{session}/turns/t-1/entries")
    assert status == 200, text
    return next(e for e in json.loads(text)["entries"] if e["outcome"]["mutation_id"] == m)


def history_of(srv, session, m):
    status, text = srv.call("GET", f"/api/sessions/{session}/mutations/{m}/history")
    assert status == 200, text
    return json.loads(text)["changes"]


def deadline_settlements(srv):
    status, text = srv.call("GET", "/metrics")
    assert status == 200, text
    for line in text.splitlines():
        if line.startswith("outcomes_deadline_settlements_total "):
            return float(line.split()[1])
    raise AssertionError("outcomes_deadline_settlements_total missing:\n" + text)


def test_a_write_whose_host_died_is_settled_at_its_deadline_and_alerted_once(data_dir):
    """docs/api.md "Deadlines": nothing settles an intent with a 2 s deadline; within 5 s the ledger has
    settled it outcome_unknown (execution_timeout) as actor `ledger`, one `outcome.unknown` webhook went
    out, /metrics counts it; the host's late report is then taken once, a second refused."""
    rx = Receiver()
    rx.secret = add_endpoint(data_dir, rx.url)
    srv = Server(data_dir)
    try:
        assert deadline_settlements(srv) == 0
        started = time.monotonic()
        path = intent_only(srv, "s-1", "m-1", 2)
        # DESIGN's bound: within 5 s of the deadline (2 s after the intent), delivery included.
        got = rx.wait(1, 9)
        assert len(got) == 1, got
        assert 2.0 <= got[0][0] - started < 2.0 + 5.0, got[0][0] - started
        assert got[0][3]["type"] == "outcome.unknown"
        assert got[0][3]["data"]["mutation_id"] == "m-1"
        e = entry_of(srv, "s-1", "m-1")
        assert (e["ledger_status"], e["outcome"]["status"], e["outcome"].get("reason"), e["settled_by"]) == (
            "outcome_unknown", "outcome_unknown", "execution_timeout", "ledger")
        last = history_of(srv, "s-1", "m-1")[-1]
        assert (last["kind"], last["actor"], last["settled_by"]) == ("settlement", "ledger", "ledger")
        assert deadline_settlements(srv) == 1
        time.sleep(1.5)
        assert len(rx.wait(2, 0)) == 1, "alerted once"
        # The host was alive after all: its report is taken once, a second one is refused.
        srv.ok("POST", f"{path}/settlement", {"attempt_id": "a1", "status": "failed"})
        e = entry_of(srv, "s-1", "m-1")
        assert (e["ledger_status"], e["settled_by"], e["outcome"].get("reason")) == ("failed", "host", None)
        # …and resolves the alert.
        got = rx.wait(2, 3)
        assert len(got) == 2, got
        assert got[1][3]["type"] == "outcome.resolved"
        assert got[1][3]["data"]["status"] == "failed"
        status, text = srv.call("POST", f"{path}/settlement", {"attempt_id": "a1", "status": "completed"})
        assert status == 409 and json.loads(text)["error"]["code"] == "not_in_flight", text
    finally:
        srv.stop()
        rx.close()


def test_a_live_host_extending_its_deadline_keeps_its_write_in_flight(data_dir):
    srv = Server(data_dir)
    try:
        path = intent_only(srv, "s-1", "m-1", 2)
        for _ in range(5):
            time.sleep(1)
            srv.ok("POST", f"{path}/deadline", {"attempt_id": "a1", "deadline_secs": 2})
        assert entry_of(srv, "s-1", "m-1")["ledger_status"] == "execution_started"
        srv.ok("POST", f"{path}/settlement", {"attempt_id": "a1", "status": "completed"})
        e = entry_of(srv, "s-1", "m-1")
        assert (e["ledger_status"], e["settled_by"]) == ("completed", "host")
        assert deadline_settlements(srv) == 0
        status, text = srv.call("POST", f"{path}/deadline", {"attempt_id": "a1", "deadline_secs": 0})
        assert status == 422 and json.loads(text)["error"]["field"] == "deadline_secs", text
    finally:
        srv.stop()


def test_a_deadline_that_passed_while_the_server_was_down_gets_a_minute_after_the_start(data_dir):
    srv = Server(data_dir)
    intent_only(srv, "s-1", "m-1", 2)
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    srv.stop()
    time.sleep(3)  # the deadline passes while no server runs
    before = time.time()
    srv = Server(data_dir)
    try:
        time.sleep(3)
        e = entry_of(srv, "s-1", "m-1")
        assert e["ledger_status"] == "execution_started", e
        from datetime import datetime
        deadline = datetime.fromisoformat(e["deadline_at"].replace("Z", "+00:00")).timestamp()
        assert before + 55 <= deadline <= time.time() + 60, (before, deadline)
    finally:
        srv.stop()


def test_two_instances_on_postgres_settle_each_deadline_once(data_dir):
    base = os.environ.get("OUTCOMES_TEST_POSTGRES")
    if not base:
        pytest.skip("Postgres only (OUTCOMES_TEST_POSTGRES)")
    sep = "&" if "?" in base else "?"
    database = f"{base}{sep}options=-c%20search_path%3Ddeadlines_e2e_{os.getpid()}_{int(time.time())}"
    rx = Receiver()
    rx.secret = add_endpoint(data_dir, rx.url, database)
    a = Server(data_dir, database=database)
    b = Server(data_dir, database=database)
    try:
        for i in range(10):
            intent_only(a if i % 2 else b, "s-1", f"m-{i}", 2)
        got = rx.wait(10, 8)
        time.sleep(2)
        got = rx.wait(11, 0)
        ids = [g[1]["webhook-id"] for g in got]
        assert len(ids) == 10 and len(set(ids)) == 10, ids
        assert {g[3]["type"] for g in got} == {"outcome.unknown"}
        for i in range(10):
            by_ledger = [c for c in history_of(a, "s-1", f"m-{i}") if c["actor"] == "ledger"]
            assert len(by_ledger) == 1, by_ledger
        assert deadline_settlements(a) + deadline_settlements(b) == 10
    finally:
        a.stop()
        b.stop()
        rx.close()
