"""OAuth's small rules: redirect URIs, the consent form's reach, scopes, client ids."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import httpx2
import pytest

from agentws.domain.models import Capability
from agentws.doors.dashboard.consent import _form_action
from agentws.oauth.client_metadata import (
    MetadataDocumentError,
    _checked,
    fresh_for_s,
    is_metadata_client_id,
)
from agentws.oauth.client_rules import redirect_uri_problem
from agentws.oauth.clients import same_redirect
from agentws.oauth.settings import highest_scope, scopes_up_to


@pytest.mark.parametrize(
    ("registered", "given", "same"),
    [
        ("https://app.example/cb", "https://app.example/cb", True),
        ("https://app.example/cb", "https://app.example/cb/", False),
        ("https://app.example/cb", "https://app.example:8443/cb", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1:61000/cb", True),
        ("http://localhost/cb", "http://localhost:3000/cb", True),
        ("http://[::1]:1/cb", "http://[::1]:2/cb", True),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1:5000/other", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.2:5000/cb", False),
        ("http://127.0.0.1:5000/cb", "https://127.0.0.1:5000/cb", False),
        ("http://127.0.0.1/cb?a=1", "http://127.0.0.1:9/cb?a=2", False),
        ("http://evil.example:1/cb", "http://evil.example:2/cb", False),
    ],
)
def test_redirect_uris_match_exactly_but_a_loopback_port(
    registered: str, given: str, same: bool
) -> None:
    assert same_redirect(registered, given) is same


@pytest.mark.parametrize(
    ("uri", "source"),
    [
        ("http://127.0.0.1:53682/callback", "http://127.0.0.1:53682"),
        ("https://app.example/cb?x=1", "https://app.example"),
        ("https://user@host.example:8080/cb", ""),
        ("com.example.app:/oauth/cb", "com.example.app:"),
        ("javascript:alert(1)//", ""),
        ("http://[::1]:9/cb", "http://[::1]:9"),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", "cursor:"),
        ("bad scheme;default-src *://x", ""),
    ],
)
def test_the_consent_page_allows_its_form_to_reach_the_redirect_uri_only(
    uri: str, source: str
) -> None:
    assert _form_action(uri) == source


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("https://app.example/cb", None),
        ("https://192.0.2.1:8443/cb?x=1", None),
        ("http://127.0.0.1:53682/callback", None),
        ("http://[::1]/cb", None),
        ("http://localhost:3000/cb", None),
        ("com.example.app:/oauth2redirect", None),
        ("com.example.app://callback/path", None),
        ("cursor://anysphere.cursor-retrieval/oauth/callback", None),
        ("javascript:alert(1)//", "scheme javascript:"),
        ("JavaScript:alert(1)", "scheme javascript:"),
        ("data:text/html,hi", "scheme data:"),
        ("file:///etc/passwd", "scheme file:"),
        ("vscode:/callback", "scheme vscode:"),
        ("com.example.app:callback", "no path"),
        ("http://app.example/cb", "not loopback"),
        ("http://localhost.attacker.example/cb", "not loopback"),
        ("https://user:pw@app.example/cb", "user info"),
        ("https://user@app.example/cb", "user info"),
        ("com.example.app://user@host/cb", "user info"),
        ("https://app.example/cb#x", "fragment"),
        ("https://app.example/cb#", "fragment"),
        ("https:///cb", "no host"),
        ("https://exa mple.com/cb", "spaces"),
        ("https://app.example/\x01", "control"),
        ("https://app.example/cb\r\nSet-Cookie: x=1", "control"),
        ("/relative/cb", "not an absolute URI"),
        ("https://app.example:99999/cb", "not a URI"),
        ("https://app.example/" + "x" * 2100, "longer than 2048"),
    ],
)
def test_redirect_uris_are_those_rfc_8252_and_mcp_allow(uri: str, problem: str | None) -> None:
    found = redirect_uri_problem(uri)
    if problem is None:
        assert found is None, found
    else:
        assert found is not None and problem in found, found


def test_scopes_are_capabilities_and_the_least_is_the_default() -> None:
    assert highest_scope(None) is Capability.READ
    assert highest_scope(["openid", "write"]) is Capability.WRITE
    assert highest_scope(["read", "destructive", "write"]) is Capability.DESTRUCTIVE
    assert scopes_up_to(Capability.WRITE) == ["read", "write"]


def test_a_metadata_client_id_is_an_https_url_with_a_path() -> None:
    assert is_metadata_client_id("https://app.example/client.json")
    assert not is_metadata_client_id("https://app.example/")
    assert not is_metadata_client_id("http://app.example/client.json")
    assert not is_metadata_client_id("agwoi_1234")


def test_a_metadata_document_must_describe_the_public_client_it_names() -> None:
    url = "https://app.example/client.json"
    good = {"client_id": url, "redirect_uris": ["http://127.0.0.1/cb"]}
    assert _checked(url, json.dumps(good).encode())["client_id"] == url
    for bad in (
        b"not json",
        b"[]",
        json.dumps({**good, "client_id": "https://other.example/c.json"}).encode(),
        json.dumps({**good, "redirect_uris": []}).encode(),
        json.dumps({**good, "redirect_uris": ["javascript:alert(1)"]}).encode(),
        json.dumps({**good, "redirect_uris": ["http://127.0.0.1/cb"] * 11}).encode(),
        json.dumps({**good, "client_name": "n" * 201}).encode(),
        json.dumps({**good, "client_name": "a\rb"}).encode(),
        json.dumps({**good, "client_name": ["a list"]}).encode(),
        json.dumps({**good, "logo_uri": "https://app.example/" + "l" * 2048}).encode(),
        json.dumps({**good, "contacts": "not a list"}).encode(),
        json.dumps({**good, "token_endpoint_auth_method": "client_secret_basic"}).encode(),
        json.dumps({**good, "client_secret": "s"}).encode(),
    ):
        with pytest.raises(MetadataDocumentError):
            _checked(url, bad)


def test_each_kind_of_secret_and_id_has_a_prefix_of_its_own() -> None:
    from agentws.domain import rules
    from agentws.doors.mcp.dispatch import confirm
    from agentws.doors.mcp.relay import passthrough, pending_calls
    from agentws.oauth import operator_clients, settings

    prefixes = {
        "MCP token": rules.MCP_TOKEN_PREFIX,
        "webhook token": rules.WEBHOOK_TOKEN_PREFIX,
        "admin token": rules.ADMIN_TOKEN_PREFIX,
        "confirm token": confirm.CONFIRM_TOKEN_PREFIX,
        "pending call state": pending_calls._STATE_PREFIX,
        "relayed request state": passthrough._PREFIX,
        "OAuth access token": settings.ACCESS_TOKEN_PREFIX,
        "OAuth refresh token": settings.REFRESH_TOKEN_PREFIX,
        "OAuth code": settings.CODE_PREFIX,
        "operator OAuth client id": operator_clients.CLIENT_ID_PREFIX,
    }
    for kind, prefix in prefixes.items():
        for other, other_prefix in prefixes.items():
            if kind != other:
                assert not other_prefix.startswith(prefix), (kind, other)
    # Operator clients registered before keep their ids: they are stored, and looked up whole.
    assert operator_clients.LEGACY_CLIENT_ID_PREFIX == "agwc_"
    assert not confirm.CONFIRM_TOKEN_PREFIX.startswith(operator_clients.LEGACY_CLIENT_ID_PREFIX)


@pytest.mark.parametrize(
    ("headers", "fresh_s"),
    [
        ({}, 3600),
        ({"Cache-Control": "max-age=7200"}, 7200),
        ({"Cache-Control": "max-age=7200", "Age": "3600"}, 3600),
        ({"Cache-Control": 'public, max-age="900"'}, 900),
        ({"Cache-Control": "max-age=-1"}, 300),
        ({"Cache-Control": "max-age=1e9"}, 300),
        ({"Cache-Control": "no-cache, max-age=7200"}, 300),
        ({"Cache-Control": "max-age=99999999999999999999"}, 86400),
        (
            {"Expires": "Thu, 01 Jan 2026 02:00:00 GMT", "Date": "Thu, 01 Jan 2026 00:00:00 GMT"},
            7200,
        ),
        ({"Expires": "0"}, 300),
        ({"Expires": "Thu, 01 Jan 1970 00:00:00 GMT"}, 300),
    ],
)
def test_a_metadata_document_is_kept_as_its_cache_headers_say_within_bounds(
    headers: dict[str, str], fresh_s: float
) -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert fresh_for_s(httpx2.Headers(headers), now) == fresh_s
