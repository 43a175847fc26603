"""Who calls the admin API: an admin API token, or a dashboard session with its CSRF token.

- ``Authorization: Bearer agwa_…``: an admin API token (``agentws admin
  token create``), for scripts.
- The dashboard's session cookie, for the dashboard's own scripts; then an
  unsafe method (anything but GET/HEAD/OPTIONS) must carry the session's CSRF
  token in ``X-CSRF-Token``, so that another site cannot make the browser
  send one.
"""

from __future__ import annotations

import hmac

import attrs

from agentws.admin_access import admin_for_token, session_for
from agentws.domain.models import Admin, AdminSession
from agentws.errors import PermissionDeniedError, UnauthorizedError
from agentws.store import Store

__all__ = ["SAFE_METHODS", "SESSION_COOKIE", "Caller", "authenticate"]

#: The dashboard session's cookie.
SESSION_COOKIE = "agentws_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@attrs.frozen
class Caller:
    admin: Admin
    #: The dashboard session, when the call came with its cookie.
    session: AdminSession | None = None

    @property
    def actor(self) -> str:
        """How the audit log names them."""
        return f"admin:{self.admin.username}"


async def authenticate(
    store: Store,
    *,
    method: str,
    authorization: str | None,
    cookie: str | None,
    csrf: str | None,
) -> Caller:
    """The admin making the request.

    Error handling:
        UnauthorizedError without valid credentials; PermissionDeniedError
        for a session's unsafe call without its CSRF token.
    """
    if authorization is not None:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise UnauthorizedError("the Authorization header must be 'Bearer agwa_…'")
        admin = await admin_for_token(store, token.strip())
        if admin is None:
            raise UnauthorizedError("unknown or revoked admin API token")
        return Caller(admin)
    if cookie:
        found = await session_for(store, cookie)
        if found is None:
            raise UnauthorizedError("the session has expired: sign in again")
        admin, session = found
        if method.upper() not in SAFE_METHODS and not (
            csrf and hmac.compare_digest(csrf, session.csrf_token)
        ):
            raise PermissionDeniedError("missing or wrong X-CSRF-Token for this session")
        return Caller(admin, session)
    raise UnauthorizedError(
        "sign in, or send an admin API token: Authorization: Bearer agwa_… "
        "(agentws admin token create)"
    )
