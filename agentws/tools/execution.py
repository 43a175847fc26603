"""Running a tool call that the gate has let through: built-ins, native actions, remote tools.

Nothing here decides whether a call may run: :mod:`agentws.tools.gate`
does, and approved calls are run by the service
(:mod:`agentws.approvals.runs`), never by the CLI. Remote MCP calls go
through the service's shared links (:class:`~agentws.connectors.links.RemoteLinks`).
Every failure comes back as a tool error result the caller can read;
nothing here raises for an upstream's sake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, overload

import attrs
import mcp_types as types

from agentws.connectors.admin import connector_headers
from agentws.connectors.native import ACTIONS, action_error, run_action, upstream_deadline
from agentws.core.errors import NotFoundError, UpstreamError, ValidationError
from agentws.domain.models import Capability, Connector, ConnectorKind, Group, Library
from agentws.domain.tool_results import tool_error
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore
from agentws.tools.approval_queue import approval_outcome
from agentws.tools.builtins import BUILTINS, GET_APPROVAL, BuiltinCall
from agentws.tools.caller_channel import CallerChannel
from agentws.tools.spec import ToolSpec

__all__ = ["RemoteCall", "ToolRunner"]

#: ``call(connector, remote tool name, arguments, retry_safe=..., channel=...)``: a remote
#: MCP tool call (``input_required`` only for a channel that takes it).
RemoteCall = Callable[..., Awaitable[types.CallToolResult | types.InputRequiredResult]]
#: ``check(output schema, structured content)``: why the content breaks the schema, or None.
OutputCheck = Callable[[dict[str, Any], Any], Awaitable[str | None]]


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


@attrs.define(eq=False)
class ToolRunner:
    """Runs calls of a group's tools."""

    store: _Store
    settings: Settings
    keys: Keys
    remote_call: RemoteCall
    #: ``connector_of(connector_id)``: the connector record (a cached one, see
    #: :meth:`~agentws.tools.catalog.Catalog.connector`); None: read from the store.
    connector_of: Callable[[str], Awaitable[Connector]] | None = None
    #: ``libraries_of(group)``: the group's libraries by id, in attachment order
    #: (the catalog's, see :meth:`~agentws.tools.catalog.Catalog.libraries`);
    #: None: the built-ins read them from the store.
    libraries_of: Callable[[Group], Awaitable[dict[str, Library]]] | None = None
    #: Checks a remote tool's structured result against its cached output schema
    #: (:meth:`~agentws.tools.validation.ArgumentChecker.output_problem`); None:
    #: left unchecked (a process with no worker, such as the CLI's try of a prompt,
    #: whose one-off sessions the SDK checks).
    check_output: OutputCheck | None = None

    @overload
    async def run(
        self,
        tool: ToolSpec,
        arguments: dict[str, Any],
        *,
        group: Group,
        token_id: str | None,
        channel: None = None,
    ) -> types.CallToolResult: ...

    @overload
    async def run(
        self,
        tool: ToolSpec,
        arguments: dict[str, Any],
        *,
        group: Group,
        token_id: str | None,
        channel: CallerChannel | None,
    ) -> types.CallToolResult | types.InputRequiredResult: ...

    async def run(
        self,
        tool: ToolSpec,
        arguments: dict[str, Any],
        *,
        group: Group,
        token_id: str | None,
        channel: CallerChannel | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Run ``tool`` with ``arguments`` (already checked against its schema) for a caller.

        ``channel``: how a remote MCP tool's progress, log messages and
        requests reach the caller while it runs (None: they do not). Only a
        caller whose channel takes a remote's questions back itself
        (:class:`~agentws.connectors.relay.RoundChannel`) may get an
        ``input_required`` result.
        """
        builtin = BUILTINS.get(tool.name)
        if builtin is not None and tool.source == "builtin":
            libraries = await self.libraries_of(group) if self.libraries_of is not None else None
            return await builtin.run(BuiltinCall(self.store, group, libraries, arguments))
        if tool.name == GET_APPROVAL.name and tool.source == "builtin":
            return await approval_outcome(self.store, token_id, arguments["approval_id"])
        try:
            connector_id = tool.connector_id or ""
            if self.connector_of is not None:
                connector = await self.connector_of(connector_id)
            else:
                connector = await self.store.get(Connector, connector_id)
        except NotFoundError:
            return tool_error(f"{tool.name} is gone: its connector was removed")
        if connector.kind is ConnectorKind.REMOTE_MCP:
            try:
                result = await self.remote_call(
                    connector,
                    tool.remote_name or "",
                    arguments,
                    retry_safe=tool.capability is Capability.READ,
                    channel=channel,
                )
            except (UpstreamError, ValidationError) as exc:
                return tool_error(f"{tool.name} failed: {exc.message}")
            return await self._checked(tool, connector, result)
        action = ACTIONS[connector.kind].get(tool.remote_name or "")
        if action is None:
            return tool_error(f"{tool.name} is not an action of {connector.kind.value}")
        box = self.keys.box() if connector.secret else None
        try:
            with upstream_deadline(connector, self.settings.tool_timeout_s):
                return await run_action(
                    connector,
                    action,
                    arguments,
                    headers=connector_headers(connector, box),
                    allowlist=self.settings.connector_allowlist,
                )
        except UpstreamError as exc:  # the deadline passed
            return action_error(connector, action, exc)

    async def _checked(
        self,
        tool: ToolSpec,
        connector: Connector,
        result: types.CallToolResult | types.InputRequiredResult,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """``result``, or a tool error if its structured content breaks the output schema.

        As the SDK's client would refuse it, in its words, but checked with
        agentws's bounded checker against the schema the catalog cached.
        """
        schema = tool.output_schema
        if (
            self.check_output is None
            or schema is None
            or not isinstance(result, types.CallToolResult)
            or result.is_error
        ):
            return result
        name = tool.remote_name or tool.name
        if result.structured_content is None:
            problem = f"Tool {name} has an output schema but did not return structured content"
        else:
            found = await self.check_output(schema, result.structured_content)
            if found is None:
                return result
            problem = f"Invalid structured content returned by tool {name}: {found}"
        # Bounded already: the checker cuts what it quotes of the content.
        return tool_error(f"{connector.name} answered what cannot be passed on: {problem}")
