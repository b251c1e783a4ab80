"""Bad input: a clear exception naming the cause, never a silent success."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import Reads, StaticServer
from outcomes_ledger import (
    AsyncLedger,
    InvalidRequest,
    Ledger,
    LedgerUnavailable,
    Unauthorized,
    UnexpectedResponse,
)

TOOL = "mcp__dashboards__create"

PROXY_PAGE = b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"


# Wrong tokens go to a server of the test's own: failed credentials are counted per client address
# (docs/api.md "Limits"), and the shared server's count is other suites' business.


def test_a_wrong_token_is_unauthorized_and_the_block_never_runs(own_server, session_key):
    side_effects = 0
    with Ledger(own_server.base_url, "not-the-host-token") as ledger:
        with pytest.raises(Unauthorized) as info:
            with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="op-1", tool=TOOL):
                side_effects += 1
    assert side_effects == 0
    err = info.value
    assert (err.status, err.code) == (401, "unauthorized")
    assert str(err).startswith("batch: the ledger refused the host token (check the token given to the client")
    assert Reads(own_server.base_url, own_server.token).outcomes_status(session_key) == 404


def test_repeated_wrong_tokens_stay_unauthorized_not_retried(own_server):
    # The 11th failure within a minute answers 429 too_many_failures with a Retry-After of up to a
    # minute: a wrong token, not a busy ledger, so it is raised at once and not waited for.
    async def main():
        async with AsyncLedger(own_server.base_url, "not-the-host-token") as ledger:
            errors = []
            for _ in range(12):
                try:
                    await ledger.mint_viewer_link("py-any")
                except Unauthorized as err:
                    errors.append((err.status, err.code))
            return errors

    started = time.monotonic()
    errors = asyncio.run(main())
    assert time.monotonic() - started < 5
    assert errors[:10] == [(401, "unauthorized")] * 10
    assert errors[10:] == [(429, "too_many_failures")] * 2
    with Ledger(own_server.base_url, own_server.token) as ledger:  # the right token still works
        assert ledger.approve("py-any", "t", "op-1", TOOL).ledger_status == "approved"


def test_an_id_over_256_bytes_names_the_field(server, reads, session_key):
    with Ledger(server.base_url, server.token) as ledger:
        with pytest.raises(InvalidRequest) as info:
            ledger.approve(session_key, "t" * 257, "op-1", TOOL)
        assert (info.value.status, info.value.code, info.value.field) == (422, "invalid_field", "logical_turn_id")
        assert "logical_turn_id must be at most 256 bytes" in str(info.value)
        with pytest.raises(InvalidRequest) as info:
            ledger.intent(session_key, "m" * 300, "att-1")  # in the path
        assert (info.value.code, info.value.field) == ("invalid_field", "mutation_id")
        with pytest.raises(InvalidRequest) as info:
            ledger.settle(session_key, "op-1", "att-1", "completed", reason="execution_timeout")
        assert info.value.status == 422 and info.value.field == "reason"
    assert reads.outcomes_status(session_key) == 404


@pytest.mark.parametrize("status", [200, 502])
def test_an_html_answer_is_an_unexpected_response_naming_it(status, session_key):
    page = StaticServer(status, "text/html; charset=utf-8", PROXY_PAGE)
    side_effects = 0
    try:
        with Ledger(page.base_url, "t") as ledger:
            with pytest.raises(UnexpectedResponse) as info:
                with ledger.protected_write(session_key=session_key, logical_turn_id="t", mutation_id="op-1", tool=TOOL):
                    side_effects += 1
    finally:
        page.stop()
    assert side_effects == 0
    err = info.value
    assert (err.status, err.code, err.content_type) == (status, "unexpected_response", "text/html; charset=utf-8")
    message = str(err)
    assert "text/html" in message and "'502 Bad Gateway'" in message and "not the ledger's JSON" in message
    assert page.hits == 1  # not retried


def test_an_html_503_is_retried_then_names_the_page(session_key):
    page = StaticServer(503, "text/html", PROXY_PAGE.replace(b"502", b"503"))
    try:
        with Ledger(page.base_url, "t", retry_total_secs=0.6) as ledger:
            with pytest.raises(LedgerUnavailable) as info:
                ledger.approve(session_key, "t", "op-1", TOOL)
    finally:
        page.stop()
    assert page.hits >= 2
    assert "text/html" in str(info.value) and "503 Bad Gateway" in str(info.value)
    assert isinstance(info.value.__cause__, UnexpectedResponse)


def test_json_that_is_not_the_ledgers_is_unexpected(session_key):
    page = StaticServer(200, "application/json", b'{"ok": true}')
    try:
        with Ledger(page.base_url, "t") as ledger:
            with pytest.raises(UnexpectedResponse, match="shape is not the documented one"):
                ledger.approve(session_key, "t", "op-1", TOOL)
    finally:
        page.stop()
    page = StaticServer(500, "application/json", b'{"message": "oops"}')
    try:
        with Ledger(page.base_url, "t") as ledger:
            with pytest.raises(UnexpectedResponse, match="without the ledger's error body"):
                ledger.approve(session_key, "t", "op-1", TOOL)
    finally:
        page.stop()


def test_constructor_refuses_missing_url_or_token():
    with pytest.raises(ValueError, match="base_url"):
        Ledger("", "t")
    with pytest.raises(ValueError, match="host token"):
        Ledger("http://127.0.0.1:1", "")
