"""`outcomes mcp-proxy --listen … --url …` between the official MCP Python SDK on both sides
(docs/mcp-proxy.md "Clients by URL (--listen)"): a server of the SDK (`mcp`, its MCPServer, FastMCP before
mcp 2: notes_server.py) over streamable HTTP, the proxy `--url` in front of it and `--listen` on loopback,
and the SDK's streamable HTTP client (`mcp.Client` with a URL) connected to the proxy.

1. `test_write_read_only_and_failure`: a write is recorded `completed`, a read-only tool (annotated
   `readOnlyHint`) is not recorded, a tool that raises (the SDK answers `isError: true`) is recorded
   `failed`; the tools listed through the proxy are the server's.

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
