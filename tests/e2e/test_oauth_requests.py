"""Requests to OAuth's endpoints that are wrong in shape: each gets a clean 4xx, never a 500.

A real agentws on loopback, sent what no OAuth client sends: a client id
that is not a URL, a form of thousands of fields, a body that trickles in
or stops half-way. Every answer is the OAuth error body
(``{"error": …, "error_description": …}``), and the server logs no error.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlencode

import httpx2
import pytest
from prometheus_client import REGISTRY

from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import REDIRECT, pkce_pair
from tests.e2e.polling import wait_for
from tests.e2e.slow_client_support import request_head, trickle
from tests.fuzz.fuzz_support import raw_exchange

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def _no_server_errors(caplog: pytest.LogCaptureFixture) -> None:
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


def _refusals(reason: str) -> float:
    return (
        REGISTRY.get_sample_value(
            "agentws_rejected_requests_total", {"door": "oauth", "reason": reason}
        )
        or 0.0
    )


async def test_client_ids_that_are_no_urls_and_huge_forms_are_refused_cleanly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=10) as http,
    ):
        _, challenge = pkce_pair()
        for client_id in (
            "https://app.example/client\x01.json",  # a control character
            "https://exa mple.com/client.json",  # a host no URL has
            "https://[::1/client.json",  # not even a URL
            "https://" + "a" * 300 + ".example/client.json",  # a label too long for DNS
            "https://app.example/" + "c" * 5000,  # longer than any client id
        ):
            query = {
                "response_type": "code",
                "client_id": client_id,
                "redirect_uri": REDIRECT,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
                "resource": server.url,
            }
            answer = await http.get("/oauth/authorize?" + urlencode(query))
            assert answer.status_code == 400, (client_id, answer.text)
            assert answer.json()["error"] == "invalid_request"
            token = await http.post(
                "/oauth/token",
                data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": client_id},
            )
            assert token.status_code == 401, (client_id, token.text)
            assert token.json()["error"] == "invalid_client"

        many = "&".join(f"f{i}=1" for i in range(1500)).encode()
        for path in ("/oauth/token", "/oauth/revoke", "/oauth/authorize"):
            answer = await http.post(path, content=many, headers=FORM)
            assert answer.status_code == 400, (path, answer.text)
            assert answer.json()["error"] == "invalid_request"
            assert "fields" in answer.json()["error_description"]
        multipart = await http.post("/oauth/token", files={"grant_type": b"refresh_token"})
        assert multipart.status_code == 400, multipart.text
        assert multipart.json()["error"] == "invalid_request"
        too_large = await http.post(
            "/oauth/register",
            content=b'{"client_name": "' + b"x" * (1024 * 1024) + b'"}',
            headers={"Content-Type": "application/json"},
        )
        assert too_large.status_code == 413, too_large.text
        assert too_large.json()["error"] == "invalid_request"
    _no_server_errors(caplog)


async def test_bodies_that_trickle_in_or_stop_half_way_are_cut_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(tmp_path, AGENTWS_BODY_READ_TIMEOUT_S="0.5") as server:
        form = b"grant_type=refresh_token&client_id=c&refresh_token=" + b"r" * 40
        document = b'{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": "' + b"x" * 40
        for path, body, headers in (
            ("/oauth/token", form, FORM),
            ("/oauth/register", document + b'"}', {"Content-Type": "application/json"}),
        ):
            head = request_head(path, server.base_url, headers, length=len(body))
            trickled = await trickle(server.base_url, head, body, every_s=0.1, bound_s=5.0)
            assert trickled.reply.closed, trickled.reply
            assert trickled.sent < len(body), trickled.reply
            (response,) = trickled.reply.final
            assert response.status == 408, trickled.reply
            assert response.headers.get("connection") == "close", trickled.reply
            assert b'"error": "invalid_request"' in response.body, trickled.reply

        # A client that goes away half-way through its body leaves nothing behind.
        before = _refusals("disconnected")
        for path in ("/oauth/token", "/oauth/register", "/oauth/revoke"):
            head = request_head(path, server.base_url, FORM, length=1000)
            await raw_exchange(server.base_url, head + b"grant_type=", read_s=0.5)
        await wait_for(
            lambda: _refusals("disconnected") >= before + 3, what="three disconnects seen"
        )
    _no_server_errors(caplog)
