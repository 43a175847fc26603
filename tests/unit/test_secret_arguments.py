"""Secret argument values: ``agentws.domain.secrets_in_arguments``.

``redact`` replaces every argument value the tool's JSON schema marks secret
(``writeOnly``, ``format: password``, ``x-secret``, ``secret``) with
``[redacted]``, following properties, ``items``/``prefixItems``,
``additionalProperties``, ``patternProperties``, ``allOf``/``anyOf``/``oneOf``
and local ``$ref``s; ``has_secrets`` says whether there was anything to
redact. Example tests cover each schema form; a hypothesis property builds a
schema and matching arguments together, with secrets at random depths, and
checks that no secret survives while every other string does.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentws.domain.secrets_in_arguments import REDACTED, has_secrets, redact

# No example database on disk: these tests must leave the tree as they found it.
# Drawing nested schemas is slow on a loaded machine; that is not a failure.
_SETTINGS = settings(
    database=None,
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

SECRET_MARKERS = [
    pytest.param({"writeOnly": True}, id="writeOnly"),
    pytest.param({"format": "password"}, id="format-password"),
    pytest.param({"x-secret": True}, id="x-secret"),
    pytest.param({"secret": True}, id="secret"),
]


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


STRING = {"type": "string"}


# --- the four markers -----------------------------------------------------------


@pytest.mark.parametrize("marker", SECRET_MARKERS)
def test_each_marker_redacts_a_property(marker):
    schema = obj(user=STRING, password={"type": "string", **marker})
    arguments = {"user": "ada", "password": "hunter2"}
    assert redact(arguments, schema) == {"user": "ada", "password": REDACTED}
    assert has_secrets(arguments, schema)


@pytest.mark.parametrize(
    "not_marker",
    [
        pytest.param({"writeOnly": False}, id="writeOnly-false"),
        pytest.param({"writeOnly": "true"}, id="writeOnly-string"),
        pytest.param({"format": "email"}, id="format-email"),
        pytest.param({"x-secret": False}, id="x-secret-false"),
        pytest.param({"secret": 1}, id="secret-1"),
        pytest.param({"readOnly": True}, id="readOnly"),
        pytest.param({"description": "the password"}, id="description"),
    ],
)
def test_near_misses_are_not_secret(not_marker):
    schema = obj(password={"type": "string", **not_marker})
    arguments = {"password": "hunter2"}
    assert redact(arguments, schema) == arguments
    assert not has_secrets(arguments, schema)


@pytest.mark.parametrize("value", [42, 3.5, True, None, ["a", "b"], {"k": "v"}])
def test_secret_values_of_any_type_are_redacted(value):
    schema = obj(token={"writeOnly": True})
    assert redact({"token": value}, schema) == {"token": REDACTED}


def test_secret_object_is_redacted_whole():
    schema = obj(creds={"type": "object", "x-secret": True, "properties": {"user": STRING}})
    assert redact({"creds": {"user": "ada", "pw": "x"}}, schema) == {"creds": REDACTED}


# --- where secrets may sit -------------------------------------------------------


def test_nested_objects():
    schema = obj(conn=obj(host=STRING, auth=obj(user=STRING, pw={"format": "password"})))
    arguments = {"conn": {"host": "db", "auth": {"user": "ada", "pw": "hunter2"}}}
    assert redact(arguments, schema) == {
        "conn": {"host": "db", "auth": {"user": "ada", "pw": REDACTED}}
    }


def test_array_items():
    schema = obj(keys={"type": "array", "items": {"type": "string", "writeOnly": True}})
    assert redact({"keys": ["a", "b", "c"]}, schema) == {"keys": [REDACTED] * 3}


def test_array_of_objects():
    item = obj(name=STRING, token={"x-secret": True})
    schema = obj(accounts={"type": "array", "items": item})
    arguments = {"accounts": [{"name": "a", "token": "t1"}, {"name": "b", "token": "t2"}]}
    assert redact(arguments, schema) == {
        "accounts": [{"name": "a", "token": REDACTED}, {"name": "b", "token": REDACTED}]
    }


def test_prefix_items_then_items():
    schema = obj(
        pair={
            "type": "array",
            "prefixItems": [STRING, {"type": "string", "writeOnly": True}],
            "items": {"type": "integer"},
        }
    )
    assert redact({"pair": ["user", "pw", 1, 2]}, schema) == {"pair": ["user", REDACTED, 1, 2]}


def test_prefix_items_then_secret_items():
    schema = obj(
        row={"type": "array", "prefixItems": [STRING], "items": {"secret": True}},
    )
    assert redact({"row": ["label", "s1", "s2"]}, schema) == {"row": ["label", REDACTED, REDACTED]}


def test_prefix_items_without_items_leaves_the_rest():
    schema = obj(row={"type": "array", "prefixItems": [{"secret": True}]})
    assert redact({"row": ["s", "plain"]}, schema) == {"row": [REDACTED, "plain"]}


def test_additional_properties():
    schema = {
        "type": "object",
        "properties": {"name": STRING},
        "additionalProperties": {"type": "string", "writeOnly": True},
    }
    arguments = {"name": "env", "API_KEY": "k", "DB_PASSWORD": "p"}
    assert redact(arguments, schema) == {
        "name": "env",
        "API_KEY": REDACTED,
        "DB_PASSWORD": REDACTED,
    }


@pytest.mark.parametrize("extra", [True, False, None])
def test_additional_properties_not_a_schema_leaves_values(extra):
    schema: dict[str, Any] = {"type": "object", "properties": {"pw": {"writeOnly": True}}}
    if extra is not None:
        schema["additionalProperties"] = extra
    assert redact({"pw": "p", "other": "o"}, schema) == {"pw": REDACTED, "other": "o"}


def test_pattern_properties():
    schema = {
        "type": "object",
        "patternProperties": {"_token$": {"x-secret": True}, "^n_": {"type": "integer"}},
        "additionalProperties": STRING,
    }
    arguments = {"gh_token": "t", "n_retries": 3, "label": "l"}
    assert redact(arguments, schema) == {"gh_token": REDACTED, "n_retries": 3, "label": "l"}


def test_pattern_properties_win_over_additional_properties():
    schema = {
        "type": "object",
        "patternProperties": {"^public_": STRING},
        "additionalProperties": {"writeOnly": True},
    }
    arguments = {"public_name": "n", "private_key": "k"}
    assert redact(arguments, schema) == {"public_name": "n", "private_key": REDACTED}


def test_invalid_pattern_is_ignored():
    schema = {
        "type": "object",
        "patternProperties": {"([": {"writeOnly": True}},
        "additionalProperties": {"writeOnly": True},
    }
    assert redact({"k": "v"}, schema) == {"k": REDACTED}


@pytest.mark.parametrize("container", ["$defs", "definitions"])
def test_ref_into_definitions(container):
    schema = {
        "type": "object",
        "properties": {"auth": {"$ref": f"#/{container}/Auth"}},
        container: {"Auth": obj(user=STRING, pw={"format": "password"})},
    }
    arguments = {"auth": {"user": "ada", "pw": "hunter2"}}
    assert redact(arguments, schema) == {"auth": {"user": "ada", "pw": REDACTED}}


@pytest.mark.parametrize("container", ["$defs", "definitions"])
def test_ref_to_a_secret_definition(container):
    schema = {
        "type": "object",
        "properties": {"key": {"$ref": f"#/{container}/Secret"}, "name": STRING},
        container: {"Secret": {"type": "string", "writeOnly": True}},
    }
    assert redact({"key": "k", "name": "n"}, schema) == {"key": REDACTED, "name": "n"}


def test_ref_sibling_marker_makes_it_secret():
    schema = {
        "type": "object",
        "properties": {"key": {"$ref": "#/$defs/Str", "writeOnly": True}},
        "$defs": {"Str": STRING},
    }
    assert redact({"key": "k"}, schema) == {"key": REDACTED}


@pytest.mark.parametrize(
    "ref", ["#/$defs/Missing", "#/components/schemas/Auth", "other.json#/Auth", "#"]
)
def test_unresolvable_ref_leaves_values(ref):
    schema = {
        "type": "object",
        "properties": {"auth": {"$ref": ref}},
        "$defs": {"Auth": {"writeOnly": True}},
    }
    assert redact({"auth": "a"}, schema) == {"auth": "a"}


@pytest.mark.parametrize("container", ["$defs", "definitions"])
def test_ref_to_a_ref(container):
    schema = {
        "type": "object",
        "properties": {"key": {"$ref": f"#/{container}/Alias"}},
        container: {"Alias": {"$ref": f"#/{container}/Secret"}, "Secret": {"writeOnly": True}},
    }
    assert redact({"key": "hunter2"}, schema) == {"key": REDACTED}


def test_pattern_properties_apply_to_declared_properties_too():
    # JSON Schema applies every matching patternProperties schema alongside properties.
    schema = {
        "type": "object",
        "properties": {"api_key": STRING},
        "patternProperties": {"_key$": {"writeOnly": True}},
    }
    assert redact({"api_key": "hunter2"}, schema) == {"api_key": REDACTED}


def test_self_referencing_schema_terminates():
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"pw": {"writeOnly": True}, "child": {"$ref": "#/$defs/Node"}},
            }
        },
    }
    arguments = {"pw": "1", "child": {"pw": "2", "child": {"pw": "3"}}}
    assert redact(arguments, schema) == {
        "pw": REDACTED,
        "child": {"pw": REDACTED, "child": {"pw": REDACTED}},
    }


@pytest.mark.parametrize("keyword", ["allOf", "anyOf", "oneOf"])
def test_secret_branch(keyword):
    schema = obj(key={keyword: [STRING, {"writeOnly": True}]}, name=STRING)
    assert redact({"key": "k", "name": "n"}, schema) == {"key": REDACTED, "name": "n"}


@pytest.mark.parametrize("keyword", ["allOf", "anyOf", "oneOf"])
def test_branch_with_nested_secret_property(keyword):
    schema = {
        "type": "object",
        keyword: [obj(user=STRING), obj(pw={"format": "password"})],
    }
    assert redact({"user": "ada", "pw": "p"}, schema) == {"user": "ada", "pw": REDACTED}


@pytest.mark.parametrize("keyword", ["allOf", "anyOf", "oneOf"])
def test_branch_via_ref(keyword):
    schema = {
        "type": "object",
        "properties": {"k": {keyword: [{"$ref": "#/definitions/S"}]}},
        "definitions": {"S": {"x-secret": True}},
    }
    assert redact({"k": "v"}, schema) == {"k": REDACTED}


def test_branches_inside_branches():
    schema = obj(k={"anyOf": [{"type": "null"}, {"allOf": [STRING, {"secret": True}]}]})
    assert redact({"k": "v"}, schema) == {"k": REDACTED}


# --- what is left alone -----------------------------------------------------------


def test_non_secret_values_untouched():
    schema = obj(
        name=STRING,
        count={"type": "integer"},
        tags={"type": "array", "items": STRING},
        meta={"type": "object", "additionalProperties": STRING},
        pw={"writeOnly": True},
    )
    arguments = {
        "name": "n",
        "count": 3,
        "tags": ["a", "b"],
        "meta": {"x": "y"},
        "undeclared": {"deep": ["v"]},
        "pw": "p",
    }
    expected = {**copy.deepcopy(arguments), "pw": REDACTED}
    assert redact(arguments, schema) == expected


def test_value_not_matching_the_schema_shape_is_left():
    schema = obj(
        auth=obj(pw={"writeOnly": True}), keys={"type": "array", "items": {"writeOnly": True}}
    )
    arguments = {"auth": "not-an-object", "keys": {"not": "a list"}}
    assert redact(arguments, schema) == arguments


@pytest.mark.parametrize("schema", [{}, {"type": "object"}, obj(a=STRING), {"properties": []}])
def test_schema_without_secrets(schema):
    arguments = {"a": "x", "b": [1, {"c": "d"}]}
    assert redact(arguments, schema) == arguments
    assert not has_secrets(arguments, schema)


def test_secret_property_absent_from_arguments():
    schema = obj(name=STRING, pw={"writeOnly": True})
    assert redact({"name": "n"}, schema) == {"name": "n"}
    assert not has_secrets({"name": "n"}, schema)


def test_empty_arguments():
    schema = obj(pw={"writeOnly": True})
    assert redact({}, schema) == {}
    assert not has_secrets({}, schema)


def test_secret_root_schema_leaves_an_empty_dict():
    assert redact({"a": "b"}, {"type": "object", "writeOnly": True}) == {}


def test_input_is_not_mutated():
    schema = {
        "type": "object",
        "properties": {
            "auth": obj(user=STRING, pw={"writeOnly": True}),
            "keys": {"type": "array", "items": {"x-secret": True}},
            "pair": {"type": "array", "prefixItems": [STRING, {"secret": True}]},
        },
        "additionalProperties": {"format": "password"},
    }
    arguments = {
        "auth": {"user": "ada", "pw": "p"},
        "keys": ["k1", "k2"],
        "pair": ["a", "b"],
        "extra": "e",
    }
    before = copy.deepcopy(arguments)
    schema_before = copy.deepcopy(schema)
    redacted = redact(arguments, schema)
    assert arguments == before
    assert schema == schema_before
    assert redacted is not arguments
    assert redacted["auth"] is not arguments["auth"]
    assert redacted == {
        "auth": {"user": "ada", "pw": REDACTED},
        "keys": [REDACTED, REDACTED],
        "pair": ["a", REDACTED],
        "extra": REDACTED,
    }
    assert has_secrets(arguments, schema)
    assert arguments == before


def test_redact_is_idempotent():
    schema = obj(a=obj(pw={"writeOnly": True}), b={"type": "array", "items": {"secret": True}})
    arguments = {"a": {"pw": "p", "q": "q"}, "b": ["x"]}
    once = redact(arguments, schema)
    assert redact(once, schema) == once


# --- property: generated schemas with secrets at random depths ----------------------


@attrs.frozen
class Case:
    schema: dict[str, Any]
    arguments: dict[str, Any]
    secrets: list[str]
    plain: list[str]


_MARKERS = [{"writeOnly": True}, {"format": "password"}, {"x-secret": True}, {"secret": True}]
_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,7}", fullmatch=True)
_KINDS_LEAF = ["secret", "plain", "scalar"]
_KINDS_NODE = [
    "properties",
    "items",
    "prefixItems",
    "additionalProperties",
    "patternProperties",
    "$defs",
    "definitions",
    "allOf",
    "anyOf",
    "oneOf",
]


class _Builder:
    """Draws a schema and a value it describes, noting secret and plain strings."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.defs: dict[str, dict[str, Any]] = {"$defs": {}, "definitions": {}}
        self.secrets: list[str] = []
        self.plain: list[str] = []

    def secret_string(self) -> str:
        value = f"s3cr3t-{self.draw(st.uuids()).hex}"
        self.secrets.append(value)
        return value

    def plain_string(self) -> str:
        value = f"plain-{self.draw(st.uuids()).hex}"
        self.plain.append(value)
        return value

    def node(self, depth: int) -> tuple[dict[str, Any], Any]:
        kinds = _KINDS_LEAF + (_KINDS_NODE if depth > 0 else [])
        kind = self.draw(st.sampled_from(kinds))
        draw = self.draw
        if kind == "secret":
            marker = draw(st.sampled_from(_MARKERS))
            if draw(st.booleans()):
                return {"type": "string", **marker}, self.secret_string()
            # A secret can be a whole structure: nothing inside it may survive.
            n = draw(st.integers(1, 3))
            return {"type": "array", **marker}, [self.secret_string() for _ in range(n)]
        if kind == "plain":
            return {"type": "string"}, self.plain_string()
        if kind == "scalar":
            return {}, draw(st.one_of(st.integers(), st.booleans(), st.none()))
        if kind == "properties":
            keys = draw(st.lists(_KEYS, min_size=1, max_size=3, unique=True))
            children = [self.node(depth - 1) for _ in keys]
            value = {k: v for k, (_, v) in zip(keys, children, strict=True)}
            if draw(st.booleans()):  # an undeclared key with no schema: left alone
                value["undeclared-"] = self.plain_string()
            schema = {
                "type": "object",
                "properties": {k: s for k, (s, _) in zip(keys, children, strict=True)},
            }
            return schema, value
        if kind == "items":
            child_schema, child_value = self.node(depth - 1)
            return {"type": "array", "items": child_schema}, [child_value]
        if kind == "prefixItems":
            children = [self.node(depth - 1) for _ in range(draw(st.integers(1, 3)))]
            schema = {
                "type": "array",
                "prefixItems": [s for s, _ in children],
                "items": {"type": "string"},
            }
            return schema, [v for _, v in children] + [self.plain_string()]
        if kind == "additionalProperties":
            child_schema, child_value = self.node(depth - 1)
            key = draw(_KEYS.filter(lambda k: k != "known"))
            schema = {
                "type": "object",
                "properties": {"known": {"type": "string"}},
                "additionalProperties": child_schema,
            }
            return schema, {"known": self.plain_string(), key: child_value}
        if kind == "patternProperties":
            child_schema, child_value = self.node(depth - 1)
            key = f"pp_{draw(_KEYS)}"
            schema = {
                "type": "object",
                "patternProperties": {"^pp_": child_schema},
                "additionalProperties": {"type": "string"},
            }
            return schema, {key: child_value, "other": self.plain_string()}
        if kind in ("$defs", "definitions"):
            child_schema, child_value = self.node(depth - 1)
            name = f"D{len(self.defs['$defs']) + len(self.defs['definitions'])}"
            self.defs[kind][name] = child_schema
            return {"$ref": f"#/{kind}/{name}"}, child_value
        # allOf / anyOf / oneOf: the child among branches that mark nothing.
        child_schema, child_value = self.node(depth - 1)
        fillers = draw(st.lists(st.sampled_from([{}, {"description": "d"}]), max_size=2))
        position = draw(st.integers(0, len(fillers)))
        return {kind: [*fillers[:position], child_schema, *fillers[position:]]}, child_value


@st.composite
def cases(draw: st.DrawFn, *, max_depth: int = 6) -> Case:
    builder = _Builder(draw)
    depth = draw(st.integers(1, max_depth))
    schema, value = builder.node(depth)
    root = {"type": "object", "properties": {"arg": schema}}
    for container, defs in builder.defs.items():
        if defs:
            root[container] = defs
    arguments = {"arg": value, "note": builder.plain_string()}
    return Case(root, arguments, builder.secrets, builder.plain)


@_SETTINGS
@given(cases())
def test_no_secret_survives_and_every_plain_string_does(case):
    before = copy.deepcopy(case.arguments)
    redacted = redact(case.arguments, case.schema)
    dumped = json.dumps(redacted)
    for secret in case.secrets:
        assert secret not in dumped
    for plain in case.plain:
        assert plain in dumped
    assert case.arguments == before
    assert has_secrets(case.arguments, case.schema) == bool(case.secrets)
    assert redact(redacted, case.schema) == redacted


@_SETTINGS
@given(cases().filter(lambda c: not c.secrets))
def test_without_secrets_redact_is_identity(case):
    assert redact(case.arguments, case.schema) == case.arguments


def test_a_schema_too_convoluted_to_walk_redacts_everything_in_bounded_time():
    # Each level branches into itself twice: walked naively, 2**32 visits.
    schema = {
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}},
        "allOf": [{"$ref": "#/$defs/a"}],
    }
    started = time.perf_counter()
    assert redact({"x": 1, "y": "plain"}, schema) == {"x": REDACTED, "y": REDACTED}
    assert time.perf_counter() - started < 10


def test_values_nested_deeper_than_the_walk_goes_are_redacted():
    node: dict = {"type": "object", "additionalProperties": {"type": "string"}}
    value: dict = {"leaf": "hunter2"}
    for _ in range(40):
        node = {"type": "object", "properties": {"n": node}}
        value = {"n": value}
    assert "hunter2" not in json.dumps(redact(value, node))


def test_draft_07_tuple_items_and_if_then_else():
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [STRING, {"writeOnly": True}]},
            "cond": {"if": {"type": "string"}, "then": {"writeOnly": True}},
        },
    }
    assert redact({"pair": ["a", "b"], "cond": "c"}, schema) == {
        "pair": ["a", REDACTED],
        "cond": REDACTED,
    }


# --- plain schemas: nothing to walk ------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)

PLAIN_SCHEMAS = [
    pytest.param({"type": "object"}, id="no-properties"),
    pytest.param(obj(query=STRING, limit={"type": "integer", "minimum": 1}), id="flat"),
    pytest.param(
        {**obj(a=STRING), "additionalProperties": False, "$defs": {"s": {"writeOnly": True}}},
        id="closed-with-unused-defs",
    ),
    pytest.param(
        obj(a={"type": "object"}, b={"type": "array"}), id="containers-without-subschemas"
    ),
]


@pytest.mark.parametrize("schema", PLAIN_SCHEMAS)
@_SETTINGS
@given(arguments=st.dictionaries(st.sampled_from(["a", "b", "query", "limit", "other"]), JSON))
def test_a_plain_schema_redacts_nothing_as_the_walk_does(schema, arguments):
    from agentws.domain.secrets_in_arguments import _is_plain, _Walk

    assert _is_plain(schema)
    walked = _Walk(schema).redact(arguments, schema, 0)
    assert redact(arguments, schema) == walked == arguments
    assert redact(arguments, schema) is not arguments


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(obj(pw={"writeOnly": True}), id="secret-property"),
        pytest.param(obj(a=obj(pw=STRING)), id="nested-properties"),
        pytest.param({**obj(a=STRING), "additionalProperties": STRING}, id="additional-schema"),
        pytest.param(obj(a={"$ref": "#/$defs/s"}), id="ref"),
        pytest.param(obj(a={"type": "array", "items": STRING}), id="items"),
        pytest.param({**obj(a=STRING), "writeOnly": True}, id="secret-root"),
        pytest.param({**obj(a=STRING), "allOf": [{}]}, id="branch"),
    ],
)
def test_a_schema_that_leads_somewhere_is_walked(schema):
    from agentws.domain.secrets_in_arguments import _is_plain

    assert not _is_plain(schema)
