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
