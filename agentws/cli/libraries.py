"""The ``agentws library``, ``doc`` and ``skill`` commands.

Handlers for libraries, their context documents and skills, and the parsers
that route to them; :func:`agentws.cli.main.build_parser` registers them with
:func:`add_library_commands`. They follow the conventions of
:mod:`agentws.cli.main`: every command takes ``--database`` and ``--json``,
returns an :class:`~agentws.cli.output.Output`, and leaves errors to
:func:`agentws.cli.main.main`. The work is done by :mod:`agentws.libraries`.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

import trio

from agentws.cli.output import Context, Output, iso, table
from agentws.cli.parsing import Verbs, noun
from agentws.domain.models import ContextDocument, DocumentPolicy, Library, Skill
from agentws.doors.views import document_json
from agentws.libraries import (
    DOCUMENT_EXTENSIONS,
    add_document,
    add_skill,
    attach_library,
    attached_groups,
    create_library,
    detach_library,
    format_bytes,
    list_documents,
    list_libraries,
    list_skills,
    load_document_file,
    remove_document,
    remove_skill,
    rename_library,
    set_document_policy,
)
from agentws.workspaces.admin import endpoint_url

__all__ = ["add_library_commands"]

# Descriptions in `skill list` are cut to keep one skill on one line.
_DESCRIPTION_CHARS = 60


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _library_json(lib: Library, workspace: str, groups: list[str]) -> dict[str, Any]:
    return {
        "id": lib.id,
        "workspace": workspace,
        "slug": lib.slug,
        "name": lib.name,
        "groups": groups,
        "created_at": iso(lib.created_at),
    }


def _document_json(d: ContextDocument, workspace: str, library: str) -> dict[str, Any]:
    # The API's document, and the workspace it is in (second, after the id).
    return {"id": d.id, "workspace": workspace, **document_json(d, library)}


def _skill_json(s: Skill, workspace: str, library: str) -> dict[str, Any]:
    return {
        "id": s.id,
        "workspace": workspace,
        "library": library,
        "slug": s.slug,
        "description": s.description,
        "prompt_bytes": _bytes(s.prompt),
        "assets": [
            {"name": a.name, "mime_type": a.mime_type, "bytes": _bytes(a.text)} for a in s.assets
        ],
        "created_at": iso(s.created_at),
        "updated_at": iso(s.updated_at),
    }


# -- library ---------------------------------------------------------------------------


async def _library_create(args: argparse.Namespace, ctx: Context) -> Output:
    lib = await create_library(
        ctx.store, args.workspace, args.slug, name=args.name, actor=ctx.actor
    )
    text = (
        f"Created library {lib.slug!r} ({lib.id}) in workspace {args.workspace!r}.\n"
        f"Add documents with `agentws doc add {args.workspace} {lib.slug} FILE --policy POLICY`, "
        f"then attach it with `agentws library attach {args.workspace} GROUP {lib.slug}`."
    )
    return Output(_library_json(lib, args.workspace, []), text)


async def _library_list(args: argparse.Namespace, ctx: Context) -> Output:
    libraries = await list_libraries(ctx.store, args.workspace)
    groups = await attached_groups(ctx.store, args.workspace)
    rows = [_library_json(lib, args.workspace, groups.get(lib.id, [])) for lib in libraries]
    shown = [{**row, "groups": ", ".join(row["groups"])} for row in rows]
    empty = (
        f"No libraries in {args.workspace!r}: "
        f"create one with `agentws library create {args.workspace} SLUG`."
    )
    return Output(rows, table(shown, ("slug", "name", "groups", "id"), empty))


async def _library_rename(args: argparse.Namespace, ctx: Context) -> Output:
    lib = await rename_library(
        ctx.store, args.workspace, args.library, name=args.name, actor=ctx.actor
    )
    groups = await attached_groups(ctx.store, args.workspace)
    text = (
        f"Library {args.workspace}/{lib.slug} is named {lib.name!r}; its slug, in its "
        "documents' URIs, stays."
    )
    return Output(_library_json(lib, args.workspace, groups.get(lib.id, [])), text)


async def _library_attach(args: argparse.Namespace, ctx: Context) -> Output:
    attachment = await attach_library(
        ctx.store, args.workspace, args.group, args.library, actor=ctx.actor
    )
    url = endpoint_url(ctx.settings.public_base_url, args.workspace, args.group)
    data = {
        "id": attachment.id,
        "workspace": args.workspace,
        "group": args.group,
        "library": args.library,
        "library_id": attachment.library_id,
        "url": url,
        "attached_at": iso(attachment.created_at),
    }
    text = (
        f"Library {args.library!r} is attached to {args.workspace}/{args.group}: "
        f"its documents and skills are offered at {url}"
    )
    return Output(data, text)


async def _library_detach(args: argparse.Namespace, ctx: Context) -> Output:
    removed = await detach_library(
        ctx.store, args.workspace, args.group, args.library, actor=ctx.actor
    )
    data = {
        "id": removed.id if removed else None,
        "workspace": args.workspace,
        "group": args.group,
        "library": args.library,
        "detached": removed is not None,
    }
    where = f"{args.workspace}/{args.group}"
    if removed is None:
        text = f"Library {args.library!r} was not attached to {where}: nothing to do."
    else:
        text = f"Detached library {args.library!r} from {where}; its documents stay in it."
    return Output(data, text)


# -- doc -------------------------------------------------------------------------------


async def _doc_add(args: argparse.Namespace, ctx: Context) -> Output:
    # File I/O (or a wait on stdin) belongs in a thread, not on the event loop.
    loaded = await trio.to_thread.run_sync(
        functools.partial(
            load_document_file, args.file, title=args.title, slug=args.slug, mime_type=args.mime
        )
    )
    d = await add_document(
        ctx.store,
        args.workspace,
        args.library,
        slug=loaded.slug,
        title=loaded.title,
        body=loaded.body,
        mime_type=loaded.mime_type,
        policy=args.policy,
        replace=args.replace,
        actor=ctx.actor,
    )
    data = _document_json(d, args.workspace, args.library)
    verb = "Replaced" if d.updated_at != d.created_at else "Added"
    text = (
        f"{verb} document {d.slug!r} ({d.id}) in {args.workspace}/{args.library}: "
        f"{d.title!r}, {d.mime_type}, {format_bytes(data['bytes'])}, policy {d.policy.value}."
    )
    return Output(data, text)


async def _doc_list(args: argparse.Namespace, ctx: Context) -> Output:
    documents = await list_documents(ctx.store, args.workspace, args.library)
    rows = [_document_json(d, args.workspace, args.library) for d in documents]
    shown = [{**row, "mime": row["mime_type"], "size": format_bytes(row["bytes"])} for row in rows]
    empty = (
        f"No documents in {args.workspace}/{args.library}: add one with "
        f"`agentws doc add {args.workspace} {args.library} FILE --policy POLICY`."
    )
    columns = ("slug", "title", "policy", "mime", "size")
    return Output(rows, table(shown, columns, empty))


# What each policy means, said when it is set.
_POLICY_TEXT = {
    DocumentPolicy.SPINE: "always in the agent's context, and an MCP resource",
    DocumentPolicy.ON_DEMAND: "read when needed, and an MCP resource",
    DocumentPolicy.NEVER: "kept, but never shown to the agent or MCP clients",
}


async def _doc_policy(args: argparse.Namespace, ctx: Context) -> Output:
    d = await set_document_policy(
        ctx.store, args.workspace, args.library, args.document, args.policy, actor=ctx.actor
    )
    data = _document_json(d, args.workspace, args.library)
    text = (
        f"Document {args.workspace}/{args.library}/{d.slug} has policy {d.policy.value}: "
        f"{_POLICY_TEXT[d.policy]}."
    )
    return Output(data, text)


async def _doc_remove(args: argparse.Namespace, ctx: Context) -> Output:
    d = await remove_document(
        ctx.store, args.workspace, args.library, args.document, actor=ctx.actor
    )
    data = _document_json(d, args.workspace, args.library)
    text = f"Removed document {d.slug!r} ({d.id}) from {args.workspace}/{args.library}."
    return Output(data, text)


# -- skill -----------------------------------------------------------------------------


async def _skill_add(args: argparse.Namespace, ctx: Context) -> Output:
    s = await add_skill(
        ctx.store, args.workspace, args.library, args.folder, replace=args.replace, actor=ctx.actor
    )
    data = _skill_json(s, args.workspace, args.library)
    verb = "Replaced" if s.updated_at != s.created_at else "Added"
    names = ", ".join(a.name for a in s.assets)
    assets = f"{len(s.assets)} asset(s): {names}" if s.assets else "no assets"
    text = f"{verb} skill {s.slug!r} ({s.id}) in {args.workspace}/{args.library} with {assets}."
    return Output(data, text)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def _skill_list(args: argparse.Namespace, ctx: Context) -> Output:
    skills = await list_skills(ctx.store, args.workspace, args.library)
    rows = [_skill_json(s, args.workspace, args.library) for s in skills]
    shown = [
        {
            **row,
            "description": _cut(row["description"], _DESCRIPTION_CHARS),
            "assets": str(len(row["assets"])),
        }
        for row in rows
    ]
    empty = (
        f"No skills in {args.workspace}/{args.library}: add one with "
        f"`agentws skill add {args.workspace} {args.library} FOLDER`."
    )
    return Output(rows, table(shown, ("slug", "description", "assets", "id"), empty))


async def _skill_remove(args: argparse.Namespace, ctx: Context) -> Output:
    s = await remove_skill(ctx.store, args.workspace, args.library, args.skill, actor=ctx.actor)
    data = _skill_json(s, args.workspace, args.library)
    return Output(data, f"Removed skill {s.slug!r} ({s.id}) from {args.workspace}/{args.library}.")


# -- parsers ---------------------------------------------------------------------------

_POLICY_HELP = (
    "spine: always in the agent's context; on_demand: read when needed; "
    "never: kept but never shown to the agent or MCP clients"
)


def add_library_commands(
    commands: Verbs,
    common: argparse.ArgumentParser,
) -> None:
    """Add ``library``, ``doc`` and ``skill`` to the ``agentws`` command line."""
    library = noun(
        commands,
        common,
        "library",
        "create libraries of documents and skills, attach them to groups",
        "A library holds context documents and skills. Attaching it to a group "
        "offers them at the group's MCP endpoint. Attach and detach are idempotent.",
    )
    l_create = library.verb("create", "create a library", "workspace", handler=_library_create)
    l_create.add_argument("slug", metavar="LIBRARY", help="library slug: [a-z0-9][a-z0-9-]*")
    l_create.add_argument("--name", help="display name (default: the slug)")
    library.verb(
        "list",
        "list a workspace's libraries and the groups using them",
        "workspace",
        handler=_library_list,
    )
    library.rename(
        "give a library a new display name (its slug stays)",
        "Change a library's display name. Its slug is in its documents' URIs "
        "(agentws://LIBRARY/DOC), which MCP clients keep, so it does not change. Audited "
        "(library.rename, with the name it had); the name it already has changes nothing.",
        _library_rename,
        "workspace",
        "library",
    )
    for action, handler, text in (
        (
            "attach",
            _library_attach,
            "offer a library's documents and skills to a group (no-op if attached)",
        ),
        (
            "detach",
            _library_detach,
            "stop offering a library to a group (no-op if not attached); nothing is deleted",
        ),
    ):
        library.verb(action, text, "workspace", "group", "library", handler=handler)

    doc = noun(
        commands,
        common,
        "doc",
        "add, list, change the policy of and remove a library's context documents",
        "Context documents are text (Markdown, plain text or JSON, at most 1 MiB, "
        "UTF-8) that groups offer as MCP resources and the agent reads.",
    )
    accepted = ", ".join(DOCUMENT_EXTENSIONS)
    d_add = doc.verb(
        "add",
        "add a document from a file or stdin",
        "workspace",
        "library",
        description=f"Add a document from a file ({accepted}) or from stdin (-). "
        "The title is --title, else the first Markdown '# heading', else the file name; "
        "the slug is --slug, else made from the file name. JSON is checked and pretty-printed.",
        handler=_doc_add,
    )
    d_add.add_argument("file", metavar="FILE", help="the document's file, or - for stdin")
    d_add.add_argument(
        "--policy",
        required=True,
        choices=[p.value for p in DocumentPolicy],
        help=_POLICY_HELP,
    )
    d_add.add_argument("--title", help="title (default: first '# heading', else the file name)")
    d_add.add_argument(
        "--slug",
        help="slug (default: from the file name; needed for stdin unless --title is given)",
    )
    d_add.add_argument(
        "--mime",
        metavar="TYPE",
        help="MIME type (default: from the extension; stdin: text/markdown)",
    )
    d_add.add_argument(
        "--replace", action="store_true", help="update the document if the slug exists"
    )
    doc.verb("list", "list a library's documents", "workspace", "library", handler=_doc_list)
    d_policy = doc.verb(
        "policy",
        "change how a document reaches the agent and MCP clients",
        "workspace",
        "library",
        description="Set a document's policy: " + _POLICY_HELP + ". Audited "
        "(document.policy, with the policy it had); the policy it already has changes nothing.",
        handler=_doc_policy,
    )
    d_policy.add_argument("document", metavar="DOC", help="document slug")
    d_policy.add_argument(
        "policy",
        metavar="POLICY",
        choices=[p.value for p in DocumentPolicy],
        help="one of %(choices)s",
    )
    d_remove = doc.verb("remove", "delete a document", "workspace", "library", handler=_doc_remove)
    d_remove.add_argument("document", metavar="DOC", help="document slug")

    skill = noun(
        commands,
        common,
        "skill",
        "add, list and remove a library's skills",
        "A skill is a folder with SKILL.md (front matter with name and "
        "description, then the prompt) and any text files it bundles. Groups offer skills "
        "as MCP prompts.",
    )
    s_add = skill.verb(
        "add", "add a skill from a folder", "workspace", "library", handler=_skill_add
    )
    s_add.add_argument("folder", metavar="FOLDER", help="folder holding SKILL.md")
    s_add.add_argument("--replace", action="store_true", help="update the skill if it exists")
    skill.verb("list", "list a library's skills", "workspace", "library", handler=_skill_list)
    s_remove = skill.verb("remove", "delete a skill", "workspace", "library", handler=_skill_remove)
    s_remove.add_argument("skill", metavar="SKILL", help="skill slug")
