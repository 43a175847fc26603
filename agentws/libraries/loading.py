"""Reading libraries' content from disk: a document from one file, a skill from a folder.

A document comes from one file or standard input (:func:`load_document_file`);
a skill from a folder in the common ``SKILL.md`` layout
(:func:`load_skill_folder`). Both are synchronous file I/O; async callers run
them in a thread (:func:`agentws.libraries.service.add_skill` does). What they
read is checked against the limits of :mod:`agentws.libraries.checks`.
"""

from __future__ import annotations

import mimetypes
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import attrs
import yaml

from agentws.core.errors import ValidationError
from agentws.domain.models import SkillArgument, SkillAsset
from agentws.domain.rules import check_slug
from agentws.libraries.arguments import parse_arguments
from agentws.libraries.checks import (
    MAX_DOCUMENT_BYTES,
    MAX_SKILL_BYTES,
    check_mime,
    format_bytes,
    pretty_json,
)

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "SKILL_FILE",
    "DocumentFile",
    "SkillFolder",
    "build_skill_folder",
    "load_document_file",
    "load_skill_folder",
    "slug_from",
]

#: File extensions :func:`load_document_file` knows the type of.
DOCUMENT_EXTENSIONS: Mapping[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".json": "application/json",
}
#: The file a skill folder holds its front matter and prompt in.
SKILL_FILE = "SKILL.md"
_SKILL_FILE = SKILL_FILE
_HEADING = re.compile(r"#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r"(```|~~~)")
_NOT_SLUG = re.compile(r"[^a-z0-9-]+")
_SLUG_MAX = 63
# The types Python knows of itself, not the machine's /etc/mime.types: the
# same asset gets the same type wherever the skill is added. Plus text formats
# skills often carry that Python leaves out.
_ASSET_TYPES = mimetypes.MimeTypes()
for _extension, _type in {
    **DOCUMENT_EXTENSIONS,
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
}.items():
    _ASSET_TYPES.add_type(_type, _extension)
_CONVERT = "convert it first, e.g. `iconv -f LATIN1 -t UTF-8`"
_TEXT_ONLY = "skills carry text files only, leave it out of the folder"


@attrs.frozen
class DocumentFile:
    """A document read from a file or stdin, ready for :func:`~agentws.libraries.add_document`."""

    slug: str
    title: str
    body: str
    mime_type: str


@attrs.frozen
class SkillFolder:
    """A skill read from a folder, ready for :func:`~agentws.libraries.add_skill`."""

    slug: str
    description: str
    prompt: str
    assets: tuple[SkillAsset, ...] = ()
    arguments: tuple[SkillArgument, ...] = ()


def slug_from(text: str) -> str:
    """A slug made of ``text``: lowercase, runs of other characters turned into ``-``.

    Raises:
        ValidationError: if nothing usable is left (text without ASCII letters or digits).
    """
    slug = _NOT_SLUG.sub("-", text.lower()).strip("-")[:_SLUG_MAX].rstrip("-")
    if not slug:
        raise ValidationError(f"cannot make a slug from {text!r}: give one with --slug")
    return slug


def _decode(data: bytes, what: str, hint: str = _CONVERT) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(
            f"{what} is not UTF-8 text (invalid byte at offset {exc.start}): {hint}"
        ) from None
    if "\x00" in text:
        raise ValidationError(f"{what} contains NUL bytes, so it is not text: {hint}")
    # A byte-order mark is an encoding artefact, not content.
    return text.removeprefix("\ufeff")


def _read_capped(path: Path, limit: int, what: str) -> bytes:
    try:
        with path.open("rb") as file:
            data = file.read(limit + 1)
    except IsADirectoryError:
        raise ValidationError(f"{what} is a directory, not a file") from None
    except OSError as exc:
        raise ValidationError(f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ValidationError(f"{what} is larger than {format_bytes(limit)}")
    return data


def _first_heading(markdown: str) -> str | None:
    in_fence = False
    for line in markdown.splitlines():
        if _FENCE.match(line.lstrip()):
            in_fence = not in_fence
        elif not in_fence and (match := _HEADING.fullmatch(line.rstrip())):
            return match[1].strip()
    return None


def load_document_file(
    path_or_dash: str | os.PathLike[str],
    *,
    title: str | None = None,
    slug: str | None = None,
    mime_type: str | None = None,
    stdin: BinaryIO | None = None,
) -> DocumentFile:
    """Read one document from a file, or from standard input for ``-``.

    Args:
        path_or_dash: the file, or ``-`` for ``stdin`` (default: ``sys.stdin``).
        title: the title; else the first Markdown ``# heading``; else the
            file's stem (stdin has none: give ``title`` or ``slug``).
        slug: the slug; else made from the file's stem (stdin: from the title).
        mime_type: the type; else from the extension (see
            :data:`DOCUMENT_EXTENSIONS`; stdin: ``text/markdown``).

    Returns:
        The fields of the document. JSON is checked and pretty-printed.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` saying what is wrong: an
        unreadable or missing file, an unknown extension, more than
        :data:`MAX_DOCUMENT_BYTES`, text that is not UTF-8, invalid JSON.
    """
    from_stdin = os.fspath(path_or_dash) == "-"
    if from_stdin:
        if not (title or slug):
            raise ValidationError("a document read from stdin (-) needs --slug or --title")
        what, stem, extension = "stdin", None, ""
        source = stdin or sys.stdin.buffer
        data = source.read(MAX_DOCUMENT_BYTES + 1)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise ValidationError(f"stdin is larger than {format_bytes(MAX_DOCUMENT_BYTES)}")
    else:
        path = Path(path_or_dash)
        what, stem, extension = f"{str(path)!r}", path.stem, path.suffix.lower()
        if not path.exists():
            raise ValidationError(f"no such file: {str(path)!r}")
        if not mime_type and extension not in DOCUMENT_EXTENSIONS:
            accepted = ", ".join(DOCUMENT_EXTENSIONS)
            raise ValidationError(
                f"cannot tell the type of {what}: use a file ending in {accepted}, "
                "or give the type with --mime"
            )
        data = _read_capped(path, MAX_DOCUMENT_BYTES, what)
    body = _decode(data, what)
    mime = check_mime(mime_type or DOCUMENT_EXTENSIONS.get(extension, "text/markdown"))
    if mime == "application/json":
        body = pretty_json(body, what)
    if not title:
        heading = _first_heading(body) if mime == "text/markdown" else None
        # stdin comes with a title or a slug (checked above), a file has a stem.
        title = heading or stem or slug or ""
    if not slug:
        slug = slug_from(stem if stem is not None else title)
    return DocumentFile(slug=slug, title=title, body=body, mime_type=mime)


def _skill_front_matter(text: str, what: str) -> tuple[dict[str, Any], str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise ValidationError(
            f"{what} has no front matter: it must start with a line '---', then "
            "'name: SLUG' and 'description: ...', then a line '---', then the prompt"
        )
    try:
        end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
    except StopIteration:
        raise ValidationError(f"{what}: the front matter has no closing '---' line") from None
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise ValidationError(f"{what}: the front matter is not valid YAML: {exc}") from None
    if not isinstance(meta, dict):
        raise ValidationError(f"{what}: the front matter must be 'key: value' lines")
    return meta, "".join(lines[end + 1 :])


def _visible(name: str) -> bool:
    return not name.startswith(".") and name != "__pycache__"


def _asset_files(folder: Path) -> list[tuple[str, Path]]:
    """Every regular file under ``folder`` but SKILL.md, as (POSIX name, path), sorted."""
    found: list[tuple[str, Path]] = []
    for directory, subdirectories, files in os.walk(folder):
        base = Path(directory)
        # Pruned in place so that os.walk skips them; sorted for a stable asset order.
        subdirectories[:] = sorted(d for d in subdirectories if _visible(d))
        for name in (*subdirectories, *files):
            # A link could pull in files from anywhere on the machine (~/.ssh)
            # and serve them to every MCP client of the group: refused.
            if _visible(name) and (base / name).is_symlink():
                link = (base / name).relative_to(folder).as_posix()
                raise ValidationError(
                    f"{link!r} in the skill folder is a symbolic link: copy the file in instead"
                )
        for name in sorted(files):
            path = base / name
            # Not sockets or pipes, which are not files to bundle (and could block a read).
            if _visible(name) and path.is_file():
                relative = PurePosixPath(path.relative_to(folder).as_posix())
                if str(relative) != _SKILL_FILE:
                    found.append((str(relative), path))
    return found


def load_skill_folder(path: str | os.PathLike[str]) -> SkillFolder:
    """Read a skill from a folder in the common ``SKILL.md`` layout.

    ``SKILL.md`` starts with YAML front matter between ``---`` lines with
    ``name`` (the skill's slug) and ``description``, and optionally
    ``arguments`` (see :mod:`agentws.libraries.arguments`); the rest is the prompt.
    Every other file in the folder and its subfolders is an asset, named by
    its relative POSIX path; hidden files and ``__pycache__`` are left out.

    Error handling:
        :class:`~agentws.core.errors.ValidationError` naming the file and what is
        wrong: no SKILL.md, missing or malformed front matter, a name that is
        not a slug, an asset that is not UTF-8 text or is a symbolic link,
        more than :data:`MAX_SKILL_BYTES` in all.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise ValidationError(
            f"{str(folder)!r} is not a folder (a skill is a folder with SKILL.md)"
        )
    skill_file = folder / _SKILL_FILE
    if not skill_file.is_file():
        raise ValidationError(
            f"no {_SKILL_FILE} in {str(folder)!r}: a skill folder holds {_SKILL_FILE} "
            "(front matter with name and description, then the prompt) and its files"
        )
    budget = MAX_SKILL_BYTES
    too_big = f"the skill folder {str(folder)!r} holds more than {format_bytes(MAX_SKILL_BYTES)}"
    skill_md = _read_capped(skill_file, budget, _SKILL_FILE)
    budget -= len(skill_md)
    assets: list[tuple[str, bytes]] = []
    for asset_name, asset_path in _asset_files(folder):
        if asset_path.stat().st_size > budget:
            raise ValidationError(too_big)
        data = _read_capped(asset_path, budget, repr(asset_name))
        budget -= len(data)
        assets.append((asset_name, data))
    return build_skill_folder(skill_md, assets)


def build_skill_folder(skill_md: bytes, assets: Iterable[tuple[str, bytes]]) -> SkillFolder:
    """A skill from the bytes of its ``SKILL.md`` and of its assets (relative POSIX name, bytes).

    The checks of :func:`load_skill_folder`, once the files are read (from a
    folder, or from an upload: :mod:`agentws.libraries.uploads`).

    Error handling:
        :class:`~agentws.core.errors.ValidationError`: malformed front matter, a
        name that is not a slug, a file that is not UTF-8 text.
    """
    meta, prompt = _skill_front_matter(_decode(skill_md, _SKILL_FILE), _SKILL_FILE)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{_SKILL_FILE}: the front matter needs 'name: SLUG'")
    check_slug(name, what=f"skill name in {_SKILL_FILE}")
    if not isinstance(description, str) or not description.strip():
        raise ValidationError(f"{_SKILL_FILE}: the front matter needs 'description: ...'")
    arguments = parse_arguments(meta.get("arguments"), _SKILL_FILE)
    skill_assets = []
    for asset_name, data in assets:
        mime = _ASSET_TYPES.guess_type(asset_name, strict=False)[0] or "text/plain"
        text = _decode(data, repr(asset_name), _TEXT_ONLY)
        skill_assets.append(SkillAsset(name=asset_name, mime_type=mime, text=text))
    return SkillFolder(
        slug=name,
        description=description.strip(),
        prompt=prompt.strip(),
        assets=tuple(skill_assets),
        arguments=arguments,
    )
