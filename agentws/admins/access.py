"""Admin access: dashboard sessions, admin API tokens and login throttling.

- **Sessions.** Signing in with a username and password (argon2id, checked
  in a worker thread: it is deliberately slow) makes a session whose secret
  goes in an ``HttpOnly`` cookie; only its SHA-256 is stored, with the
  session's CSRF token and expiry (``AGENTWS_ADMIN_SESSION_S``). Signing out
  deletes it.
- **Admin API tokens** (``agwa_…``) act as their admin in the JSON API;
  shown once, stored as a SHA-256, revocable, with their last use.
- **Throttling.** :class:`LoginThrottle` counts failed sign-ins per username
  and per client address; past a few, further attempts are refused for a
  while that doubles with each failure, whatever the password.

- **Callers.** :func:`authenticate` tells who calls the admin doors: an
  admin API token, or a dashboard session with its CSRF token.
- **What the admin doors are given.** :class:`AdminServices`, built once by
  the service for the dashboard and the JSON API.

Every sign-in, sign-out, failure and token change is audited.
"""

from __future__ import annotations

import functools
import hmac
import secrets
from collections.abc import Awaitable, Callable
from datetime import timedelta

import attrs
import trio

from agentws.admins.accounts import hash_password, verify_password
from agentws.core.backoff import Backoff
from agentws.core.errors import (
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    UnauthorizedError,
    ValidationError,
)
from agentws.domain.dry_runs import DryRun, TryRequest
from agentws.domain.models import (
    Admin,
    AdminSession,
    AdminToken,
    Approval,
    AuditEntry,
    Connector,
    Webhook,
)
from agentws.domain.rules import ADMIN_TOKEN_PREFIX, hash_secret, new_secret, utcnow
from agentws.domain.sample_deliveries import SampleAnswer, SampleKind
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.sql_records import RecordStore, find_listed
from agentws.store.union import Store

__all__ = [
    "SAFE_METHODS",
    "SESSION_COOKIE",
    "AdminServices",
    "Caller",
    "LoginThrottle",
    "TestEventSender",
    "admin_for_token",
    "authenticate",
    "create_admin_token",
    "find_admin",
    "list_admin_tokens",
    "revoke_admin_token",
    "session_for",
    "sign_in",
    "sign_out",
]

# The failure that starts the lock-out (the next attempt is refused); each
# further one doubles it.
_LOCKING_FAILURE = 5
_LOCKS = Backoff(first_s=30.0, cap_s=900.0)
# Failures older than this are forgotten.
_FAILURE_WINDOW_S = 900.0
# A session's last use is written at most this often.
_TOUCH_EVERY = timedelta(minutes=1)
_MAX_TOKEN_NAME = 100


@attrs.define
class LoginThrottle:
    """Failed sign-ins by key (``user:<name>``, ``ip:<address>``), in this process."""

    #: key → (failures in the window, when the last one was, locked until).
    _state: dict[str, tuple[int, float, float]] = attrs.field(factory=dict)

    def retry_after(self, keys: list[str], now: float) -> float:
        """Seconds until ``keys`` may try again (0: now)."""
        return max((self._state.get(k, (0, 0.0, 0.0))[2] - now for k in keys), default=0.0)

    def failed(self, keys: list[str], now: float) -> None:
        for key in keys:
            count, last, _ = self._state.get(key, (0, 0.0, 0.0))
            count = 1 if now - last > _FAILURE_WINDOW_S else count + 1
            lock = 0.0
            if count >= _LOCKING_FAILURE:
                lock = _LOCKS.delay_s(count - _LOCKING_FAILURE + 1)
            self._state[key] = (count, now, now + lock)
        if len(self._state) > 10_000:  # an address sweep must not grow memory forever
            cutoff = now - _FAILURE_WINDOW_S
            self._state = {k: v for k, v in self._state.items() if v[1] > cutoff or v[2] > now}

    def succeeded(self, keys: list[str]) -> None:
        for key in keys:
            self._state.pop(key, None)


async def find_admin(store: RecordStore, username: str) -> Admin:
    return await find_listed(store, Admin, username=username)


async def sign_in(
    store: RecordStore, username: str, password: str, *, ttl_s: float, source: str
) -> tuple[Admin, AdminSession, str]:
    """Check the password and open a session; the admin, the session and its cookie secret.

    Error handling:
        :class:`~agentws.core.errors.UnauthorizedError` (the same for an unknown
        user and a wrong password), audited with ``source``.
    """
    admin = await store.find(Admin, username=username.strip())
    # An unknown user costs the same hash as a known one: timing tells nothing.
    checked = admin if admin is not None else _decoy()
    valid = await trio.to_thread.run_sync(verify_password, checked, password)
    if admin is None or not valid:
        await store.insert(
            AuditEntry(actor=f"web:{source}", action="admin.sign_in_failed", target=username[:64])
        )
        raise UnauthorizedError("wrong username or password")
    secret = secrets.token_urlsafe(32)
    now = utcnow()
    session = await store.insert(
        AdminSession(
            admin_id=admin.id,
            token_hash=hash_secret(secret),
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + timedelta(seconds=ttl_s),
            last_seen_at=now,
        )
    )
    await store.insert(
        AuditEntry(actor=f"admin:{admin.username}", action="admin.sign_in", target=source)
    )
    return admin, session, secret


async def session_for(store: RecordStore, secret: str) -> tuple[Admin, AdminSession] | None:
    """The live session whose cookie is ``secret``, and its admin; None if none."""
    if not secret:
        return None
    session = await store.find(AdminSession, token_hash=hash_secret(secret))
    now = utcnow()
    if session is None or session.expires_at <= now:
        return None
    admin = await store.find(Admin, id=session.admin_id)
    if admin is None:
        return None
    if now - session.last_seen_at > _TOUCH_EVERY:
        session = await store.update(attrs.evolve(session, last_seen_at=now))
    return admin, session


async def sign_out(store: RecordStore, admin: Admin, session: AdminSession) -> None:
    await store.delete(AdminSession, session.id)
    await store.insert(
        AuditEntry(actor=f"admin:{admin.username}", action="admin.sign_out", target=session.id)
    )


async def create_admin_token(
    store: RecordStore, username: str, name: str, *, actor: str
) -> tuple[AdminToken, str]:
    """A new admin API token for ``username``; the record and the token (shown once).

    Error handling:
        NotFoundError, ValidationError for a bad name, ConflictError if the
        admin has a token of that name.
    """
    admin = await find_admin(store, username)
    name = name.strip()
    if not name or len(name) > _MAX_TOKEN_NAME:
        raise ValidationError(f"a token name is 1 to {_MAX_TOKEN_NAME} characters")
    secret = new_secret(ADMIN_TOKEN_PREFIX)
    try:
        token = await store.insert(
            AdminToken(admin_id=admin.id, name=name, token_hash=hash_secret(secret))
        )
    except ConflictError:
        raise ConflictError(f"admin {username!r} already has a token named {name!r}") from None
    await store.insert(
        AuditEntry(actor=actor, action="admin_token.create", target=f"{username}/{name}")
    )
    return token, secret


async def list_admin_tokens(store: RecordStore) -> list[tuple[AdminToken, Admin]]:
    admins = {a.id: a for a in await store.select(Admin)}
    return [(t, admins[t.admin_id]) for t in await store.select(AdminToken)]


async def revoke_admin_token(store: RecordStore, token_id: str, *, actor: str) -> AdminToken:
    """Revoke a token at once (idempotent).

    Error handling:
        NotFoundError for an unknown id.
    """
    token = await store.find(AdminToken, id=token_id)
    if token is None:
        raise NotFoundError(f"no admin token {token_id!r} (see `agentws admin token list`)")
    if token.revoked_at is None:
        token = await store.update(attrs.evolve(token, revoked_at=utcnow()))
        await store.insert(AuditEntry(actor=actor, action="admin_token.revoke", target=token.id))
    return token


async def admin_for_token(store: RecordStore, secret: str) -> Admin | None:
    """The admin an unrevoked ``agwa_`` token acts as; None otherwise."""
    if not secret.startswith(ADMIN_TOKEN_PREFIX):
        return None
    token = await store.find(AdminToken, token_hash=hash_secret(secret))
    if token is None or token.revoked_at is not None:
        return None
    now = utcnow()
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        await store.update(attrs.evolve(token, last_used_at=now))
    return await store.find(Admin, id=token.admin_id)


@functools.cache
def _decoy() -> Admin:
    """An admin nobody is, whose hash an unknown username is checked against."""
    return Admin(username="", password_hash=hash_password(secrets.token_urlsafe(16)))


# --- who calls the admin doors ------------------------------------------------------
#
# ``Authorization: Bearer agwa_…``: an admin API token (``agentws admin token
# create``), for scripts. The dashboard's session cookie, for the dashboard and
# its own scripts; then an unsafe method (anything but GET/HEAD/OPTIONS) must
# carry the session's CSRF token in ``X-CSRF-Token``, so that another site
# cannot make the browser send one.

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
    store: RecordStore,
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


#: Sends ``webhook`` a test event (``sample``: whose, None: its scheme's sender) as ``actor``.
TestEventSender = Callable[[Webhook, SampleKind | None, str], Awaitable[SampleAnswer]]


@attrs.frozen
class AdminServices:
    """What the admin doors (the dashboard and the JSON API) are given, once,
    by the running service: nothing they reach is looked up per request."""

    settings: Settings
    store: Store
    #: The service key (sealing webhook and connector secrets).
    keys: Keys
    #: Wakes the event worker: a replayed event runs without waiting for its next poll.
    notify_events: Callable[[], None]
    #: Waits for the outcome of an approved call (bounded by the caller), woken
    #: by this instance's runs of approved calls.
    approval_outcome: Callable[[str], Awaitable[Approval]]
    #: Tries a prompt on a webhook's sample or past event, posting nothing
    #: (:class:`agentws.agent.dry_run.PromptTrials`).
    try_prompt: Callable[[TryRequest], Awaitable[DryRun]]
    #: Failed sign-ins, per username and client address.
    login_throttle: LoginThrottle = attrs.field(factory=LoginThrottle)
    #: Sends a webhook a test event through the door's checks (as
    #: :func:`agentws.doors.webhooks.sample_sends.send_test_event`, with the service's intake);
    #: None where no door runs.
    send_test_event: TestEventSender | None = None
    #: Starts authorizing a connector upstream: ``(connector, workspace, actor,
    #: dashboard session hash, agentws's base URL)`` -> the URL for the admin to open (None: done
    #: already); None where no service runs (see :mod:`agentws.connectors.authorizations`).
    authorize: Callable[[Connector, str, str, str | None, str], Awaitable[str | None]] | None = None
