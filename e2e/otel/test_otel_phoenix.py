"""The OpenTelemetry export against a real backend: Arize Phoenix (PyPI `arize-phoenix`, its OTLP/HTTP
receiver), the spans read back through Phoenix's REST API (`GET /v1/projects/default/spans`).
docs/operations.md "OpenTelemetry".

1. `test_outcomes_arrive_with_their_attributes`: a completed, a failed, an unknown and a reconciled
   write arrive as `mutation_outcome {tool}` spans, the reconciliation as `reconcile {tool}`, with the
   exact attributes, status (ERROR only for failed) and structure (one trace for the session, no parent).
   Phoenix keeps no span links; the link of `reconcile {tool}` to its write is checked on the wire
   instead (`test_the_reconcile_span_links_the_write`, the request decoded with `opentelemetry-proto`,
   Phoenix's own dependency).
2. `test_a_write_with_a_traceparent_is_a_child_of_the_host_span`: a write approved with a W3C
   `traceparent` arrives in that trace with that parent span id and without `gen_ai.operation.name`; its
   reconciliation is in the same trace.
3. `test_a_span_the_backend_refuses_is_dropped_alone` (a receiver of the test's own answering 400 to
   any request holding one span): the batch is split until that span is alone, it is dropped, the others
   arrive, and `/metrics` counts both (`outcomes_otel_spans_total`, `outcomes_otel_outbox_pending`).
4. `test_spans_written_while_phoenix_is_down_arrive_once`: Phoenix stopped, 200 writes, the server killed
   with SIGKILL and started again, then Phoenix started on its port: all 200 spans arrive, none twice, and
   the server's outbox is empty.

Ports: 4700-4799 on 127.0.0.1 only (another range of 100 from `OTEL_E2E_PORT_BASE`). Run:
`PHOENIX_BIN=<venv>/bin/phoenix OUTCOMES_BIN=target/release/outcomes <venv>/bin/python -m pytest -q e2e/otel`
(scripts/test.sh does, with the venv scripts/setup.sh makes).
"""

import json
import os
import pathlib
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

TOKEN = "otel-e2e-token"
TOOL = "create_issue"
PORT_BASE = int(os.environ.get("OTEL_E2E_PORT_BASE", "4700"))
PORTS = range(PORT_BASE, PORT_BASE + 100)


def free_port(taken=()):
    for p in PORTS:
        if p in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                continue
            return p
    pytest.fail(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


def outcomes_bin():
    path = os.environ.get("OUTCOMES_BIN")
    if not path:
        root = pathlib.Path(__file__).resolve().parents[2]
        for candidate in (root / "target/release/outcomes", root / "target/debug/outcomes"):
            if candidate.exists():
                return str(candidate)
        pytest.fail("OUTCOMES_BIN must name the outcomes binary")
    return path


class Phoenix:
    """`phoenix serve` on a loopback port with a working directory of its own (its SQLite database)."""

    def __init__(self, work_dir, port, grpc_port):
        self.work_dir, self.port, self.grpc_port = work_dir, port, grpc_port
        self.base = f"http://127.0.0.1:{port}"
        self.proc = None

    def start(self):
        env = dict(os.environ, PHOENIX_WORKING_DIR=self.work_dir, PHOENIX_HOST="127.0.0.1",
                   PHOENIX_PORT=str(self.port), PHOENIX_GRPC_PORT=str(self.grpc_port),
                   PHOENIX_TELEMETRY_ENABLED="false")
        self.log = open(os.path.join(self.work_dir, "phoenix.log"), "ab")
        self.proc = subprocess.Popen([os.environ.get("PHOENIX_BIN", "phoenix"), "serve"], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("phoenix exited; see " + self.log.name)
            try:
                with urllib.request.urlopen(self.base + "/v1/projects", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        pytest.fail("phoenix did not start within 120 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def spans(self):
        """Every span of the default project (all pages)."""
        out, cursor = [], None
        while True:
            q = {"limit": "1000"}
            if cursor:
                q["cursor"] = cursor
            url = f"{self.base}/v1/projects/default/spans?{urllib.parse.urlencode(q)}"
            with urllib.request.urlopen(url, timeout=10) as r:
                page = json.load(r)
            out += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def wait_spans(self, n, within, match=lambda s: True):
        end = time.monotonic() + within
        got = []
        while time.monotonic() < end:
            got = [s for s in self.spans() if match(s)]
            if len(got) >= n:
                return got
            time.sleep(0.5)
        return got


class Server:
    """`outcomes serve` on a loopback port, exporting to `endpoint`."""

    def __init__(self, data_dir, endpoint, taken=()):
        self.dir = data_dir
        self.port = free_port(taken)
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.dir, f"server-{self.port}.log"), "ab")
        self.proc = subprocess.Popen(
            [outcomes_bin(), "serve", "--addr", f"127.0.0.1:{self.port}", "--data-dir", self.dir,
             "--host-token", TOKEN, "--otlp-endpoint", endpoint, "--otlp-retry-base-ms", "200",
             "--otlp-retry-max-ms", "2000"],
            stdout=self.log, stderr=subprocess.STDOUT)
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

    def write(self, session, m, status, turn="t-1", traceparent=None):
        base = f"/api/host/sessions/{urllib.parse.quote(session, safe='')}/mutations"
        approve = {"logical_turn_id": turn, "mutation_id": m, "tool": TOOL}
        if traceparent is not None:
            approve["traceparent"] = traceparent
        self.ok("POST", base, approve, expected=201)
        self.ok("POST", f"{base}/{m}/intent", {"attempt_id": "a1"})
        self.ok("POST", f"{base}/{m}/settlement", {"attempt_id": "a1", "status": status})

    def reconcile(self, session, m):
        base = f"/api/host/sessions/{urllib.parse.quote(session, safe='')}/mutations"
        self.ok("POST", f"{base}/{m}/reconciliation", {
            "attempt_id": "a1", "completed": True,
            "evidence": {"source": "github", "reference": "issue #7", "observed_at": "2026-01-01T00:00:00Z",
                         "provider_status": "completed"}})

    def pending(self):
        db = sqlite3.connect(os.path.join(self.dir, "ledger.sqlite"))
        try:
            return db.execute("SELECT COUNT(*) FROM otel_outbox").fetchone()[0]
        finally:
            db.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture
def work():
    d = tempfile.mkdtemp(prefix="outcomes-otel-")
    os.makedirs(os.path.join(d, "phoenix"))
    os.makedirs(os.path.join(d, "server"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def phoenix():
    """One Phoenix for the tests that only read spans back (each its own session, so its own spans):
    a start costs about half a minute."""
    d = tempfile.mkdtemp(prefix="outcomes-otel-phoenix-")
    px_port = free_port()
    px = Phoenix(d, px_port, free_port({px_port}))
    px.start()
    yield px
    px.stop()
    shutil.rmtree(d, ignore_errors=True)


def of_session(session):
    return lambda s: s["attributes"].get("gen_ai.conversation.id") == session


def ours(attrs):
    """The attributes the ledger sent (Phoenix adds `tool.*` and `session.id` of its own)."""
    return {k: v for k, v in attrs.items() if k.startswith(("gen_ai.", "outcomes."))}


def test_outcomes_arrive_with_their_attributes(work, phoenix):
    px = phoenix
    srv = Server(os.path.join(work, "server"), px.base, taken={px.port, px.grpc_port})
    try:
        srv.write("otel s1", "m-completed", "completed")
        srv.write("otel s1", "m-failed", "failed")
        srv.write("otel s1", "m-unknown", "outcome_unknown")
        srv.write("otel s1", "m-reconciled", "outcome_unknown")
        srv.reconcile("otel s1", "m-reconciled")
        spans = px.wait_spans(5, 30, of_session("otel s1"))
        assert len(spans) == 5, [s["name"] for s in spans]
        by = {(s["name"], s["attributes"]["gen_ai.tool.call.id"]): s for s in spans}
        url = f"{srv.base}/sessions/otel%20s1/operations/"
        revisions = {}
        for m, status, code in [("m-completed", "completed", "UNSET"), ("m-failed", "failed", "ERROR"),
                                ("m-unknown", "outcome_unknown", "UNSET"),
                                ("m-reconciled", "outcome_unknown", "UNSET")]:
            s = by[(f"mutation_outcome {TOOL}", m)]
            assert s["status_code"] == code, (m, s["status_code"])
            assert s["parent_id"] is None
            a = ours(s["attributes"])
            revisions[m] = a.pop("outcomes.revision")
            assert isinstance(revisions[m], int)
            assert a == {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": TOOL, "gen_ai.tool.call.id": m,
                "gen_ai.conversation.id": "otel s1", "outcomes.status": status,
                "outcomes.logical_turn_id": "t-1", "outcomes.operation_url": url + m}, m
            assert s["start_time"] <= s["end_time"]
        r = by[(f"reconcile {TOOL}", "m-reconciled")]
        assert r["status_code"] == "UNSET" and r["parent_id"] is None
        a = ours(r["attributes"])
        assert a.pop("outcomes.revision") > revisions["m-reconciled"]
        assert a == {
            "gen_ai.tool.name": TOOL, "gen_ai.tool.call.id": "m-reconciled", "gen_ai.conversation.id": "otel s1",
            "outcomes.status": "completed", "outcomes.established_by": "host",
            "outcomes.provider_status": "completed", "outcomes.logical_turn_id": "t-1",
            "outcomes.operation_url": url + "m-reconciled"}
        # One trace for the session (no traceparent from the host), each span its own id.
        assert len({s["context"]["trace_id"] for s in spans}) == 1
        assert len({s["context"]["span_id"] for s in spans}) == 5
        time.sleep(1.5)
        assert len([s for s in px.spans() if of_session("otel s1")(s)]) == 5, "nothing sent twice"
        assert srv.pending() == 0
    finally:
        srv.stop()


class Receiver:
    """An OTLP/HTTP receiver of the test's own on a loopback port: each request decoded with
    `opentelemetry-proto` (Phoenix's own dependency), kept as `(path, content type, request)`, and
    answered `refuse(request)` (a status to refuse it with) or 200. For what Phoenix does not show (span
    links) or cannot be made to do (refuse a span)."""

    def __init__(self, refuse=lambda req: None):
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        got = self.got = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                status = refuse(req) or 200
                if status == 200:
                    got.append((self.path, self.headers.get("content-type"), req))
                self.send_response(status)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def spans(self):
        """`(resource spans, span)` of every request answered 200."""
        return [(rs, sp) for _, _, req in list(self.got) for rs in req.resource_spans
                for ss in rs.scope_spans for sp in ss.spans]

    def wait_spans(self, n, within):
        end = time.monotonic() + within
        while time.monotonic() < end and len(self.spans()) < n:
            time.sleep(0.1)
        return self.spans()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def call_ids(req):
    return [a.value.string_value for rs in req.resource_spans for ss in rs.scope_spans for sp in ss.spans
            for a in sp.attributes if a.key == "gen_ai.tool.call.id"]


def test_the_reconcile_span_links_the_write(work):
    rx = Receiver()
    srv = Server(os.path.join(work, "server"), rx.base, taken={rx.port})
    try:
        srv.write("s", "m-1", "outcome_unknown")
        srv.reconcile("s", "m-1")
        spans = rx.wait_spans(2, 15)
        assert len(spans) == 2
        assert {p for p, _, _ in rx.got} == {"/v1/traces"}
        assert {c for _, c, _ in rx.got} == {"application/x-protobuf"}
        names = {sp.name: sp for _, sp in spans}
        write, rec = names[f"mutation_outcome {TOOL}"], names[f"reconcile {TOOL}"]
        service = [a.value.string_value for a in spans[0][0].resource.attributes if a.key == "service.name"]
        assert service == ["outcomes"]
        assert write.kind == rec.kind == 1  # SPAN_KIND_INTERNAL
        assert len(rec.links) == 1
        assert rec.links[0].trace_id == write.trace_id and rec.links[0].span_id == write.span_id
        assert rec.trace_id == write.trace_id and not rec.parent_span_id and not write.parent_span_id
    finally:
        srv.stop()
        rx.close()


def test_a_span_the_backend_refuses_is_dropped_alone(work):
    """A backend that answers 400 to any request holding one span (as a collector does to content it
    will not take): the worker splits the batch until that span is alone and drops it; the 29 others
    arrive once each, at once (no 24 h of retries), nothing stays in the outbox, and /metrics counts
    both."""
    refused = []

    def refuse(req):
        ids = call_ids(req)
        if "m-poison" in ids:
            refused.append(len(ids))
            return 400
        return None

    rx = Receiver(refuse)
    srv = Server(os.path.join(work, "server"), rx.base, taken={rx.port})
    try:
        # One batch request, one transaction: the 30 rows are queued together and exported together.
        ops = []
        for i in range(30):
            m = "m-poison" if i == 17 else f"m-{i:02}"
            ops += [{"op": "approve", "session_key": "refused", "logical_turn_id": "t-1", "mutation_id": m,
                     "tool": TOOL},
                    {"op": "intent", "session_key": "refused", "mutation_id": m, "attempt_id": "a1"},
                    {"op": "settle", "session_key": "refused", "mutation_id": m, "attempt_id": "a1",
                     "status": "completed"}]
        status, text = srv.call("POST", "/api/host/batch", {"operations": ops})
        assert status == 200 and all(r["status"] in (200, 201) for r in json.loads(text)["results"]), text
        spans = rx.wait_spans(29, 20)
        end = time.monotonic() + 10
        while time.monotonic() < end and srv.pending() > 0:
            time.sleep(0.1)
        ids = sorted(a.value.string_value for _, sp in spans for a in sp.attributes
                     if a.key == "gen_ai.tool.call.id")
        assert ids == sorted(f"m-{i:02}" for i in range(30) if i != 17), ids
        assert srv.pending() == 0
        # The whole batch first, then ever smaller parts holding it (about log2(30) of them), at last alone.
        assert refused[0] == 30 and refused[-1] == 1, refused
        assert all(a > b for a, b in zip(refused, refused[1:])) and len(refused) <= 7, refused
        status, metrics = srv.call("GET", "/metrics")
        assert status == 200
        lines = metrics.splitlines()
        assert 'outcomes_otel_spans_total{result="refused"} 1' in lines, metrics
        assert 'outcomes_otel_spans_total{result="exported"} 29' in lines, metrics
        assert "outcomes_otel_outbox_pending 0" in lines, metrics
    finally:
        srv.stop()
        rx.close()


def test_a_write_with_a_traceparent_is_a_child_of_the_host_span(work, phoenix):
    trace, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    px = phoenix
    srv = Server(os.path.join(work, "server"), px.base, taken={px.port, px.grpc_port})
    try:
        srv.write("traced", "m-traced", "outcome_unknown", traceparent=f"00-{trace}-{parent}-01")
        srv.reconcile("traced", "m-traced")
        srv.write("traced", "m-plain", "completed")
        spans = px.wait_spans(3, 30, of_session("traced"))
        assert len(spans) == 3, [s["name"] for s in spans]
        by = {(s["name"], s["attributes"]["gen_ai.tool.call.id"]): s for s in spans}
        w = by[(f"mutation_outcome {TOOL}", "m-traced")]
        assert w["context"]["trace_id"] == trace
        assert w["parent_id"] == parent
        a = ours(w["attributes"])
        a.pop("outcomes.revision")
        assert a == {
            "gen_ai.tool.name": TOOL, "gen_ai.tool.call.id": "m-traced", "gen_ai.conversation.id": "traced",
            "outcomes.status": "outcome_unknown", "outcomes.logical_turn_id": "t-1",
            "outcomes.operation_url": f"{srv.base}/sessions/traced/operations/m-traced"}
        r = by[(f"reconcile {TOOL}", "m-traced")]
        assert r["context"]["trace_id"] == trace and r["parent_id"] is None
        assert "gen_ai.operation.name" not in r["attributes"]
        # Without a traceparent: the session's own trace, no parent, execute_tool.
        p = by[(f"mutation_outcome {TOOL}", "m-plain")]
        assert p["context"]["trace_id"] != trace and p["parent_id"] is None
        assert p["attributes"]["gen_ai.operation.name"] == "execute_tool"
    finally:
        srv.stop()


def test_spans_written_while_phoenix_is_down_arrive_once(work):
    n = 200
    px_port = free_port()
    px = Phoenix(os.path.join(work, "phoenix"), px_port, free_port({px_port}))
    srv = Server(os.path.join(work, "server"), px.base, taken={px_port, px.grpc_port})
    try:
        for i in range(n):
            srv.write("down", f"m-{i:03}", "completed", turn=f"t-{i // 50}")
        time.sleep(1.0)
        assert srv.pending() == n, "nothing exported while Phoenix is down"
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        srv.stop()
        srv = Server(os.path.join(work, "server"), px.base, taken={px_port, px.grpc_port})
        px.start()
        spans = px.wait_spans(n, 60)
        time.sleep(3)
        spans = px.spans()
        ids = [s["attributes"]["gen_ai.tool.call.id"] for s in spans]
        assert len(ids) == n and set(ids) == {f"m-{i:03}" for i in range(n)}, (len(ids), len(set(ids)))
        assert len({s["context"]["span_id"] for s in spans}) == n
        assert srv.pending() == 0
    finally:
        srv.stop()
        px.stop()
