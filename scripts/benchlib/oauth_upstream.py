"""An OAuth-protected upstream for ``scripts/bench gateway``: the echo server behind bearer tokens.

The ``echo`` server of :mod:`benchlib.gateway_upstream`, behind a bearer
check that takes either a static token (``--static-token``, the static
connector's) or an access token its own authorization server issued and
that has not expired. That authorization server is in the same process, as
small as the MCP authorization flow allows: protected-resource metadata
(RFC 9728), server metadata (RFC 8414), dynamic registration (RFC 7591),
an authorization endpoint that approves at once (no person: a benchmark),
and a token endpoint for the authorization code (PKCE S256 checked) and
refresh tokens, rotated on every use, each access token living
``--ttl`` seconds.

Run: ``python oauth_upstream.py --static-token TOKEN [--ttl 5]``. It binds
127.0.0.1 on a free port, prints one JSON line ``{"base_url": ..., "url":
...}`` and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import secrets
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib.gateway_upstream import MCP_PATH, make_server
from benchlib.uvicorn_loopback import serve_on_loopback


class Issuer:
    """The authorization server's state: codes, live access tokens, refresh tokens."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self.base = ""
        self.codes: dict[str, str] = {}  # code -> its PKCE challenge
        self.access: dict[str, float] = {}  # token -> when it expires
        self.refresh: set[str] = set()

    def tokens(self) -> dict[str, Any]:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        now = time.monotonic()
        # Forget the expired ones: a long run issues many.
        self.access = {t: at for t, at in self.access.items() if at > now}
        self.access[access] = now + self.ttl_s
        self.refresh.add(refresh)
        return {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.ttl_s),
            "refresh_token": refresh,
        }


def build_app(static_token: str, ttl_s: float) -> Starlette:
    issuer = Issuer(ttl_s)
    mcp = make_server().streamable_http_app(streamable_http_path="/", host="127.0.0.1")

    def base(request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}"

    async def resource_metadata(request: Request) -> JSONResponse:
        return JSONResponse(
            {"resource": base(request) + MCP_PATH, "authorization_servers": [base(request) + "/"]}
        )

    async def server_metadata(request: Request) -> JSONResponse:
        root = base(request)
        return JSONResponse(
            {
                "issuer": root + "/",
                "authorization_endpoint": root + "/authorize",
                "token_endpoint": root + "/token",
                "registration_endpoint": root + "/register",
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }
        )

    async def register(request: Request) -> JSONResponse:
        asked = await request.json()
        client = {**asked, "client_id": secrets.token_urlsafe(12)}
        client["token_endpoint_auth_method"] = "none"  # noqa: S105 - a method's name
        return JSONResponse(client, status_code=201)

    async def authorize(request: Request) -> Response:
        query = request.query_params
        code = secrets.token_urlsafe(16)
        issuer.codes[code] = query["code_challenge"]
        back = {"code": code, "state": query.get("state", ""), "iss": base(request) + "/"}
        return RedirectResponse(f"{query['redirect_uri']}?{urlencode(back)}", status_code=302)

    async def token(request: Request) -> JSONResponse:
        form = await request.form()
        grant = form.get("grant_type")
        if grant == "authorization_code":
            challenge = issuer.codes.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier", "")).encode()
            made = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
            if challenge is None or not hmac.compare_digest(made.decode(), challenge):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return JSONResponse(issuer.tokens())
        if grant == "refresh_token":
            spent = str(form.get("refresh_token"))
            if spent not in issuer.refresh:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            issuer.refresh.discard(spent)  # rotated: each refresh token is good once
            return JSONResponse(issuer.tokens())
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    app = Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource" + MCP_PATH, resource_metadata),
            Route("/.well-known/oauth-protected-resource", resource_metadata),
            Route("/.well-known/oauth-authorization-server", server_metadata),
            Route("/register", register, methods=["POST"]),
            Route("/authorize", authorize),
            Route("/token", token, methods=["POST"]),
            Mount(MCP_PATH, app=mcp),
        ],
        lifespan=lambda app: mcp.router.lifespan_context(app),
    )

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(MCP_PATH):
            given = dict(scope["headers"]).get(b"authorization", b"").decode()
            bearer = given.removeprefix("Bearer ")
            live = issuer.access.get(bearer, 0.0) > time.monotonic()
            if not (hmac.compare_digest(bearer, static_token) or live):
                root = f"http://{dict(scope['headers'])[b'host'].decode()}"
                challenge = (
                    'Bearer error="invalid_token", resource_metadata='
                    f'"{root}/.well-known/oauth-protected-resource{MCP_PATH}"'
                )
                response = JSONResponse(
                    {"error": "invalid_token"},
                    status_code=401,
                    headers={"WWW-Authenticate": challenge},
                )
                await response(scope, receive, send)
                return
            if scope["path"] == MCP_PATH:
                scope = {**scope, "path": MCP_PATH + "/"}
        await app(scope, receive, send)

    return guarded  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--static-token", required=True, help="the static connector's token")
    parser.add_argument("--ttl", type=float, default=5.0, help="seconds an access token lives")
    args = parser.parse_args()
    serve_on_loopback(build_app(args.static_token, args.ttl), lambda base: {"url": base + MCP_PATH})


if __name__ == "__main__":
    main()
