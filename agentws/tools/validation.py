"""Checking a call's arguments before anything is done with them: their size and
depth, their tool's JSON schema, and a native action's path arguments; and a
remote tool's structured result against its output schema, the same way.

Arguments first meet fixed bounds (``AGENTWS_TOOL_MAX_ARGUMENT_BYTES``,
``AGENTWS_TOOL_MAX_ARGUMENT_DEPTH``). Then the schema: most tools' schemas
are flat objects of strings, numbers and booleans with bounds, and for
those a call is first checked by a few plain comparisons
(:func:`_quick_check`), which only ever say "valid": anything they are not
sure of goes to the full validator (:mod:`agentws.tools.schema_validators`),
which also writes the error. A valid call, the usual case, never pays for it.

The full check runs on the event loop only when its cost is bounded: the
schema has no hazard (:mod:`agentws.tools.schema_cost`) and its width times
the arguments' size stays under a budget of a few milliseconds' work.
Anything else is checked in a worker process (one at a time) under a
deadline (``AGENTWS_TOOL_CHECK_TIMEOUT_S``); a check past it is killed and
the call refused, so no schema and no arguments can stall the service.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import jsonschema_rs
import trio
import trio_parallel

from agentws.connectors.native import ACTIONS
from agentws.domain.call_arguments import CallArguments
from agentws.domain.schema_memo import SchemaMemo
from agentws.settings.config import Settings
from agentws.tools.schema_cost import SchemaCost, assess
from agentws.tools.schema_validators import check_in_worker, first_error, worker_ready
from agentws.tools.spec import ToolSpec

__all__ = [
    "ArgumentChecker",
    "ArgumentLimits",
    "argument_error",
    "open_argument_checker",
    "path_argument_error",
]

QuickCheck = Callable[[dict[str, Any]], bool]

_MAX_VALIDATORS = 1000
# Work a check may do on the event loop: schema width times arguments' bytes.
# About a few milliseconds of the validator's work at most.
_ON_LOOP_BUDGET = 8 * 1024 * 1024
# Arguments larger than this (compact JSON) let other tasks run between the checks.
_BETWEEN_STEPS_BYTES = 64 * 1024
# How long a worker process may take to start (its imports), apart from the check.
_WORKER_START_S = 10.0
# An idle worker process ends after this long; the next check starts one.
_WORKER_IDLE_S = 600.0
# Keywords of a schema that only describe: they never make a value invalid.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated"})
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_VALUE_KEYWORDS = _ANNOTATIONS | {"type", "minLength", "maxLength", "minimum", "maximum"}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _value_check(schema: Any) -> Callable[[Any], bool] | None:
    """A check that ``value`` is surely valid for a property's ``schema``; None: too rich."""
    if not isinstance(schema, dict) or set(schema) - _VALUE_KEYWORDS:
        return None
    kind = schema.get("type")
    low, high = schema.get("minimum"), schema.get("maximum")
    if not all(bound is None or _is_number(bound) for bound in (low, high)):
        return None
    if kind == "string":
        shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
        if not isinstance(shortest, int) or not (longest is None or isinstance(longest, int)):
            return None
        if low is not None or high is not None:
            return None
        # len() counts code points, as JSON Schema's lengths do.
        return lambda value: (
            isinstance(value, str)
            and len(value) >= shortest
            and (longest is None or len(value) <= longest)
        )
    if set(schema) & {"minLength", "maxLength"}:
        return None
    if kind == "boolean" and low is None and high is None:
        return lambda value: isinstance(value, bool)
    if kind in ("integer", "number"):
        # A float where an integer is asked (1.0 is one) is left to the full check.
        wanted: Callable[[Any], bool] = (
            (lambda value: type(value) is int) if kind == "integer" else _is_number
        )
        return lambda value: (
            wanted(value) and (low is None or value >= low) and (high is None or value <= high)
        )
    return None


def _quick_check(schema: dict[str, Any]) -> QuickCheck | None:
    """For a flat object schema of simple values: a check that arguments are surely valid."""
    if set(schema) - _OBJECT_KEYWORDS or schema.get("type") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or not all(isinstance(name, str) for name in required)
        or not isinstance(closed, bool)
    ):
        return None
    checks: dict[str, Callable[[Any], bool]] = {}
    for name, spec in properties.items():
        check = _value_check(spec)
        if check is None:
            return None
        checks[name] = check
    needed = tuple(required)
    extra_allowed = closed

    def quick(arguments: dict[str, Any]) -> bool:
        for name in needed:
            if name not in arguments:
                return False
        for name, value in arguments.items():
            check = checks.get(name)
            if check is None:
                if not extra_allowed:
                    return False
            elif not check(value):
                return False
        return True

    return quick


# Quick checks by the schema object; None: the schema has none.
_quick_for = SchemaMemo(_quick_check, _MAX_VALIDATORS)


def _surely_valid(schema: dict[str, Any], value: Any) -> bool:
    """Whether ``schema``'s quick check, if it has one, finds ``value`` valid."""
    quick = _quick_for(schema)
    return quick is not None and isinstance(value, dict) and quick(value)


def argument_error(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` for ``schema``, checked here and now, or None.

    For schemas and arguments known to be cheap (built-ins, tests); calls go
    through :meth:`ArgumentChecker.problem`, which bounds the work.
    """
    quick = _quick_for(schema)
    if quick is not None and quick(arguments):
        return None
    return _full_error(assess(schema), arguments)


def _full_error(cost: SchemaCost, value: Any) -> str | None:
    """What the compiled validator finds wrong with ``value``, here and now, or None."""
    if cost.validator is None:
        return f"the tool's own schema is invalid ({cost.invalid}); ask an admin"
    return first_error(cost.validator, value)


@functools.cache
def _no_deeper_than(limit: int) -> jsonschema_rs.Validator:
    """A validator of values nesting objects and arrays ``limit`` deep at most.

    Checked by the validator (in Rust) rather than by a walk in Python: an
    argument of 1 MiB can hold half a million values.
    """
    defs: dict[str, Any] = {f"l{limit}": {"type": ["string", "number", "boolean", "null"]}}
    for level in range(limit - 1, -1, -1):
        deeper = {"$ref": f"#/$defs/l{level + 1}"}
        defs[f"l{level}"] = {"items": deeper, "additionalProperties": deeper}
    return jsonschema_rs.validator_for({"$defs": defs, "$ref": "#/$defs/l0"})


def deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` deep (itself is 1)."""
    return not _no_deeper_than(limit).is_valid(value)


@attrs.frozen
class ArgumentLimits:
    """Bounds on a call's arguments, from settings."""

    max_bytes: int = 1024 * 1024
    max_depth: int = 64
    check_timeout_s: float = 0.5

    @classmethod
    def from_settings(cls, settings: Settings) -> ArgumentLimits:
        return cls(
            settings.tool_max_argument_bytes,
            settings.tool_max_argument_depth,
            settings.tool_check_timeout_s,
        )


@attrs.define(eq=False)
class ArgumentChecker:
    """Checks calls' arguments within bounds, costly schemas in a worker process.

    Made by :func:`open_argument_checker`, which owns the worker process.
    """

    limits: ArgumentLimits
    _workers: trio_parallel.WorkerContext
    # One check in a worker at a time: the other core stays the event loop's.
    _turn: trio.Lock = attrs.field(factory=trio.Lock, init=False)
    _worker_ready: bool = attrs.field(default=False, init=False)

    async def problem(self, tool: ToolSpec, arguments: CallArguments) -> str | None:
        """Why ``arguments`` may not go to ``tool``, or None.

        Error handling:
            Every refusal is a sentence for the caller: arguments over a bound
            (naming its setting), not valid for the schema, a schema that is
            invalid, or a check that took longer than its deadline.
        """
        limits = self.limits
        size = arguments.whole_bytes
        if size > _BETWEEN_STEPS_BYTES:
            # Each step over large arguments takes milliseconds: let other
            # requests run between them.
            await trio.lowlevel.checkpoint()
        if size > limits.max_bytes:
            return (
                f"the arguments are {size:,} bytes; this service takes at most "
                f"{limits.max_bytes:,} bytes (AGENTWS_TOOL_MAX_ARGUMENT_BYTES)"
            )
        whole = arguments.whole
        if deeper_than(whole, limits.max_depth):
            return (
                f"the arguments nest deeper than {limits.max_depth} levels "
                "(AGENTWS_TOOL_MAX_ARGUMENT_DEPTH)"
            )
        if size > _BETWEEN_STEPS_BYTES:
            await trio.lowlevel.checkpoint()
        problem = (
            None
            if _surely_valid(tool.input_schema, whole)
            else await self._schema_problem(
                tool.input_schema, whole, size, arguments.text, "these arguments"
            )
        )
        return problem or path_argument_error(tool, whole)

    async def output_problem(self, schema: dict[str, Any], content: Any) -> str | None:
        """Why a result's structured ``content`` breaks the tool's output ``schema``, or None.

        Checked as arguments are: in linear time, on the event loop only
        when that is bounded, else in the worker process under the deadline.
        ``content`` is a remote's (bounded by ``AGENTWS_TOOL_MAX_RESULT_BYTES``).

        Error handling:
            Every problem is a sentence for the caller, as for arguments.
        """
        if _surely_valid(schema, content):
            return None  # its JSON, as long as the content, is only for the checks below
        text = json.dumps(content)
        if len(text) > _BETWEEN_STEPS_BYTES:
            await trio.lowlevel.checkpoint()
        return await self._schema_problem(
            schema, content, len(text), text, "the structured content"
        )

    async def _schema_problem(
        self, schema: dict[str, Any], value: Any, size: int, text: str, what: str
    ) -> str | None:
        """Why ``value`` (``text``, ``size`` bytes) breaks ``schema``, once its quick check,
        if any, did not find it valid."""
        cost = assess(schema)
        if cost.validator is None or (cost.on_loop and cost.width * size <= _ON_LOOP_BUDGET):
            return _full_error(cost, value)
        return await self._in_worker(schema, text, what)

    async def _in_worker(self, schema: dict[str, Any], text: str, what: str) -> str | None:
        """Check ``text`` (JSON; ``what`` it is, for a refusal) against ``schema`` in the worker."""
        timeout_s = self.limits.check_timeout_s
        schema_text = json.dumps(schema)
        late = (
            f"checking {what} against the tool's schema took longer than "
            f"{timeout_s:g} s (AGENTWS_TOOL_CHECK_TIMEOUT_S); the schema is costly to check, "
            "ask an admin to look at the tool"
        )
        with trio.move_on_after(timeout_s) as waited:
            await self._turn.acquire()
        if waited.cancelled_caught:
            return (
                "the tool's schema is costly to check and other calls' checks are running; "
                "nothing was sent, try again shortly"
            )
        try:
            if not self._worker_ready:
                # A worker's start (its imports) is not the check's time.
                with trio.move_on_after(_WORKER_START_S):
                    self._worker_ready = await self._workers.run_sync(
                        worker_ready, kill_on_cancel=True
                    )
                if not self._worker_ready:
                    return late
            with trio.move_on_after(timeout_s):
                problem: str | None = await self._workers.run_sync(
                    check_in_worker, schema_text, text, kill_on_cancel=True
                )
                return problem
            # The worker was killed: the next check starts another.
            self._worker_ready = False
            return late
        finally:
            self._turn.release()


@asynccontextmanager
async def open_argument_checker(settings: Settings) -> AsyncIterator[ArgumentChecker]:
    """An :class:`ArgumentChecker` whose worker process lives until the block ends.

    Resource handling:
        The worker process starts at the first costly check and ends when
        idle, or when the block ends (a check still running is killed).
    """
    async with trio_parallel.open_worker_context(
        idle_timeout=_WORKER_IDLE_S, grace_period=1.0
    ) as workers:
        yield ArgumentChecker(ArgumentLimits.from_settings(settings), workers)


def path_argument_error(tool: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """Why a native action's ``arguments`` may not go into its request's path, or None.

    Checked before a call is queued or confirmed, so a call that could only
    be refused later is never put to an admin or a caller.
    """
    if tool.connector_kind is None:
        return None
    action = ACTIONS.get(tool.connector_kind, {}).get(tool.remote_name or "")
    if action is None:
        return None
    problem = action.argument_error(arguments)
    return None if problem is None else f"{problem}; nothing was sent"
