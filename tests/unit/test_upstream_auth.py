"""A remote MCP connector's auth mode: what fits together, and plain HTTP only where trusted."""

from __future__ import annotations

import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
)

from agentws.connectors.upstream_auth import (
    HttpsOnly,
    MemoryGrant,
    NeedsAuthorization,
    UpstreamAuth,
    upstream_auth,
)
from agentws.core.errors import UnsafeUrlError, ValidationError
from agentws.domain.allowlist import Allowlist

URL = "https://mcp.example.com/mcp"
CALLBACK = "https://agentws.example.com/oauth/connectors/callback"


def _auth(settings: UpstreamAuth, secret: str | None = None) -> httpx2.Auth | None:
    return upstream_auth(
        URL,
        settings,
        MemoryGrant(),
        secret=secret,
        redirect_uri=CALLBACK,
        client_metadata_url="https://agentws.example.com/oauth/client.json",
    )


def test_each_mode_is_the_sdk_s_flow_for_it() -> None:
    assert _auth(UpstreamAuth()) is None  # static: the secret header, no flow
    assert isinstance(_auth(UpstreamAuth(mode="oauth")), OAuthClientProvider)
    basic = UpstreamAuth(
        mode="client_credentials", client_id="bot", client_auth="client_secret_post"
    )
    assert isinstance(_auth(basic, "s3cret"), ClientCredentialsOAuthProvider)
    signed = UpstreamAuth(mode="client_credentials", client_id="bot", client_auth="private_key_jwt")
    assert isinstance(_auth(signed, "-----BEGIN PRIVATE KEY-----"), PrivateKeyJWTOAuthProvider)


@pytest.mark.parametrize(
    ("settings", "has_secret", "message"),
    [
        (UpstreamAuth(mode="client_credentials"), True, "need the client's id"),
        (UpstreamAuth(mode="client_credentials", client_id="bot"), False, "secret or private key"),
        (UpstreamAuth(mode="oauth"), True, "give --client-id too"),
        (UpstreamAuth(mode="oauth", client_auth="magic"), False, "is not one of"),  # type: ignore[arg-type]
    ],
)
def test_settings_that_do_not_fit_together_are_refused(
    settings: UpstreamAuth, has_secret: bool, message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        settings.check(has_secret=has_secret)


async def test_a_link_without_a_person_needs_authorization() -> None:
    auth = _auth(UpstreamAuth(mode="oauth"))
    assert isinstance(auth, OAuthClientProvider)
    assert auth.context.redirect_handler is not None
    with pytest.raises(NeedsAuthorization, match="needs authorization"):
        await auth.context.redirect_handler("https://as.example.com/authorize?x=1")


async def test_plain_http_goes_only_to_hosts_the_allowlist_names() -> None:
    seen: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(str(request.url))
        return httpx2.Response(200)

    allowlist = Allowlist.parse("127.0.0.1/32,*.corp.example")
    transport = HttpsOnly(httpx2.MockTransport(answer), allowlist)
    async with httpx2.AsyncClient(transport=transport) as http:
        with pytest.raises(UnsafeUrlError, match="use https"):
            await http.get("http://as.example.com/token")
        for url in (
            "https://as.example.com/token",
            "http://127.0.0.1:8080/token",
            "http://auth.corp.example/token",
        ):
            assert (await http.get(url)).status_code == 200
    assert seen == [
        "https://as.example.com/token",
        "http://127.0.0.1:8080/token",
        "http://auth.corp.example/token",
    ]
