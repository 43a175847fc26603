"""The permission gate: ``agentws.domain.permissions`` and the rules it builds on.

Covers ``decide`` (capability x permission x token scope -> decision),
``strictness``/``looser_than``, ``permission_allowed`` and
``effective_permission``, plus ``default_permission`` and ``arguments_hash``
from ``agentws.domain.models``. Property tests (hypothesis) range over every
capability, permission and scope; example tests pin the exact table.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentws.domain.models import Capability, Permission, arguments_hash, default_permission
from agentws.domain.permissions import (
    Decision,
    decide,
    effective_permission,
    looser_than,
    permission_allowed,
    strictness,
)

# No example database on disk: these tests must leave the tree as they found it.
_SETTINGS = settings(database=None, max_examples=200, deadline=None)
_HASH_SETTINGS = settings(database=None, max_examples=60)

R, W, D = Capability.READ, Capability.WRITE, Capability.DESTRUCTIVE
ALLOW = Permission.ALLOW
CONFIRM = Permission.REQUIRES_CONFIRMATION
APPROVE = Permission.REQUIRES_APPROVAL
DENY = Permission.DENY

# Written out here rather than taken from the module, so the tests check the
# order instead of restating it.
_PERMISSION_ORDER = [ALLOW, CONFIRM, APPROVE, DENY]  # asks less -> asks more
_DECISION_ORDER = [Decision.RUN, Decision.CONFIRM, Decision.QUEUE, Decision.DENY]
_SCOPE_ORDER = [R, W, D]  # narrower -> wider

capabilities = st.sampled_from(Capability)
permissions = st.sampled_from(Permission)
scopes = st.sampled_from(Capability)


def asks(decision: Decision) -> int:
    """How much a decision asks before the call runs: RUN < CONFIRM < QUEUE < DENY."""
    return _DECISION_ORDER.index(decision)


def covering_scope(capability: Capability) -> st.SearchStrategy[Capability]:
    return st.sampled_from([s for s in _SCOPE_ORDER if capability.within(s)])


# --- decide: properties -------------------------------------------------------


@_SETTINGS
@given(capabilities, permissions, scopes)
def test_capability_above_scope_is_denied_whatever_the_permission(capability, permission, scope):
    assume(not capability.within(scope))
    assert decide(capability, permission, scope) is Decision.DENY


@_SETTINGS
@given(capabilities, scopes)
def test_permission_deny_is_denied(capability, scope):
    assert decide(capability, DENY, scope) is Decision.DENY


@_SETTINGS
@given(capabilities, permissions, scopes)
def test_run_only_within_scope_with_allow_on_a_non_destructive_tool(capability, permission, scope):
    runs = decide(capability, permission, scope) is Decision.RUN
    expected = capability.within(scope) and permission is ALLOW and capability is not D
    assert runs == expected


@_SETTINGS
@given(permissions, scopes)
def test_destructive_tool_never_runs(permission, scope):
    assert decide(D, permission, scope) is not Decision.RUN


@_SETTINGS
@given(permissions, scopes)
def test_destructive_allow_within_scope_asks_for_confirmation(permission, scope):
    assume(D.within(scope))
    expected = Decision.CONFIRM if permission is ALLOW else decide(W, permission, scope)
    assert decide(D, permission, scope) is expected


@_SETTINGS
@given(st.data())
def test_default_permission_within_scope(data):
    capability = data.draw(capabilities)
    scope = data.draw(covering_scope(capability))
    expected = {R: Decision.RUN, W: Decision.QUEUE, D: Decision.CONFIRM}[capability]
    assert decide(capability, default_permission(capability), scope) is expected


@_SETTINGS
@given(capabilities, permissions, permissions, scopes)
def test_stricter_permission_never_asks_less(capability, first, second, scope):
    looser, stricter = sorted((first, second), key=_PERMISSION_ORDER.index)
    assert asks(decide(capability, looser, scope)) <= asks(decide(capability, stricter, scope))


@_SETTINGS
@given(capabilities, permissions, scopes, scopes)
def test_narrower_scope_never_asks_less(capability, permission, first, second):
    narrower, wider = sorted((first, second), key=_SCOPE_ORDER.index)
    assert asks(decide(capability, permission, narrower)) >= asks(
        decide(capability, permission, wider)
    )


@_SETTINGS
@given(capabilities, permissions, scopes)
def test_decide_returns_a_decision(capability, permission, scope):
    assert isinstance(decide(capability, permission, scope), Decision)


# --- decide: the whole table --------------------------------------------------

_RUN, _CONF, _QUEUE, _DENY = Decision.RUN, Decision.CONFIRM, Decision.QUEUE, Decision.DENY

# (capability, permission) -> decision under scope read, write, destructive.
_TABLE: dict[tuple[Capability, Permission], tuple[Decision, Decision, Decision]] = {
    (R, ALLOW): (_RUN, _RUN, _RUN),
    (R, CONFIRM): (_CONF, _CONF, _CONF),
    (R, APPROVE): (_QUEUE, _QUEUE, _QUEUE),
    (R, DENY): (_DENY, _DENY, _DENY),
    (W, ALLOW): (_DENY, _RUN, _RUN),
    (W, CONFIRM): (_DENY, _CONF, _CONF),
    (W, APPROVE): (_DENY, _QUEUE, _QUEUE),
    (W, DENY): (_DENY, _DENY, _DENY),
    (D, ALLOW): (_DENY, _DENY, _CONF),
    (D, CONFIRM): (_DENY, _DENY, _CONF),
    (D, APPROVE): (_DENY, _DENY, _QUEUE),
    (D, DENY): (_DENY, _DENY, _DENY),
}

_CASES = [
    pytest.param(capability, permission, scope, expected, id=f"{capability}-{permission}-{scope}")
    for (capability, permission), row in _TABLE.items()
    for scope, expected in zip(_SCOPE_ORDER, row, strict=True)
]


def test_table_covers_every_combination():
    assert len(_CASES) == 36
    assert {(c, p) for c, p in _TABLE} == set(itertools.product(Capability, Permission))


@pytest.mark.parametrize(("capability", "permission", "scope", "expected"), _CASES)
def test_decide_table(capability, permission, scope, expected):
    assert decide(capability, permission, scope) is expected


# --- strictness, looser_than, permission_allowed -------------------------------


def test_strictness_orders_permissions_by_what_they_ask():
    assert sorted(Permission, key=strictness) == _PERMISSION_ORDER
    assert len({strictness(p) for p in Permission}) == len(Permission)


@_SETTINGS
@given(permissions, permissions)
def test_looser_than_follows_the_order(first, second):
    assert looser_than(first, second) == (
        _PERMISSION_ORDER.index(first) < _PERMISSION_ORDER.index(second)
    )
    assert not (looser_than(first, second) and looser_than(second, first))


@_SETTINGS
@given(capabilities, permissions)
def test_permission_allowed_refuses_only_allow_on_destructive(capability, permission):
    assert permission_allowed(capability, permission) == ((capability, permission) != (D, ALLOW))


def test_permission_allowed_examples():
    assert not permission_allowed(D, ALLOW)
    assert permission_allowed(D, CONFIRM)
    assert permission_allowed(D, APPROVE)
    assert permission_allowed(D, DENY)
    assert permission_allowed(W, ALLOW)
    assert permission_allowed(R, ALLOW)


# --- default_permission, effective_permission ---------------------------------


def test_default_permission_per_capability():
    assert default_permission(R) is ALLOW
    assert default_permission(W) is APPROVE
    assert default_permission(D) is CONFIRM


@_SETTINGS
@given(capabilities, st.booleans())
def test_effective_permission_without_configuration_is_the_default(capability, current):
    got = effective_permission(capability, None, configured_for_this_definition=current)
    assert got is default_permission(capability)


@_SETTINGS
@given(capabilities, permissions)
def test_effective_permission_applies_configuration_for_this_definition(capability, configured):
    assert effective_permission(capability, configured) is configured
    assert (
        effective_permission(capability, configured, configured_for_this_definition=True)
        is configured
    )


@_SETTINGS
@given(capabilities, permissions)
def test_effective_permission_for_a_changed_definition(capability, configured):
    default = default_permission(capability)
    got = effective_permission(capability, configured, configured_for_this_definition=False)
    if _PERMISSION_ORDER.index(configured) < _PERMISSION_ORDER.index(default):
        assert got is default
    else:
        assert got is configured


@_SETTINGS
@given(capabilities, st.one_of(st.none(), permissions), st.booleans())
def test_effective_permission_never_looser_than_default_for_a_changed_definition(
    capability, configured, current
):
    got = effective_permission(capability, configured, configured_for_this_definition=current)
    if not current:
        assert not looser_than(got, default_permission(capability))


@pytest.mark.parametrize(
    ("capability", "configured", "expected"),
    [
        (R, ALLOW, ALLOW),  # equal to the default
        (R, DENY, DENY),
        (W, ALLOW, APPROVE),  # looser: back to the default
        (W, CONFIRM, APPROVE),  # looser: back to the default
        (W, APPROVE, APPROVE),
        (W, DENY, DENY),  # stricter: still applies
        (D, ALLOW, CONFIRM),
        (D, CONFIRM, CONFIRM),
        (D, APPROVE, APPROVE),
        (D, DENY, DENY),
    ],
)
def test_effective_permission_changed_definition_examples(capability, configured, expected):
    got = effective_permission(capability, configured, configured_for_this_definition=False)
    assert got is expected


@_SETTINGS
@given(capabilities, st.one_of(st.none(), permissions), st.booleans(), scopes)
def test_destructive_never_runs_through_effective_permission(
    capability, configured, current, scope
):
    permission = effective_permission(
        capability, configured, configured_for_this_definition=current
    )
    if capability is D:
        assert decide(capability, permission, scope) is not Decision.RUN


# --- arguments_hash -------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=5), children, max_size=3),
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=6)
tool_names = st.text(min_size=1, max_size=20)


def reordered(value: Any, rnd: random.Random) -> Any:
    """``value`` with every dict's keys, at every depth, in a shuffled order."""
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {k: reordered(v, rnd) for k, v in items}
    if isinstance(value, list):
        return [reordered(v, rnd) for v in value]
    return value


@_HASH_SETTINGS
@given(tool_names, json_objects, st.randoms(use_true_random=False))
def test_arguments_hash_ignores_key_order(name, arguments, rnd):
    shuffled = reordered(arguments, rnd)
    assert shuffled == arguments
    assert arguments_hash(name, shuffled) == arguments_hash(name, arguments)


def test_arguments_hash_ignores_key_order_example():
    first = {"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": None}}
    second = {"a": {"x": None, "y": [1, {"p": 3, "q": 2}]}, "b": 1}
    assert list(first) != list(second)
    assert arguments_hash("t", first) == arguments_hash("t", second)


@_HASH_SETTINGS
@given(tool_names, tool_names, json_objects)
def test_arguments_hash_differs_by_tool_name(first, second, arguments):
    assume(first != second)
    assert arguments_hash(first, arguments) != arguments_hash(second, arguments)


@_HASH_SETTINGS
@given(tool_names, json_objects.filter(bool), st.data())
def test_arguments_hash_differs_when_a_value_changes(name, arguments, data):
    key = data.draw(st.sampled_from(sorted(arguments)))
    new = data.draw(json_values)
    assume(new != arguments[key])
    changed = {**arguments, key: new}
    assert arguments_hash(name, changed) != arguments_hash(name, arguments)


@_HASH_SETTINGS
@given(tool_names, json_objects, st.text(max_size=6), json_values)
def test_arguments_hash_differs_when_a_key_is_added(name, arguments, key, value):
    assume(key not in arguments)
    assert arguments_hash(name, {**arguments, key: value}) != arguments_hash(name, arguments)


@_HASH_SETTINGS
@given(tool_names, json_objects)
def test_arguments_hash_is_sha256_hex(name, arguments):
    assert re.fullmatch(r"[0-9a-f]{64}", arguments_hash(name, arguments))


def test_arguments_hash_distinguishes_types():
    assert arguments_hash("t", {"a": 1}) != arguments_hash("t", {"a": "1"})
    assert arguments_hash("t", {"a": 1}) != arguments_hash("t", {"a": True})
    assert arguments_hash("t", {"a": None}) != arguments_hash("t", {})
