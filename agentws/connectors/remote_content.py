"""A group's remote MCP connectors' resources, resource templates and prompts, relayed.

A remote MCP server offers more than tools. What its connector's groups
see of the rest:

- its **resources** and **resource templates**, under the remote's own
  URIs (a client reads back the URI it was given); a URI in agentws's own
  scheme (``agentws://``) is left out, and where two connectors of a group
  list the same URI, the first by connector name has it;
- its **prompts**, named ``<connector>_<prompt>`` as its tools are;
- reading one of those URIs (or one a template of theirs matches), getting
  one of those prompts and completing their arguments are requests sent to
  the remote over the connector's link (:meth:`RemoteLinks.request`), the
  remote's answer passed on as it is.

The lists are asked of each remote once and kept (:class:`ContentLists`),
until the remote says they changed or its link connects again
(:meth:`RemoteLinks.on_content_changed`); then :attr:`RemoteContent.generation`
moves, which is how the group endpoint knows to tell its clients. A remote
that cannot be asked (down, slow, not an MCP server) offers nothing for
:data:`RETRY_S`, and a listing never waits on it longer than :data:`LIST_S`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import attrs
import mcp_types as types
import trio
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate

from agentws.connectors.links import RemoteLinks
from agentws.connectors.modern_link import in_rounds, is_modern
from agentws.connectors.relay import CallerChannel
from agentws.connectors.remote_mcp import RemoteError, all_pages
from agentws.core.errors import NotFoundError
from agentws.core.redaction import upstream_excerpt
from agentws.domain.models import Connector, ConnectorKind, Group, GroupConnector
from agentws.store.sql_records import RecordStore

__all__ = [
    "LIST_S",
    "RETRY_S",
    "ContentLists",
    "RemoteContent",
    "RemotePrompt",
    "listed_resources",
    "listed_templates",
    "named_prompts",
]

log = logging.getLogger("agentws.connectors")

#: A listing waits this long at most for a remote's lists.
LIST_S = 5.0
#: A remote whose lists could not be had is asked again after this long.
RETRY_S = 30.0
# The URI scheme of agentws's own resources: never a remote's.
_OWN_SCHEME = "agentws://"


@attrs.frozen
class ContentLists:
    """What one remote lists besides its tools."""

    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()


@attrs.frozen
class RemotePrompt:
    """A remote's prompt as a group offers it: the connector and the remote's own prompt."""

    connector: Connector
    prompt: types.Prompt


@attrs.frozen
class _Kept:
    lists: ContentLists
    #: When to ask again (a failed fetch); None: until told of a change.
    until: float | None = None


async def _fetch(session: ClientSession) -> ContentLists:
    capabilities = session.server_capabilities
    if capabilities is None:
        return ContentLists()
    resources: list[types.Resource] = []
    templates: list[types.ResourceTemplate] = []
    prompts: list[types.Prompt] = []
    if capabilities.resources is not None:
        resources = await all_pages(lambda p: session.list_resources(params=p), "resources")
        templates = await all_pages(
            lambda p: session.list_resource_templates(params=p), "resource_templates"
        )
    if capabilities.prompts is not None:
        prompts = await all_pages(lambda p: session.list_prompts(params=p), "prompts")
    return ContentLists(
        resources=tuple(r for r in resources if not str(r.uri).startswith(_OWN_SCHEME)),
        templates=tuple(t for t in templates if not t.uri_template.startswith(_OWN_SCHEME)),
        prompts=tuple(prompts),
    )


def _matches(template: str, uri: str) -> bool:
    try:
        return UriTemplate.parse(template).match(uri) is not None
    except Exception:  # a template the remote got wrong matches nothing
        return False


ByConnector = Sequence[tuple[Connector, ContentLists]]


def listed_resources(by_connector: ByConnector) -> list[types.Resource]:
    """The resources of :meth:`RemoteContent.of_group`'s answer: each URI once, the first's."""
    seen: set[str] = set()
    resources = []
    for _, lists in by_connector:
        for resource in lists.resources:
            if str(resource.uri) not in seen:
                seen.add(str(resource.uri))
                resources.append(resource)
    return resources


def listed_templates(by_connector: ByConnector) -> list[types.ResourceTemplate]:
    """The resource templates of :meth:`RemoteContent.of_group`'s answer."""
    return [t for _, lists in by_connector for t in lists.templates]


def named_prompts(by_connector: ByConnector) -> dict[str, RemotePrompt]:
    """The prompts of :meth:`RemoteContent.of_group`'s answer, by the name a group offers."""
    return {
        f"{connector.name}_{prompt.name}": RemotePrompt(connector, prompt)
        for connector, lists in by_connector
        for prompt in lists.prompts
    }


@attrs.define(eq=False)
class RemoteContent:
    """The resources, templates and prompts of the remote MCP connectors of groups.

    Args:
        store: where groups' connectors are read.
        links: the links requests go over; this registers with it to hear
            of changes.
    """

    store: RecordStore
    links: RemoteLinks
    #: Moves whenever a remote's lists may have changed.
    generation: int = attrs.field(default=0, init=False)
    _kept: dict[str, _Kept] = attrs.field(factory=dict, init=False)
    _changed: trio.Event = attrs.field(factory=trio.Event, init=False)

    def __attrs_post_init__(self) -> None:
        self.links.on_content_changed(self.forget)

    def forget(self, connector: Connector) -> None:
        """Ask ``connector``'s remote for its lists again; say they may have changed."""
        self._kept.pop(connector.id, None)
        self.generation += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self, generation: int) -> None:
        """Return once :attr:`generation` is past ``generation``."""
        while self.generation == generation:
            await self._changed.wait()

    async def connectors(self, group: Group) -> list[Connector]:
        """The group's active remote MCP connectors, by name."""
        found = []
        for attached in await self.store.select(GroupConnector, group_id=group.id):
            try:
                connector = await self.store.get(Connector, attached.connector_id)
            except NotFoundError:
                continue  # detached meanwhile
            if connector.kind is ConnectorKind.REMOTE_MCP and connector.active:
                found.append(connector)
        return sorted(found, key=lambda c: c.name)

    async def lists(self, connector: Connector) -> ContentLists:
        """What ``connector``'s remote lists: kept, or asked now (nothing if it cannot be)."""
        kept = self._kept.get(connector.id)
        if kept is not None and (kept.until is None or trio.current_time() < kept.until):
            return kept.lists
        generation = self.generation
        try:
            with trio.fail_after(LIST_S):
                lists = await self.links.request(connector, "list its resources", _fetch)
        except (RemoteError, MCPError, trio.TooSlowError) as exc:
            reason = (
                exc.message
                if isinstance(exc, RemoteError)
                else upstream_excerpt(exc.error.message)
                if isinstance(exc, MCPError)
                else f"no answer within {LIST_S:g} s"
            )
            log.warning(
                "connector %s: cannot list its resources and prompts: %s", connector.name, reason
            )
            self._kept[connector.id] = _Kept(ContentLists(), until=trio.current_time() + RETRY_S)
            return ContentLists()
        if self.generation == generation:  # not told of a change while asking
            self._kept[connector.id] = _Kept(lists)
        return lists

    async def of_group(self, group: Group) -> list[tuple[Connector, ContentLists]]:
        """Each remote MCP connector of the group with its lists, asked concurrently."""
        connectors = await self.connectors(group)
        found: dict[str, ContentLists] = {}

        async def one(connector: Connector) -> None:
            found[connector.id] = await self.lists(connector)

        async with trio.open_nursery() as nursery:
            for connector in connectors:
                nursery.start_soon(one, connector)
        return [(c, found[c.id]) for c in connectors]

    async def resources(self, group: Group) -> list[types.Resource]:
        """The group's remote resources: each URI once, the first connector's."""
        return listed_resources(await self.of_group(group))

    async def templates(self, group: Group) -> list[types.ResourceTemplate]:
        """The group's remote resource templates."""
        return listed_templates(await self.of_group(group))

    async def prompts(self, group: Group) -> dict[str, RemotePrompt]:
        """The group's remote prompts by the name it offers them under."""
        return named_prompts(await self.of_group(group))

    async def owner(self, group: Group, uri: str) -> Connector | None:
        """The connector whose remote offers ``uri``: listed it, else a template of its matches."""
        by_connector = await self.of_group(group)
        for connector, lists in by_connector:
            if any(str(r.uri) == uri for r in lists.resources):
                return connector
        for connector, lists in by_connector:
            if any(_matches(t.uri_template, uri) for t in lists.templates):
                return connector
        return None

    async def owner_of_template(self, group: Group, template: str) -> Connector | None:
        """The connector whose remote lists the resource template ``template``."""
        for connector, lists in await self.of_group(group):
            if any(t.uri_template == template for t in lists.templates):
                return connector
        return None

    async def read(
        self, connector: Connector, uri: str, channel: CallerChannel | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """``resources/read`` of ``uri`` at ``connector``'s remote.

        A remote of 2026-07-28 may answer ``input_required`` first: see
        :meth:`get_prompt`.

        Error handling:
            RemoteError if the remote cannot be reached; MCPError as the
            remote answered (e.g. it has no such resource).
        """

        async def send(
            session: ClientSession,
        ) -> types.ReadResourceResult | types.InputRequiredResult:
            if not is_modern(session):
                return await session.read_resource(uri)

            async def once(
                responses: types.InputResponses | None, state: str | None
            ) -> types.ReadResourceResult | types.InputRequiredResult:
                return await session.read_resource(
                    uri, input_responses=responses, request_state=state, allow_input_required=True
                )

            return await in_rounds(session, once, channel)

        return await self.links.request(connector, f"read {uri}", send, channel=channel)

    async def get_prompt(
        self,
        found: RemotePrompt,
        arguments: dict[str, str] | None,
        channel: CallerChannel | None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """``prompts/get`` at the remote; what the remote asks meanwhile goes to ``channel``.

        Over a handshake link the remote asks with requests during the call
        (the link's callbacks take them to ``channel``). A remote of
        2026-07-28 answers ``input_required`` instead: for a channel that
        takes the rounds itself, that answer is what this returns; for any
        other, the questions go to the channel and the prompt is asked for
        again until the remote has it.

        Error handling: as :meth:`read`.
        """
        name = found.prompt.name

        async def send(session: ClientSession) -> types.GetPromptResult | types.InputRequiredResult:
            if not is_modern(session):
                return await session.get_prompt(name, arguments)

            async def once(
                responses: types.InputResponses | None, state: str | None
            ) -> types.GetPromptResult | types.InputRequiredResult:
                return await session.get_prompt(
                    name,
                    arguments,
                    input_responses=responses,
                    request_state=state,
                    allow_input_required=True,
                )

            return await in_rounds(session, once, channel)

        return await self.links.request(
            found.connector, f"get prompt {name}", send, channel=channel
        )

    async def complete(
        self,
        connector: Connector,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context: dict[str, str] | None,
    ) -> types.CompleteResult:
        """``completion/complete`` at the remote, ``ref`` in the remote's own names."""
        return await self.links.request(
            connector,
            "complete an argument",
            lambda session: session.complete(ref, argument, context_arguments=context),
        )
