"""The library service: libraries, documents and skills created, renamed, attached, removed.

The one place these operations live, like :mod:`agentws.workspaces.admin` for
workspaces and groups: the CLI, the dashboard and the admin API call these
functions, and each change is recorded in the audit log with the acting
operator.

Attaching and detaching state what should be true: attaching a library that
is already attached, or detaching one that is not, changes nothing and is not
an error. Adding a document or skill whose slug is taken in the library is a
:class:`~agentws.core.errors.ConflictError` unless ``replace=True``, which updates
it in place (same id, so MCP clients' references stay valid).

A library's slug is part of its documents' URIs (``agentws://<library>/<document>``),
which MCP clients keep: renaming changes its display name only.
"""

from __future__ import annotations

import os
from typing import Any, Protocol, TypeVar

import attrs
import trio

from agentws.common.audit import (
    create_in_workspace,
    record,
    record_removed,
    record_renamed,
)
from agentws.core.errors import ConflictError, NotFoundError, ValidationError
from agentws.domain.models import (
    ContextDocument,
    DocumentPolicy,
    Group,
    GroupLibrary,
    Library,
    Skill,
)
from agentws.domain.rules import check_slug, utcnow
from agentws.libraries.checks import (
    MAX_DOCUMENT_BYTES,
    MAX_SKILL_BYTES,
    MAX_TITLE_CHARS,
    check_mime,
    check_name,
    check_policy,
    check_size,
    pretty_json,
    text_bytes,
)
from agentws.libraries.loading import SkillFolder, load_skill_folder
from agentws.store.sql_catalog import CatalogStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "add_document",
    "add_skill",
    "attach_library",
    "attached_groups",
    "create_library",
    "detach_library",
    "list_documents",
    "list_libraries",
    "list_skills",
    "remove_document",
    "remove_skill",
    "rename_library",
    "set_document_policy",
]

# The limit the SKILL.md convention sets for descriptions (they go into prompts).
_MAX_DESCRIPTION = 1024

# What a library holds under a slug.
_Item = TypeVar("_Item", ContextDocument, Skill)


class _Store(RecordStore, CatalogStore, Protocol):
    """The areas of the store this module uses."""


async def _library(store: RecordStore, workspace_slug: str, library_slug: str) -> Library:
    return await store.in_workspace(Library, workspace_slug, slug=library_slug)


async def _put(
    store: RecordStore,
    kind: type[_Item],
    what: str,
    workspace_slug: str,
    library: Library,
    slug: str,
    fields: dict[str, Any],
    *,
    replace: bool,
    actor: str,
    **detail: Any,
) -> _Item:
    """Add ``kind`` with ``fields`` at ``slug``, or with ``replace`` update the one there.

    A replaced item keeps its id and creation time. The entry recorded is
    ``<what>.add`` or ``<what>.replace``, with the item's id and ``detail``.
    """
    existing = await store.find(kind, library_id=library.id, slug=slug)
    if existing is None:
        now = utcnow()  # one instant: an item never replaced has updated_at == created_at
        fresh = kind(library_id=library.id, slug=slug, created_at=now, updated_at=now, **fields)
        try:
            await store.insert(fresh)
        except ConflictError:
            raise ConflictError(
                f"{what} {slug!r} already exists in library {library.slug!r}"
            ) from None
        item, action = fresh, f"{what}.add"
    elif not replace:
        raise ConflictError(
            f"{what} {slug!r} already exists in library {library.slug!r} "
            "(replace it with --replace)"
        )
    else:
        item = await store.update(attrs.evolve(existing, updated_at=utcnow(), **fields))
        action = f"{what}.replace"
    target = f"{workspace_slug}/{library.slug}/{slug}"
    await record(store, library.workspace_id, actor, action, target, id=item.id, **detail)
    return item


async def create_library(
    store: RecordStore, workspace_slug: str, slug: str, *, name: str | None = None, actor: str
) -> Library:
    """Create a library in a workspace; ConflictError if the slug is taken there."""
    return await create_in_workspace(
        store,
        Library,
        "library",
        workspace_slug,
        slug,
        name,
        lambda given: check_name(given, "library name"),
        actor=actor,
    )


async def rename_library(
    store: RecordStore, workspace_slug: str, library_slug: str, *, name: str, actor: str
) -> Library:
    """Give a library a new display name; its slug, in its documents' URIs, stays.

    Renaming to the name it has changes nothing and records nothing.

    Error handling:
        NotFoundError for an unknown workspace or library; ValidationError
        for an empty or too long name.
    """
    library = await _library(store, workspace_slug, library_slug)
    renamed = check_name(name, "library name")
    return await record_renamed(store, library, "library", renamed, workspace_slug, actor)


async def list_libraries(store: RecordStore, workspace_slug: str) -> list[Library]:
    """A workspace's libraries, oldest first."""
    workspace = await store.workspace_by_slug(workspace_slug)
    return await store.select(Library, workspace_id=workspace.id)


async def attached_groups(store: _Store, workspace_slug: str) -> dict[str, list[str]]:
    """Library id -> slugs of the groups it is attached to, for a workspace's libraries."""
    workspace = await store.workspace_by_slug(workspace_slug)
    attached: dict[str, list[str]] = {}
    for group in await store.select(Group, workspace_id=workspace.id):
        for library in await store.group_libraries(group.id):
            attached.setdefault(library.id, []).append(group.slug)
    return attached


async def attach_library(
    store: RecordStore, workspace_slug: str, group_slug: str, library_slug: str, *, actor: str
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
    store: RecordStore, workspace_slug: str, group_slug: str, library_slug: str, *, actor: str
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
    store: RecordStore,
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
    title = check_name(title, "a document title", MAX_TITLE_CHARS)
    size = text_bytes(body, f"document {slug!r}")
    check_size(size, f"document {slug!r}", MAX_DOCUMENT_BYTES)
    mime = check_mime(mime_type)
    if mime == "application/json":
        pretty_json(body, f"document {slug!r}")  # only to check that it parses
    checked_policy = check_policy(policy)
    fields = {"title": title, "body": body, "mime_type": mime, "policy": checked_policy}
    return await _put(
        store,
        ContextDocument,
        "document",
        workspace_slug,
        library,
        slug,
        fields,
        replace=replace,
        actor=actor,
        policy=checked_policy.value,
        bytes=size,
    )


async def list_documents(
    store: RecordStore, workspace_slug: str, library_slug: str
) -> list[ContextDocument]:
    """A library's documents, oldest first, ``never`` ones included."""
    library = await _library(store, workspace_slug, library_slug)
    return await store.select(ContextDocument, library_id=library.id)


async def set_document_policy(
    store: RecordStore,
    workspace_slug: str,
    library_slug: str,
    document_slug: str,
    policy: DocumentPolicy | str,
    *,
    actor: str,
) -> ContextDocument:
    """Change how a document reaches the agent and MCP clients; the document as it is now.

    Setting the policy it has changes nothing and records nothing.

    Error handling:
        NotFoundError naming the workspace, library or document that does
        not exist; ValidationError for an unknown policy.
    """
    library = await _library(store, workspace_slug, library_slug)
    checked = check_policy(policy)
    document = await store.find(ContextDocument, library_id=library.id, slug=document_slug)
    if document is None:
        raise NotFoundError(f"no document {document_slug!r} in library {library.slug!r}")
    if document.policy is checked:
        return document
    changed = await store.update(attrs.evolve(document, policy=checked, updated_at=utcnow()))
    await record(
        store,
        library.workspace_id,
        actor,
        "document.policy",
        f"{workspace_slug}/{library.slug}/{document.slug}",
        id=document.id,
        was=document.policy.value,
        policy=checked.value,
    )
    return changed


async def remove_document(
    store: RecordStore, workspace_slug: str, library_slug: str, document_slug: str, *, actor: str
) -> ContextDocument:
    """Delete a document from a library; the removed document is returned.

    Error handling:
        NotFoundError naming the workspace, library or document that does not exist.
    """
    return await _remove(
        store, ContextDocument, "document", workspace_slug, library_slug, document_slug, actor
    )


async def add_skill(
    store: RecordStore,
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
    total = text_bytes(skill_folder.prompt, f"skill {slug!r}") + sum(
        text_bytes(a.text, f"asset {a.name!r} of skill {slug!r}") for a in skill_folder.assets
    )
    check_size(total, f"skill {slug!r} with its assets", MAX_SKILL_BYTES)
    for asset in skill_folder.assets:
        check_name(asset.name, f"asset name {asset.name!r}", MAX_TITLE_CHARS)
        check_mime(asset.mime_type)
    fields = {
        "description": description,
        "prompt": skill_folder.prompt,
        "assets": skill_folder.assets,
        "arguments": skill_folder.arguments,
    }
    return await _put(
        store,
        Skill,
        "skill",
        workspace_slug,
        library,
        slug,
        fields,
        replace=replace,
        actor=actor,
        assets=len(skill_folder.assets),
    )


async def list_skills(store: RecordStore, workspace_slug: str, library_slug: str) -> list[Skill]:
    """A library's skills, oldest first."""
    library = await _library(store, workspace_slug, library_slug)
    return await store.select(Skill, library_id=library.id)


async def remove_skill(
    store: RecordStore, workspace_slug: str, library_slug: str, skill_slug: str, *, actor: str
) -> Skill:
    """Delete a skill from a library; the removed skill is returned.

    Error handling:
        NotFoundError naming the workspace, library or skill that does not exist.
    """
    return await _remove(store, Skill, "skill", workspace_slug, library_slug, skill_slug, actor)


async def _remove(
    store: RecordStore,
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
    target = f"{workspace_slug}/{library.slug}/{item.slug}"
    return await record_removed(
        store, item, library.workspace_id, actor, f"{noun}.remove", target, id=item.id
    )
