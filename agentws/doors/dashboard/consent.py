"""The dashboard's OAuth consent page: an administrator approves or denies a client's request.

``/dashboard/oauth/consent/<grant>`` is where ``/oauth/authorize`` sends the
browser (signing in first if needed: the sign-in form brings it back). The
decision is a POST with the session's CSRF token, answered by a redirect
to the client's redirect URI. That redirect leaves the dashboard's origin,
so the page's policy names the redirect URI's origin in ``form-action``
(browsers hold a form's redirects to it), and nothing else; nothing at all
for a redirect URI the rules refuse (:mod:`agentws.oauth.client_rules`).
"""

from __future__ import annotations

import re
from typing import Any, cast
from urllib.parse import urlsplit

from quart import Response, redirect, request

from agentws.admins.access import AdminServices, Caller
from agentws.core.errors import AgentwsError, ValidationError
from agentws.domain.models import Capability
from agentws.doors.dashboard.frame import render_page
from agentws.doors.dashboard.session import CSP, signed_in
from agentws.http.asgi import base_url_of
from agentws.http.blueprints import RouteTable
from agentws.oauth import consent
from agentws.oauth.client_rules import redirect_uri_problem
from agentws.oauth.settings import ISSUER_PATH, OAuthSettings

__all__ = ["routes"]

routes = RouteTable[AdminServices]()

_SOURCE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(//[A-Za-z0-9.:\[\]-]+)?")


def _form_action(redirect_uri: str) -> str:
    """The CSP source allowing a form's redirect to ``redirect_uri`` ("" if it cannot be one)."""
    if redirect_uri_problem(redirect_uri) is not None:
        return ""  # never redirected to (agentws.oauth.client_rules), so never allowed
    parts = urlsplit(redirect_uri)
    if parts.scheme in ("http", "https"):
        # Host and port only: user info has no place in a source.
        host = f"[{parts.hostname}]" if parts.hostname and ":" in parts.hostname else parts.hostname
        port = f":{parts.port}" if parts.port else ""
        source = f"{parts.scheme}://{host}{port}"
    else:
        source = f"{parts.scheme}:"  # a native app's own scheme (cursor:, vscode:)
    # Nothing that could end the directive or start another one.
    return source if _SOURCE.fullmatch(source) else ""


@routes.get("/oauth/consent/<grant_id>")
@signed_in
async def consent_page(admin: AdminServices, caller: Caller, grant_id: str) -> Response:
    try:
        asked = await consent.consent_request(admin.store, grant_id)
    except AgentwsError as exc:
        return await render_page(
            admin, "consent.html", caller, status=404, error=exc.message, asked=None
        )
    response = await render_page(
        admin, "consent.html", caller, asked=asked, workspace=asked.workspace
    )
    response.headers["Content-Security-Policy"] = CSP.replace(
        "form-action 'self'", f"form-action 'self' {_form_action(asked.grant.redirect_uri)}"
    )
    return response


@routes.post("/oauth/consent/<grant_id>")
@signed_in
async def consent_decide(admin: AdminServices, caller: Caller, grant_id: str) -> Response:
    form = await request.form
    decision = form.get("decision", "")
    try:
        if decision not in ("approve", "deny"):
            raise ValidationError("choose Approve or Deny")
        scope = Capability(form.get("scope", Capability.READ.value))
    except (ValueError, AgentwsError) as exc:
        return await _shown_again(admin, caller, grant_id, str(getattr(exc, "message", exc)))
    try:
        target = await consent.decide(
            admin.store,
            OAuthSettings.from_settings(admin.settings),
            grant_id,
            approve=decision == "approve",
            scope=scope,
            actor=caller.actor,
            issuer=base_url_of(admin.settings, cast(dict[str, Any], request.scope)) + ISSUER_PATH,
        )
    except AgentwsError as exc:
        return await _shown_again(admin, caller, grant_id, exc.message)
    return cast(Response, redirect(target, code=303))


async def _shown_again(admin: AdminServices, caller: Caller, grant_id: str, error: str) -> Response:
    try:
        asked = await consent.consent_request(admin.store, grant_id)
    except AgentwsError:
        asked = None
    return await render_page(admin, "consent.html", caller, error=error, asked=asked)
