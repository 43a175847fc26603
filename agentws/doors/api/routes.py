"""The ``/api/v1`` blueprint: thin handlers over the service layer the CLI uses.

Every handler authenticates the caller (:func:`agentws.admins.access.authenticate`), reads and
checks its input, calls the same service function as the matching CLI
command (so the same rules and audit entries apply, with the admin as the
actor), and answers JSON. Errors are ``{"error": {"code", "message"}}`` with
the status the error's kind calls for. Lists are paginated: ``limit`` (1 to
200, default 50) and the opaque ``cursor`` a page's ``next_cursor`` gives
(see :mod:`agentws.doors.api.calls`).

:func:`api_blueprint` builds the blueprint for the service's
:class:`~agentws.admins.access.AdminServices`. Here: the document,
workspaces, libraries and channels; webhooks and events are in
:mod:`agentws.doors.api.webhooks` (rotation in :mod:`agentws.doors.api.webhook_rotation`,
samples and tries of a prompt in :mod:`agentws.doors.api.webhook_try`, failures,
bulk replays and test events in :mod:`agentws.doors.api.webhook_operations`), their
delivery logs in :mod:`agentws.doors.api.deliveries`, approvals in
:mod:`agentws.doors.api.approvals`,
the audit log in :mod:`agentws.doors.api.audit`, MCP tokens and tool permissions in
:mod:`agentws.doors.api.access`, connectors in :mod:`agentws.doors.api.connectors`.

Renames (``PATCH`` a workspace, group or library with ``{"name"}``) change
the display name only: slugs are in endpoint URLs and documents' URIs.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, jsonify

from agentws import libraries
from agentws.admins.access import AdminServices, Caller
from agentws.chat.channels import parse_channel
from agentws.domain.models import Library
from agentws.doors.api import (
    access,
    approvals,
    audit,
    connectors,
    deliveries,
    webhook_operations,
    webhook_rotation,
    webhook_try,
    webhooks,
)
from agentws.doors.api.calls import DOCUMENT_BODY_BYTES, Answer, Endpoints, page_of, read_body
from agentws.doors.api.openapi import openapi_document
from agentws.doors.api.shapes.bodies import NameChange, NewDocument, PolicyChange
from agentws.doors.views import (
    document_json,
    group_json,
    library_json,
    message_json,
    workspace_json,
)
from agentws.http.blueprints import RouteTable
from agentws.workspaces import admin as registry

__all__ = ["api_blueprint"]

routes = Endpoints()
# The one route that needs no credentials.
_public = RouteTable[AdminServices]()


def api_blueprint(admin: AdminServices) -> Blueprint:
    """The admin API under ``/api/v1``, its handlers given ``admin``."""
    tables = (
        routes,
        webhooks.routes,
        webhook_rotation.routes,
        webhook_try.routes,
        webhook_operations.routes,
        deliveries.routes,
        approvals.routes,
        access.routes,
        audit.routes,
        connectors.routes,
    )
    return _public.blueprint(
        "api",
        __name__,
        admin,
        include=[t.table for t in tables],
        url_prefix="/api/v1",
    )


# --- the document ---------------------------------------------------------------------------


@_public.get("/openapi.json")
async def openapi(admin: AdminServices) -> Response:
    """The OpenAPI 3.1 document of this API (no credentials needed)."""
    return jsonify(openapi_document(admin.settings.public_base_url))


# --- workspaces -----------------------------------------------------------------------------


@routes.get("/workspaces")
async def list_workspaces(admin: AdminServices, caller: Caller) -> Answer:
    return page_of([workspace_json(w) for w in await registry.list_workspaces(admin.store)])


@routes.patch("/workspaces/<workspace>")
async def rename_workspace(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    changed = await read_body(NameChange)
    renamed = await registry.rename_workspace(
        admin.store, workspace, name=changed.name, actor=caller.actor
    )
    return workspace_json(renamed)


# --- groups ---------------------------------------------------------------------------------


@routes.patch("/workspaces/<workspace>/groups/<group>")
async def rename_group(admin: AdminServices, caller: Caller, workspace: str, group: str) -> Answer:
    changed = await read_body(NameChange)
    renamed = await registry.rename_group(
        admin.store, workspace, group, name=changed.name, actor=caller.actor
    )
    url = registry.endpoint_url(admin.settings.public_base_url, workspace, renamed.slug)
    return group_json(renamed, workspace, url)


# --- libraries ------------------------------------------------------------------------------


async def _shelf(
    admin: AdminServices, workspace: str, library: Library, attached: dict[str, list[str]]
) -> dict[str, Any]:
    """A library as the list shows it: its groups (``attached``: by library id), documents
    and skills."""
    store = admin.store
    documents = await libraries.list_documents(store, workspace, library.slug)
    skills = await libraries.list_skills(store, workspace, library.slug)
    return library_json(library, attached.get(library.id, []), documents, skills)


@routes.get("/workspaces/<workspace>/libraries")
async def list_libraries(admin: AdminServices, caller: Caller, workspace: str) -> Answer:
    attached = await libraries.attached_groups(admin.store, workspace)
    return page_of(
        [
            await _shelf(admin, workspace, library, attached)
            for library in await libraries.list_libraries(admin.store, workspace)
        ]
    )


@routes.patch("/workspaces/<workspace>/libraries/<library>")
async def rename_library(
    admin: AdminServices, caller: Caller, workspace: str, library: str
) -> Answer:
    changed = await read_body(NameChange)
    renamed = await libraries.rename_library(
        admin.store, workspace, library, name=changed.name, actor=caller.actor
    )
    attached = await libraries.attached_groups(admin.store, workspace)
    return await _shelf(admin, workspace, renamed, attached)


@routes.post("/workspaces/<workspace>/libraries/<library>/documents")
async def add_document(
    admin: AdminServices, caller: Caller, workspace: str, library: str
) -> Answer:
    new = await read_body(NewDocument, DOCUMENT_BODY_BYTES)
    document = await libraries.add_document(
        admin.store,
        workspace,
        library,
        slug=new.slug or libraries.slug_from(new.title),
        title=new.title,
        body=new.body,
        mime_type=new.mime_type,
        policy=new.policy,
        replace=new.replace,
        actor=caller.actor,
    )
    return document_json(document, library), 201


@routes.patch("/workspaces/<workspace>/libraries/<library>/documents/<document>")
async def set_document_policy(
    admin: AdminServices, caller: Caller, workspace: str, library: str, document: str
) -> Answer:
    policy = (await read_body(PolicyChange)).policy
    changed = await libraries.set_document_policy(
        admin.store, workspace, library, document, policy, actor=caller.actor
    )
    return document_json(changed, library)


# --- channels -------------------------------------------------------------------------------


@routes.get("/workspaces/<workspace>/channels/<channel>/messages")
async def channel_messages(
    admin: AdminServices, caller: Caller, workspace: str, channel: str
) -> Answer:
    store = admin.store
    ws = await store.workspace_by_slug(workspace)
    messages = await store.channel_messages(ws.id, str(parse_channel(channel)), limit=1000)
    return page_of([message_json(m) for m in reversed(messages)])
