"""A remote's questions passed through to a stateless caller, and the state that carries its own.

When a client of the stateless revision (2026-07-28) calls a remote MCP
tool over a link of that revision too, the remote's ``input_required``
answer goes back to the client as the remote made it: its input requests,
under the remote's own keys. Only its ``requestState`` is ours: the remote's
state sealed with the service key (Fernet: encrypted and authenticated), with
the bearer token id, the connector, the tool, the arguments' hash and an
expiry (``confirm_ttl_s``) inside. The client's retry brings it back with
its ``inputResponses``; :meth:`StateSeal.open` checks it and gives the
remote's state, which goes to the remote with the answers. Nothing is kept
between the rounds, so any instance takes the retry; a state that was
altered, sealed with another key, made for another token or call, or is
too old is refused with ``INVALID_PARAMS`` saying which. Without a service
key the state is sealed with a key of this process alone (set one for a
scaled-out deployment).

Each round goes through the permission gate and is audited, as any call;
a confirmation the caller gave in the first round stands for the rounds
its state continues (:data:`ALREADY_CONFIRMED`).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import attrs
import mcp_types as types
from cryptography.fernet import Fernet
from mcp.shared.exceptions import MCPError

from agentws.core.errors import StoreError
from agentws.settings.secret_box import Keys, SecretBox
from agentws.tools.gate import ConfirmAnswer
from agentws.tools.spec import ToolSpec

__all__ = [
    "ALREADY_CONFIRMED",
    "CallBinding",
    "Passthrough",
    "StateSeal",
    "is_passthrough_state",
]

_PREFIX = "agwr_"
# A sealed state is unpadded URL-safe base64, exactly: base64 decoders skip
# what follows the padding, so a state with more after it must not open.
_SEALED = re.compile(r"[A-Za-z0-9_-]+")
# Seals states when the service has no key: good for this process only.
_PROCESS_BOX = SecretBox(Fernet(Fernet.generate_key()))


def is_passthrough_state(state: object) -> bool:
    """Whether a ``requestState`` is one of ours wrapping a remote's."""
    return isinstance(state, str) and state.startswith(_PREFIX)


@attrs.frozen
class CallBinding:
    """What a passed-through state is good for: this token's call of this tool, these arguments."""

    token_id: str
    connector_id: str
    tool: str
    arguments_hash: str

    def _fields(self) -> dict[str, str]:
        return {
            "t": self.token_id,
            "c": self.connector_id,
            "n": self.tool,
            "h": self.arguments_hash,
        }


@attrs.frozen
class StateSeal:
    """Seals a remote's ``requestState`` for its caller, and opens what comes back."""

    box: SecretBox
    ttl_s: float

    @classmethod
    def of(cls, keys: Keys, ttl_s: float) -> StateSeal:
        """With the service key; with one of this process when there is none."""
        return cls(keys.optional() or _PROCESS_BOX, ttl_s)

    def seal(self, binding: CallBinding, remote_state: str | None) -> str:
        document = {**binding._fields(), "s": remote_state, "e": time.time() + self.ttl_s}
        return _PREFIX + self.box.seal(json.dumps(document)).decode("ascii").rstrip("=")

    def open(self, binding: CallBinding, state: str) -> str | None:
        """The remote's state inside ``state``, if ``state`` is good for this call.

        Error handling:
            :class:`~mcp.shared.exceptions.MCPError` ``INVALID_PARAMS`` saying
            why it is not: altered or sealed elsewhere, another token's,
            another call's, or expired.
        """
        sealed = state.removeprefix(_PREFIX)
        try:
            if not _SEALED.fullmatch(sealed):
                raise ValueError("not unpadded URL-safe base64")
            padded = sealed + "=" * (-len(sealed) % 4)
            document: Any = json.loads(self.box.open(padded.encode("ascii")))
        except (StoreError, ValueError):
            raise _refused("was altered, or was not made by this service") from None
        if not isinstance(document, dict):
            raise _refused("was not made by this service")
        if document.get("t") != binding.token_id:
            raise _refused("was made for another bearer token")
        expected = binding._fields()
        if any(document.get(key) != value for key, value in expected.items()):
            raise _refused("was made for another call (another tool or other arguments)")
        expires = document.get("e")
        if not isinstance(expires, int | float) or expires < time.time():
            raise _refused("has expired")
        remote_state = document.get("s")
        return remote_state if isinstance(remote_state, str) else None


def _refused(why: str) -> MCPError:
    return MCPError(types.INVALID_PARAMS, f"requestState {why}: call the tool again, without it")


@attrs.frozen
class Passthrough:
    """One round of a stateless caller's remote tool call: what goes to the remote, and back."""

    seal: StateSeal
    binding: CallBinding
    #: The caller's answers (by the remote's keys), passed on as they are.
    input_responses: types.InputResponses | None
    #: The remote's state this round continues; None on a first call.
    remote_state: str | None
    #: Whether the caller's state continued an earlier round.
    continuing: bool

    @classmethod
    def of(
        cls,
        seal: StateSeal,
        binding: CallBinding,
        params: types.InputResponseRequestParams,
    ) -> Passthrough:
        """This round, from the caller's request.

        Error handling:
            As :meth:`StateSeal.open`, for a state of ours that does not hold.
        """
        continuing = is_passthrough_state(params.request_state)
        remote_state = seal.open(binding, str(params.request_state)) if continuing else None
        # Answers with another state of agentws's (a confirmation's) are agentws's own.
        ours = params.request_state is not None and not continuing
        responses = None if ours else params.input_responses
        return cls(seal, binding, responses, remote_state, continuing)

    def pass_back(self, result: types.InputRequiredResult) -> types.InputRequiredResult:
        """The remote's ``input_required`` answer, with a state of ours wrapping its own."""
        state = self.seal.seal(self.binding, result.request_state)
        return result.model_copy(update={"request_state": state})


@attrs.frozen
class _AlreadyConfirmed:
    """The confirmer of a round whose state continues a call the gate already ran."""

    async def confirm(
        self, tool: ToolSpec, arguments: dict[str, Any], arguments_hash: str
    ) -> ConfirmAnswer:
        return ConfirmAnswer(confirmed=True, outcome="confirmed_earlier_round")


#: Confirms a round whose (checked) state shows the caller confirmed the call before.
ALREADY_CONFIRMED = _AlreadyConfirmed()
