"""Native connectors: GitHub, Slack and Stripe actions over their HTTP APIs.

Each action has a fixed capability label, a real JSON Schema and a function
that turns its arguments into a request, sent with httpx2 (through the URL
guard, at the connector's base URL, so GitHub Enterprise or a test server
works). Arguments that go into a request's path are checked against the
API's own grammar first and the path is built from encoded segments
(:mod:`agentws.connectors.paths`): a call cannot reach another endpoint.
Upstream errors come back as readable tool errors naming the upstream
status; a result carries the upstream's JSON as ``structuredContent`` and a
text rendering for every client.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

import attrs
import httpx2

from agentws.connectors.definitions import definition_hash
from agentws.connectors.paths import (
    GIT_BRANCH,
    GITHUB_OWNER,
    GITHUB_REPOSITORY,
    STRIPE_ID,
    Grammar,
    branch_segments,
    join_path,
)
from agentws.connectors.url_guard import GuardedTransport, Resolver, system_resolver
from agentws.core.deadlines import deadline, time_left_s
from agentws.core.errors import UpstreamError
from agentws.core.redaction import redact_url, redact_urls, upstream_excerpt
from agentws.domain.allowlist import Allowlist
from agentws.domain.models import CachedTool, Capability, Connector, ConnectorKind
from agentws.domain.tool_results import tool_error, tool_text
from agentws.store.sql_records import RecordStore

if TYPE_CHECKING:  # the CLI imports this module; mcp_types is heavy to load
    import mcp_types as types

__all__ = [
    "ACTIONS",
    "Action",
    "ApiRequest",
    "action_error",
    "cache_native_tools",
    "check_connector",
    "run_action",
    "send_to_connector",
    "upstream_deadline",
]

# Text returned to the model is cut here; the full JSON is in structuredContent.
_TEXT_CHARS = 20_000


@attrs.frozen
class ApiRequest:
    """One request of an action: its path as segments (each encoded on its own), never a string."""

    method: str
    segments: tuple[str, ...]
    params: dict[str, Any] | None = None
    json: dict[str, Any] | None = None


#: An action's request from its (already checked) arguments.
Build = Callable[[dict[str, Any]], ApiRequest]


@attrs.frozen
class Action:
    name: str
    description: str
    capability: Capability
    input_schema: dict[str, Any]
    build: Build = attrs.field(repr=False)
    #: Arguments that become path segments (or name an upstream object), with their grammar.
    path_arguments: dict[str, Grammar] = attrs.field(factory=dict, repr=False)

    def argument_error(self, arguments: dict[str, Any]) -> str | None:
        """What makes ``arguments`` unsafe to put in this action's request, or None.

        Each path argument present must match its API's grammar; a call
        refused here must send nothing.
        """
        for argument, grammar in self.path_arguments.items():
            if argument in arguments:
                problem = grammar.problem(argument, arguments[argument])
                if problem is not None:
                    return problem
        return None


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_STR = {"type": "string", "minLength": 1}
_OWNER = {**_STR, "description": "Repository owner (user or organisation)."}
_REPO = {**_STR, "description": "Repository name."}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}


def _github_search_issues(a: dict[str, Any]) -> ApiRequest:
    params = {"q": a["query"], "per_page": a.get("limit", 20)}
    return ApiRequest("GET", ("search", "issues"), params=params)


def _github_list_repos(a: dict[str, Any]) -> ApiRequest:
    segments = ("orgs", a["org"], "repos") if a.get("org") else ("user", "repos")
    return ApiRequest("GET", segments, params={"per_page": a.get("limit", 20)})


def _github_create_issue(a: dict[str, Any]) -> ApiRequest:
    body = {"title": a["title"], "body": a.get("body", "")}
    return ApiRequest("POST", ("repos", a["owner"], a["repo"], "issues"), json=body)


def _github_delete_branch(a: dict[str, Any]) -> ApiRequest:
    ref = ("git", "refs", "heads", *branch_segments(a["branch"]))
    return ApiRequest("DELETE", ("repos", a["owner"], a["repo"], *ref))


def _slack_post_message(a: dict[str, Any]) -> ApiRequest:
    body = {"channel": a["channel"], "text": a["text"], "mrkdwn": True}
    if a.get("thread_ts"):
        body["thread_ts"] = a["thread_ts"]
    return ApiRequest("POST", ("chat.postMessage",), json=body)


def _slack_list_channels(a: dict[str, Any]) -> ApiRequest:
    return ApiRequest("GET", ("conversations.list",), params={"limit": a.get("limit", 100)})


def _stripe_get_customer(a: dict[str, Any]) -> ApiRequest:
    return ApiRequest("GET", ("v1", "customers", a["customer_id"]))


def _stripe_list_charges(a: dict[str, Any]) -> ApiRequest:
    params: dict[str, Any] = {"limit": a.get("limit", 10)}
    if a.get("customer_id"):
        params["customer"] = a["customer_id"]
    return ApiRequest("GET", ("v1", "charges"), params=params)


_REPOSITORY = {"owner": GITHUB_OWNER, "repo": GITHUB_REPOSITORY}


ACTIONS: dict[ConnectorKind, dict[str, Action]] = {
    ConnectorKind.GITHUB: {
        a.name: a
        for a in (
            Action(
                "search_issues",
                "Search GitHub issues and pull requests with GitHub's search syntax.",
                Capability.READ,
                _schema(
                    {
                        "query": {**_STR, "description": "e.g. 'repo:o/r is:open bug'"},
                        "limit": _LIMIT,
                    },
                    ["query"],
                ),
                _github_search_issues,
            ),
            Action(
                "list_repos",
                "List repositories of an organisation, or of the token's user.",
                Capability.READ,
                _schema({"org": _STR, "limit": _LIMIT}, []),
                _github_list_repos,
                {"org": GITHUB_OWNER},
            ),
            Action(
                "create_issue",
                "Open an issue in a repository.",
                Capability.WRITE,
                _schema(
                    {"owner": _OWNER, "repo": _REPO, "title": _STR, "body": {"type": "string"}},
                    ["owner", "repo", "title"],
                ),
                _github_create_issue,
                _REPOSITORY,
            ),
            Action(
                "delete_branch",
                "Delete a branch of a repository. This cannot be undone.",
                Capability.DESTRUCTIVE,
                _schema(
                    {"owner": _OWNER, "repo": _REPO, "branch": _STR}, ["owner", "repo", "branch"]
                ),
                _github_delete_branch,
                {**_REPOSITORY, "branch": GIT_BRANCH},
            ),
        )
    },
    ConnectorKind.SLACK: {
        a.name: a
        for a in (
            Action(
                "post_message",
                "Post a message (Slack mrkdwn) to a channel, optionally in a thread.",
                Capability.WRITE,
                _schema({"channel": _STR, "text": _STR, "thread_ts": _STR}, ["channel", "text"]),
                _slack_post_message,
            ),
            Action(
                "list_channels",
                "List the workspace's channels.",
                Capability.READ,
                _schema({"limit": {**_LIMIT, "maximum": 1000}}, []),
                _slack_list_channels,
            ),
        )
    },
    ConnectorKind.STRIPE: {
        a.name: a
        for a in (
            Action(
                "get_customer",
                "Get a Stripe customer by id (cus_...).",
                Capability.READ,
                _schema({"customer_id": _STR}, ["customer_id"]),
                _stripe_get_customer,
                {"customer_id": STRIPE_ID},
            ),
            Action(
                "list_charges",
                "List recent charges, optionally of one customer.",
                Capability.READ,
                _schema({"customer_id": _STR, "limit": _LIMIT}, []),
                _stripe_list_charges,
                {"customer_id": STRIPE_ID},
            ),
        )
    },
    # A channel for messages, not a source of tools.
    ConnectorKind.INCOMING_WEBHOOK: {},
}


async def cache_native_tools(store: RecordStore, connector: Connector) -> list[CachedTool]:
    """Write a native connector's fixed actions into the tool cache, labels included."""
    cached = []
    for action in ACTIONS[connector.kind].values():
        cached.append(
            await store.insert(
                CachedTool(
                    connector_id=connector.id,
                    name=action.name,
                    description=action.description,
                    input_schema=action.input_schema,
                    definition_hash=definition_hash(
                        action.name, action.description, action.input_schema
                    ),
                    label=action.capability,
                )
            )
        )
    return cached


def _upstream_error(kind: ConnectorKind, response: httpx2.Response) -> str | None:
    try:
        body = response.json()
    except ValueError:
        body = None
    if kind is ConnectorKind.SLACK and isinstance(body, dict) and body.get("ok") is False:
        return f"Slack error {body.get('error', 'unknown')!r} (HTTP {response.status_code})"
    if response.is_success:
        return None
    detail = ""
    if isinstance(body, dict):
        error = body.get("error")
        detail = (
            (error.get("message") if isinstance(error, dict) else error)
            or body.get("message")
            or ""
        )
    name = {"github": "GitHub", "slack": "Slack", "stripe": "Stripe"}[kind.value]
    detail = upstream_excerpt(str(detail)) if detail else ""
    return f"{name} answered HTTP {response.status_code}" + (f": {detail}" if detail else "")


async def run_action(
    connector: Connector,
    action: Action,
    arguments: dict[str, Any],
    *,
    headers: dict[str, str],
    allowlist: Allowlist,
    resolve: Resolver = system_resolver,
) -> types.CallToolResult:
    """Call ``action`` at the connector's upstream; errors are tool errors, never exceptions.

    Arguments that would not stay in their path segments are refused here
    too (the gate refuses them first; an approved call comes straight here),
    and then nothing is sent. The caller owns the deadline
    (:func:`upstream_deadline`, then :func:`action_error` for its error).
    """

    problem = action.argument_error(arguments)
    if problem is not None:
        return tool_error(f"{connector.name}_{action.name}: {problem}; nothing was sent")
    request = action.build(arguments)
    try:
        response = await send_to_connector(
            connector,
            lambda http: _send(http, request),
            headers=headers,
            allowlist=allowlist,
            resolve=resolve,
        )
    except UpstreamError as exc:
        return action_error(connector, action, exc)
    problem = _upstream_error(connector.kind, response)
    if problem is not None:
        return tool_error(f"{connector.name}_{action.name} failed: {problem}")
    data: Any = response.json() if response.content else {"status": response.status_code}
    structured = data if isinstance(data, dict) else {"items": data}
    text = json.dumps(data, indent=1, ensure_ascii=False)[:_TEXT_CHARS]
    return tool_text(text, structured)


async def _send(http: httpx2.AsyncClient, request: ApiRequest) -> httpx2.Response:
    path = join_path(*request.segments)
    built = http.build_request(request.method, path, params=request.params, json=request.json)
    # The request must go exactly where its segments say, below the base URL:
    # nothing on the way (URL joining, normalisation) may have moved it.
    intended = http.base_url.raw_path.rstrip(b"/") + path.encode("ascii")
    if built.url.raw_path.partition(b"?")[0] != intended:
        where = built.url.raw_path.decode("ascii", "replace")
        raise UpstreamError(
            f"refused to send to {where}: not the intended {intended.decode()}; nothing was sent"
        )
    return await http.send(built)


async def _github_whoami(http: httpx2.AsyncClient, headers: dict[str, str]) -> httpx2.Response:
    # /user needs a token; the API root answers anyone, which proves the address only.
    return await http.get("/user" if "Authorization" in headers else "/")


async def _slack_whoami(http: httpx2.AsyncClient, headers: dict[str, str]) -> httpx2.Response:
    return await http.post("/auth.test")


async def _stripe_whoami(http: httpx2.AsyncClient, headers: dict[str, str]) -> httpx2.Response:
    return await http.get("/v1/balance")


# One harmless read per kind that needs the connector's credential when it has one.
_CHECKS = {
    ConnectorKind.GITHUB: _github_whoami,
    ConnectorKind.SLACK: _slack_whoami,
    ConnectorKind.STRIPE: _stripe_whoami,
}


def _check_detail(kind: ConnectorKind, body: Any) -> str:
    if not isinstance(body, dict):
        return "the API answered"
    if kind is ConnectorKind.GITHUB:
        login = body.get("login")
        return f"authenticated as {login}" if login else "the API answered (no credential)"
    if kind is ConnectorKind.SLACK:
        return f"authenticated as {body.get('user', '?')} in team {body.get('team', '?')}"
    livemode = body.get("livemode")
    return "authenticated (live mode)" if livemode else "authenticated (test mode)"


async def check_connector(
    connector: Connector,
    *,
    headers: dict[str, str],
    allowlist: Allowlist,
    resolve: Resolver = system_resolver,
) -> str:
    """Make one harmless authenticated read at the upstream, within the caller's
    deadline (``upstream_deadline(connector, s, named=True)``); what it proved.

    Error handling:
        :class:`~agentws.core.errors.UpstreamError` naming the connector and the
        upstream's status or the connection failure; UnsafeUrlError if the
        address may not be reached.
    """
    try:
        response = await send_to_connector(
            connector,
            lambda http: _CHECKS[connector.kind](http, headers),
            headers=headers,
            allowlist=allowlist,
            resolve=resolve,
        )
    except UpstreamError as exc:
        raise UpstreamError(f"connector {connector.name!r}: {exc.message}") from None
    problem = _upstream_error(connector.kind, response)
    if problem is not None:
        raise UpstreamError(f"connector {connector.name!r}: {problem}")
    try:
        body = response.json()
    except ValueError:
        body = None
    return _check_detail(connector.kind, body)


async def send_to_connector(
    connector: Connector,
    request: Callable[[httpx2.AsyncClient], Awaitable[httpx2.Response]],
    *,
    headers: dict[str, str],
    allowlist: Allowlist,
    resolve: Resolver,
) -> httpx2.Response:
    """Make ``request`` at the connector's base URL through the URL guard.

    The caller owns the deadline (:func:`upstream_deadline`); each request
    waits no longer than what is left of it.

    Error handling:
        UpstreamError when the upstream cannot be reached (any HTTP answer
        is returned); UnsafeUrlError from the guard.
    """
    base = (connector.url or "").rstrip("/")
    request_headers = {"User-Agent": "agentws", **headers}
    if connector.kind is ConnectorKind.GITHUB:
        request_headers |= {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }
    guard = GuardedTransport(allowlist, resolve=resolve)
    try:
        async with httpx2.AsyncClient(
            base_url=base, transport=guard, headers=request_headers, timeout=time_left_s()
        ) as http:
            return await request(http)
    except httpx2.HTTPError as exc:
        raise UpstreamError(f"cannot reach {redact_url(base)}: {redact_urls(str(exc))}") from None


def upstream_deadline(
    connector: Connector, seconds: float, *, named: bool = False
) -> AbstractContextManager[None]:
    """A deadline for the connector's upstream to answer within the block.

    Error handling:
        UpstreamError naming the upstream (and, ``named``, the connector)
        when ``seconds`` pass.
    """

    def too_slow() -> UpstreamError:
        base = redact_url((connector.url or "").rstrip("/"))
        prefix = f"connector {connector.name!r}: " if named else ""
        return UpstreamError(f"{prefix}{base} did not answer within {seconds:g} s")

    return deadline(seconds, too_slow)


def action_error(
    connector: Connector, action: Action, error: UpstreamError
) -> types.CallToolResult:
    """The tool error result of ``action`` failing upstream with ``error``."""
    return tool_error(f"{connector.name}_{action.name}: {error.message}")
