"""The dashboard's Libraries page: a workspace's libraries and their documents.

Creating and renaming a library (declared by
:mod:`agentws.doors.dashboard.named_items`), uploading a document, reading one
(:func:`document_page`), changing its policy and removing it, through the
functions the CLI calls (:mod:`agentws.libraries`). A library's slug is in
its documents' URIs, which MCP clients keep, so renaming changes its
display name only. Skills are uploaded and removed in
:mod:`agentws.doors.dashboard.library_skills`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from quart import Response, request, url_for
from quart.datastructures import FileStorage
from werkzeug.datastructures import MultiDict

from agentws import libraries
from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, NotFoundError
from agentws.domain.models import DocumentPolicy
from agentws.doors.dashboard.capped import capped
from agentws.doors.dashboard.frame import changed, done, error_text, find_workspace, render_page
from agentws.doors.dashboard.named_items import ItemPage, declare_create_and_rename
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.libraries.checks import MAX_SKILL_BYTES, format_bytes
from agentws.libraries.uploads import MAX_SKILL_FILES

__all__ = [
    "LIBRARY_PAGE",
    "MAX_DOCUMENT_REQUEST_BYTES",
    "Upload",
    "Uploaded",
    "declare_upload",
    "routes",
]

routes = RouteTable[AdminServices]()

_MAX_UPLOAD_BYTES = 5 * 1024 * 1024
#: A document upload's whole request: the file, and room for the form's fields.
MAX_DOCUMENT_REQUEST_BYTES = _MAX_UPLOAD_BYTES + 64 * 1024
#: Characters of a document the preview shows: a page a person reads, not the
#: whole of a 1 MiB document (the note under it says how much is left out).
PREVIEW_CHARS = 20_000


#: The Libraries page, each library at its anchor (``#library-<slug>``).
LIBRARY_PAGE = ItemPage("library", "libraries", "libraries_page")
_here = LIBRARY_PAGE.here


@routes.get("/w/<workspace>/libraries")
@signed_in
async def libraries_page(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    shelves = []
    attached = await libraries.attached_groups(store, workspace)
    for library in await libraries.list_libraries(store, workspace):
        documents = await libraries.list_documents(store, workspace, library.slug)
        shelves.append(
            {
                "library": library,
                "groups": attached.get(library.id, []),
                "documents": documents,
                "sizes": {d.id: len(d.body.encode()) for d in documents},
                "skills": await libraries.list_skills(store, workspace, library.slug),
            }
        )
    return await render_page(
        admin,
        "libraries.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        shelves=shelves,
        policies=[p.value for p in DocumentPolicy],
        max_skill=format_bytes(MAX_SKILL_BYTES),
        max_files=MAX_SKILL_FILES,
    )


declare_create_and_rename(
    routes,
    LIBRARY_PAGE,
    libraries.create_library,
    libraries.rename_library,
    "add documents and skills, then attach it to a group.",
)


@attrs.frozen
class Uploaded:
    """An upload's request, once its body is known to be within bounds."""

    workspace: str
    library: str
    form: MultiDict[str, str]
    files: MultiDict[str, FileStorage]

    @property
    def here(self) -> str:
        """The library's place on its page: where the upload's notice is shown."""
        return _here(self.workspace, self.library)


#: upload(admin, caller, uploaded): an upload's route.
Upload = Callable[[AdminServices, Caller, Uploaded], Awaitable[Response]]


def declare_upload(
    table: RouteTable[AdminServices], what: str, limit: int, refusal: Callable[[bool], str]
) -> Callable[[Upload], Upload]:
    """Declare an upload into a library: ``POST /w/<workspace>/libraries/<library>/<what>``.

    The endpoint is the upload's name. The request's body is capped at
    ``limit`` (:mod:`agentws.doors.dashboard.capped`); a refused one goes back to
    the library with ``refusal(over)`` as its notice (``over``: larger than
    ``limit``; else: more form parts than Quart parses).
    """

    async def too_large(_: tuple[Any, ...], path: dict[str, Any], over: bool) -> Response:
        here = _here(str(path["workspace"]), str(path["library"]))
        return done(here, refusal(over), error=True)

    def declare(upload: Upload) -> Upload:
        async def posted(
            admin: AdminServices, caller: Caller, workspace: str, library: str
        ) -> Response:
            sent = Uploaded(workspace, library, await request.form, await request.files)
            return await upload(admin, caller, sent)

        page = capped(limit, too_large)(signed_in(posted))
        path = f"/w/<workspace>/libraries/<library>/{what}"
        table.post(path, endpoint=upload.__name__)(page)
        return upload

    return declare


@declare_upload(
    routes,
    "documents",
    MAX_DOCUMENT_REQUEST_BYTES,
    lambda over: (
        f"the upload is larger than {format_bytes(_MAX_UPLOAD_BYTES)}"
        if over
        else "the form holds more fields than a document upload has"
    ),
)
async def document_upload(admin: AdminServices, caller: Caller, sent: Uploaded) -> Response:
    upload, form, library = sent.files.get("file"), sent.form, sent.library
    try:
        if upload is None or not upload.filename:
            raise ValueError("choose a file to upload")
        data = upload.read(_MAX_UPLOAD_BYTES + 1)
        if len(data) > _MAX_UPLOAD_BYTES:
            raise ValueError("the file is larger than 5 MiB")
        text = data.decode("utf-8")
        title = form.get("title") or upload.filename
        document = await libraries.add_document(
            admin.store,
            sent.workspace,
            library,
            slug=libraries.slug_from(form.get("slug") or upload.filename.rsplit(".", 1)[0]),
            title=title,
            body=text,
            mime_type=_mime(upload.filename),
            policy=form.get("policy") or "on_demand",
            actor=caller.actor,
        )
    except UnicodeDecodeError:
        return done(sent.here, "the file is not UTF-8 text", error=True)
    except (AgentwsError, ValueError) as exc:
        return done(sent.here, error_text(exc), error=True)
    return done(sent.here, f"Added {document.title!r} ({document.policy.value}) to {library}.")


def _mime(filename: str) -> str:
    lower = filename.lower()
    if lower.endswith(".json"):
        return "application/json"
    if lower.endswith((".md", ".markdown")):
        return "text/markdown"
    return "text/plain"


@routes.get("/w/<workspace>/libraries/<library>/documents/<document>")
@signed_in
async def document_page(
    admin: AdminServices, caller: Caller, workspace: str, library: str, document: str
) -> Response:
    store = admin.store
    found = [
        d for d in await libraries.list_documents(store, workspace, library) if d.slug == document
    ]
    if not found:
        raise NotFoundError(f"no document {document!r} in library {library!r}")
    shelf = next(x for x in await libraries.list_libraries(store, workspace) if x.slug == library)
    body = found[0].body
    return await render_page(
        admin,
        "document.html",
        caller,
        workspace=await find_workspace(admin, workspace),
        library=shelf,
        document=found[0],
        size=len(body.encode()),
        preview=body[:PREVIEW_CHARS],
        left_out=max(0, len(body) - PREVIEW_CHARS),
        policies=[p.value for p in DocumentPolicy],
    )


@routes.post("/w/<workspace>/libraries/<library>/documents/<document>/policy")
@signed_in
async def document_policy(
    admin: AdminServices, caller: Caller, workspace: str, library: str, document: str
) -> Response:
    form = await request.form
    back = form.get("back") == "document"
    here = (
        url_for("dashboard.document_page", workspace=workspace, library=library, document=document)
        if back
        else _here(workspace, library)
    )
    policy = form.get("policy") or ""
    return await changed(
        here,
        libraries.set_document_policy(
            admin.store, workspace, library, document, policy, actor=caller.actor
        ),
        lambda doc: f"{doc.title!r} is now {doc.policy.value}.",
    )


@routes.post("/w/<workspace>/libraries/<library>/documents/<document>/remove")
@signed_in
async def document_remove(
    admin: AdminServices, caller: Caller, workspace: str, library: str, document: str
) -> Response:
    here = _here(workspace, library)
    return await changed(
        here,
        libraries.remove_document(admin.store, workspace, library, document, actor=caller.actor),
        lambda removed: f"Removed {removed.title!r} from {library}.",
    )
