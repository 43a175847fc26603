"""CORS on the MCP endpoint for the origins in ``AGENTWS_CORS_ORIGINS``.

A browser page from a configured origin gets its preflight answered (204,
the methods and the MCP request headers allowed) and can read
``Mcp-Session-Id`` and the other exposed headers of every answer, errors
included. Any other origin's preflight is refused with 403 and no grant;
without the setting no origin is granted.
"""

from __future__ import annotations

from pathlib import Path

import httpx2

from tests.e2e.mcp_support import REQUEST_S, running

APP = "https://app.example.com"
ACCEPT = "application/json, text/event-stream"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "browser", "version": "0"},
    },
}


def _preflight(origin: str) -> dict[str, str]:
    return {
        "Origin": origin,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": (
            "authorization, content-type, mcp-session-id, mcp-protocol-version, "
            "last-event-id, mcp-method, mcp-name, mcp-param-region"
        ),
    }


def _names(value: str) -> set[str]:
    return {name.strip().lower() for name in value.split(",")}


async def test_a_configured_origin_is_granted_cors(tmp_path: Path) -> None:
    env = {"AGENTWS_CORS_ORIGINS": APP}
    async with (
        running(tmp_path, with_library=False, **env) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        preflight = await http.options(server.url, headers=_preflight(APP))
        assert preflight.status_code == 204, preflight.text
        granted = preflight.headers
        assert granted["access-control-allow-origin"] == APP
        assert _names(granted["access-control-allow-methods"]) == {
            "get",
            "post",
            "delete",
            "options",
        }
        assert _names(granted["access-control-allow-headers"]) >= {
            "authorization",
            "content-type",
            "accept",
            "mcp-session-id",
            "mcp-protocol-version",
            "last-event-id",
            "mcp-method",
            "mcp-name",
            "mcp-param-region",
        }
        assert _names(granted["access-control-expose-headers"]) == {
            "mcp-session-id",
            "mcp-protocol-version",
            "www-authenticate",
        }
        assert int(granted["access-control-max-age"]) > 0

        # The requests themselves: the grant on every answer, refusals included.
        headers = {**server.headers(), "Origin": APP, "Accept": ACCEPT}
        opened = await http.post(server.url, json=INITIALIZE, headers=headers)
        assert opened.status_code == 200, opened.text
        assert opened.headers["access-control-allow-origin"] == APP
        assert "mcp-session-id" in _names(opened.headers["access-control-expose-headers"])
        refused = await http.post(
            server.url, json=INITIALIZE, headers={"Origin": APP, "Accept": ACCEPT}
        )
        assert refused.status_code == 401
        assert refused.headers["access-control-allow-origin"] == APP


async def test_other_origins_get_no_grant(tmp_path: Path) -> None:
    env = {"AGENTWS_CORS_ORIGINS": APP}
    async with (
        running(tmp_path, with_library=False, **env) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        for origin in ("https://evil.example.com", "http://app.example.com"):
            preflight = await http.options(server.url, headers=_preflight(origin))
            assert preflight.status_code == 403, origin
            assert "access-control-allow-origin" not in preflight.headers
            request = await http.post(
                server.url,
                json=INITIALIZE,
                headers={**server.headers(), "Origin": origin, "Accept": ACCEPT},
            )
            assert request.status_code == 403
            assert "access-control-allow-origin" not in request.headers
        # A preflight with no Origin is no browser's: no grant either.
        bare = await http.options(server.url)
        assert bare.status_code == 403


async def test_without_the_setting_no_origin_is_granted(tmp_path: Path) -> None:
    async with (
        running(tmp_path, with_library=False) as server,
        httpx2.AsyncClient(timeout=REQUEST_S) as http,
    ):
        preflight = await http.options(server.url, headers=_preflight(APP))
        assert preflight.status_code == 403
        assert "access-control-allow-origin" not in preflight.headers
