"""Administrator accounts: first-run initialisation, creation, deletion and password hashing.

An admin is never deleted while no other is left: somebody must be able to
sign in (``agentws init`` makes the first one).

Passwords are hashed with argon2id (argon2-cffi's defaults, held by
:data:`password_hasher`); generated passwords are shown once and never
stored in clear.
"""

from __future__ import annotations

import secrets
from typing import Protocol

import attrs
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from agentws.core.errors import ConflictError, NotFoundError, ValidationError
from agentws.domain.models import Admin, AuditEntry
from agentws.store.sql_admins import AdminStore
from agentws.store.sql_records import RecordStore

__all__ = [
    "InitResult",
    "create_admin",
    "delete_admin",
    "hash_password",
    "initialise",
    "verify_password",
]

#: The hasher of new passwords: argon2-cffi's defaults (RFC 9106's low-memory
#: profile), about 0.2 s of CPU a hash. Checking a password reads the
#: parameters from its hash, so hashes made with other parameters still
#: check; the test suite puts the library's cheapest ones here.
password_hasher = PasswordHasher()
# 18 random bytes: 24 URL-safe characters.
_GENERATED_PASSWORD_BYTES = 18
_MIN_PASSWORD = 12


class _Store(RecordStore, AdminStore, Protocol):
    """The areas of the store this module uses."""


@attrs.frozen
class InitResult:
    """What ``agentws init`` did. ``password`` is set only when an admin was created."""

    admin: Admin
    password: str | None = attrs.field(default=None, repr=False)

    @property
    def created(self) -> bool:
        return self.password is not None


def hash_password(password: str) -> str:
    """The argon2id hash of ``password``."""
    return password_hasher.hash(password)


def verify_password(admin: Admin, password: str) -> bool:
    """Whether ``password`` is the admin's, in constant time."""
    try:
        return password_hasher.verify(admin.password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


async def create_admin(
    store: RecordStore, username: str, *, password: str | None = None, actor: str
) -> tuple[Admin, str]:
    """Create an admin; generate a password if none is given.

    Returns:
        The record and the password (to be shown once).
    """
    username = username.strip()
    if not username or len(username) > 64:
        raise ValidationError("admin username must be 1 to 64 characters")
    if password is None:
        password = secrets.token_urlsafe(_GENERATED_PASSWORD_BYTES)
    elif len(password) < _MIN_PASSWORD:
        raise ValidationError(f"admin password must be at least {_MIN_PASSWORD} characters")
    admin = Admin(username=username, password_hash=hash_password(password))
    await store.insert(admin)
    await store.insert(AuditEntry(actor=actor, action="admin.create", target=username))
    return admin, password


async def delete_admin(store: _Store, username: str, *, actor: str) -> Admin:
    """Delete an admin, its sessions and its admin API tokens; audited.

    Error handling:
        NotFoundError for an unknown username; ConflictError for the last
        admin (nobody could sign in any more).
    """
    admin = await store.find(Admin, username=username.strip())
    if admin is None:
        raise NotFoundError(f"no admin {username!r} (see `agentws admin list`)")
    if not await store.delete_admin_unless_last(admin.id):
        raise ConflictError(
            f"{admin.username!r} is the only admin: create another before deleting this one"
        )
    await store.insert(AuditEntry(actor=actor, action="admin.delete", target=admin.username))
    return admin


async def initialise(store: RecordStore, *, username: str, actor: str) -> InitResult:
    """Make a fresh store usable: create the first admin if there is none.

    Idempotent: on an initialised store it returns the oldest admin and no password.
    """
    existing = await store.select(Admin, limit=1)
    if existing:
        return InitResult(existing[0])
    admin, password = await create_admin(store, username, actor=actor)
    return InitResult(admin, password)
