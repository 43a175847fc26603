"""The Libraries page's skills: uploading one as a folder or a ``.zip``, removing one.

A folder comes from ``<input type=file webkitdirectory>``: one part per
file, named by its path (``triage/SKILL.md``). Both forms are read by
:mod:`agentws.libraries.uploads` and stored by
:func:`agentws.libraries.add_skill`, with the checks and limits of
``agentws skill add``. The request's body is capped before the form is
read (:data:`MAX_SKILL_REQUEST_BYTES`, :mod:`agentws.doors.dashboard.capped`): an
upload whose declared length is over it is refused without being read, one
sent without a length is refused once that much has arrived, and so is a
folder of more files than Quart parses in one form; each with a notice
saying why.
"""

from __future__ import annotations

import trio
from quart import Response, current_app
from quart.datastructures import FileStorage

from agentws import libraries
from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, ConflictError, ValidationError
from agentws.doors.dashboard.frame import changed, done, error_text
from agentws.doors.dashboard.libraries import LIBRARY_PAGE, Uploaded, declare_upload
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable
from agentws.libraries.checks import MAX_SKILL_BYTES, format_bytes
from agentws.libraries.uploads import (
    MAX_SKILL_FILES,
    MAX_SKILL_ZIP_BYTES,
    skill_from_files,
    skill_from_zip,
)

__all__ = ["MAX_SKILL_REQUEST_BYTES", "routes"]

routes = RouteTable[AdminServices]()

#: A skill upload's whole request: the larger of a zip and a folder's files,
#: plus room for the form's fields and each part's headers.
MAX_SKILL_REQUEST_BYTES = max(MAX_SKILL_ZIP_BYTES, MAX_SKILL_BYTES) + 256 * 1024


_here = LIBRARY_PAGE.here


def _chosen(uploads: list[FileStorage]) -> list[FileStorage]:
    # A file input left empty still sends one part, with no file name.
    return [u for u in uploads if u.filename]


def _refusal(over: bool) -> str:
    if over:
        return f"the upload is larger than {format_bytes(MAX_SKILL_REQUEST_BYTES)}"
    parts = current_app.config["MAX_FORM_PARTS"]
    return (
        f"the upload holds more than {parts:,} files: a skill holds at most "
        f"{MAX_SKILL_FILES}, so choose the skill's own folder"
    )


@declare_upload(routes, "skills", MAX_SKILL_REQUEST_BYTES, _refusal)
async def skill_upload(admin: AdminServices, caller: Caller, sent: Uploaded) -> Response:
    here, workspace, library = sent.here, sent.workspace, sent.library
    folder = _chosen(sent.files.getlist("files"))
    archive = _chosen(sent.files.getlist("zip"))
    try:
        if folder and archive:
            raise ValidationError("choose a folder or a .zip, not both")
        if archive:
            data = archive[0].read(MAX_SKILL_ZIP_BYTES + 1)
            skill = await trio.to_thread.run_sync(skill_from_zip, data)
        elif folder:
            parts = [(str(u.filename), u.read(MAX_SKILL_BYTES + 1)) for u in folder]
            skill = await trio.to_thread.run_sync(skill_from_files, parts)
        else:
            raise ValidationError("choose a skill's folder, or a .zip of it")
        added = await libraries.add_skill(
            admin.store,
            workspace,
            library,
            skill,
            replace=sent.form.get("replace") == "yes",
            actor=caller.actor,
        )
    except ConflictError:
        return done(
            here,
            f"skill {skill.slug!r} already exists in library {library!r}: tick "
            "'Replace a skill of the same name' to update it",
            error=True,
        )
    except AgentwsError as exc:
        return done(here, error_text(exc), error=True)
    assets = f"{len(added.assets)} asset{'' if len(added.assets) == 1 else 's'}"
    # A skill added now was stamped once; a replaced one keeps its creation time.
    verb = "Added" if added.updated_at == added.created_at else "Replaced"
    return done(here, f"{verb} skill {added.slug!r} with {assets} in {library}.")


@routes.post("/w/<workspace>/libraries/<library>/skills/<skill>/remove")
@signed_in
async def skill_remove(
    admin: AdminServices, caller: Caller, workspace: str, library: str, skill: str
) -> Response:
    return await changed(
        _here(workspace, library),
        libraries.remove_skill(admin.store, workspace, library, skill, actor=caller.actor),
        lambda removed: f"Removed skill {removed.slug!r} from {library}.",
    )
