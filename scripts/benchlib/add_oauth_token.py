"""Issue an OAuth access token for the benchmark's group, the way agentws issues one.

Runs agentws's own authorization-server steps in one process, without HTTP
or a browser: a client registers (as RFC 7591 would register it), asks for
the group endpoint, an administrator consents (``agentws.oauth.consent``)
and the code is exchanged (PKCE S256). The token is what a client gets
from ``/oauth/token``: an ``agwo_…`` access token of scope ``write``.

Run: ``python add_oauth_token.py DATABASE_URL WORKSPACE GROUP``; prints
``{"token": "agwo_…"}``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sys
from urllib.parse import parse_qs, urlsplit

import trio
from mcp.server.auth.provider import AuthorizationParams
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from agentws.domain.models import Capability
from agentws.oauth import consent
from agentws.oauth.provider import Provider
from agentws.oauth.resources import GroupResolver
from agentws.oauth.settings import OAuthSettings
from agentws.store import open_store

# Any origin: the token is for the group, whichever address the server is reached at.
_BASE = "http://127.0.0.1"
_REDIRECT = "http://127.0.0.1:1/callback"


async def issue(database_url: str, workspace: str, group: str) -> str:
    settings = OAuthSettings()
    client_id = "bench-" + secrets.token_hex(4)
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
    async with open_store(database_url) as store:
        provider = Provider(store, settings, GroupResolver(store, _BASE), None, consent_url=str)
        await provider.register_client(
            OAuthClientInformationFull(
                client_id=client_id,
                client_name="bench client",
                redirect_uris=[AnyUrl(_REDIRECT)],
                token_endpoint_auth_method="none",  # noqa: S106 - a method, not a secret
                scope="read write destructive",
            )
        )
        client = await provider.get_client(client_id)
        if client is None:
            raise SystemExit("the client just registered is not there")
        grant_id = await provider.authorize(
            client,
            AuthorizationParams(
                state="bench",
                scopes=["read", "write"],
                code_challenge=challenge,
                redirect_uri=AnyUrl(_REDIRECT),
                redirect_uri_provided_explicitly=True,
                resource=f"{_BASE}/mcp/g/{workspace}/{group}",
            ),
        )
        sent_to = await consent.decide(
            store,
            settings,
            grant_id,
            approve=True,
            scope=Capability.WRITE,
            actor="bench",
            issuer=_BASE + "/oauth",
        )
        code = parse_qs(urlsplit(sent_to).query)["code"][0]
        loaded = await provider.load_authorization_code(client, code)
        if loaded is None:
            raise SystemExit("the code just issued is not there")
        tokens = await provider.exchange_authorization_code(client, loaded)
        return tokens.access_token


def main() -> None:
    database_url, workspace, group = sys.argv[1:4]
    print(json.dumps({"token": trio.run(issue, database_url, workspace, group)}))


if __name__ == "__main__":
    main()
