"""Secrets at rest: connector (and later webhook) secrets, encrypted with the service key.

The key is ``AGENTWS_SECRET_KEY`` (a Fernet key: 32 random bytes in URL-safe
base64), else the file ``secret.key`` in ``AGENTWS_DATA_DIR``, which
``agentws init`` creates (mode 0600) when neither exists. Sealed values are
Fernet tokens (AES-128-CBC with HMAC-SHA256): tampering or a changed key
is detected, never silently decrypted into garbage. Plain secrets live only
in memory, for the request that needs them.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
from cryptography.fernet import Fernet, InvalidToken

from agentws.config import Settings
from agentws.errors import ConfigError, StoreError

__all__ = ["KEY_FILE", "SecretBox", "ensure_key_file"]

KEY_FILE = "secret.key"


def ensure_key_file(data_dir: Path) -> tuple[Path, bool]:
    """Create ``data_dir/secret.key`` (0600) unless it exists; its path and whether it was made."""
    path = data_dir / KEY_FILE
    if path.exists():
        return path, False
    # A directory made for it holds nothing others should read (the key, and
    # usually the database): owner only. One that exists keeps its mode.
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        file.write(Fernet.generate_key() + b"\n")
    return path, True


@attrs.frozen
class SecretBox:
    """Seals and opens secrets with the service key."""

    _fernet: Fernet = attrs.field(repr=False)

    @classmethod
    def optional(cls, settings: Settings) -> SecretBox | None:
        """The box for the configured key, or None when there is none (or it is malformed)."""
        try:
            return cls.from_settings(settings)
        except ConfigError:
            return None

    @classmethod
    def from_settings(cls, settings: Settings) -> SecretBox:
        """The box for the configured key.

        Error handling:
            :class:`~agentws.errors.ConfigError` if there is no key, or it is malformed.
        """
        source = "AGENTWS_SECRET_KEY"
        key = settings.secret_key
        if key is None:
            path = settings.data_dir / KEY_FILE
            if not path.exists():
                raise ConfigError(
                    "no secret key to encrypt secrets with: set AGENTWS_SECRET_KEY or run "
                    f"`agentws init` to create {path}"
                )
            source, key = str(path), path.read_text().strip()
        try:
            return cls(Fernet(key.encode("ascii")))
        except (ValueError, UnicodeEncodeError):
            raise ConfigError(
                f"{source}: not a valid key (32 bytes in URL-safe base64, as `agentws init` makes)"
            ) from None

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode("utf-8"))

    def open(self, sealed: bytes) -> str:
        """The secret in ``sealed``.

        Error handling:
            :class:`~agentws.errors.StoreError` if it was sealed with another
            key (the key changed) or the stored value was altered.
        """
        try:
            return self._fernet.decrypt(sealed).decode("utf-8")
        except InvalidToken:
            raise StoreError(
                "a stored secret cannot be decrypted: was AGENTWS_SECRET_KEY changed? "
                "Set the old key back, or save the secret again"
            ) from None
