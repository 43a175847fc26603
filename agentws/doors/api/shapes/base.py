"""What every shape of the admin API is made of: the base class and the common field types.

A shape is a frozen, strict pydantic model: a body's ``"5"`` is not a number
and ``1`` is not ``true``, as a JSON client would expect. Times are the
strings :mod:`agentws.doors.views` writes (``datetime.isoformat()``), documented
as ``date-time``; a choice of an enum is documented inline as the list of
its values, so the document names no Python enum.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Strict, WithJsonSchema, create_model

__all__ = [
    "LAX",
    "Headers",
    "MaybeText",
    "MaybeTime",
    "Names",
    "Shape",
    "Time",
    "choice",
    "enum_values",
    "page",
]


class Shape(BaseModel):
    """A JSON object of the admin API: strict types, unknown keys ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


#: A moment, as ISO 8601 text.
Time = Annotated[str, WithJsonSchema({"type": "string", "format": "date-time"})]
#: A moment, or null when it has not happened.
MaybeTime = Annotated[
    str | None, WithJsonSchema({"type": ["string", "null"], "format": "date-time"})
]
MaybeText = str | None
Names = list[str]
#: On a request body's enum field: take the value (``"read"``) for the member.
LAX = Strict(False)
#: Header names to values (credentials already hidden).
Headers = dict[str, str]


def enum_values(kind: type[Enum]) -> list[Any]:
    """The values of ``kind``, in order."""
    return [member.value for member in kind]


def choice(kind: type[Enum], *, nullable: bool = False) -> WithJsonSchema:
    """The document's schema of a field holding one of ``kind``'s values (or null)."""
    if nullable:
        return WithJsonSchema({"type": ["string", "null"], "enum": [*enum_values(kind), None]})
    return WithJsonSchema({"type": "string", "enum": enum_values(kind)})


def page(item: type[BaseModel], name: str, **cursors: Any) -> type[Shape]:
    """The shape of a page of ``item``: ``items``, ``next_cursor``, and ``cursors``'s fields."""
    fields: dict[str, Any] = {
        "items": (list[item], ...),  # type: ignore[valid-type]
        "next_cursor": (MaybeText, ...),
        **cursors,
    }
    made: type[Shape] = create_model(name, __base__=Shape, __module__=item.__module__, **fields)
    made.__doc__ = f"A page of {item.__name__}s: ``next_cursor`` is null on the last page."
    return made
