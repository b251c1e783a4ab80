"""The README's Python examples, run as written (only the server URL replaced by that of a server
this test owns; `token` is its host token, `model` a scripted model), and what the dashboard then
shows."""

from __future__ import annotations

import ast
import asyncio
import html
import re
from pathlib import Path

import httpx

from conftest import REPO, OwnServer, Reads

README = REPO / "clients" / "python" / "README.md"
URL = "http://127.0.0.1:3000"


def example(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- python-example: {re.escape(name)} -->\n```python\n(.*?)```", text, re.S)
    assert m, f"README has no python-example {name}"
    return m.group(1)


def run(source: str, namespace: dict) -> None:
    code = compile(source, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if asyncio.iscoroutine(result):
        asyncio.run(result)


def page_text(base_url: str, path: str) -> str:
    body = httpx.get(base_url + path, timeout=10).text
    body = re.sub(r"<script.*?</script>|<style.*?</style>", "", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_readme_examples_run_as_written(own_server: OwnServer):
    base = own_server.base_url
    created: list[str] = []

    def create_dashboard(title: str) -> dict:
        created.append(title)
        return {"id": "dash-7f3a", "url": "https://user:pw@app.example.com/d/dash-7f3a", "title": title}

    client = example("client")
    assert URL in client
    run(client.replace(URL, base), {"token": own_server.token, "create_dashboard": create_dashboard})
    assert created == ["Service overview"]

    reads = Reads(base, own_server.token)
    [record] = reads.outcomes("chat-42")
    assert record == {
        "schema": "mutation_outcome/v1", "logical_turn_id": "turn-1", "mutation_id": "op-1",
        "tool": "mcp__dashboards__create", "status": "completed", "resource_id": "dash-7f3a",
        "url": "https://app.example.com/d/dash-7f3a", "title": "Service overview",
    }
    assert reads.history_kinds("chat-42", "op-1") == ["approval", "intent", "metadata", "settlement"]
    # What the README says the session page shows.
    text = page_text(base, "/sessions/chat-42")
    for words in ("Turn 1", "✓ Completed", "Service overview", "Operation id: op-1"):
        assert words in text, words
    # The turn's id repeats its label ("turn-1"): the page does not say it twice (issue 26).
    assert "Turn 1 · turn-1" not in text
    assert 'href="https://app.example.com/d/dash-7f3a"' in httpx.get(base + "/sessions/chat-42").text

    from test_openai_agents import ScriptedModel

    agents_model = ScriptedModel([("call_readme_1", "create_dashboard", {"title": "Service"})])
    source = example("openai-agents")
    assert URL in source
    run(source.replace(URL, base), {"token": own_server.token, "model": agents_model})
    assert len(agents_model.inputs) == 2

    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart

    def answer(messages, info):
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("create_dashboard", {"title": "Service"}, tool_call_id="pyd_readme_1")])
        return ModelResponse(parts=[TextPart("done")])

    source = example("pydantic-ai")
    run(source.replace(URL, base), {"token": own_server.token, "model": FunctionModel(answer)})

    turns = reads.turns("chat-42")
    assert len(turns) == 3 and turns[0] == "turn-1"
    records = reads.by_id("chat-42")
    assert {k: (v["logical_turn_id"], v["status"]) for k, v in records.items()} == {
        "op-1": ("turn-1", "completed"),
        "call_readme_1": (turns[1], "completed"),
        "pyd_readme_1": (turns[2], "completed"),
    }
    reads.http.close()


def test_readme_lists_what_the_table_promises(server, session_key):
    # The table's page wording for the other outcomes, read from a real session page.
    from outcomes_ledger import Ledger, NotDispatched

    with Ledger(server.base_url, server.token) as ledger, ledger.turn(session_key, "turn-1"):
        with ledger.protected_write(tool="t", mutation_id="op-f") as op:
            op.failed()
        try:
            with ledger.protected_write(tool="t", mutation_id="op-n"):
                raise NotDispatched(reason="pre_dispatch_deadline")
        except NotDispatched:
            pass
        try:
            with ledger.protected_write(tool="t", mutation_id="op-t"):
                raise TimeoutError
        except TimeoutError:
            pass
        try:
            with ledger.protected_write(tool="t", mutation_id="op-k"):
                raise KeyError("id")
        except KeyError:
            pass
    text = page_text(server.base_url, f"/sessions/{session_key}")
    readme = README.read_text(encoding="utf-8")
    for words in ("✕ Failed", "⊘ Not executed", "? Outcome unknown",
                  "It timed out while running; whether it took effect is not known.",
                  "Do not repeat this action yourself"):
        assert words in text, words
        assert words in readme, words
