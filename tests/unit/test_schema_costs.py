"""What a check of arguments may cost: bounds, hostile schemas, the worker process.

``agentws.tools.schema_cost`` judges a schema before any arguments meet it;
``agentws.tools.validation.ArgumentChecker`` refuses arguments over their
bounds and checks a hostile schema in a worker process, under a deadline.
``agentws.domain.patterns`` runs a remote's ``patternProperties`` on keys in
linear time (the redaction of secret arguments uses it).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchlib.hostile_upstream import branching

from agentws.domain.call_arguments import CallArguments
from agentws.domain.models import Capability
from agentws.domain.patterns import pattern_search
from agentws.domain.secrets_in_arguments import REDACTED, redact
from agentws.settings.config import Settings
from agentws.tools.schema_cost import MAX_WIDTH, assess
from agentws.tools.spec import ToolSpec
from agentws.tools.validation import ArgumentChecker, argument_error, open_argument_checker
from tests.scaling import FACTOR, growth


def _tool(schema: dict[str, Any]) -> ToolSpec:
    return ToolSpec(
        name="third_t", description="", input_schema=schema, capability=Capability.WRITE
    )


@pytest.fixture
async def checker() -> AsyncIterator[ArgumentChecker]:
    settings = Settings.from_env(
        {"AGENTWS_TOOL_MAX_ARGUMENT_BYTES": "4096", "AGENTWS_TOOL_MAX_ARGUMENT_DEPTH": "5"}
    )
    async with open_argument_checker(settings) as made:
        yield made


def test_plain_schemas_are_narrow_and_checked_on_the_loop() -> None:
    cost = assess(
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "uniqueItems": True},
                "tree": {"$ref": "#"},
                "kind": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
        }
    )
    assert cost.on_loop and cost.hazards == ()
    assert cost.width <= 8


@pytest.mark.parametrize(
    ("schema", "hazard"),
    [
        (branching(30), "more than 1,000 schemas to one value"),
        ({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}, "a $ref loop"),
        (
            {"properties": {"q": {"type": "string", "pattern": "^(?=a)(a+)+$"}}},
            "patterns that need backtracking (lookaround, backreferences): '^(?=a)(a+)+$'",
        ),
        ({"type": "nonsense"}, "the schema is invalid"),
    ],
)
def test_hostile_schemas_are_named(schema: dict[str, Any], hazard: str) -> None:
    cost = assess(schema)
    assert not cost.on_loop
    assert any(hazard in found for found in cost.hazards), cost.hazards


def test_a_ref_outside_the_schema_is_never_fetched() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        cost = assess({"$ref": f"http://127.0.0.1:{port}/schema.json"})
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert cost.validator is None
    assert "is never fetched" in (cost.invalid or "")
    refused = argument_error({"$ref": f"http://127.0.0.1:{port}/schema.json"}, {})
    assert refused is not None and refused.startswith("the tool's own schema is invalid")


def test_the_width_saturates_past_its_bound() -> None:
    assert assess(branching(60)).width == MAX_WIDTH + 1


def test_errors_quote_a_bounded_part_of_the_value() -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array", "uniqueItems": True}}}
    duplicated = {"items": [{"n": n} for n in range(5000)] + [{"n": 1}]}
    problem = argument_error(schema, duplicated)
    assert problem is not None and problem.startswith("items: ")
    assert "non-unique" in problem and len(problem) < 400


async def test_arguments_over_their_bounds_are_refused_first(checker: ArgumentChecker) -> None:
    tool = _tool({"type": "object"})
    big = CallArguments.of(tool.name, {"q": "x" * 5000}, tool.input_schema)
    assert await checker.problem(tool, big) == (
        f"the arguments are {big.whole_bytes:,} bytes; this service takes at most 4,096 bytes "
        "(AGENTWS_TOOL_MAX_ARGUMENT_BYTES)"
    )
    deep: dict[str, Any] = {"a": {"b": {"c": {"d": {"e": {}}}}}}
    nested = CallArguments.of(tool.name, deep, tool.input_schema)
    assert await checker.problem(tool, nested) == (
        "the arguments nest deeper than 5 levels (AGENTWS_TOOL_MAX_ARGUMENT_DEPTH)"
    )
    deep["a"]["b"]["c"]["d"] = {}
    assert await checker.problem(tool, CallArguments.of(tool.name, deep, {})) is None


async def test_a_hostile_schema_is_checked_in_a_worker(checker: ArgumentChecker) -> None:
    lookaround = _tool({"properties": {"q": {"type": "string", "pattern": "^(?!x)"}}})
    wrong = CallArguments.of(lookaround.name, {"q": "xy"}, lookaround.input_schema)
    assert await checker.problem(lookaround, wrong) == 'q: "xy" does not match "^(?!x)"'
    right = CallArguments.of(lookaround.name, {"q": "yx"}, lookaround.input_schema)
    assert await checker.problem(lookaround, right) is None


async def test_a_check_past_its_deadline_is_killed_and_refused(checker: ArgumentChecker) -> None:
    branches = _tool(branching(40))
    arguments = CallArguments.of(branches.name, {"v": 5}, branches.input_schema)
    problem = await checker.problem(branches, arguments)
    assert problem is not None
    assert "took longer than 0.5 s (AGENTWS_TOOL_CHECK_TIMEOUT_S)" in problem
    # The next costly check gets a new worker.
    lookaround = _tool({"properties": {"q": {"type": "string", "pattern": "^(?!x)"}}})
    fine = CallArguments.of(lookaround.name, {"q": "y"}, lookaround.input_schema)
    assert await checker.problem(lookaround, fine) is None


async def test_structured_content_a_quick_check_accepts_is_not_written_out(
    checker: ArgumentChecker,
) -> None:
    """Its JSON is for a costly check only: a result of many rows costs the loop no more."""
    schema = {"type": "object", "properties": {"count": {"type": "integer"}}}

    def check(content: dict[str, Any]) -> object:
        return trio.from_thread.run(checker.output_problem, schema, content)

    def rows(n: int) -> dict[str, Any]:
        return {"count": n, "rows": [{"a": index} for index in range(n)]}

    assert await checker.output_problem(schema, rows(3)) is None
    assert await checker.output_problem(schema, {"count": "3"}) is not None
    # Writing the rows out grows with them (about FACTOR times); the quick check does not.
    assert await trio.to_thread.run_sync(growth, rows, check, 20_000) < FACTOR / 2


def test_pattern_properties_run_in_linear_time() -> None:
    assert pattern_search("^tok", "token") is True
    assert pattern_search("^tok", "key") is False
    assert pattern_search("(?=x)", "x") is None  # needs backtracking: not run
    assert pattern_search("[", "x") is False  # not a pattern: matches nothing
    # Python's re takes about 2**40 steps for this one.
    assert pattern_search("^(a+)+$", "a" * 40 + "!") is False


def test_redaction_applies_a_backtracking_pattern_in_doubt() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(?=pass)": {"type": "string", "writeOnly": True}},
    }
    assert redact({"password": "p", "name": "n"}, schema) == {
        "password": REDACTED,
        "name": REDACTED,
    }
    hostile = {"type": "object", "patternProperties": {"^(a+)+$": {"x-secret": True}}}
    assert redact({"a" * 40 + "!": "v", "aaa": "s"}, hostile) == {
        "a" * 40 + "!": "v",
        "aaa": REDACTED,
    }
