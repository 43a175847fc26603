"""The dashboard's Libraries page: a workspace's libraries, their documents; uploading one."""

from __future__ import annotations

from quart import Response, request, url_for

from agentws import libraries
from agentws.admin_access import AdminServices, Caller
from agentws.blueprints import RouteTable
from agentws.domain.models import DocumentPolicy
from agentws.errors import AgentwsError

from .frame import done, error_text, find_workspace, render_page
from .session import signed_in

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

_MAX_UPLOAD_BYTES = 5 * 1024 * 1024


@routes.get("/w/<workspace>/libraries")
@signed_in
async def libraries_page(admin: AdminServices, caller: Caller, workspace: str) -> Response:
    store = admin.store
    shelves = []
    attached = await libraries.attached_groups(store, workspace)
    for library in await libraries.list_libraries(store, workspace):
        shelves.append(
            {
                "library": library,
                "groups": attached.get(library.id, []),
                "documents": await libraries.list_documents(store, workspace, library.slug),
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
    )


@routes.post("/w/<workspace>/libraries/<library>/documents")
@signed_in
async def document_upload(
    admin: AdminServices, caller: Caller, workspace: str, library: str
) -> Response:
    here = url_for("dashboard.libraries_page", workspace=workspace)
    form = await request.form
    files = await request.files
    upload = files.get("file")
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
            workspace,
            library,
            slug=libraries.slug_from(form.get("slug") or upload.filename.rsplit(".", 1)[0]),
            title=title,
            body=text,
            mime_type=_mime(upload.filename),
            policy=form.get("policy") or "on_demand",
            actor=caller.actor,
        )
    except UnicodeDecodeError:
        return done(here, "the file is not UTF-8 text", error=True)
    except (AgentwsError, ValueError) as exc:
        return done(here, error_text(exc), error=True)
    return done(here, f"Added {document.title!r} ({document.policy.value}) to {library}.")


def _mime(filename: str) -> str:
    lower = filename.lower()
    if lower.endswith(".json"):
        return "application/json"
    if lower.endswith((".md", ".markdown")):
        return "text/markdown"
    return "text/plain"
