"""The service's authorizations of OAuth connectors under way, owned by one nursery.

The dashboard's Connect and the admin API start one with :meth:`ConnectorAuthorizations.start`:
the flow (:func:`~agentws.connectors.authorize.authorize_connector`) runs
as a task of this service's nursery, and ``start`` returns as soon as the
flow has the upstream's authorization URL for the admin to open. The flow
then waits (up to 10 minutes) for the admin's consent, which any instance's
callback hands it through the store; once the grant is kept, the
connector's link connects again with it and its tools are fetched. A flow
that fails leaves the reason in the log and on the connector's grant.
:meth:`close` cancels every flow under way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import attrs
import trio

from agentws.connectors.authorize import authorize_connector
from agentws.connectors.grants import GrantsStore
from agentws.connectors.url_guard import Resolver, system_resolver
from agentws.core.errors import AgentwsError, UpstreamError
from agentws.domain.models import Connector
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys

__all__ = ["ConnectorAuthorizations"]

log = logging.getLogger("agentws.connectors")

# How long ``start`` waits for the flow to reach the upstream's authorization URL.
_START_S = 30.0


@attrs.define(eq=False)
class ConnectorAuthorizations:
    """Runs admins' authorizations of connectors; :meth:`serve` owns them.

    Args:
        authorized: told when a connector got its grant (the links connect
            again and fetch its tools).
    """

    store: GrantsStore
    settings: Settings
    keys: Keys
    authorized: Callable[[Connector], Awaitable[object]]
    resolve: Resolver = system_resolver
    _nursery: trio.Nursery | None = None
    _closing: trio.Event = attrs.field(factory=trio.Event)

    async def serve(
        self, *, task_status: trio.TaskStatus[ConnectorAuthorizations] = trio.TASK_STATUS_IGNORED
    ) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self)
            await self._closing.wait()
            nursery.cancel_scope.cancel()
        self._nursery = None

    def close(self) -> None:
        self._closing.set()

    async def start(
        self,
        connector: Connector,
        workspace: str,
        actor: str,
        session_hash: str | None,
        base_url: str,
    ) -> str | None:
        """Start authorizing ``connector``; the URL for the admin to open (None: none needed,
        a client-credentials connector, which is authorized already when this returns).

        Error handling:
            UpstreamError when the flow fails before it has a URL (discovery,
            registration), or takes longer than 30 s to get one.
        """
        if self._nursery is None:
            raise UpstreamError("connector authorizations are not running (shutting down)")
        shown: list[str] = []
        ready = trio.Event()
        failed: list[str] = []

        async def show(url: str) -> None:
            shown.append(url)
            ready.set()

        scope = trio.CancelScope()

        async def flow() -> None:
            with scope:
                await run()

        async def run() -> None:
            try:
                await authorize_connector(
                    self.store,
                    self.keys.box(),
                    self.settings,
                    connector,
                    workspace_slug=workspace,
                    started_by=actor,
                    show=show,
                    base_url=base_url,
                    session_hash=session_hash,
                    resolve=self.resolve,
                )
            except AgentwsError as exc:
                log.warning("connector %s: authorization failed: %s", connector.name, exc.message)
                failed.append(exc.message)
            except Exception as exc:
                # One admin's failed flow must not take the service down.
                log.exception("connector %s: authorization failed", connector.name)
                failed.append(f"connector {connector.name!r}: {type(exc).__name__}: {exc}")
            else:
                log.info("connector %s is authorized", connector.name)
                await self.authorized(connector)
            ready.set()

        self._nursery.start_soon(flow)
        with trio.move_on_after(_START_S):
            await ready.wait()
        if shown:
            return shown[0]
        if failed:
            raise UpstreamError(failed[0])  # each names the connector
        if ready.is_set():
            return None
        scope.cancel()  # nobody will be shown its page: it must not wait ten minutes
        raise UpstreamError(
            f"connector {connector.name!r}: its upstream did not get to an authorization "
            f"page within {_START_S:g} s"
        )
