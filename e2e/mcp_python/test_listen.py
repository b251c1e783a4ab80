"""`outcomes mcp-proxy --listen … --url …` between the official MCP Python SDK on both sides
(docs/mcp-proxy.md "Clients by URL (--listen)"): a server of the SDK (`mcp`, its MCPServer, FastMCP before
mcp 2: notes_server.py) over streamable HTTP, the proxy `--url` in front of it and `--listen` on loopback,
and the SDK's streamable HTTP client (`mcp.Client` with a URL) connected to the proxy.

1. `test_write_read_only_and_failure`: a write is recorded `completed`, a read-only tool (annotated
   `readOnlyHint`) is not recorded, a tool that raises (the SDK answers `isError: true`) is recorded
   `failed`; the tools listed through the proxy are the server's.
2. `test_newest_protocol_version`: the SDK's newest protocol version (2026-07-28 in mcp 2.x: no
   `initialize`, no session, every request self-contained) is not one the proxy serves; its session-less
   requests get MCP's -32022 naming the versions served, so the SDK's default client (`mode="auto"`)
   negotiates down to the newest of them (2025-11-25) and works, and a client pinned to 2026-07-28 gets
   that error, not a bare "no session".

Run: `BASE_URL=http://127.0.0.1:3100 OUTCOMES_HOST_TOKEN=… OUTCOMES_BIN=target/release/outcomes
python3 -m pytest -q e2e/mcp_python` (scripts/test.sh does, against its running server). Needs `mcp`
and `pytest` (scripts/setup.sh installs them). A few seconds.
"""

import asyncio
import json
import os
import pathlib
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_MODERN_VERSION

HERE = pathlib.Path(__file__).resolve().parent
BASE = os.environ.get("BASE_URL", "http://127.0.0.1:3100").rstrip("/")
TOKEN = os.environ.get("OUTCOMES_HOST_TOKEN", "")


def outcomes_bin():
    path = os.environ.get("OUTCOMES_BIN")
    if path:
        return path
    root = HERE.parents[1]
    for candidate in (root / "target/release/outcomes", root / "target/debug/outcomes"):
        if candidate.exists():
            return str(candidate)
    pytest.fail("OUTCOMES_BIN must name the outcomes binary")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, probe, seconds=15.0):
    deadline = time.monotonic() + seconds
    while True:
        got = probe()
        if got:
            return got
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {seconds} s")
        time.sleep(0.1)


def listening(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture
def notes_server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "notes_server.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for("the Python MCP server listening", lambda: listening(port) or proc.poll() is not None)
        assert proc.poll() is None, "the Python MCP server exited"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def proxy(notes_server, tmp_path):
    """The proxy in front of the server; yields (its URL, a function answering the ledger sessions it
    printed)."""
    err = open(tmp_path / "proxy.stderr", "w+")
    proc = subprocess.Popen(
        [outcomes_bin(), "mcp-proxy", "--server", BASE, "--listen", "127.0.0.1:0", "--url", notes_server],
        env={**os.environ, "OUTCOMES_HOST_TOKEN": TOKEN},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=err,
    )

    def stderr():
        return (tmp_path / "proxy.stderr").read_text()

    try:
        url = wait_for(
            "the proxy listening",
            lambda: (m := re.search(r"listening on (http://\S+)", stderr())) and m.group(1) or proc.poll() is not None,
        )
        assert proc.poll() is None, stderr()
        yield url, lambda: re.findall(r"client session \S+: ledger session (\S+)", stderr())
    finally:
        proc.terminate()
        proc.wait(10)
        err.close()


def records(session):
    """The published mutation_outcome/v1 records of a ledger session ([] when it is unknown)."""
    req = urllib.request.Request(
        f"{BASE}/api/mutation-outcomes?session_id={urllib.parse.quote(session)}",
        headers={"authorization": f"Bearer {TOKEN}"},
    )
    with urllib.request.urlopen(req) as r:
        return json.load(r)["mutation_outcomes"]


def test_write_read_only_and_failure(notes_server, proxy):
    url, sessions = proxy

    async def run():
        async with Client(notes_server) as direct:
            listed_directly = await direct.list_tools()
        async with Client(url) as client:
            listed = await client.list_tools()
            assert listed.tools == listed_directly.tools
            wrote = await client.call_tool("add_note", {"text": "hello"})
            assert not wrote.is_error
            read = await client.call_tool("read_notes", {})
            assert read.content[0].text.endswith("hello")
            failed = await client.call_tool("explode", {})
            assert failed.is_error

    asyncio.run(run())
    [session] = sessions()
    got = wait_for(
        "two settled records",
        lambda: (rs := records(session)) and len(rs) == 2 and all(r["status"] != "outcome_unknown" for r in rs) and rs,
    )
    assert [(r["tool"], r["status"]) for r in got] == [
        ("mcp__notes__add_note", "completed"),
        ("mcp__notes__explode", "failed"),
    ]


def mcp_error(exc):
    """The MCPError in an exception or the exception groups around it (the SDK raises from task groups)."""
    if isinstance(exc, MCPError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        if (found := mcp_error(inner)) is not None:
            return found
    return None


def test_newest_protocol_version(notes_server, proxy):
    url, sessions = proxy

    async def run():
        async with Client(notes_server) as direct:
            assert direct.protocol_version == LATEST_MODERN_VERSION == "2026-07-28"
        async with Client(url) as client:
            assert client.protocol_version == "2025-11-25"
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["add_note", "read_notes", "explode"]
        with pytest.raises(BaseException) as raised:
            async with Client(url, mode=LATEST_MODERN_VERSION) as pinned:
                await pinned.list_tools()
        err = mcp_error(raised.value)
        assert err is not None, repr(raised.value)
        assert err.code == -32022, err
        assert err.error.data == {
            "supported": ["2025-03-26", "2025-06-18", "2025-11-25"],
            "requested": LATEST_MODERN_VERSION,
        }
        assert "outcomes mcp-proxy serves MCP 2025-03-26, 2025-06-18, 2025-11-25" in err.error.message

    asyncio.run(run())
    assert len(sessions()) == 1, "one client session: the negotiated one"
