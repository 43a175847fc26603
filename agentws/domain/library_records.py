"""Libraries and what they hold: context documents and skills, and search hits over documents."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from enum import StrEnum

import attrs

from agentws.domain.record_fields import id_field, now_field, slug_validator

__all__ = [
    "ContextDocument",
    "DocumentHit",
    "DocumentPolicy",
    "GroupLibrary",
    "Library",
    "Skill",
    "SkillArgument",
    "SkillAsset",
]


class DocumentPolicy(StrEnum):
    """How a context document reaches the agent and MCP clients."""

    SPINE = "spine"  # always in the agent's context; an MCP resource
    ON_DEMAND = "on_demand"  # read when needed; an MCP resource
    NEVER = "never"  # kept, but never shown to the agent or MCP clients

    @property
    def exposed(self) -> bool:
        return self is not DocumentPolicy.NEVER


@attrs.frozen(kw_only=True)
class Library:
    """A collection of context documents and skills, attached to groups."""

    id: str = id_field("lib")
    workspace_id: str
    slug: str = attrs.field(validator=slug_validator)
    name: str
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class GroupLibrary:
    id: str = id_field("glb")
    group_id: str
    library_id: str
    created_at: datetime = now_field()


@attrs.frozen(kw_only=True)
class ContextDocument:
    id: str = id_field("doc")
    library_id: str
    slug: str = attrs.field(validator=slug_validator)
    title: str
    body: str
    mime_type: str = "text/markdown"
    policy: DocumentPolicy = DocumentPolicy.ON_DEMAND
    created_at: datetime = now_field()
    updated_at: datetime = now_field()


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


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    # Read back from JSON as a list; kept as a tuple so the record stays hashable.
    return tuple(values)


@attrs.frozen(kw_only=True)
class SkillArgument:
    """An argument a skill's prompt takes (an MCP prompt argument), put in as ``{{name}}``."""

    name: str
    description: str = ""
    required: bool = False
    #: Values to offer when a client asks for completions (``enum`` or ``examples``).
    values: tuple[str, ...] = attrs.field(default=(), converter=_strings)


@attrs.frozen(kw_only=True)
class Skill:
    id: str = id_field("skl")
    library_id: str
    slug: str = attrs.field(validator=slug_validator)
    description: str = ""
    prompt: str
    assets: tuple[SkillAsset, ...] = ()
    arguments: tuple[SkillArgument, ...] = ()
    created_at: datetime = now_field()
    updated_at: datetime = now_field()
