"""Fixtures: the real `outcomes serve` (the one at BASE_URL, or one started from OUTCOMES_BIN), servers
a test owns (to kill and restart), a forwarding proxy that loses answers, and readers of the
ledger's read APIs (docs/api.md "History", "Turn entries")."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator, Optional
from urllib.parse import quote

import httpx
import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

REPO = Path(__file__).resolve().parents[3]


def outcomes_bin() -> str:
    env = os.environ.get("OUTCOMES_BIN")
    if env:
        return env
    for candidate in (REPO / "target/release/outcomes", REPO / "target/debug/outcomes"):
        if candidate.exists():
            return str(candidate)
    found = shutil.which("outcomes")
    if found:
        return found
    pytest.skip("no outcomes binary: set OUTCOMES_BIN (or BASE_URL and OUTCOMES_HOST_TOKEN)")
    raise AssertionError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class OwnServer:
    """An `outcomes serve` this test owns: its port and data dir survive `kill9()` + `start()`."""

    def __init__(self, token: str, extra: tuple[str, ...] = ()) -> None:
        self.token = token
        self.extra = extra
        self.port = free_port()
        self.data_dir = tempfile.mkdtemp(prefix="outcomes-py-")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(self.data_dir, "serve.log"), "ab")

    def start(self) -> None:
        env = dict(os.environ, OUTCOMES_HOST_TOKEN=self.token)
        self.proc = subprocess.Popen(
            [outcomes_bin(), "serve", "--addr", f"127.0.0.1:{self.port}", "--data-dir", self.data_dir,
             *self.extra],
            env=env, stdout=self.log, stderr=self.log,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"outcomes serve exited with {self.proc.returncode}; log in {self.data_dir}")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError("outcomes serve did not answer /healthz within 20 s")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.data_dir, ignore_errors=True)


@dataclass
class Server:
    base_url: str
    token: str


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    base = os.environ.get("BASE_URL")
    token = os.environ.get("OUTCOMES_HOST_TOKEN")
    if base and token:
        yield Server(base.rstrip("/"), token)
        return
    own = OwnServer(token or f"py-{uuid.uuid4().hex}")
    own.start()
    try:
        yield Server(own.base_url, own.token)
    finally:
        own.stop()


@pytest.fixture
def own_server() -> Iterator[OwnServer]:
    own = OwnServer(f"py-{uuid.uuid4().hex}")
    own.start()
    try:
        yield own
    finally:
        own.stop()


@pytest.fixture
def session_key(request: pytest.FixtureRequest) -> str:
    return f"py-{request.node.name[:60]}-{uuid.uuid4().hex[:8]}"


class Reads:
    """The ledger's read APIs, read with the host token (docs/api.md)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=10)

    def outcomes(self, session_key: str) -> list[dict[str, Any]]:
        r = self.http.get("/api/mutation-outcomes", params={"session_id": session_key})
        assert r.status_code == 200, r.text
        return r.json()["mutation_outcomes"]

    def outcomes_status(self, session_key: str) -> int:
        return self.http.get("/api/mutation-outcomes", params={"session_id": session_key}).status_code

    def by_id(self, session_key: str) -> dict[str, dict[str, Any]]:
        return {o["mutation_id"]: o for o in self.outcomes(session_key)}

    def entries(self, session_key: str, turn: str) -> list[dict[str, Any]]:
        r = self.http.get(f"/api/sessions/{quote(session_key, safe='')}/turns/{quote(turn, safe='')}/entries")
        assert r.status_code == 200, r.text
        return r.json()["entries"]

    def turns(self, session_key: str) -> list[str]:
        r = self.http.get(f"/api/sessions/{quote(session_key, safe='')}/turns")
        assert r.status_code == 200, r.text
        return [t["logical_turn_id"] for t in r.json()["turns"]]

    def history_kinds(self, session_key: str, mutation_id: str) -> list[str]:
        r = self.http.get(
            f"/api/sessions/{quote(session_key, safe='')}/mutations/{quote(mutation_id, safe='')}/history"
        )
        assert r.status_code == 200, r.text
        return [c["kind"] for c in r.json()["changes"]]


@pytest.fixture
def reads(server: Server) -> Iterator[Reads]:
    r = Reads(server.base_url, server.token)
    yield r
    r.http.close()


# A forwarding proxy in front of the real server, for answers lost on the way back ------------


@dataclass
class LossyProxy:
    """Forwards each request to the real server, except that request number i (1-based) gets the
    action `plan[i]`: `"busy"` answers 503 with Retry-After without forwarding, `"drop"` forwards,
    lets the ledger commit, then closes the connection without an answer (the answer is lost),
    `"html"` answers a proxy's 502 HTML page without forwarding."""

    upstream: str
    plan: dict[int, str]
    retry_after: str = "1"
    seen: list[tuple[str, str, str]] = field(default_factory=list)
    server: Any = None
    base_url: str = ""

    def start(self) -> "LossyProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.command == "GET" and self.path == "/api/host/ledger":
                    # The ledger's id, read once per client before its first protected write (for
                    # op.idempotency_key): forwarded, and not one of the plan's numbered requests.
                    self._forward(body)
                    return
                with lock:
                    proxy.seen.append((self.command, self.path, ""))
                    n = len(proxy.seen)
                action = proxy.plan.get(n, "forward")
                proxy.seen[n - 1] = (self.command, self.path, action)
                if action == "busy":
                    payload = b'{"error":{"code":"busy","message":"the ledger is busy"}}'
                    self.send_response(503)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Retry-After", proxy.retry_after)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if action == "html":
                    payload = b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
                    self.send_response(502)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self._forward(body, drop=action == "drop")

            def _forward(self, body: bytes, drop: bool = False) -> None:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
                r = httpx.request(self.command, proxy.upstream + self.path, headers=headers, content=body, timeout=10)
                if drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() in ("content-type", "retry-after"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def lossy_proxy(server: Server) -> Iterator[Callable[..., LossyProxy]]:
    made: list[LossyProxy] = []

    def make(plan: dict[int, str], retry_after: str = "1") -> LossyProxy:
        p = LossyProxy(server.base_url, plan, retry_after).start()
        made.append(p)
        return p

    yield make
    for p in made:
        p.stop()


class StaticServer:
    """A plain HTTP server answering every request with one fixed answer (a proxy's error page,
    another service): no ledger behind it."""

    def __init__(self, status: int, content_type: str, body: bytes) -> None:
        outer = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.hits += 1
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _any

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
