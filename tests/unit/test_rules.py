"""Pure rules: slugs, identifiers, secrets, capabilities."""

import hashlib

import attrs
import pytest

from agentws.core.errors import ValidationError
from agentws.domain import (
    MCP_TOKEN_PREFIX,
    CachedTool,
    Capability,
    DocumentPolicy,
    Group,
    Permission,
    Workspace,
    arguments_hash,
    check_identifier,
    check_slug,
    default_permission,
    hash_secret,
    new_id,
    new_secret,
    secret_matches,
)


@pytest.mark.parametrize("slug", ["a", "acme", "team-2", "0ps", "a" * 63])
def test_good_slugs(slug):
    assert check_slug(slug) == slug


@pytest.mark.parametrize("slug", ["", "-a", "Acme", "a_b", "a b", "a/b", "a" * 64, "é"])
def test_bad_slugs_are_refused_with_the_rule(slug):
    with pytest.raises(ValidationError, match="lowercase letters, digits and '-'"):
        check_slug(slug)


def test_records_check_their_slugs():
    with pytest.raises(ValidationError, match="invalid slug 'Ops'"):
        Group(workspace_id="ws_x", slug="Ops", name="Ops")


@pytest.mark.parametrize(
    ("name", "ok"), [("github", True), ("my_mcp2", True), ("2x", False), ("a-b", False)]
)
def test_identifiers(name, ok):
    if ok:
        assert check_identifier(name) == name
    else:
        with pytest.raises(ValidationError):
            check_identifier(name)


def test_secrets_are_prefixed_random_and_hashed():
    one, two = new_secret(MCP_TOKEN_PREFIX), new_secret(MCP_TOKEN_PREFIX)
    assert one.startswith("agws_") and two.startswith("agws_")
    assert one != two
    assert len(one) >= 40
    assert hash_secret(one) == hashlib.sha256(one.encode()).hexdigest()
    assert secret_matches(one, hash_secret(one))
    assert not secret_matches(two, hash_secret(one))


def test_ids_name_their_kind_and_do_not_repeat():
    ids = {new_id("ws") for _ in range(1000)}
    assert len(ids) == 1000
    assert all(i.startswith("ws_") for i in ids)


def test_new_records_get_distinct_ids_and_utc_times():
    a, b = Workspace(slug="a", name="A"), Workspace(slug="a", name="A")
    assert a.id != b.id
    assert a.created_at.utcoffset().total_seconds() == 0


def test_capability_scopes():
    assert Capability.READ.within(Capability.WRITE)
    assert Capability.WRITE.within(Capability.WRITE)
    assert not Capability.DESTRUCTIVE.within(Capability.WRITE)
    assert not Capability.WRITE.within(Capability.READ)


def test_default_permissions_follow_capability():
    assert default_permission(Capability.READ) is Permission.ALLOW
    assert default_permission(Capability.WRITE) is Permission.REQUIRES_APPROVAL
    assert default_permission(Capability.DESTRUCTIVE) is Permission.REQUIRES_CONFIRMATION


def test_unlabeled_tools_are_write_whatever_the_remote_says():
    tool = CachedTool(
        connector_id="con_x",
        name="drop_table",
        annotations={"readOnlyHint": True},
        definition_hash="h",
        suggested_label=Capability.READ,
    )
    assert tool.capability is Capability.WRITE
    assert attrs.evolve(tool, label=Capability.READ).capability is Capability.READ


def test_never_documents_are_not_exposed():
    assert DocumentPolicy.SPINE.exposed and DocumentPolicy.ON_DEMAND.exposed
    assert not DocumentPolicy.NEVER.exposed


def test_arguments_hash_binds_the_exact_call():
    base = arguments_hash("github_create_issue", {"title": "x", "body": "y"})
    assert base == arguments_hash("github_create_issue", {"body": "y", "title": "x"})
    assert base != arguments_hash("github_create_issue", {"title": "x", "body": "z"})
    assert base != arguments_hash("gitlab_create_issue", {"title": "x", "body": "y"})


def test_secrets_stay_out_of_reprs():
    from agentws.domain import McpToken

    token = McpToken(group_id="g", name="n", token_hash="deadbeef", hint="abcd")
    assert "deadbeef" not in repr(token)
