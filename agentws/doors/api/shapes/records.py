"""The admin API's answers about workspaces, access, tools, libraries, connectors and audit.

Each is the JSON a function of :mod:`agentws.doors.views` gives a record (the
webhooks' answers are in :mod:`.webhooks`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from agentws.domain.models import (
    ApprovalStatus,
    Capability,
    ConnectorKind,
    DocumentPolicy,
    LinkProtocol,
)
from agentws.doors.api.shapes.base import (
    Headers,
    MaybeText,
    MaybeTime,
    Names,
    Shape,
    Time,
    choice,
    page,
)

__all__ = [
    "Approval",
    "ApprovalSummary",
    "AuditEntry",
    "Connector",
    "ConnectorCheck",
    "Deleted",
    "Document",
    "Error",
    "Group",
    "IssuedToken",
    "Labeled",
    "Library",
    "Message",
    "OAuthClient",
    "PermissionSet",
    "RegisteredOAuthClient",
    "Token",
    "Tool",
    "ToolRefresh",
    "Workspace",
]

_CAPABILITY = choice(Capability)
_CURSOR_NEXT = "pass as `cursor` for the next page; null on the last page"
_CURSOR_BEFORE = "pass as `cursor` for the page before; null on the first page"


class _Problem(Shape):
    code: str
    message: str


class Error(Shape):
    """What every error answers: ``{"error": {"code", "message"}}``."""

    error: _Problem


class Workspace(Shape):
    id: str
    slug: str
    name: str
    created_at: Time


class Group(Shape):
    id: str
    workspace: str
    slug: str
    name: str
    url: str = Field(description="its MCP endpoint")
    created_at: Time


class Deleted(Shape):
    id: str
    deleted: bool


class Approval(Shape):
    """A queued call, its arguments whole."""

    id: str
    workspace: str
    group: str
    tool: str
    capability: Annotated[str, _CAPABILITY]
    arguments: dict[str, Any]
    requested_by: str
    event_id: MaybeText
    status: Annotated[str, choice(ApprovalStatus)]
    reason: MaybeText
    decided_by: MaybeText
    error: MaybeText
    result: dict[str, Any] | None
    created_at: Time
    expires_at: Time
    decided_at: MaybeTime
    finished_at: MaybeTime


class ApprovalSummary(Shape):
    """A queued call as a list shows it: a preview of its arguments."""

    id: str
    workspace: str
    group: str
    tool: str
    capability: Annotated[str, _CAPABILITY]
    arguments_preview: str = Field(
        description="The arguments as JSON, cut to 300 characters (then ending in …); the "
        "whole arguments are in GET /approvals/{approval_id}"
    )
    arguments_bytes: int = Field(description="size of the arguments")
    arguments_hash: str
    requested_by: str
    caller: str = Field(description="who asked, by name: 'token <name>', 'webhook <name>'")
    token_id: MaybeText
    token_name: MaybeText
    webhook: MaybeText
    event_id: MaybeText
    status: Annotated[str, choice(ApprovalStatus)]
    reason: MaybeText
    decided_by: MaybeText
    error: MaybeText = Field(description="the start of the error (the whole is in the approval)")
    created_at: Time
    expires_at: Time
    decided_at: MaybeTime
    finished_at: MaybeTime


class Token(Shape):
    """An MCP token, never its secret."""

    id: str
    workspace: str
    group: str
    name: str
    scope: Annotated[str, _CAPABILITY]
    hint: str
    status: Literal["valid", "revoked", "expired"]
    revoked: bool
    created_at: Time
    last_used_at: MaybeTime
    revoked_at: MaybeTime
    expires_at: MaybeTime = Field(
        description="when an OAuth access token stops working; null for a static token"
    )
    oauth_client: MaybeText = Field(
        description="the OAuth client holding it (client id); null for a static token"
    )


class IssuedToken(Token):
    """A new MCP token, with its secret."""

    token: str = Field(description="shown this once")


class OAuthClient(Shape):
    id: str
    client_id: str
    kind: Literal["dynamic", "metadata", "operator"]
    name: str
    redirect_uris: Names
    confidential: bool
    created_at: Time


class RegisteredOAuthClient(OAuthClient):
    """A client registered by hand, with a confidential one's secret."""

    client_secret: MaybeText = Field(description="a confidential client's secret, shown this once")


class Tool(Shape):
    """A tool as a group sees it: capability, label, permission and their sources."""

    name: str
    source: str
    capability: Annotated[str, _CAPABILITY]
    label: Literal["fixed", "admin", "unlabeled"]
    suggested_label: MaybeText
    permission: str
    permission_source: str
    note: MaybeText
    definition_hash: str
    schema_hazards: Names = Field(
        description="What makes the tool's input schema costly to check (arguments are then "
        "checked in a worker process, within AGENTWS_TOOL_CHECK_TIMEOUT_S)"
    )


class Labeled(Shape):
    name: str
    label: MaybeText


class PermissionSet(Shape):
    name: str
    group: MaybeText
    permission: MaybeText


class Document(Shape):
    id: str
    library: str
    slug: str
    title: str
    mime_type: str
    policy: Annotated[str, choice(DocumentPolicy)]
    bytes: int
    created_at: Time
    updated_at: Time


class _Skill(Shape):
    id: str
    slug: str
    description: str
    assets: Names


class Library(Shape):
    """A library with its groups, documents and skills."""

    id: str
    slug: str
    name: str
    groups: Names
    documents: list[Document]
    skills: list[_Skill]


class Message(Shape):
    id: str
    channel: str
    text: str
    event_id: MaybeText
    thread: MaybeText
    external_id: MaybeText
    created_at: Time


class Connector(Shape):
    """A connector, never its secret."""

    id: str
    workspace: str
    name: str
    kind: Annotated[str, choice(ConnectorKind)]
    url: MaybeText = Field(description="its upstream (an incoming webhook's origin only)")
    headers: Headers = Field(description="the headers it sends that are not secret")
    secret: MaybeText = Field(
        description="where its secret goes (a header's name, or url); never the secret; "
        "null: it has none"
    )
    active: bool
    relay_requests: bool = Field(
        description="whether its remote's requests during a call reach the caller"
    )
    protocol: LinkProtocol = Field(
        description="the MCP revision its link speaks: auto, or one an admin pinned"
    )
    auth: Literal["static", "oauth", "client_credentials"] = Field(
        description="how it proves who it is upstream: static (its secret as a header), "
        "oauth or client_credentials (its own grant, see …/authorize)"
    )
    authorization: dict[str, Any] | SkipJsonSchema[None] = Field(
        None,
        description="shown for one connector: where its authorization upstream stands (mode, "
        "state connected or needs_authorization, reason, expires_at, scope); never a token",
    )
    created_at: Time


class _Server(Shape):
    name: str
    version: str


class ConnectorCheck(Shape):
    """What one connection to a connector's upstream proved (a remote MCP server: its probe)."""

    ok: Literal[True]
    workspace: str
    connector: str
    kind: Annotated[str, choice(ConnectorKind)]
    url: MaybeText
    detail: str = Field(description="what the connection proved")
    elapsed_ms: int
    # Only for a remote MCP server: absent otherwise.
    transport: str | SkipJsonSchema[None] = Field(
        None, description="remote MCP: streamable_http or sse"
    )
    server: _Server | SkipJsonSchema[None] = None
    protocol_version: str | SkipJsonSchema[None] = None
    tools: int | SkipJsonSchema[None] = Field(None, description="how many tools it lists")
    announces_changes: bool | SkipJsonSchema[None] = Field(
        None, description="whether it announces changes of its tool list"
    )


class ConnectorAuthorizationStarted(Shape):
    """An authorization of a connector upstream, started."""

    workspace: str
    connector: str
    authorization_url: MaybeText = Field(
        description="the upstream's consent page for an admin to open, signed in to the "
        "dashboard in that browser, within 10 minutes; null: nothing to consent to (client "
        "credentials), already authorized"
    )
    authorization: dict[str, Any] = Field(
        description="where its authorization stands: mode, state (connected or "
        "needs_authorization), reason, expires_at, scope; never a token"
    )
    revoked: bool | SkipJsonSchema[None] = Field(
        None, description="disconnecting: whether the upstream confirmed the revocation"
    )


class ToolRefresh(Shape):
    """What fetching a remote MCP connector's tools changed."""

    workspace: str
    connector: str
    added: Names
    changed: Names = Field(
        description="tools whose definition changed: they lost their labels (write)"
    )
    removed: Names
    unchanged: int
    left_out: Names = Field(
        description="why each tool left out of listings is (a name another tool has)"
    )


class AuditEntry(Shape):
    id: str
    at: Time
    workspace_id: MaybeText
    actor: str = Field(description="admin:…, mcp:tok_…, webhook:…, web:…")
    action: str = Field(description="tool.call, approval.decide, …")
    target: str = Field(description="what it was done to (a tool's name…)")
    detail: dict[str, Any] = Field(
        description="for a tool call: group_id, decision, outcome, scope, arguments_hash, "
        "oauth_client…; never a secret"
    )


WorkspacePage = page(Workspace, "WorkspacePage")
TokenPage = page(Token, "TokenPage")
OAuthClientPage = page(OAuthClient, "OAuthClientPage")
ToolPage = page(Tool, "ToolPage")
LibraryPage = page(Library, "LibraryPage")
MessagePage = page(Message, "MessagePage")
ConnectorPage = page(Connector, "ConnectorPage")
ApprovalSummaryPage = page(
    ApprovalSummary,
    "ApprovalSummaryPage",
    next_cursor=(MaybeText, Field(description=_CURSOR_NEXT)),
    previous_cursor=(MaybeText, Field(description=_CURSOR_BEFORE)),
)
AuditPage = page(
    AuditEntry,
    "AuditPage",
    next_cursor=(MaybeText, Field(description="older entries; null on the last page")),
    previous_cursor=(MaybeText, Field(description="newer entries; null on the first page")),
)
