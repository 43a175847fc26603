"""Libraries, context documents and skills: creating, attaching, listing and removing them.

The one place these operations live, like :mod:`agentws.registry` for
workspaces and groups: the CLI (and later the dashboard and the admin API)
call these functions, and each change is recorded in the audit log with the
acting operator. It also owns reading them from disk: a document from one
file (:func:`load_document_file`) and a skill from a folder in the common
``SKILL.md`` layout (:func:`load_skill_folder`). Those two are synchronous
file I/O; async callers run them in a thread (:func:`add_skill` does).

Attaching and detaching state what should be true: attaching a library that
is already attached, or detaching one that is not, changes nothing and is not
an error. Adding a document or skill whose slug is taken in the library is a
:class:`~agentws.errors.ConflictError` unless ``replace=True``, which updates
it in place (same id, so MCP clients' references stay valid).

Everything stored is text: UTF-8 without NUL characters (PostgreSQL cannot
keep NUL in text, and SQLite would, so refusing it keeps the stores alike),
at most :data:`MAX_DOCUMENT_BYTES` per document and :data:`MAX_SKILL_BYTES`
per skill with its assets.
"""

from __future__ import annotations

import json
import mimetypes
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar

import attrs
import trio
import yaml

from agentws.audit import record
from agentws.domain.models import (
    ContextDocument,
    DocumentPolicy,
    Group,
    GroupLibrary,
    Library,
    Skill,
    SkillAsset,
)
from agentws.domain.rules import check_slug, utcnow
from agentws.errors import ConflictError, NotFoundError, ValidationError
from agentws.store import Store

__all__ = [
    "DOCUMENT_EXTENSIONS",
    "MAX_DOCUMENT_BYTES",
    "MAX_SKILL_BYTES",
    "DocumentFile",
    "SkillFolder",
    "add_document",
    "add_skill",
    "attach_library",
    "attached_groups",
    "create_library",
    "detach_library",
    "format_bytes",
    "list_documents",
    "list_libraries",
    "list_skills",
    "load_document_file",
    "load_skill_folder",
    "remove_document",
    "remove_skill",
    "slug_from",
]

#: A document's body, in UTF-8 bytes: big enough for any handbook page, small
#: enough to hand whole to a model or an MCP client.
MAX_DOCUMENT_BYTES = 1024 * 1024
#: A skill's SKILL.md and assets together, in UTF-8 bytes (the same reasoning).
MAX_SKILL_BYTES = 1024 * 1024
#: File extensions :func:`load_document_file` knows the type of.
DOCUMENT_EXTENSIONS: Mapping[str, str] = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".text": "text/plain",
    ".json": "application/json",
}
# Names show in lists and MCP resource listings: one line, readable.
_MAX_NAME = 100
_MAX_TITLE = 200
# The limit the SKILL.md convention sets for descriptions (they go into prompts).
_MAX_DESCRIPTION = 1024
_SKILL_FILE = "SKILL.md"
_MIME = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*")
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


# -- reading files ----------------------------------------------------------------------


@attrs.frozen
class DocumentFile:
    """A document read from a file or stdin, ready for :func:`add_document`."""

    slug: str
    title: str
    body: str
    mime_type: str


@attrs.frozen
class SkillFolder:
    """A skill read from a folder, ready for :func:`add_skill`."""

    slug: str
    description: str
    prompt: str
    assets: tuple[SkillAsset, ...] = ()


def slug_from(text: str) -> str:
    """A slug made of ``text``: lowercase, runs of other characters turned into ``-``.

    Raises:
        ValidationError: if nothing usable is left (text without ASCII letters or digits).
    """
    slug = _NOT_SLUG.sub("-", text.lower()).strip("-")[:_SLUG_MAX].rstrip("-")
    if not slug:
        raise ValidationError(f"cannot make a slug from {text!r}: give one with --slug")
    return slug


def format_bytes(n: int) -> str:
    """``n`` bytes for people: ``512 bytes``, ``1.5 KiB``, ``1.0 MiB``."""
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.1f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


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


def _pretty_json(text: str, what: str) -> str:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        value = json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        raise ValidationError(f"{what} is not valid JSON: {exc}") from None
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


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
        :class:`~agentws.errors.ValidationError` saying what is wrong: an
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
    mime = _check_mime(mime_type or DOCUMENT_EXTENSIONS.get(extension, "text/markdown"))
    if mime == "application/json":
        body = _pretty_json(body, what)
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
    ``name`` (the skill's slug) and ``description``; the rest is the prompt.
    Every other file in the folder and its subfolders is an asset, named by
    its relative POSIX path; hidden files and ``__pycache__`` are left out.

    Error handling:
        :class:`~agentws.errors.ValidationError` naming the file and what is
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
    data = _read_capped(skill_file, budget, _SKILL_FILE)
    budget -= len(data)
    meta, prompt = _skill_front_matter(_decode(data, _SKILL_FILE), _SKILL_FILE)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{_SKILL_FILE}: the front matter needs 'name: SLUG'")
    check_slug(name, what=f"skill name in {_SKILL_FILE}")
    if not isinstance(description, str) or not description.strip():
        raise ValidationError(f"{_SKILL_FILE}: the front matter needs 'description: ...'")
    assets = []
    for asset_name, asset_path in _asset_files(folder):
        if asset_path.stat().st_size > budget:
            raise ValidationError(too_big)
        data = _read_capped(asset_path, budget, repr(asset_name))
        budget -= len(data)
        mime = _ASSET_TYPES.guess_type(asset_name, strict=False)[0] or "text/plain"
        text = _decode(data, repr(asset_name), _TEXT_ONLY)
        assets.append(SkillAsset(name=asset_name, mime_type=mime, text=text))
    return SkillFolder(
        slug=name, description=description.strip(), prompt=prompt.strip(), assets=tuple(assets)
    )


# -- checks ------------------------------------------------------------------------------


def _text_bytes(text: str, what: str) -> int:
    """The UTF-8 size of ``text``, which must be storable in both stores."""
    if "\x00" in text:
        raise ValidationError(f"{what} contains NUL characters: only text can be stored")
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValidationError(f"{what} contains unpaired surrogates: not valid Unicode") from None


def _check_size(size: int, what: str, limit: int) -> None:
    if size > limit:
        raise ValidationError(
            f"{what} is {size:,} bytes: the most allowed is {limit:,} ({format_bytes(limit)})"
        )


def _check_name(name: str, what: str, limit: int = _MAX_NAME) -> str:
    # One line: names and titles show in lists and in MCP clients' menus.
    name = " ".join(name.split())
    if not name or len(name) > limit:
        raise ValidationError(f"{what} must be 1 to {limit} characters")
    _text_bytes(name, what)
    return name


def _check_mime(mime_type: str) -> str:
    mime = mime_type.strip().lower()
    if not _MIME.fullmatch(mime):
        raise ValidationError(f"invalid MIME type {mime_type!r}: use TYPE/SUBTYPE, e.g. text/plain")
    return mime


def _check_policy(policy: DocumentPolicy | str) -> DocumentPolicy:
    try:
        return DocumentPolicy(policy)
    except ValueError:
        allowed = ", ".join(p.value for p in DocumentPolicy)
        raise ValidationError(f"invalid policy {policy!r}: use one of {allowed}") from None


# -- the store -----------------------------------------------------------------------------


async def _library(store: Store, workspace_slug: str, library_slug: str) -> Library:
    workspace = await store.workspace_by_slug(workspace_slug)
    found = await store.find(Library, workspace_id=workspace.id, slug=library_slug)
    if found is None:
        raise NotFoundError(
            f"no library {library_slug!r} in workspace {workspace_slug!r} "
            f"(see `agentws library list {workspace_slug}`)"
        )
    return found


async def create_library(
    store: Store, workspace_slug: str, slug: str, *, name: str | None = None, actor: str
) -> Library:
    """Create a library in a workspace; ConflictError if the slug is taken there."""
    workspace = await store.workspace_by_slug(workspace_slug)
    library = Library(
        workspace_id=workspace.id,
        slug=check_slug(slug, what="library slug"),
        name=_check_name(name or slug, "library name"),
    )
    try:
        await store.insert(library)
    except ConflictError:
        raise ConflictError(
            f"library {library.slug!r} already exists in workspace {workspace.slug!r}"
        ) from None
    await record(store, workspace.id, actor, "library.create", f"{workspace.slug}/{library.slug}")
    return library


async def list_libraries(store: Store, workspace_slug: str) -> list[Library]:
    """A workspace's libraries, oldest first."""
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.select(Library, workspace_id=workspace.id)


async def attached_groups(store: Store, workspace_slug: str) -> dict[str, list[str]]:
    """Library id -> slugs of the groups it is attached to, for a workspace's libraries."""
    workspace = await store.workspace_by_slug(workspace_slug)
    attached: dict[str, list[str]] = {}
    for group in await store.select(Group, workspace_id=workspace.id):
        for library in await store.group_libraries(group.id):
            attached.setdefault(library.id, []).append(group.slug)
    return attached


async def attach_library(
    store: Store, workspace_slug: str, group_slug: str, library_slug: str, *, actor: str
) -> GroupLibrary:
    """Attach a library to a group, so the group's endpoint offers its documents and skills.

    Attaching is idempotent: if the library already is attached, the
    existing attachment is returned and nothing is recorded.

    Error handling:
        NotFoundError naming the workspace, group or library that does not exist.
    """
    group = await store.group_by_slug(workspace_slug, group_slug)
    library = await _library(store, workspace_slug, library_slug)
    existing = await store.find(GroupLibrary, group_id=group.id, library_id=library.id)
    if existing is not None:
        return existing
    try:
        attachment = await store.insert(GroupLibrary(group_id=group.id, library_id=library.id))
    except ConflictError:
        # Attached by someone else since we looked: what we wanted is true.
        raced = await store.find(GroupLibrary, group_id=group.id, library_id=library.id)
        if raced is None:
            raise
        return raced
    await record(
        store,
        group.workspace_id,
        actor,
        "library.attach",
        f"{workspace_slug}/{library.slug}",
        group=group.slug,
    )
    return attachment


async def detach_library(
    store: Store, workspace_slug: str, group_slug: str, library_slug: str, *, actor: str
) -> GroupLibrary | None:
    """Detach a library from a group; its documents and skills stay in the library.

    Detaching is idempotent: if the library is not attached, nothing happens
    and None is returned; otherwise the removed attachment.

    Error handling:
        NotFoundError naming the workspace, group or library that does not exist.
    """
    group = await store.group_by_slug(workspace_slug, group_slug)
    library = await _library(store, workspace_slug, library_slug)
    existing = await store.find(GroupLibrary, group_id=group.id, library_id=library.id)
    if existing is None:
        return None
    try:
        await store.delete(GroupLibrary, existing.id)
    except NotFoundError:
        return None  # detached by someone else since we looked
    await record(
        store,
        group.workspace_id,
        actor,
        "library.detach",
        f"{workspace_slug}/{library.slug}",
        group=group.slug,
    )
    return existing


async def add_document(
    store: Store,
    workspace_slug: str,
    library_slug: str,
    *,
    slug: str,
    title: str,
    body: str,
    mime_type: str = "text/markdown",
    policy: DocumentPolicy | str,
    replace: bool = False,
    actor: str,
) -> ContextDocument:
    """Add a document to a library, or with ``replace=True`` update the one with that slug.

    A replaced document keeps its id and creation time.

    Error handling:
        NotFoundError for an unknown workspace or library; ConflictError if
        the slug is taken and ``replace`` is false; ValidationError for a bad
        slug, title, MIME type or policy, a body over
        :data:`MAX_DOCUMENT_BYTES`, or an ``application/json`` body that
        does not parse.
    """
    library = await _library(store, workspace_slug, library_slug)
    slug = check_slug(slug, what="document slug")
    title = _check_name(title, "a document title", _MAX_TITLE)
    size = _text_bytes(body, f"document {slug!r}")
    _check_size(size, f"document {slug!r}", MAX_DOCUMENT_BYTES)
    mime = _check_mime(mime_type)
    if mime == "application/json":
        _pretty_json(body, f"document {slug!r}")  # only to check that it parses
    checked_policy = _check_policy(policy)
    existing = await store.find(ContextDocument, library_id=library.id, slug=slug)
    if existing is not None and not replace:
        raise ConflictError(
            f"document {slug!r} already exists in library {library.slug!r} "
            "(replace it with --replace)"
        )
    if existing is None:
        now = utcnow()  # one instant: a document never replaced has updated_at == created_at
        document = ContextDocument(
            library_id=library.id,
            slug=slug,
            title=title,
            body=body,
            mime_type=mime,
            policy=checked_policy,
            created_at=now,
            updated_at=now,
        )
        try:
            await store.insert(document)
        except ConflictError:
            raise ConflictError(
                f"document {slug!r} already exists in library {library.slug!r}"
            ) from None
        action = "document.add"
    else:
        document = attrs.evolve(
            existing,
            title=title,
            body=body,
            mime_type=mime,
            policy=checked_policy,
            updated_at=utcnow(),
        )
        await store.update(document)
        action = "document.replace"
    await record(
        store,
        library.workspace_id,
        actor,
        action,
        f"{workspace_slug}/{library.slug}/{slug}",
        id=document.id,
        policy=document.policy.value,
        bytes=size,
    )
    return document


async def list_documents(
    store: Store, workspace_slug: str, library_slug: str
) -> list[ContextDocument]:
    """A library's documents, oldest first, ``never`` ones included."""
    library = await _library(store, workspace_slug, library_slug)
    return await store.select(ContextDocument, library_id=library.id)


async def remove_document(
    store: Store, workspace_slug: str, library_slug: str, document_slug: str, *, actor: str
) -> ContextDocument:
    """Delete a document from a library; the removed document is returned.

    Error handling:
        NotFoundError naming the workspace, library or document that does not exist.
    """
    return await _remove(
        store, ContextDocument, "document", workspace_slug, library_slug, document_slug, actor
    )


async def add_skill(
    store: Store,
    workspace_slug: str,
    library_slug: str,
    skill_folder: SkillFolder | str | os.PathLike[str],
    *,
    replace: bool = False,
    actor: str,
) -> Skill:
    """Add a skill to a library, or with ``replace=True`` update the one with its slug.

    Args:
        skill_folder: a folder in the SKILL.md layout, or what
            :func:`load_skill_folder` read from one.

    Error handling:
        NotFoundError for an unknown workspace or library; ConflictError if
        the slug is taken and ``replace`` is false; ValidationError for a
        folder :func:`load_skill_folder` refuses or a description over 1024
        characters.
    """
    if not isinstance(skill_folder, SkillFolder):
        skill_folder = await trio.to_thread.run_sync(load_skill_folder, skill_folder)
    library = await _library(store, workspace_slug, library_slug)
    slug = check_slug(skill_folder.slug, what="skill name")
    if not skill_folder.prompt.strip():
        raise ValidationError(f"skill {slug!r} has no prompt: write it after the front matter")
    description = " ".join(skill_folder.description.split())
    if not description or len(description) > _MAX_DESCRIPTION:
        raise ValidationError(
            f"skill {slug!r}: the description must be 1 to {_MAX_DESCRIPTION} characters"
        )
    total = _text_bytes(skill_folder.prompt, f"skill {slug!r}") + sum(
        _text_bytes(a.text, f"asset {a.name!r} of skill {slug!r}") for a in skill_folder.assets
    )
    _check_size(total, f"skill {slug!r} with its assets", MAX_SKILL_BYTES)
    for asset in skill_folder.assets:
        _check_name(asset.name, f"asset name {asset.name!r}", _MAX_TITLE)
        _check_mime(asset.mime_type)
    existing = await store.find(Skill, library_id=library.id, slug=slug)
    if existing is not None and not replace:
        raise ConflictError(
            f"skill {slug!r} already exists in library {library.slug!r} (replace it with --replace)"
        )
    if existing is None:
        now = utcnow()  # one instant, as for documents
        skill = Skill(
            library_id=library.id,
            slug=slug,
            description=description,
            prompt=skill_folder.prompt,
            assets=skill_folder.assets,
            created_at=now,
            updated_at=now,
        )
        try:
            await store.insert(skill)
        except ConflictError:
            raise ConflictError(
                f"skill {slug!r} already exists in library {library.slug!r}"
            ) from None
        action = "skill.add"
    else:
        skill = attrs.evolve(
            existing,
            description=description,
            prompt=skill_folder.prompt,
            assets=skill_folder.assets,
            updated_at=utcnow(),
        )
        await store.update(skill)
        action = "skill.replace"
    await record(
        store,
        library.workspace_id,
        actor,
        action,
        f"{workspace_slug}/{library.slug}/{slug}",
        id=skill.id,
        assets=len(skill.assets),
    )
    return skill


async def list_skills(store: Store, workspace_slug: str, library_slug: str) -> list[Skill]:
    """A library's skills, oldest first."""
    library = await _library(store, workspace_slug, library_slug)
    return await store.select(Skill, library_id=library.id)


async def remove_skill(
    store: Store, workspace_slug: str, library_slug: str, skill_slug: str, *, actor: str
) -> Skill:
    """Delete a skill from a library; the removed skill is returned.

    Error handling:
        NotFoundError naming the workspace, library or skill that does not exist.
    """
    return await _remove(store, Skill, "skill", workspace_slug, library_slug, skill_slug, actor)


_Item = TypeVar("_Item", ContextDocument, Skill)


async def _remove(
    store: Store,
    kind: type[_Item],
    noun: str,
    workspace_slug: str,
    library_slug: str,
    slug: str,
    actor: str,
) -> _Item:
    library = await _library(store, workspace_slug, library_slug)
    item = await store.find(kind, library_id=library.id, slug=slug)
    if item is None:
        command = "doc" if noun == "document" else noun
        raise NotFoundError(
            f"no {noun} {slug!r} in library {library.slug!r} "
            f"(see `agentws {command} list {workspace_slug} {library.slug}`)"
        )
    await store.delete(kind, item.id)
    await record(
        store,
        library.workspace_id,
        actor,
        f"{noun}.remove",
        f"{workspace_slug}/{library.slug}/{item.slug}",
        id=item.id,
    )
    return item
