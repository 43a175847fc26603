"""Creating and renaming a workspace's named items on the dashboard: groups and libraries.

Both live on a page of their own, each item at an anchor of it
(``#group-<slug>``), are created from a form's ``slug`` and ``name`` and
renamed from its ``name``, through the service functions the CLI calls. A
slug is in addresses clients keep, so renaming changes the display name
only. :func:`declare_create_and_rename` declares the two routes of one kind.

Connectors and webhooks are created from a form on their listing
(:func:`declare_listing`): a refused one shows the listing again, its form
filled with what was typed, so nothing has to be typed twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from quart import Response, request, url_for

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError
from agentws.doors.dashboard.frame import changed, done, error_text
from agentws.doors.dashboard.session import signed_in
from agentws.http.blueprints import RouteTable

__all__ = ["FormRefused", "ItemPage", "declare_create_and_rename", "declare_listing"]

# create(store, workspace, slug, *, name, actor) and rename(store, workspace, slug, *, name, actor).
_Change = Callable[..., Awaitable[Any]]


@attrs.frozen
class ItemPage:
    """The page listing one kind of item (``group``) at ``/w/<workspace>/<plural>``."""

    kind: str
    plural: str
    #: The page's endpoint in the dashboard's blueprint.
    endpoint: str

    def here(self, workspace: str, slug: str | None = None) -> str:
        """The page's address, at the item's anchor when ``slug`` is given."""
        page = url_for(f"dashboard.{self.endpoint}", workspace=workspace)
        return f"{page}#{self.kind}-{slug}" if slug else page


def declare_create_and_rename(
    routes: RouteTable[AdminServices],
    page: ItemPage,
    create: _Change,
    rename: _Change,
    next_step: str,
) -> None:
    """Declare ``<kind>_create`` and ``<kind>_rename``, redirecting to ``page`` with a notice.

    ``next_step`` follows the notice of a created item: what to do with it now.
    """
    kind = page.kind

    async def create_one(admin: AdminServices, caller: Caller, /, workspace: str) -> Response:
        form = await request.form
        slug = (form.get("slug") or "").strip()
        name = (form.get("name") or "").strip() or None
        try:
            made = await create(admin.store, workspace, slug, name=name, actor=caller.actor)
        except AgentwsError as exc:
            return done(page.here(workspace), error_text(exc), error=True)
        return done(page.here(workspace, made.slug), f"Created {kind} {made.slug!r}: {next_step}")

    async def rename_one(
        admin: AdminServices, caller: Caller, /, workspace: str, **path: str
    ) -> Response:
        slug = path[kind]
        name = (await request.form).get("name") or ""
        return await changed(
            page.here(workspace, slug),
            rename(admin.store, workspace, slug, name=name, actor=caller.actor),
            lambda renamed: f"{kind.capitalize()} {slug!r} is now called {renamed.name!r}.",
        )

    listing = f"/w/<workspace>/{page.plural}"
    routes.post(listing, endpoint=f"{kind}_create")(signed_in(create_one))
    routes.post(f"{listing}/<{kind}>/rename", endpoint=f"{kind}_rename")(signed_in(rename_one))


class FormRefused(Exception):
    """A listing's create was refused, nothing was made: show the form again.

    ``typed``: what the form shows again (never a secret); ``error``: why.
    """

    def __init__(self, typed: dict[str, str], error: str) -> None:
        super().__init__(error)
        self.typed = typed
        self.error = error


#: listing(admin, caller, workspace, *, typed=None, error=None): the listing page.
_Listing = Callable[..., Awaitable[Response]]
#: create(admin, caller, workspace): the listing form's POST.
_Create = Callable[[AdminServices, Caller, str], Awaitable[Response]]


def declare_listing(
    routes: RouteTable[AdminServices], plural: str, listing: _Listing
) -> Callable[[_Create], _Create]:
    """Declare ``/w/<workspace>/<plural>``: GET, ``listing`` with an empty form (endpoint
    ``plural``); POST, the decorated create (endpoint its name).

    A create raising :class:`FormRefused` is answered with the listing again
    (status 400), its form filled with what was typed and saying what was wrong.
    """
    path = f"/w/<workspace>/{plural}"
    routes.get(path, endpoint=plural)(signed_in(listing))

    def declare(create: _Create) -> _Create:
        async def posted(admin: AdminServices, caller: Caller, workspace: str) -> Response:
            try:
                return await create(admin, caller, workspace)
            except FormRefused as refused:
                return await listing(
                    admin, caller, workspace, typed=refused.typed, error=refused.error
                )

        routes.post(path, endpoint=create.__name__)(signed_in(posted))
        return create

    return declare
