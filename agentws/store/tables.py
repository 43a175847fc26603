"""How records map to rows: one :class:`Table` per record type.

Columns are the record's attrs fields, same names, same order; how a value
is written and read follows from the field's type. The two SQL dialects
differ only in how they keep datetimes and booleans (SQLite has neither), so
:class:`Table` takes the dialect when it encodes or decodes.
"""

from __future__ import annotations

import enum
import json
import operator
import types
import typing
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from agentws.domain import models as m
from agentws.domain import rollups

__all__ = ["TABLES", "Dialect", "Table", "encode_datetime", "table_for"]

Dialect = Literal["sqlite", "postgres"]

_Encode = Callable[[Any, Dialect], Any]
_Decode = Callable[[Any, Dialect], Any]


def encode_datetime(value: datetime, dialect: Dialect) -> Any:
    """A timestamp as a column of ``dialect`` holds it."""
    value = value.astimezone(UTC)
    # A fixed-width ISO string sorts as the instant it names.
    return value.isoformat(timespec="microseconds") if dialect == "sqlite" else value


def _decode_datetime(value: Any, dialect: Dialect) -> datetime:
    if isinstance(value, str):
        return datetime.fromisoformat(value)
    return typing.cast(datetime, value).astimezone(UTC)


# Made once: json.dumps with options of its own builds an encoder per call.
_JSON_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def _encode_json(value: Any, dialect: Dialect) -> str:
    return _JSON_ENCODE(value)


def _same(value: Any, dialect: Dialect) -> Any:
    return value


def _decode_json(value: Any, dialect: Dialect) -> Any:
    return json.loads(value)


def _converters(annotation: Any) -> tuple[_Encode, _Decode]:
    """Encoder and decoder for one field type (``None`` passes through both)."""
    if isinstance(annotation, types.UnionType):
        (inner,) = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _converters(inner)
    origin = typing.get_origin(annotation)
    if annotation is datetime:
        return encode_datetime, _decode_datetime
    if annotation is bool:
        return (lambda v, d: int(v) if d == "sqlite" else v), (lambda v, d: bool(v))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        enum_type = annotation
        return (lambda v, d: v.value), (lambda v, d: enum_type(v))
    if origin is tuple:
        item_type = typing.get_args(annotation)[0]
        if attrs.has(item_type):
            return (
                lambda v, d: _encode_json([attrs.asdict(i) for i in v], d),
                lambda v, d: tuple(item_type(**i) for i in _decode_json(v, d)),
            )
    if origin is dict or annotation is dict:
        return _encode_json, _decode_json
    if annotation in (str, int, float, bytes):
        return _same, (lambda v, d: bytes(v) if isinstance(v, memoryview) else v)
    raise TypeError(f"no column mapping for field type {annotation!r}")


@attrs.frozen
class Table:
    """The mapping of one record type to one table."""

    record: type[Any]
    name: str
    #: What a person calls one row, for error messages ("group").
    noun: str
    #: Fields that name the row to a person, for conflict messages.
    natural_key: tuple[str, ...]
    #: ``ORDER BY`` of lists.
    order_by: str
    columns: tuple[str, ...] = attrs.field(init=False)
    _codecs: Mapping[str, tuple[_Encode, _Decode]] = attrs.field(init=False, repr=False)
    # For encode(), the hot path of inserts: every column's value in one call,
    # then only the columns whose values change on the way in.
    _values: Callable[[Any], tuple[Any, ...]] = attrs.field(init=False, repr=False)
    _converted: tuple[tuple[int, _Encode], ...] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        hints = typing.get_type_hints(self.record)
        fields = attrs.fields(self.record)
        columns = tuple(f.name for f in fields)
        codecs = {f.name: _converters(hints[f.name]) for f in fields}
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "_codecs", codecs)
        getter = operator.attrgetter(*columns)
        values = getter if len(columns) > 1 else (lambda record: (getter(record),))
        object.__setattr__(self, "_values", values)
        converted = tuple(
            (i, codecs[c][0]) for i, c in enumerate(columns) if codecs[c][0] is not _same
        )
        object.__setattr__(self, "_converted", converted)

    def check_column(self, column: str) -> str:
        if column not in self._codecs:
            raise ValueError(f"{self.noun} has no field {column!r}")
        return column

    def encode_value(self, column: str, value: Any, dialect: Dialect) -> Any:
        if value is None:
            return None
        return self._codecs[self.check_column(column)][0](value, dialect)

    def decode_value(self, column: str, raw: Any, dialect: Dialect) -> Any:
        if raw is None:
            return None
        return self._codecs[self.check_column(column)][1](raw, dialect)

    def encode(self, record: Any, dialect: Dialect) -> list[Any]:
        """The row's values in column order."""
        row = list(self._values(record))
        for i, encode in self._converted:
            value = row[i]
            if value is not None:
                row[i] = encode(value, dialect)
        return row

    def decode(self, row: Mapping[str, Any], dialect: Dialect) -> Any:
        values = {}
        for column in self.columns:
            raw = row[column]
            values[column] = None if raw is None else self._codecs[column][1](raw, dialect)
        return self.record(**values)

    def describe(self, record: Any) -> str:
        """``group 'ops'``: how a conflict message names the row."""
        key = ", ".join(repr(getattr(record, f)) for f in self.natural_key)
        return f"{self.noun} {key}"


TABLES: Mapping[type[Any], Table] = {
    t.record: t
    for t in (
        Table(m.Workspace, "workspaces", "workspace", ("slug",), "created_at, id"),
        Table(m.Group, "workspace_groups", "group", ("slug",), "created_at, id"),
        Table(m.McpToken, "mcp_tokens", "MCP token", ("name",), "created_at, id"),
        Table(m.Connector, "connectors", "connector", ("name",), "created_at, id"),
        Table(m.ConnectorGrant, "connector_grants", "connector grant", ("connector_id",), "id"),
        Table(
            m.ConnectorAuthorization,
            "connector_authorizations",
            "connector authorization",
            ("id",),
            "created_at, id",
        ),
        Table(
            m.GroupConnector,
            "group_connectors",
            "connector attachment",
            ("connector_id",),
            "created_at, id",
        ),
        Table(m.CachedTool, "cached_tools", "tool", ("name",), "fetched_at, id"),
        Table(m.Library, "libraries", "library", ("slug",), "created_at, id"),
        Table(
            m.GroupLibrary,
            "group_libraries",
            "library attachment",
            ("library_id",),
            "created_at, id",
        ),
        Table(m.ContextDocument, "context_documents", "document", ("slug",), "created_at, id"),
        Table(m.Skill, "skills", "skill", ("slug",), "created_at, id"),
        Table(m.Webhook, "webhooks", "webhook", ("name",), "created_at, id"),
        Table(m.Event, "events", "event", ("id",), "received_at, id"),
        Table(m.WebhookSample, "webhook_samples", "sample", ("id",), "received_at, id"),
        Table(m.EventAttempt, "event_attempts", "event attempt", ("id",), "started_at, id"),
        Table(m.ChatMessage, "chat_messages", "chat message", ("id",), "created_at, id"),
        Table(m.FailureStreak, "webhook_streaks", "failure streak", ("id",), "started_at, id"),
        Table(m.Approval, "approvals", "approval", ("id",), "created_at, id"),
        Table(m.ConfirmToken, "confirm_tokens", "confirm token", ("id",), "created_at, id"),
        Table(
            m.ToolPermission,
            "tool_permissions",
            "tool permission",
            ("tool_name",),
            "created_at, id",
        ),
        Table(m.AuditEntry, "audit_log", "audit entry", ("id",), "created_at, id"),
        Table(m.Admin, "admins", "admin", ("username",), "created_at, id"),
        Table(m.OAuthClient, "oauth_clients", "OAuth client", ("client_id",), "created_at, id"),
        Table(m.OAuthGrant, "oauth_grants", "authorization request", ("id",), "created_at, id"),
        Table(
            m.OAuthRefreshToken, "oauth_refresh_tokens", "refresh token", ("id",), "created_at, id"
        ),
        Table(m.AdminSession, "admin_sessions", "admin session", ("id",), "created_at, id"),
        Table(m.AdminToken, "admin_tokens", "admin token", ("name",), "created_at, id"),
        Table(m.Instance, "instances", "instance", ("id",), "started_at, id"),
        # The overview's rollup (migration 0024): keyed by workspace, span, minute,
        # series, key and instance, with no id; written and read by sql_rollups only.
        # Its mark, one row of rollup_marks (minute, delivery_id), is a RollupMark.
        Table(
            rollups.Bucket,
            "rollup_buckets",
            "rollup bucket",
            ("series", "key"),
            "span_m, minute, series, key, instance_id",
        ),
    )
}


def table_for(record_type: type[Any]) -> Table:
    try:
        return TABLES[record_type]
    except KeyError:
        raise TypeError(f"{record_type.__name__} is not a stored record type") from None
