"""Dynamic registration (RFC 7591) is bounded: every field, and the number of clients, under load.

A real agentws on loopback, on each store. A registration is the one thing
anyone may send without an administrator: what it stores is held to the
bounds of :mod:`agentws.oauth.client_rules`, refused with RFC 7591's errors
naming the field, and the cap on clients holds however many register at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from agentws.domain.models import ClientKind, OAuthClient
from tests.e2e.mcp_support import running
from tests.e2e.oauth_support import REDIRECT
from tests.support import migrated_schema

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@asynccontextmanager
async def _database(backend: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    if backend == "sqlite":
        yield {}
        return
    async with migrated_schema() as url:
        yield {"database_url": url}


def _registration(**metadata: Any) -> dict[str, Any]:
    return {
        "client_name": "Client",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        **metadata,
    }


@pytest.mark.parametrize("backend", BACKENDS)
async def test_registrations_at_once_stop_at_the_client_limit(tmp_path: Path, backend: str) -> None:
    async with (
        _database(backend, tmp_path) as database,
        running(tmp_path, AGENTWS_OAUTH_MAX_CLIENTS="5", **database) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=30) as http,
    ):
        statuses: list[int] = []

        async def register(number: int) -> None:
            answer = await http.post(
                "/oauth/register", json=_registration(client_name=f"c{number}")
            )
            statuses.append(answer.status_code)
            if answer.status_code != 201:
                assert answer.json()["error"] == "invalid_client_metadata", answer.text
                assert "too many clients" in answer.json()["error_description"]

        async with trio.open_nursery() as nursery:
            for number in range(30):
                nursery.start_soon(register, number)
        assert sorted(statuses) == [201] * 5 + [400] * 25
        clients = await server.store.select(OAuthClient)
        assert [c.kind for c in clients] == [ClientKind.DYNAMIC] * 5


async def test_every_field_of_a_registration_is_bounded(tmp_path: Path) -> None:
    async with (
        running(tmp_path) as server,
        httpx2.AsyncClient(base_url=server.base_url, timeout=30) as http,
    ):
        for metadata, error, field in (
            ({"client_name": "x" * 201}, "invalid_client_metadata", "client_name"),
            ({"client_name": "evil\x1b[2J"}, "invalid_client_metadata", "client_name"),
            (
                {"redirect_uris": [f"http://127.0.0.1/cb{i}" for i in range(11)]},
                "invalid_redirect_uri",
                "redirect_uris",
            ),
            (
                {"redirect_uris": ["https://app.example/" + "x" * 2048]},
                "invalid_redirect_uri",
                "redirect_uris[0]",
            ),
            (
                {"client_uri": "https://app.example/" + "x" * 2048},
                "invalid_client_metadata",
                "client_uri",
            ),
            (
                {"logo_uri": "https://app.example/" + "x" * 2048},
                "invalid_client_metadata",
                "logo_uri",
            ),
            (
                {"contacts": [f"a{i}@app.example" for i in range(11)]},
                "invalid_client_metadata",
                "contacts",
            ),
            ({"contacts": ["a" * 321]}, "invalid_client_metadata", "contacts[0]"),
            ({"software_id": "s" * 201}, "invalid_client_metadata", "software_id"),
            ({"software_version": "v" * 201}, "invalid_client_metadata", "software_version"),
            ({"jwks": {"keys": ["k" * 9000]}}, "invalid_client_metadata", "jwks"),
            (
                {"grant_types": ["authorization_code", *(f"g{i}" for i in range(10))]},
                "invalid_client_metadata",
                "grant_types",
            ),
            (
                {"response_types": ["code", "r" * 101]},
                "invalid_client_metadata",
                "response_types[1]",
            ),
        ):
            answer = await http.post("/oauth/register", json=_registration(**metadata))
            assert answer.status_code == 400, (field, answer.text[:300])
            assert answer.json()["error"] == error, answer.text[:300]
            assert answer.json()["error_description"].startswith(field), answer.text[:300]
        # Whatever is over 64 KiB is not even read.
        huge = await http.post("/oauth/register", json=_registration(client_name="x" * 2**21))
        assert huge.status_code == 413
        assert await server.store.select(OAuthClient) == []

        # At its bounds, a registration is taken whole.
        full = _registration(
            client_name="n" * 200,
            redirect_uris=[f"http://127.0.0.1/{i}/" + "p" * 2000 for i in range(10)],
            contacts=[f"{i}" + "c" * 300 for i in range(10)],
        )
        answer = await http.post("/oauth/register", json=full)
        assert answer.status_code == 201, answer.text[:300]
        [client] = await server.store.select(OAuthClient)
        assert client.name == "n" * 200
        assert len(client.metadata["redirect_uris"]) == 10
