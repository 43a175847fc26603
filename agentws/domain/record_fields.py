"""The attrs fields every record shares: generated ids, creation times, checked slugs and names."""

from __future__ import annotations

from typing import Any

import attrs

from agentws.domain.rules import check_identifier, check_slug, new_id, utcnow

__all__ = ["id_field", "identifier_validator", "now_field", "slug_validator"]


def slug_validator(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    """An attrs validator: the field must be a slug (:func:`~agentws.domain.rules.check_slug`)."""
    check_slug(value, what=attribute.name)


def identifier_validator(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    """An attrs validator: the field must be an identifier (``check_identifier``)."""
    check_identifier(value, what=attribute.name)


def id_field(kind: str) -> Any:
    """A field defaulting to a new id with the prefix ``kind`` (``ws_…``)."""
    return attrs.field(factory=lambda: new_id(kind))


def now_field() -> Any:
    """A field defaulting to the time the record is made (UTC)."""
    return attrs.field(factory=utcnow)
