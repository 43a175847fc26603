"""A connector's grant upstream on both stores: one refresher at a time, a loss told once.

Two "instances" are two stores opened on the same database, each with its
own :class:`~agentws.connectors.grants.GrantKeeper`; the upstream's token
endpoint is a fake speaking OAuth's wire format (an ``httpx2`` transport),
which counts the refreshes it is asked for.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs

import attrs
import httpx2
import pytest
import trio
from cryptography.fernet import Fernet
from mcp.shared.auth import OAuthToken

from agentws.connectors.grants import GrantAuth, GrantKeeper, open_tokens, store_grant
from agentws.connectors.upstream_auth import NeedsAuthorization
from agentws.domain.models import (
    Connector,
    ConnectorAuthorization,
    ConnectorGrant,
    ConnectorKind,
    GrantState,
)
from agentws.domain.rules import utcnow
from agentws.settings.secret_box import SecretBox
from agentws.store import SqlStore, open_store
from agentws.workspaces.admin import create_workspace

TOKEN_URL = "https://as.example.com/token"


@attrs.define
class TokenEndpoint:
    """The upstream's token endpoint: rotates the refresh token; or refuses every refresh."""

    refuse: bool = False
    refreshes: list[str] = attrs.field(factory=list)
    slow: trio.Event | None = None

    async def __call__(self, request: httpx2.Request) -> httpx2.Response:
        form = {k: v[0] for k, v in parse_qs((await request.aread()).decode()).items()}
        assert form["grant_type"] == "refresh_token"
        assert form["resource"] == "https://mcp.example.com/mcp"
        self.refreshes.append(form["refresh_token"])
        if self.slow is not None:
            await self.slow.wait()
        if self.refuse:
            body = {"error": "invalid_grant", "error_description": "revoked"}
            return httpx2.Response(400, json=body)
        n = len(self.refreshes)
        fresh = {"access_token": f"at-{n}", "refresh_token": f"rt-{n}", "expires_in": 3600}
        return httpx2.Response(200, json={"token_type": "Bearer", **fresh})


@pytest.fixture
def box() -> SecretBox:
    return SecretBox(Fernet(Fernet.generate_key()))


async def _connected(
    store: SqlStore, box: SecretBox, *, expires_in: int, expired: bool = False
) -> Connector:
    workspace = await create_workspace(store, "acme", name=None, actor="t")
    connector = await store.insert(
        Connector(
            workspace_id=workspace.id,
            name="peer",
            kind=ConnectorKind.REMOTE_MCP,
            url="https://mcp.example.com/mcp",
            auth="oauth",
        )
    )
    tokens = OAuthToken(access_token="at-0", refresh_token="rt-0", expires_in=expires_in)
    grant = await store_grant(
        store,
        box,
        connector,
        tokens=tokens,
        client=None,
        token_endpoint=TOKEN_URL,
        resource="https://mcp.example.com/mcp",
    )
    if expired:  # issued an hour ago: its access token is past its time
        issued = utcnow() - timedelta(hours=1)
        await store.update(
            attrs.evolve(
                grant,
                updated_at=issued,
                expires_at=issued + timedelta(seconds=expires_in),
            )
        )
    return connector


def _keeper(
    store: SqlStore, box: SecretBox, connector: Connector, endpoint: TokenEndpoint, holder: str
) -> tuple[GrantKeeper, list[str], httpx2.AsyncClient]:
    lost: list[str] = []

    async def on_lost(c: Connector, reason: str) -> None:
        lost.append(reason)

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(endpoint))
    return GrantKeeper(store, box, connector, http, holder=holder, on_lost=on_lost), lost, http


async def test_two_instances_refresh_a_due_token_once_and_both_use_the_new_one(
    store: SqlStore, store_url: str, box: SecretBox
) -> None:
    connector = await _connected(store, box, expires_in=600, expired=True)
    async with open_store(store_url, pool_size=2) as other:
        await _refresh_twice(store, other, box, connector)


async def _refresh_twice(
    store: SqlStore, other: SqlStore, box: SecretBox, connector: Connector
) -> None:
    endpoint = TokenEndpoint(slow=trio.Event())
    one, _, http_one = _keeper(store, box, connector, endpoint, "instance-1")
    two, _, http_two = _keeper(other, box, connector, endpoint, "instance-2")
    got: dict[str, str] = {}

    async def take(name: str, keeper: GrantKeeper) -> None:
        got[name] = await keeper.access_token()

    async with http_one, http_two, trio.open_nursery() as nursery:
        nursery.start_soon(take, "one", one)
        nursery.start_soon(take, "two", two)
        with trio.fail_after(10):
            while not endpoint.refreshes:  # noqa: ASYNC110 - the fake counts
                await trio.sleep(0.01)
        assert endpoint.slow is not None
        endpoint.slow.set()
    assert endpoint.refreshes == ["rt-0"]  # one refresh, with the one refresh token
    assert got == {"one": "at-1", "two": "at-1"}
    grant = await store.find(ConnectorGrant, connector_id=connector.id)
    assert grant is not None and grant.lease_holder is None
    tokens = open_tokens(box, grant)
    assert tokens is not None and tokens.refresh_token == "rt-1"  # rotated, kept
    assert grant.state is GrantState.CONNECTED


async def test_a_refused_refresh_loses_the_grant_once_for_every_instance(
    store: SqlStore, store_url: str, box: SecretBox
) -> None:
    connector = await _connected(store, box, expires_in=600, expired=True)
    async with open_store(store_url, pool_size=2) as other:
        await _refused_twice(store, other, box, connector)


async def _refused_twice(
    store: SqlStore, other: SqlStore, box: SecretBox, connector: Connector
) -> None:
    endpoint = TokenEndpoint(refuse=True)
    one, lost_one, http_one = _keeper(store, box, connector, endpoint, "instance-1")
    two, lost_two, http_two = _keeper(other, box, connector, endpoint, "instance-2")
    async with http_one, http_two:
        with pytest.raises(NeedsAuthorization, match="connector 'peer' needs authorization"):
            await one.access_token()
        with pytest.raises(NeedsAuthorization, match=r"invalid_grant: revoked"):
            await two.access_token()
    assert lost_one + lost_two == [
        "the upstream refused to refresh the token (invalid_grant: revoked)"
    ]
    for either in (store, other):
        grant = await either.find(ConnectorGrant, connector_id=connector.id)
        assert grant is not None and grant.state is GrantState.NEEDS_AUTHORIZATION
        assert grant.tokens is None


async def test_a_scope_challenge_needs_authorization_with_that_scope(
    store: SqlStore, box: SecretBox
) -> None:
    connector = await _connected(store, box, expires_in=3600)

    def upstream(request: httpx2.Request) -> httpx2.Response:
        assert request.headers["authorization"] == "Bearer at-0"
        challenge = 'Bearer error="insufficient_scope", scope="tickets:write"'
        return httpx2.Response(403, headers={"WWW-Authenticate": challenge})

    keeper, lost, http = _keeper(store, box, connector, TokenEndpoint(), "instance-1")
    transport = httpx2.MockTransport(upstream)
    async with http, httpx2.AsyncClient(transport=transport, auth=GrantAuth(keeper)) as mcp:
        with pytest.raises(NeedsAuthorization, match="asks for scope 'tickets:write'"):
            await mcp.post("https://mcp.example.com/mcp", json={})
    grant = await store.find(ConnectorGrant, connector_id=connector.id)
    assert grant is not None and grant.wanted_scope == "tickets:write"
    assert len(lost) == 1


async def test_a_state_is_answered_once_and_only_while_it_lasts(
    store: SqlStore, box: SecretBox
) -> None:
    connector = await _connected(store, box, expires_in=3600)
    now = utcnow()
    for state, expires in (("fresh", now + timedelta(minutes=10)), ("old", now)):
        await store.insert(
            ConnectorAuthorization(
                connector_id=connector.id,
                state_hash=state,
                started_by="admin:alice",
                expires_at=expires,
            )
        )
    code = box.seal("the-code")
    first = await store.answer_authorization(
        "fresh", now=utcnow(), code=code, iss="https://as.example.com", error=None
    )
    assert first is not None and box.open(first.code or b"") == "the-code"
    again = await store.answer_authorization("fresh", now=utcnow(), code=code, iss=None, error=None)
    assert again is None  # single use
    late = await store.answer_authorization("old", now=utcnow(), code=code, iss=None, error=None)
    assert late is None  # expired
