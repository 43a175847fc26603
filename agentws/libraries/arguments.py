"""Skill arguments: read from SKILL.md front matter, put into the prompt.

A skill declares the arguments its prompt takes in its front matter::

    arguments:
      - name: language
        description: The language to review
        required: true
        enum: [python, go]        # or examples: [...]: values to offer

and writes ``{{language}}`` where a value goes. :func:`parse_arguments`
checks the declaration; :func:`render_prompt` puts values in: every
``{{name}}`` of a declared argument becomes its value (an optional one left
out becomes empty); any other ``{{...}}`` is left as written, so prompts
that show template syntax of their own keep it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentws.core.errors import ValidationError
from agentws.domain.models import SkillArgument

__all__ = ["MAX_ARGUMENTS", "missing_arguments", "parse_arguments", "render_prompt"]

#: Arguments one skill may declare: a prompt form, not a tool schema.
MAX_ARGUMENTS = 20
# Values offered for completion per argument, and the length of each.
_MAX_VALUES = 100
_MAX_VALUE_CHARS = 200
_MAX_DESCRIPTION_CHARS = 1024
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}")


def _values(entry: Mapping[str, Any], what: str) -> tuple[str, ...]:
    values: list[str] = []
    for key in ("enum", "examples"):
        given = entry.get(key)
        if given is None:
            continue
        if not isinstance(given, list) or len(given) > _MAX_VALUES:
            raise ValidationError(f"{what}: '{key}' must be a list of at most {_MAX_VALUES} values")
        for value in given:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ValidationError(f"{what}: '{key}' values must be strings or numbers")
            text = str(value)
            if len(text) > _MAX_VALUE_CHARS:
                raise ValidationError(
                    f"{what}: a value is longer than {_MAX_VALUE_CHARS} characters"
                )
            if text not in values:
                values.append(text)
    return tuple(values)


def parse_arguments(declared: Any, what: str) -> tuple[SkillArgument, ...]:
    """The arguments a front matter's ``arguments`` declares (None: none).

    Args:
        declared: the value of the ``arguments`` key.
        what: names the file in error messages.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` saying which entry is wrong
        and how: not a list of mappings, a missing or malformed or repeated
        name, a non-text description, ``required`` not a boolean, values that
        are not a list of strings or numbers, more than :data:`MAX_ARGUMENTS`.
    """
    if declared is None:
        return ()
    if not isinstance(declared, list):
        raise ValidationError(
            f"{what}: 'arguments' must be a list of entries with 'name' "
            "(and 'description', 'required', 'enum' or 'examples')"
        )
    if len(declared) > MAX_ARGUMENTS:
        raise ValidationError(f"{what}: a skill takes at most {MAX_ARGUMENTS} arguments")
    arguments: list[SkillArgument] = []
    for n, entry in enumerate(declared, start=1):
        where = f"{what}: argument {n}"
        if not isinstance(entry, dict):
            raise ValidationError(f"{where} must be 'name: ...' (with 'description', 'required')")
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValidationError(
                f"{where}: 'name' must be letters, digits, '_' or '-', "
                "starting with a letter or '_'"
            )
        if any(a.name == name for a in arguments):
            raise ValidationError(f"{what}: argument {name!r} is declared twice")
        description = entry.get("description", "")
        if not isinstance(description, str) or len(description) > _MAX_DESCRIPTION_CHARS:
            raise ValidationError(
                f"{what}: argument {name!r}: 'description' must be text of at most "
                f"{_MAX_DESCRIPTION_CHARS} characters"
            )
        required = entry.get("required", False)
        if not isinstance(required, bool):
            raise ValidationError(f"{what}: argument {name!r}: 'required' must be true or false")
        unknown = set(entry) - {"name", "description", "required", "enum", "examples"}
        if unknown:
            raise ValidationError(
                f"{what}: argument {name!r}: unknown key(s) {', '.join(sorted(unknown))}"
            )
        arguments.append(
            SkillArgument(
                name=name,
                description=" ".join(description.split()),
                required=required,
                values=_values(entry, f"{what}: argument {name!r}"),
            )
        )
    return tuple(arguments)


def missing_arguments(
    arguments: tuple[SkillArgument, ...], given: Mapping[str, str] | None
) -> list[str]:
    """Names of required arguments ``given`` leaves out (or leaves empty)."""
    given = given or {}
    return [a.name for a in arguments if a.required and not given.get(a.name)]


def render_prompt(
    prompt: str, arguments: tuple[SkillArgument, ...], given: Mapping[str, str] | None
) -> str:
    """``prompt`` with each ``{{name}}`` of a declared argument replaced by its value."""
    declared = {a.name for a in arguments}
    values = given or {}

    def put(match: re.Match[str]) -> str:
        name = match[1]
        if name not in declared:
            return match[0]
        return values.get(name, "")

    return _PLACEHOLDER.sub(put, prompt)
