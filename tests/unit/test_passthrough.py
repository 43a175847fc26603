"""The requestState that carries a remote's own to a stateless caller, and back."""

from __future__ import annotations

import mcp_types as types
import pytest
from cryptography.fernet import Fernet
from mcp.shared.exceptions import MCPError

from agentws.doors.mcp.relay.passthrough import (
    CallBinding,
    Passthrough,
    StateSeal,
    is_passthrough_state,
)
from agentws.settings.secret_box import Keys, SecretBox

BINDING = CallBinding("token-1", "connector-1", "third_ask", "hash-1")


def _seal(ttl_s: float = 60.0) -> StateSeal:
    return StateSeal(SecretBox(Fernet(Fernet.generate_key())), ttl_s)


def _refusal(seal: StateSeal, binding: CallBinding, state: str) -> str:
    with pytest.raises(MCPError) as refused:
        seal.open(binding, state)
    assert refused.value.error.code == types.INVALID_PARAMS
    return refused.value.error.message


def test_a_sealed_state_opens_for_its_call_only() -> None:
    seal = _seal()
    state = seal.seal(BINDING, "remote-state")
    assert is_passthrough_state(state)
    assert "remote-state" not in state  # encrypted, not only signed
    assert seal.open(BINDING, state) == "remote-state"
    assert seal.open(BINDING, seal.seal(BINDING, None)) is None

    other_token = CallBinding("token-2", "connector-1", "third_ask", "hash-1")
    assert "another bearer token" in _refusal(seal, other_token, state)
    for other in (
        CallBinding("token-1", "connector-2", "third_ask", "hash-1"),
        CallBinding("token-1", "connector-1", "third_sample", "hash-1"),
        CallBinding("token-1", "connector-1", "third_ask", "hash-2"),
    ):
        assert "another call" in _refusal(seal, other, state)


def test_an_altered_or_foreign_state_is_refused() -> None:
    seal = _seal()
    state = seal.seal(BINDING, "remote-state")
    flipped = state[:-5] + ("A" if state[-5] != "A" else "B") + state[-4:]
    for altered in (state + "-TAMPERED", state + "==", flipped, "agwr_", "agwr_%%%"):
        assert "altered" in _refusal(seal, BINDING, altered)
    # Sealed by another service (another key).
    assert "altered" in _refusal(_seal(), BINDING, state)


def test_a_state_expires() -> None:
    seal = _seal(ttl_s=-1.0)
    assert "expired" in _refusal(seal, BINDING, seal.seal(BINDING, "remote-state"))


def test_without_a_service_key_states_are_this_processs() -> None:
    seal = StateSeal.of(Keys(None, "no key"), 60.0)
    assert seal.open(BINDING, seal.seal(BINDING, "s")) == "s"


def test_a_round_wraps_the_remotes_state_and_keeps_its_questions() -> None:
    seal = _seal()
    question = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="Your name?", requested_schema={"type": "object", "properties": {}}
        )
    )
    first = Passthrough.of(seal, BINDING, types.CallToolRequestParams(name="third_ask"))
    assert (first.remote_state, first.continuing) == (None, False)
    asked = first.pass_back(
        types.InputRequiredResult(input_requests={"user_name": question}, request_state="r1")
    )
    assert list(asked.input_requests or {}) == ["user_name"]
    assert asked.request_state is not None and is_passthrough_state(asked.request_state)

    retry = types.CallToolRequestParams(name="third_ask", request_state=asked.request_state)
    second = Passthrough.of(seal, BINDING, retry)
    assert (second.remote_state, second.continuing) == ("r1", True)
