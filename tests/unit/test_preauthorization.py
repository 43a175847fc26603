"""Pre-authorized write tools: ``decide(..., preauthorized=...)`` and ``ToolCaller.preauthorizes``.

A webhook's ``--allow-tool`` lets its runs call a *write* tool without an
admin's approval, for as long as the tool's definition is the one
authorized. Pre-authorization must never loosen anything else: not a
``deny``, not the caller's scope, not a read or destructive tool. The
tests range over every capability x permission x scope (the table is
small), then pin the cases that matter by name. Pure functions: no I/O.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.domain.models import Capability, Group, Permission
from agentws.domain.permissions import Decision, decide
from agentws.tools.caller import ToolCaller

# No example database on disk: these tests must leave the tree as they found it.
_SETTINGS = settings(database=None, max_examples=200, deadline=None)

R, W, D = Capability.READ, Capability.WRITE, Capability.DESTRUCTIVE
ALLOW = Permission.ALLOW
CONFIRM = Permission.REQUIRES_CONFIRMATION
APPROVE = Permission.REQUIRES_APPROVAL
DENY = Permission.DENY

ALL = list(itertools.product(Capability, Permission, Capability))
GROUP = Group(workspace_id="ws_test", slug="ops", name="Ops")
HASH = "3f2a" * 16


def _caller(preauthorized: dict[str, str] | None = None) -> ToolCaller:
    """A webhook run's caller (scope write), as the agent runner makes it."""
    return ToolCaller(
        actor="webhook:wh_test",
        group=GROUP,
        scope=W,
        event_id="evt_test",
        preauthorized=preauthorized or {},
    )


# --- decide ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("capability", "permission", "scope"), ALL)
def test_pre_authorization_changes_only_a_write_call_that_is_not_denied(
    capability: Capability, permission: Permission, scope: Capability
) -> None:
    plain = decide(capability, permission, scope)
    authorized = decide(capability, permission, scope, preauthorized=True)
    if capability is W and capability.within(scope) and permission is not DENY:
        assert authorized is Decision.RUN
    else:
        assert authorized is plain, (capability, permission, scope)


@pytest.mark.parametrize(("capability", "permission", "scope"), ALL)
def test_false_is_the_default(
    capability: Capability, permission: Permission, scope: Capability
) -> None:
    assert decide(capability, permission, scope) is decide(
        capability, permission, scope, preauthorized=False
    )


@pytest.mark.parametrize(
    ("capability", "permission", "scope", "expected"),
    [
        # The point of it: a write that would wait for an admin (or the caller) runs.
        (W, APPROVE, W, Decision.RUN),
        (W, CONFIRM, W, Decision.RUN),
        (W, ALLOW, W, Decision.RUN),
        (W, APPROVE, D, Decision.RUN),
        # A deny still holds, and so does the caller's scope.
        (W, DENY, W, Decision.DENY),
        (W, APPROVE, R, Decision.DENY),
        (W, ALLOW, R, Decision.DENY),
        # Destructive tools are never pre-authorized: they still need a person.
        (D, CONFIRM, D, Decision.CONFIRM),
        (D, ALLOW, D, Decision.CONFIRM),
        (D, APPROVE, D, Decision.QUEUE),
        (D, DENY, D, Decision.DENY),
        # A webhook's runs have scope write: a destructive tool is out of reach anyway.
        (D, CONFIRM, W, Decision.DENY),
        # Read tools do as their permission says.
        (R, ALLOW, W, Decision.RUN),
        (R, APPROVE, W, Decision.QUEUE),
        (R, CONFIRM, W, Decision.CONFIRM),
        (R, DENY, W, Decision.DENY),
    ],
)
def test_pre_authorized_examples(
    capability: Capability, permission: Permission, scope: Capability, expected: Decision
) -> None:
    assert decide(capability, permission, scope, preauthorized=True) is expected


def test_without_pre_authorization_a_write_waits_for_an_admin() -> None:
    """The baseline the pre-authorization changes (a webhook run's default)."""
    assert decide(W, APPROVE, W) is Decision.QUEUE
    assert decide(W, CONFIRM, W) is Decision.CONFIRM


def test_preauthorized_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        decide(W, APPROVE, W, True)  # type: ignore[call-arg]


# --- ToolCaller.preauthorizes ----------------------------------------------------------------


def test_a_tool_is_pre_authorized_only_in_the_definition_authorized() -> None:
    caller = _caller({"gh_create_issue": HASH, "desk_open_ticket": "open-ticket-v1"})
    assert caller.preauthorizes("gh_create_issue", HASH)
    assert caller.preauthorizes("desk_open_ticket", "open-ticket-v1")
    # The definition changed since: the authorization no longer applies.
    assert not caller.preauthorizes("gh_create_issue", "0" * 64)
    assert not caller.preauthorizes("desk_open_ticket", "open-ticket-v2")
    # Another tool's hash does not authorize this one.
    assert not caller.preauthorizes("gh_create_issue", "open-ticket-v1")
    # A tool nobody authorized.
    assert not caller.preauthorizes("gh_delete_branch", HASH)
    # Names are exact.
    assert not caller.preauthorizes("GH_CREATE_ISSUE", HASH)
    assert not caller.preauthorizes(" gh_create_issue", HASH)


def test_an_empty_hash_authorizes_nothing() -> None:
    """A tool without a definition hash cannot match an authorization, even an empty one."""
    caller = _caller({"gh_create_issue": ""})
    assert not caller.preauthorizes("gh_create_issue", "")
    assert not _caller().preauthorizes("gh_create_issue", "")
    assert not _caller({"gh_create_issue": HASH}).preauthorizes("gh_create_issue", "")


def test_callers_have_no_pre_authorizations_by_default() -> None:
    caller = ToolCaller(actor="webhook:wh_test", group=GROUP, scope=W)
    assert dict(caller.preauthorized) == {}
    assert not caller.preauthorizes("gh_create_issue", HASH)


def test_mcp_callers_never_carry_pre_authorizations() -> None:
    caller = ToolCaller.mcp("tok_test", D, GROUP, "session-1")
    assert caller.actor == "mcp:tok_test"
    assert dict(caller.preauthorized) == {}
    assert not caller.preauthorizes("gh_create_issue", HASH)


def test_a_caller_with_pre_authorizations_is_still_hashable() -> None:
    """The mapping is left out of the hash (a dict is not hashable), not out of equality."""
    with_tools = _caller({"gh_create_issue": HASH})
    assert hash(with_tools) == hash(_caller())
    assert with_tools != _caller()
    assert with_tools == _caller({"gh_create_issue": HASH})


@pytest.mark.parametrize(
    ("stored", "presented", "decision"),
    [
        (HASH, HASH, Decision.RUN),
        (HASH, "changed", Decision.QUEUE),
        (None, HASH, Decision.QUEUE),
    ],
)
def test_the_gate_composition(stored: str | None, presented: str, decision: Decision) -> None:
    """What the gate computes for a write tool with the default permission."""
    caller = _caller({"gh_create_issue": stored} if stored is not None else {})
    preauthorized = caller.preauthorizes("gh_create_issue", presented)
    assert decide(W, APPROVE, caller.scope, preauthorized=preauthorized) is decision


_NAMES = st.sampled_from(["gh_create_issue", "desk_open_ticket", "slack_post_message", ""])
_HASHES = st.sampled_from(["", HASH, "open-ticket-v1", "0" * 64])


@_SETTINGS
@given(stored=st.dictionaries(_NAMES, _HASHES, max_size=4), name=_NAMES, digest=_HASHES)
def test_preauthorizes_is_an_exact_non_empty_match(
    stored: dict[str, str], name: str, digest: str
) -> None:
    expected = digest != "" and name in stored and stored[name] == digest
    assert _caller(stored).preauthorizes(name, digest) is expected
