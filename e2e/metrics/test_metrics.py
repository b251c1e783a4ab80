"""`GET /metrics` as Prometheus tooling reads it (docs/api.md "Metrics").

1. `test_exact_values_through_prometheus_client`: a server of its own, a known sequence of writes, then
   the exposition parsed by `prometheus_client.parser.text_string_to_metric_families` (PyPI
   `prometheus_client`) with EXACT values: every ledger gauge (the webhook outbox's too), every
   transition series, the histogram's counts per operation, busy and failed credentials. The ages run on
   the real clock, so they are compared with the support queue's `oldest_unknown_age_secs` and in-flight
   `age_secs` read just before and just after the scrape (retried until both reads fall within one
   second): one figure, exactly.
   The separate listener of `--metrics-addr` answers the same exposition (and a JSON 404 elsewhere).
2. `test_prometheus_alert_fires_then_resolves`: Debian's `prometheus` scrapes the server every second and
   evaluates `outcomes_unknown_oldest_age_seconds > 2` (`for: 1s`); `/api/v1/alerts` shows it firing
   once an outcome has been unknown that long, and not at all once staff reconciled it (`/api/v1/rules`
   then says `inactive`). About 10 s.

Run: `OUTCOMES_BIN=target/release/outcomes python3 -m pytest -q e2e/metrics` (scripts/test.sh does).
Needs `prometheus_client` and `pytest` (scripts/setup.sh installs them) and `prometheus` on PATH (Debian's
package, scripts/setup.sh); each test starts its own server on a free loopback port, in a temporary data
directory, and stops it.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

TOKEN = "metrics-e2e-token"
DASHBOARDS = "mcp__dashboards__create"
# A tool name with a quote and a backslash: the label value must come back exactly as written.
CODEHOST = 'mcp__code"host\\create_issue'


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


class Server:
    """`outcomes serve` on a free loopback port (reads open: loopback, --access auto)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="outcomes-metrics-")
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        # The separate metrics listener (--metrics-addr) too.
        self.metrics_port = free_port()
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen(
            [outcomes_bin(), "serve", "--addr", f"127.0.0.1:{self.port}", "--data-dir", self.dir,
             "--host-token", TOKEN, "--write-wait-ms", "300",
             "--metrics-addr", f"127.0.0.1:{self.metrics_port}"],
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

    def call(self, method, path, body=None, token=None, headers=None, base=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request((base or self.base) + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(), e.headers

    def host(self, method, path, body):
        status, text, _ = self.call(method, path, body, token=TOKEN)
        return status, (json.loads(text) if text else None)

    def ok(self, method, path, body, expected=200):
        status, answer = self.host(method, path, body)
        assert status == expected, (method, path, status, answer)
        return answer

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.stop()


def q(s):
    return urllib.parse.quote(s, safe="")


def approve(srv, session, m, tool=DASHBOARDS):
    srv.ok("POST", f"/api/host/sessions/{q(session)}/mutations",
           {"logical_turn_id": "t-1", "mutation_id": m, "tool": tool}, expected=201)


def step(srv, session, m, what, body):
    method = "PUT" if what == "metadata" else "POST"
    return srv.ok(method, f"/api/host/sessions/{q(session)}/mutations/{q(m)}/{what}", body)


def settled(srv, session, m, status, tool=DASHBOARDS):
    approve(srv, session, m, tool)
    step(srv, session, m, "intent", {"attempt_id": "a1"})
    if status is not None:
        step(srv, session, m, "settlement", {"attempt_id": "a1", "status": status})


def reconcile(srv, session, m):
    step(srv, session, m, "reconciliation", {
        "attempt_id": "a1", "completed": True,
        "evidence": {"source": "dashboards", "reference": "d-1", "observed_at": "2027-01-15T08:05:00Z"},
    })


def scrape(srv, base=None):
    """The exposition, parsed: {(sample name, sorted labels): value}, and the family types by name."""
    status, text, headers = srv.call("GET", "/metrics", base=base)
    assert status == 200, text
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in samples, f"{key} twice"
            samples[key] = s.value
    return samples, types, text


def queue_ages(srv):
    """The support queue's oldest unknown (`oldest_unknown_age_secs`) and oldest in-flight `age_secs`."""
    status, text, _ = srv.call("GET", "/api/unknowns")
    assert status == 200, text
    page = json.loads(text)
    flight = [m["age_secs"] for m in page["matches"] if m["entry"]["ledger_status"] == "execution_started"]
    return page["oldest_unknown_age_secs"], max(flight, default=0)


def scrape_with_ages(srv):
    """A scrape between two equal reads of the queue's ages (retried across a second boundary)."""
    for _ in range(20):
        before = queue_ages(srv)
        samples, types, text = scrape(srv)
        if queue_ages(srv) == before:
            return samples, types, text, before
    pytest.fail("the queue's ages never held still across a scrape")


def test_exact_values_through_prometheus_client(server):
    samples, types, _ = scrape(server)
    assert samples == {
        ("outcomes_unknown_open", ()): 0.0,
        ("outcomes_unknown_oldest_age_seconds", ()): 0.0,
        ("outcomes_in_flight", ()): 0.0,
        ("outcomes_in_flight_oldest_age_seconds", ()): 0.0,
        ("outcomes_live_streams", ()): 0.0,
        ("outcomes_busy_total", ()): 0.0,
        ("outcomes_failed_credentials_total", ()): 0.0,
        ("outcomes_deadline_settlements_total", ()): 0.0,
        ("outcomes_webhook_outbox_pending", ()): 0.0,
        ("outcomes_webhook_outbox_oldest_pending_age_seconds", ()): 0.0,
        # The OpenTelemetry export is off: nothing queued.
        ("outcomes_otel_outbox_pending", ()): 0.0,
        ("outcomes_otel_outbox_oldest_pending_age_seconds", ()): 0.0,
    }

    # The known sequence (as server/tests/api/metrics.rs): m1 unknown, m2 in flight, m3 completed,
    # a batch making m4 (another tool) unknown with one refused operation, m1's metadata, a wrong
    # token, a cancel and a fresh attempt of m5 (left in flight).
    settled(server, "s-1", "m1", "outcome_unknown")
    settled(server, "s-1", "m2", None)
    settled(server, "s-1", "m3", "completed")
    answer = server.ok("POST", "/api/host/batch", {"operations": [
        {"op": "approve", "session_key": "s-2", "mutation_id": "m4", "logical_turn_id": "t-1", "tool": CODEHOST},
        {"op": "intent", "session_key": "s-2", "mutation_id": "m4", "attempt_id": "a1"},
        {"op": "settle", "session_key": "s-2", "mutation_id": "m4", "attempt_id": "a1", "status": "outcome_unknown"},
        {"op": "settle", "session_key": "s-2", "mutation_id": "nope", "attempt_id": "a1", "status": "completed"},
    ]})
    assert [r["status"] for r in answer["results"]] == [201, 200, 200, 404]
    step(server, "s-1", "m1", "metadata", {"id": "d-1", "url": "https://example.com/d/1", "title": "Board"})
    status, _, _ = server.call("GET", "/api/sessions", token="not-the-token")
    assert status == 401
    settled(server, "s-1", "m5", None)
    step(server, "s-1", "m5", "cancellation", {"attempt_id": "a1"})
    step(server, "s-1", "m5", "attempts", {"attempt_id": "a2"})

    samples, types, _, (oldest_unknown, oldest_flight) = scrape_with_ages(server)
    assert isinstance(oldest_unknown, int)
    counts = {k: v for k, v in samples.items() if not k[0].startswith("outcomes_host_request_duration")}
    assert counts == {
        ("outcomes_unknown_open", ()): 2.0,
        ("outcomes_unknown_open", (("tool", DASHBOARDS),)): 1.0,
        ("outcomes_unknown_open", (("tool", CODEHOST),)): 1.0,
        ("outcomes_unknown_oldest_age_seconds", ()): float(oldest_unknown),
        ("outcomes_in_flight", ()): 2.0,
        ("outcomes_in_flight_oldest_age_seconds", ()): float(oldest_flight),
        ("outcomes_live_streams", ()): 0.0,
        ("outcomes_busy_total", ()): 0.0,
        ("outcomes_failed_credentials_total", ()): 1.0,
        # Every deadline is the default 900 s: none passed.
        ("outcomes_deadline_settlements_total", ()): 0.0,
        # No webhook endpoint: nothing in the outbox, no delivery attempt.
        ("outcomes_webhook_outbox_pending", ()): 0.0,
        ("outcomes_webhook_outbox_oldest_pending_age_seconds", ()): 0.0,
        # The OpenTelemetry export is off: nothing queued.
        ("outcomes_otel_outbox_pending", ()): 0.0,
        ("outcomes_otel_outbox_oldest_pending_age_seconds", ()): 0.0,
        ("outcomes_transitions_total", (("kind", "approve"), ("status", "approved"))): 5.0,
        ("outcomes_transitions_total", (("kind", "intent"), ("status", "execution_started"))): 5.0,
        ("outcomes_transitions_total", (("kind", "settle"), ("status", "outcome_unknown"))): 2.0,
        ("outcomes_transitions_total", (("kind", "settle"), ("status", "completed"))): 1.0,
        ("outcomes_transitions_total", (("kind", "metadata"), ("status", "outcome_unknown"))): 1.0,
        ("outcomes_transitions_total", (("kind", "cancel"), ("status", "approved"))): 1.0,
        ("outcomes_transitions_total", (("kind", "attempt"), ("status", "execution_started"))): 1.0,
    }
    assert types["outcomes_unknown_open"] == "gauge"
    assert types["outcomes_transitions"] == "counter"
    assert types["outcomes_host_request_duration_seconds"] == "histogram"
    count = {dict(k[1])["operation"]: v for k, v in samples.items()
             if k[0] == "outcomes_host_request_duration_seconds_count"}
    assert count == {"approve": 4.0, "intent": 4.0, "settle": 2.0, "batch": 1.0, "metadata": 1.0,
                     "cancel": 1.0, "attempt": 1.0}
    for op, n in count.items():
        inf = samples[("outcomes_host_request_duration_seconds_bucket", (("le", "+Inf"), ("operation", op)))]
        assert inf == n, op

    # The separate listener (--metrics-addr) answers the same exposition; elsewhere a JSON 404.
    separate = f"http://127.0.0.1:{server.metrics_port}"
    again, _, _ = scrape(server, base=separate)
    assert {k: v for k, v in again.items() if "age_seconds" not in k[0]} == \
        {k: v for k, v in samples.items() if "age_seconds" not in k[0]}
    status, text, _ = server.call("GET", "/api/sessions", base=separate)
    assert status == 404 and json.loads(text)["error"]["code"] == "not_found"

    # Reconciling m1 leaves m4 the only unknown; its tool's series and the dashboards one go.
    reconcile(server, "s-1", "m1")
    samples, _, _, (oldest_unknown, _) = scrape_with_ages(server)
    assert samples[("outcomes_unknown_open", ())] == 1.0
    assert ("outcomes_unknown_open", (("tool", DASHBOARDS),)) not in samples
    assert samples[("outcomes_unknown_open", (("tool", CODEHOST),))] == 1.0
    assert samples[("outcomes_unknown_oldest_age_seconds", ())] == float(oldest_unknown)
    assert samples[("outcomes_transitions_total", (("kind", "reconcile"), ("status", "completed")))] == 1.0


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read().decode())


def wait_for(what, check, timeout=40):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError) as e:
            last = e
        time.sleep(0.25)
    pytest.fail(f"{what}: not within {timeout} s (last: {last})")


RULES = """groups:
  - name: outcomes
    interval: 1s
    rules:
      - alert: OutcomeUnknownTooLong
        expr: outcomes_unknown_oldest_age_seconds > 2
        for: 1s
        labels: {severity: page}
        annotations:
          summary: "An outcome has been unknown for {{ $value }} s"
"""


def test_prometheus_alert_fires_then_resolves(server, tmp_path):
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.fail("prometheus is not installed (scripts/setup.sh installs Debian's package)")
    started = time.monotonic()
    (tmp_path / "rules.yml").write_text(RULES)
    (tmp_path / "prometheus.yml").write_text(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ["{tmp_path / 'rules.yml'}"]
scrape_configs:
  - job_name: outcomes
    scrape_interval: 1s
    scrape_timeout: 1s
    metrics_path: /metrics
    static_configs:
      - targets: ["127.0.0.1:{server.port}"]
""")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "prometheus.log", "wb")
    proc = subprocess.Popen(
        [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
         f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        wait_for("prometheus ready", lambda: urllib.request.urlopen(base + "/-/ready", timeout=2).status == 200)
        wait_for("the target is up", lambda: any(
            t["health"] == "up" for t in get_json(base + "/api/v1/targets")["data"]["activeTargets"]))
        settled(server, "s-1", "m1", "outcome_unknown")
        unknown_at = time.monotonic()

        def firing():
            alerts = get_json(base + "/api/v1/alerts")["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "OutcomeUnknownTooLong"
                    and a["state"] == "firing"]

        fired = wait_for("the alert fires", firing)
        fired_after = time.monotonic() - unknown_at
        assert fired[0]["labels"]["severity"] == "page"
        assert float(fired[0]["value"]) > 2
        # Not before the outcome had been unknown for more than 2 s, plus `for: 1s`.
        assert fired_after > 2, fired_after

        reconcile(server, "s-1", "m1")

        def resolved():
            alerts = get_json(base + "/api/v1/alerts")["data"]["alerts"]
            rules = get_json(base + "/api/v1/rules")["data"]["groups"][0]["rules"]
            gone = not [a for a in alerts if a["labels"]["alertname"] == "OutcomeUnknownTooLong"]
            return gone and rules[0]["state"] == "inactive"

        wait_for("the alert resolves", resolved)
        value = get_json(base + "/api/v1/query?query=outcomes_unknown_oldest_age_seconds")
        assert value["data"]["result"][0]["value"][1] == "0"
        print(f"prometheus alert: fired {fired_after:.1f} s after the unknown, resolved; "
              f"whole test {time.monotonic() - started:.1f} s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
