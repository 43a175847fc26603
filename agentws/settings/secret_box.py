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
from collections.abc import Sequence
from pathlib import Path

import attrs
from cryptography.fernet import Fernet, InvalidToken

from agentws.core.errors import ConfigError, StoreError
from agentws.settings.config import Settings

__all__ = ["KEY_FILE", "Keys", "SecretBox", "ensure_key_file", "key_problem"]

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
            :class:`~agentws.core.errors.ConfigError` if there is no key, or it is malformed.
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
            try:
                source, key = str(path), path.read_text().strip()
            except (OSError, UnicodeDecodeError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) else "not text"
                raise ConfigError(f"{path}: cannot read the key: {reason}") from None
        try:
            return cls(Fernet(key.encode("ascii")))
        except (ValueError, UnicodeEncodeError):
            raise ConfigError(
                f"{source}: not a valid key (32 bytes in URL-safe base64, as `agentws init` makes)"
            ) from None

    @classmethod
    def check_settings(cls, settings: Settings) -> None:
        """Make sure a configured key can be used; having none is not an error here.

        ``agentws serve`` calls this before it opens anything, so a malformed
        key file stops it at start (a malformed ``AGENTWS_SECRET_KEY`` already
        stops :meth:`Settings.from_env <agentws.settings.config.Settings.from_env>`).

        Error handling:
            :class:`~agentws.core.errors.ConfigError` naming the variable or the file.
        """
        if settings.secret_key is not None or (settings.data_dir / KEY_FILE).exists():
            cls.from_settings(settings)

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode("utf-8"))

    def open(self, sealed: bytes) -> str:
        """The secret in ``sealed``.

        Error handling:
            :class:`~agentws.core.errors.StoreError` if it was sealed with another
            key (the key changed) or the stored value was altered.
        """
        try:
            return self._fernet.decrypt(sealed).decode("utf-8")
        except InvalidToken:
            raise StoreError(
                "a stored secret cannot be decrypted: was AGENTWS_SECRET_KEY changed? "
                "Set the old key back, or save the secret again"
            ) from None


@attrs.frozen
class Keys:
    """The service key, read once when the service starts: its box, or why there is none.

    A process reads its key file once (:meth:`load`); whatever needs a stored
    secret opened or sealed asks :meth:`box`, which costs nothing more.
    """

    _box: SecretBox | None = attrs.field(repr=False)
    #: Why there is no box (no key configured, or a malformed one); "" with a box.
    problem: str = ""

    @classmethod
    def load(cls, settings: Settings) -> Keys:
        """Read the configured key (the variable, else the key file) now."""
        try:
            return cls(SecretBox.from_settings(settings))
        except ConfigError as exc:
            return cls(None, exc.message)

    def box(self) -> SecretBox:
        """The box for the service key.

        Error handling:
            :class:`~agentws.core.errors.ConfigError` saying why there is none.
        """
        if self._box is None:
            raise ConfigError(self.problem)
        return self._box

    def optional(self) -> SecretBox | None:
        """The box, or None when there is no usable key."""
        return self._box


def key_problem(keys: Keys, settings: Settings, sealed: Sequence[bytes]) -> str | None:
    """Why the key (``keys``, read from ``settings``) cannot open ``sealed`` (stored
    secrets); None if it can.

    ``sealed`` is a sample (the store's newest sealed value of each kind);
    with nothing sealed there is no problem, key or no key. The answer is
    shown on ``/readyz``, so it names neither a secret nor a file path.
    """
    if not sealed:
        return None
    box = keys.optional()
    if box is None:
        if settings.secret_key is None and not (settings.data_dir / KEY_FILE).exists():
            return (
                "secrets are stored but there is no key to open them: set AGENTWS_SECRET_KEY, "
                f"or put back {KEY_FILE} in AGENTWS_DATA_DIR"
            )
        return "the key cannot be used (run `agentws doctor`)"
    for value in sealed:
        try:
            box.open(value)
        except StoreError:
            return (
                "the key does not open the stored secrets: was AGENTWS_SECRET_KEY (or "
                f"{KEY_FILE}) changed? Set the old key back"
            )
    return None
