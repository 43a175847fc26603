"""The records agentws keeps, as frozen attrs classes, and the rules on them.

Each record is one row of the store; changing one means
``attrs.evolve(record, ...)`` and ``store.update(record)``. Field types are
kept to what both stores represent the same way (str, int, bool, datetime,
bytes, enums, JSON objects, tuples of small value classes): the store maps
them by type, so a new field needs a migration and nothing else.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from enum import StrEnum
from typing import Any

import attrs

from agentws.domain.previews import json_bytes, json_preview
from agentws.domain.rules import check_identifier, check_slug, new_id, utcnow

__all__ = [
    "Admin",
    "Approval",
    "ApprovalStatus",
    "AuditEntry",
    "CachedTool",
    "Capability",
    "ChatMessage",
    "Connector",
    "ConnectorKind",
    "ContextDocument",
    "DocumentHit",
    "DocumentPolicy",
    "Event",
    "EventAttempt",
    "EventStatus",
    "Group",
    "GroupConnector",
    "GroupLibrary",
    "Instance",
    "Library",
    "McpToken",
    "Permission",
    "Record",
    "Skill",
    "SkillAsset",
    "ToolPermission",
    "VerificationScheme",
    "Webhook",
    "Workspace",
    "arguments_hash",
    "default_permission",
]


class Capability(StrEnum):
    """What a tool can do to the world, in rising order of risk."""

    READ = "read"
    WRITE = "write"
    DESTRUCTIVE = "destructive"

    @property
    def rank(self) -> int:
        return _CAPABILITY_RANK[self]

    def within(self, scope: Capability) -> bool:
        """Whether a caller whose scope is ``scope`` may use a tool of this capability."""
        return self.rank <= scope.rank


_CAPABILITY_RANK = {Capability.READ: 0, Capability.WRITE: 1, Capability.DESTRUCTIVE: 2}


class Permission(StrEnum):
    """What happens when a non-system caller calls a tool."""

    ALLOW = "allow"
    REQUIRES_APPROVAL = "requires_approval"
    REQUIRES_CONFIRMATION = "requires_confirmation"
    DENY = "deny"


def default_permission(capability: Capability) -> Permission:
    """The permission a tool gets from its capability until an admin says otherwise."""
    return {
        Capability.READ: Permission.ALLOW,
        Capability.WRITE: Permission.REQUIRES_APPROVAL,
        Capability.DESTRUCTIVE: Permission.REQUIRES_CONFIRMATION,
    }[capability]


def arguments_hash(tool_name: str, arguments: dict[str, Any]) -> str:
    """SHA-256 binding an approval or confirmation to one exact call."""
    canonical = json.dumps([tool_name, arguments], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class DocumentPolicy(StrEnum):
    """How a context document reaches the agent and MCP clients."""

    SPINE = "spine"  # always in the agent's context; an MCP resource
    ON_DEMAND = "on_demand"  # read when needed; an MCP resource
    NEVER = "never"  # kept, but never shown to the agent or MCP clients

    @property
    def exposed(self) -> bool:
        return self is not DocumentPolicy.NEVER


class ConnectorKind(StrEnum):
    REMOTE_MCP = "remote_mcp"
    GITHUB = "github"
    SLACK = "slack"
    STRIPE = "stripe"
    #: A chat's incoming-webhook URL (Slack, Mattermost, Discord): a channel, no tools.
    INCOMING_WEBHOOK = "incoming_webhook"


class VerificationScheme(StrEnum):
    """How an incoming webhook proves who sent it; exactly one per webhook."""

    NONE = "none"
    SHARED_SECRET = "shared_secret"  # noqa: S105 - a scheme name
    GITHUB = "github"
    STRIPE = "stripe"
    STANDARD_WEBHOOKS = "standard_webhooks"
    SLACK = "slack"


class EventStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (EventStatus.DONE, EventStatus.FAILED)


class ApprovalStatus(StrEnum):
    """Where a queued call stands::

    pending --approve--> approved --a service claims it--> (running) --> executed | failed
    pending --deny-----> denied                          failed --retry--> approved
    pending --TTL------> expired

    ``running`` is never stored: it is an approved call whose run an
    instance holds a lease on (as ``expired`` is, for a person, a pending
    one past its time before the sweep marks it).
    """

    PENDING = "pending"
    APPROVED = "approved"  # an admin approved it; it waits for a service to run it
    RUNNING = "running"  # approved, and an instance is running it (shown, never stored)
    EXECUTED = "executed"  # it ran and the tool returned a result
    FAILED = "failed"  # it ran and failed, or could not be run
    DENIED = "denied"
    EXPIRED = "expired"

    @property
    def decided(self) -> bool:
        return self is not ApprovalStatus.PENDING

    @property
    def finished(self) -> bool:
        """Whether nothing more will happen to it."""
        return self not in (ApprovalStatus.PENDING, ApprovalStatus.APPROVED, ApprovalStatus.RUNNING)


def _slug(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    check_slug(value, what=attribute.name)


def _identifier(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    check_identifier(value, what=attribute.name)


def _id(kind: str) -> Any:
    return attrs.field(factory=lambda: new_id(kind))


def _now() -> Any:
    return attrs.field(factory=utcnow)


@attrs.frozen(kw_only=True)
class Workspace:
    id: str = _id("ws")
    slug: str = attrs.field(validator=_slug)
    name: str
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class Group:
    """A set of connectors and libraries behind one MCP endpoint."""

    id: str = _id("grp")
    workspace_id: str
    slug: str = attrs.field(validator=_slug)
    name: str
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class McpToken:
    """A bearer token for one group endpoint; only its SHA-256 is kept."""

    id: str = _id("tok")
    group_id: str
    name: str
    token_hash: str = attrs.field(repr=False)
    #: The last characters of the token, so people can tell tokens apart.
    hint: str
    #: The highest capability this token may use.
    scope: Capability = Capability.WRITE
    created_at: datetime = _now()
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


@attrs.frozen(kw_only=True)
class Connector:
    """A connected third-party tool (remote MCP server or native integration)."""

    id: str = _id("con")
    workspace_id: str
    name: str = attrs.field(validator=_identifier)
    kind: ConnectorKind
    url: str | None = None
    #: Non-secret headers; secrets live encrypted in ``secret``.
    headers: dict[str, str] = attrs.field(factory=dict)
    secret: bytes | None = attrs.field(default=None, repr=False)
    active: bool = True
    created_at: datetime = _now()
    updated_at: datetime = _now()


@attrs.frozen(kw_only=True)
class GroupConnector:
    id: str = _id("gcn")
    group_id: str
    connector_id: str
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class CachedTool:
    """One tool of a connector as last fetched: the source of ``tools/list``."""

    id: str = _id("tool")
    connector_id: str
    #: The connector's own name for it (``<action>``); exposed as ``<connector>_<action>``.
    name: str
    description: str = ""
    input_schema: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    #: The remote's annotations, kept as a suggestion only.
    annotations: dict[str, Any] = attrs.field(factory=dict)
    #: SHA-256 of name, description and schema: a change resets admin labels.
    definition_hash: str
    #: Set by an admin (or fixed for native actions); None means unlabeled.
    label: Capability | None = None
    suggested_label: Capability | None = None
    fetched_at: datetime = _now()
    #: Why it is not listed: its name is another tool's in one of its groups
    #: (:mod:`agentws.connectors.names`); None: listed.
    left_out: str | None = None

    @property
    def capability(self) -> Capability:
        """Unlabeled tools are ``write``, whatever the remote suggests."""
        return self.label or Capability.WRITE


@attrs.frozen(kw_only=True)
class Library:
    """A collection of context documents and skills, attached to groups."""

    id: str = _id("lib")
    workspace_id: str
    slug: str = attrs.field(validator=_slug)
    name: str
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class GroupLibrary:
    id: str = _id("glb")
    group_id: str
    library_id: str
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class ContextDocument:
    id: str = _id("doc")
    library_id: str
    slug: str = attrs.field(validator=_slug)
    title: str
    body: str
    mime_type: str = "text/markdown"
    policy: DocumentPolicy = DocumentPolicy.ON_DEMAND
    created_at: datetime = _now()
    updated_at: datetime = _now()


@attrs.frozen(kw_only=True)
class DocumentHit:
    """One result of a full-text search over a group's documents (not a stored record)."""

    document_id: str
    library_id: str
    #: The library's slug, for the document's ``agentws://<library>/<document>`` URI.
    library_slug: str
    slug: str
    title: str
    mime_type: str
    #: A short passage of the body around the matches, matched words in ``**``.
    snippet: str
    #: Higher is better; comparable only between hits of the same search.
    score: float


@attrs.frozen(kw_only=True)
class SkillAsset:
    """A file bundled with a skill, returned with its prompt."""

    name: str
    mime_type: str = "text/plain"
    text: str = ""


@attrs.frozen(kw_only=True)
class Skill:
    id: str = _id("skl")
    library_id: str
    slug: str = attrs.field(validator=_slug)
    description: str = ""
    prompt: str
    assets: tuple[SkillAsset, ...] = ()
    created_at: datetime = _now()
    updated_at: datetime = _now()


@attrs.frozen(kw_only=True)
class Webhook:
    """An incoming webhook: a secret URL whose events the agent turns into a message."""

    id: str = _id("wh")
    workspace_id: str
    #: The group whose tools the agent may use for this webhook's events.
    group_id: str | None = None
    name: str
    #: Where the message goes: ``<sink>:<name>`` (``local:ops``).
    channel: str
    prompt: str
    #: False: a draft, which refuses deliveries with 403.
    active: bool = True
    token_hash: str = attrs.field(repr=False)
    verification: VerificationScheme = VerificationScheme.NONE
    #: The verification secret, sealed with the service key.
    secret: bytes | None = attrs.field(default=None, repr=False)
    rate_per_min: int = 60
    burst: int = 30
    max_body_bytes: int = 1024 * 1024
    #: Events of this webhook run at once at most (1: strictly in arrival order).
    concurrency: int = 4
    #: Its messages may ping a whole channel (``@channel``, ``@here``...); off:
    #: sinks make mass mentions inert (:mod:`agentws.chat.mentions`).
    allow_mentions: bool = False
    #: Write tools an admin pre-authorized for this webhook's runs: name → the
    #: definition hash it was authorized for (a changed tool loses it).
    allowed_tools: dict[str, str] = attrs.field(factory=dict)
    created_at: datetime = _now()
    updated_at: datetime = _now()


@attrs.frozen(kw_only=True)
class Event:
    """One accepted webhook delivery and what became of it."""

    id: str = _id("evt")
    webhook_id: str
    status: EventStatus = EventStatus.QUEUED
    #: The body exactly as received (signatures are over these bytes).
    body: bytes = attrs.field(repr=False)
    #: SHA-256 of ``body``: a redelivery with the same key must carry the same body.
    body_hash: str = attrs.field()
    #: Allow-listed request headers.
    headers: dict[str, str] = attrs.field(factory=dict)
    dedup_key: str | None = None
    #: Attempts begun so far (a run cut short by shutdown gives its attempt back).
    attempts: int = 0
    #: Not run before this (retry backoff).
    available_at: datetime = _now()
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    error: str | None = None
    #: The posted chat message, recorded before the event is marked done.
    message_id: str | None = None
    #: A replay's prompt (the one its original ran with); None: the webhook's current one.
    prompt: str | None = None
    replay_of: str | None = None
    received_at: datetime = _now()
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @body_hash.default
    def _hash_body(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


@attrs.frozen(kw_only=True)
class EventAttempt:
    """One run of an event: the agent's transcript, its tool calls and how it ended."""

    id: str = _id("att")
    event_id: str
    number: int
    instance_id: str
    #: ``running``, then ``done``, ``retry``, ``failed`` or ``interrupted``.
    outcome: str = "running"
    error: str | None = None
    #: The model's conversation: system prompt, user turn, replies, tool results.
    transcript: dict[str, Any] = attrs.field(factory=dict)
    tool_calls: dict[str, Any] = attrs.field(factory=dict)
    #: Tokens used, per the model (empty for the offline model).
    usage: dict[str, Any] = attrs.field(factory=dict)
    started_at: datetime = _now()
    finished_at: datetime | None = None


@attrs.frozen(kw_only=True)
class ChatMessage:
    """A message the agent posted; local channels keep it here, other sinks record its id."""

    id: str = _id("msg")
    workspace_id: str
    #: The channel reference, ``<sink>:<name>``.
    channel: str
    text: str
    event_id: str | None = None
    thread: str | None = None
    #: The chat service's id for the posted message, once posted.
    external_id: str | None = None
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class Approval:
    """A call waiting for (or decided by) an admin; runs at most once, if approved."""

    id: str = _id("apr")
    group_id: str
    #: The MCP token that asked (None once the token is deleted, or for other callers).
    token_id: str | None = None
    #: The MCP session that asked, told of the outcome while it is open.
    session_id: str | None = None
    #: Who asked, as the audit log names them (``mcp:tok_…``).
    requested_by: str
    tool_name: str
    capability: Capability
    #: The tool's definition when the call was queued: a changed tool does not run.
    definition_hash: str
    #: The arguments as an admin reads them: values the tool's schema marks secret redacted.
    arguments: dict[str, Any] = attrs.field(factory=dict)
    #: The whole arguments, sealed with the service key, when some are secret.
    sealed_arguments: bytes | None = attrs.field(default=None, repr=False)
    #: SHA-256 of the tool name and the whole arguments: what was approved.
    arguments_hash: str
    status: ApprovalStatus = ApprovalStatus.PENDING
    #: The approver's or denier's reason.
    reason: str | None = None
    decided_by: str | None = None
    #: The tool's result (an MCP ``CallToolResult`` as JSON) once it ran.
    result: dict[str, Any] | None = None
    #: Why it failed, when it did.
    error: str | None = None
    created_at: datetime = _now()
    expires_at: datetime
    decided_at: datetime | None = None
    finished_at: datetime | None = None
    #: The webhook event whose run queued it: its channel hears the outcome.
    event_id: str | None = None
    #: When the outcome's report to the event's channel was taken (None: not yet).
    reported_at: datetime | None = None
    #: The instance running (or that ran) the approved call; None: no service took it yet.
    lease_owner: str | None = None
    #: While it runs: when the owner's claim lapses unless renewed.
    lease_expires_at: datetime | None = None
    #: Runs begun (an admin may retry a failed call).
    attempts: int = 0

    #: The start of ``arguments`` as JSON, what lists show (the whole is on its own page).
    arguments_preview: str = attrs.field()
    #: Size of ``arguments`` as stored (compact JSON, UTF-8 bytes).
    arguments_bytes: int = attrs.field()

    @arguments_preview.default
    def _preview(self) -> str:
        return json_preview(self.arguments)

    @arguments_bytes.default
    def _size(self) -> int:
        return json_bytes(self.arguments)


@attrs.frozen(kw_only=True)
class ConfirmToken:
    """A one-time confirm token given for a destructive call, kept by its hash only.

    It confirms exactly one call: the same MCP bearer token, tool and
    arguments (their hash), once, before it expires, in whatever session
    and on whatever instance it comes back.
    """

    #: SHA-256 of the token.
    id: str
    #: The MCP bearer token it was given to.
    token_id: str
    tool_name: str
    arguments_hash: str
    created_at: datetime = _now()
    expires_at: datetime


@attrs.frozen(kw_only=True)
class ToolPermission:
    """An admin's permission for one tool: for a group, or (no group) for the whole workspace."""

    id: str = _id("tpm")
    workspace_id: str
    #: None: every group of the workspace that has no permission of its own for the tool.
    group_id: str | None = None
    #: The tool's name as callers see it (``<connector>_<action>`` or a built-in).
    tool_name: str
    permission: Permission
    #: The tool's definition when the admin decided; a looser permission
    #: stops applying when the definition changes.
    definition_hash: str
    set_by: str
    created_at: datetime = _now()
    updated_at: datetime = _now()


@attrs.frozen(kw_only=True)
class AuditEntry:
    """One line of the append-only audit log."""

    id: str = _id("aud")
    workspace_id: str | None = None
    actor: str
    action: str
    target: str
    detail: dict[str, Any] = attrs.field(factory=dict)
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class Admin:
    """A dashboard administrator; the password is kept as an argon2 hash."""

    id: str = _id("adm")
    username: str
    password_hash: str = attrs.field(repr=False)
    created_at: datetime = _now()


@attrs.frozen(kw_only=True)
class AdminSession:
    """A signed-in dashboard session; only the SHA-256 of its cookie is kept."""

    id: str = _id("ses")
    admin_id: str
    token_hash: str = attrs.field(repr=False)
    #: The session's CSRF token: every form and unsafe API call of the session carries it.
    csrf_token: str = attrs.field(repr=False)
    created_at: datetime = _now()
    expires_at: datetime
    last_seen_at: datetime = _now()


@attrs.frozen(kw_only=True)
class AdminToken:
    """A bearer token for the admin JSON API, acting as its admin; kept as a SHA-256."""

    id: str = _id("atk")
    admin_id: str
    name: str
    token_hash: str = attrs.field(repr=False)
    created_at: datetime = _now()
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None


@attrs.frozen(kw_only=True)
class Instance:
    """A running process of the service on a shared database, as it last said."""

    #: ``AGENTWS_INSTANCE_ID``: the prefix of the ids of the MCP sessions it owns.
    id: str
    #: Where the other instances reach it to forward its sessions' requests.
    internal_url: str
    started_at: datetime = _now()
    heartbeat_at: datetime = _now()
    #: Finishing its sessions before it stops; it takes no new one.
    draining: bool = False
    #: Its public base URL (``AGENTWS_BASE_URL``, else its bound address): what
    #: the CLI prints in endpoint and webhook URLs. None: an older instance.
    public_url: str | None = None


#: Every record type the store keeps.
Record = (
    Workspace
    | Group
    | McpToken
    | Connector
    | GroupConnector
    | CachedTool
    | Library
    | GroupLibrary
    | ContextDocument
    | Skill
    | Webhook
    | Event
    | EventAttempt
    | ChatMessage
    | Approval
    | ToolPermission
    | AuditEntry
    | Admin
    | AdminSession
    | AdminToken
    | Instance
)
