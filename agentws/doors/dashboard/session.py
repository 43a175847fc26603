"""The dashboard's sign-in, session cookie, CSRF checks and security headers.

- The session cookie (``agentws_session``) is ``HttpOnly``, ``SameSite=Lax``,
  ``Path=/``, and ``Secure`` when the dashboard is reached over TLS (the
  request's scheme, or an ``https`` ``AGENTWS_BASE_URL``).
- Every form that changes something carries the session's CSRF token in a
  hidden ``csrf`` field; a POST without it (or with another) is refused
  with 403 and changes nothing. The sign-in form, before any session,
  uses a double-submit token: a random cookie and the same value in the form.
- Sign-in attempts are throttled per username and per client address
  (:class:`~agentws.admins.access.LoginThrottle`): 429 with ``Retry-After``.
- Every page is sent with a strict Content-Security-Policy (scripts and
  styles from this origin only), ``X-Frame-Options: DENY``,
  ``Referrer-Policy: same-origin`` and ``nosniff``.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Concatenate, ParamSpec, TypeVar, cast

from quart import Response, redirect, request, url_for

from agentws.admins.access import SESSION_COOKIE, AdminServices, Caller, session_for
from agentws.core.errors import PermissionDeniedError
from agentws.settings.config import Settings

__all__ = [
    "CSP",
    "LOGIN_COOKIE",
    "check_csrf",
    "clear_session_cookie",
    "new_login_token",
    "secure_headers",
    "set_login_cookie",
    "set_session_cookie",
    "signed_in",
]

P = ParamSpec("P")
R = TypeVar("R")

#: The pre-session cookie of the sign-in form's double-submit CSRF token.
LOGIN_COOKIE = "agentws_login"
#: Every page's Content-Security-Policy (the consent page widens its form-action).
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)


def _over_tls(settings: Settings) -> bool:
    base = settings.base_url or ""
    forwarded = request.headers.get("X-Forwarded-Proto", "")
    return request.scheme == "https" or base.startswith("https://") or forwarded == "https"


def set_session_cookie(response: Response, settings: Settings, secret: str) -> None:
    """The new session's cookie, for as long as a session lasts (``settings.admin_session_s``)."""
    response.set_cookie(
        SESSION_COOKIE,
        secret,
        max_age=int(settings.admin_session_s),
        httponly=True,
        samesite="Lax",
        secure=_over_tls(settings),
        path="/",
    )


def clear_session_cookie(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="Lax")


def new_login_token() -> str:
    return secrets.token_urlsafe(24)


def set_login_cookie(response: Response, settings: Settings, token: str) -> None:
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        max_age=3600,
        httponly=True,
        samesite="Strict",
        secure=_over_tls(settings),
        path="/dashboard/login",
    )


def check_csrf(expected: str, given: str | None) -> None:
    """Refuse a form whose CSRF token is missing or wrong.

    Error handling:
        PermissionDeniedError.
    """
    if not given or not hmac.compare_digest(given, expected):
        raise PermissionDeniedError(
            "the form's security token is missing or out of date: reload the page and try again"
        )


def signed_in(
    page: Callable[Concatenate[AdminServices, Caller, P], Awaitable[R]],
) -> Callable[Concatenate[AdminServices, P], Awaitable[R | Response]]:
    """Run ``page(admin, caller, **path)`` for a signed-in admin; else redirect to the sign-in form.

    A POST must carry the session's CSRF token in its ``csrf`` field.
    """

    @functools.wraps(page)
    async def wrapped(
        services: AdminServices, /, *args: P.args, **kwargs: P.kwargs
    ) -> R | Response:
        found = await session_for(services.store, request.cookies.get(SESSION_COOKIE, ""))
        if found is None:
            target = request.full_path if request.method == "GET" else url_for("dashboard.home")
            return cast(Response, redirect(url_for("dashboard.login", next=target.rstrip("?"))))
        admin, session = found
        if request.method == "POST":
            form = await request.form
            check_csrf(session.csrf_token, form.get("csrf"))
        return await page(services, Caller(admin, session), *args, **kwargs)

    return wrapped


def secure_headers(response: Response) -> Response:
    response.headers.setdefault("Content-Security-Policy", CSP)
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Cache-Control", "no-store")
    return response
