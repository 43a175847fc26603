"""A remote's requests to a caller, marked as the connector's: never taken for agentws's own.

What a remote MCP server asks a caller during a call (``elicitation/create``,
``sampling/createMessage``, ``roots/list``) reaches that caller through
agentws, and the caller's client shows it as coming from agentws: the
server it is connected to. A malicious remote could then ask in agentws's
words ("Run the destructive action …", "agentws needs your admin
password"). So every relayed request is marked:

- an elicitation's message starts with ``Connector 'NAME' asks:``;
- a sampling request's system prompt starts with a line naming the
  connector, and its ``includeContext`` is ``none``: for a client, "this
  server" is agentws's whole group, which is not the remote's to read
  (the remote is also told the caller cannot give context);
- the request's ``_meta`` carries :data:`RELAYED_META_KEY` with the
  connector's name, and no other ``io.agentws/`` key: agentws's own
  confirmations carry :data:`CONFIRMATION_META_KEY`, a mark a relayed
  request therefore cannot carry.

A connector whose relay an admin turned off (``relay_requests``) has its
requests refused with an error saying so; its progress and log messages
still reach the caller (log messages never under agentws's own loggers).
:class:`ConnectorChannel` applies all this to whatever channel the caller
handed the call.
"""

from __future__ import annotations

from typing import Any

import attrs
import mcp_types as types

from agentws.connectors.relay import (
    CallerChannel,
    ElicitFn,
    LogFn,
    ProgressFn,
    RemoteRound,
    RootsFn,
    SampleFn,
    SampleResult,
    remote_round_of,
)

__all__ = [
    "CONFIRMATION_META_KEY",
    "RELAYED_META_KEY",
    "ConnectorChannel",
    "marked_elicitation",
    "marked_sampling",
]

#: ``_meta`` key of a relayed request: the name of the connector that asks.
RELAYED_META_KEY = "io.agentws/relayed-from"
#: ``_meta`` key of agentws's own confirmation of a destructive call.
CONFIRMATION_META_KEY = "io.agentws/confirmation"
# Keys of ours in ``_meta``: a remote's are dropped.
_OURS = "io.agentws/"
# Loggers that are agentws's own (its approvals' outcomes among them).
_OWN_LOGGER = "agentws"


def _meta(meta: Any, connector: str) -> dict[str, Any]:
    kept = {
        key: value
        for key, value in (meta or {}).items()
        if not (isinstance(key, str) and key.startswith(_OURS))
    }
    return {**kept, RELAYED_META_KEY: connector}


def _asks(connector: str) -> str:
    return f"Connector {connector!r} asks: "


def marked_elicitation(
    params: types.ElicitRequestParams, connector: str
) -> types.ElicitRequestParams:
    """``params`` with its message prefixed with the connector's name, and our ``_meta`` mark."""
    return params.model_copy(
        update={
            "message": _asks(connector) + params.message,
            "meta": _meta(params.meta, connector),
        }
    )


def marked_sampling(
    params: types.CreateMessageRequestParams, connector: str
) -> types.CreateMessageRequestParams:
    """``params`` marked as the connector's, asking for no context from the caller."""
    said = (
        f"This request comes from connector {connector!r}, a remote MCP server reached "
        "through agentws; it is not agentws's own."
    )
    prompt = f"{said}\n\n{params.system_prompt}" if params.system_prompt else said
    return params.model_copy(
        update={
            "system_prompt": prompt,
            "include_context": "none" if params.include_context is not None else None,
            "meta": _meta(params.meta, connector),
        }
    )


def _marked_request(request: types.InputRequest, connector: str) -> types.InputRequest:
    if isinstance(request, types.ElicitRequest):
        return request.model_copy(update={"params": marked_elicitation(request.params, connector)})
    if isinstance(request, types.CreateMessageRequest):
        return request.model_copy(update={"params": marked_sampling(request.params, connector)})
    return request


def _without_context(capabilities: dict[str, Any]) -> dict[str, Any]:
    """The caller's capabilities as the remote is told them: sampling gives no context."""
    sampling = capabilities.get("sampling")
    if not isinstance(sampling, dict) or "context" not in sampling:
        return capabilities
    return {**capabilities, "sampling": {k: v for k, v in sampling.items() if k != "context"}}


@attrs.frozen
class ConnectorChannel:
    """A caller's channel as one connector's call may use it (a ``RoundChannel``).

    Args:
        connector: the connector's name.
        relays: whether its requests reach the caller (the connector's
            ``relay_requests``).
        inner: the caller's own channel.
    """

    connector: str
    relays: bool
    inner: CallerChannel

    @property
    def progress(self) -> ProgressFn | None:
        return self.inner.progress

    @property
    def asks_back(self) -> bool:
        return self.relays and self.inner.asks_back

    @property
    def log(self) -> LogFn | None:
        inner = self.inner.log
        if inner is None:
            return None

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            logger = params.logger or ""
            if logger.lower().startswith(_OWN_LOGGER):
                params = params.model_copy(update={"logger": f"{self.connector}: {logger}"})
            await inner(params)

        return log

    @property
    def elicit(self) -> ElicitFn | None:
        inner = self.inner.elicit
        if inner is None:
            return None
        if not self.relays:
            return self._refuse_elicitation

        async def elicit(params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
            return await inner(marked_elicitation(params, self.connector))

        return elicit

    @property
    def sample(self) -> SampleFn | None:
        inner = self.inner.sample
        if inner is None:
            return None
        if not self.relays:
            return self._refuse_sampling

        async def sample(params: types.CreateMessageRequestParams) -> SampleResult:
            return await inner(marked_sampling(params, self.connector))

        return sample

    @property
    def roots(self) -> RootsFn | None:
        inner = self.inner.roots
        if inner is None:
            return None
        return inner if self.relays else self._refuse_roots

    @property
    def remote_round(self) -> RemoteRound | None:
        # Not relaying: the link answers the remote's questions itself, refusing them.
        passed = remote_round_of(self.inner)
        if passed is None or not self.relays:
            return None
        connector = self.connector

        def pass_back(result: types.InputRequiredResult) -> types.InputRequiredResult:
            requests = {
                key: _marked_request(request, connector)
                for key, request in (result.input_requests or {}).items()
            }
            return passed.pass_back(result.model_copy(update={"input_requests": requests}))

        return attrs.evolve(
            passed, capabilities=_without_context(passed.capabilities), pass_back=pass_back
        )

    def _refusal(self, what: str) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST,
            message=f"agentws does not pass {what} requests of connector {self.connector!r} "
            "on to its callers: an admin turned that off",
        )

    async def _refuse_elicitation(
        self, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        return self._refusal("elicitation")

    async def _refuse_sampling(self, params: types.CreateMessageRequestParams) -> SampleResult:
        return self._refusal("sampling")

    async def _refuse_roots(self) -> types.ListRootsResult | types.ErrorData:
        return self._refusal("roots")
