"""The records agentws keeps, as frozen attrs classes, and the rules on them.

Each record is one row of the store; changing one means
``attrs.evolve(record, ...)`` and ``store.update(record)``. Field types are
kept to what both stores represent the same way (str, int, bool, datetime,
bytes, enums, JSON objects, tuples of small value classes): the store maps
them by type, so a new field needs a migration and nothing else.

The records live in modules by area (:mod:`.tool_records`,
:mod:`.workspace_records`, :mod:`.library_records`, :mod:`.webhook_records`,
:mod:`.streak_records`, :mod:`.approval_records`); this module gathers every name, so records are
imported from here.
"""

from __future__ import annotations

# Records imported ``as`` themselves are re-exported but left out of ``__all__``
# (and so of ``agentws.domain``), as they always were.
from agentws.domain.approval_records import (
    Approval,
    ApprovalOutcome,
    ApprovalOutcomes,
    ApprovalStatus,
    arguments_hash,
)
from agentws.domain.approval_records import (
    ConfirmToken as ConfirmToken,
)
from agentws.domain.connector_grant_records import (
    ConnectorAuthorization,
    ConnectorGrant,
    GrantState,
)
from agentws.domain.library_records import (
    ContextDocument,
    DocumentHit,
    DocumentPolicy,
    GroupLibrary,
    Library,
    Skill,
    SkillArgument,
    SkillAsset,
)
from agentws.domain.oauth_records import (
    ClientKind,
    GrantStatus,
    OAuthClient,
    OAuthGrant,
    OAuthRefreshToken,
)
from agentws.domain.sample_records import WebhookSample
from agentws.domain.streak_records import FailureStreak, NoticeKind
from agentws.domain.tool_records import (
    LINK_PROTOCOLS,
    CachedTool,
    Capability,
    Connector,
    ConnectorKind,
    GroupConnector,
    LinkProtocol,
    Permission,
    ToolPermission,
    default_permission,
)
from agentws.domain.webhook_records import (
    ChatMessage,
    Event,
    EventAttempt,
    EventStatus,
    VerificationScheme,
    Webhook,
)
from agentws.domain.workspace_records import (
    Admin,
    AuditEntry,
    Group,
    Instance,
    McpToken,
    Workspace,
)
from agentws.domain.workspace_records import (
    AdminSession as AdminSession,
)
from agentws.domain.workspace_records import (
    AdminToken as AdminToken,
)

__all__ = [
    "LINK_PROTOCOLS",
    "Admin",
    "Approval",
    "ApprovalOutcome",
    "ApprovalOutcomes",
    "ApprovalStatus",
    "AuditEntry",
    "CachedTool",
    "Capability",
    "ChatMessage",
    "ClientKind",
    "Connector",
    "ConnectorAuthorization",
    "ConnectorGrant",
    "ConnectorKind",
    "ContextDocument",
    "DocumentHit",
    "DocumentPolicy",
    "Event",
    "EventAttempt",
    "EventStatus",
    "FailureStreak",
    "GrantState",
    "GrantStatus",
    "Group",
    "GroupConnector",
    "GroupLibrary",
    "Instance",
    "Library",
    "LinkProtocol",
    "McpToken",
    "NoticeKind",
    "OAuthClient",
    "OAuthGrant",
    "OAuthRefreshToken",
    "Permission",
    "Record",
    "Skill",
    "SkillArgument",
    "SkillAsset",
    "ToolPermission",
    "VerificationScheme",
    "Webhook",
    "WebhookSample",
    "Workspace",
    "arguments_hash",
    "default_permission",
]

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
    | WebhookSample
    | Event
    | EventAttempt
    | ChatMessage
    | FailureStreak
    | Approval
    | ToolPermission
    | AuditEntry
    | Admin
    | AdminSession
    | AdminToken
    | Instance
    | OAuthClient
    | OAuthGrant
    | OAuthRefreshToken
)
