"""What every ``scripts/bench_<mode>.py`` does around its measures.

The common options (``--json-out``, ``--check``, ``--keep``), the progress
logger, the temp directory a run works in,
the rounds of agentws against its reference in ABBA order,
running a load client (a script of this package reading a JSON job on
stdin, printing JSON results on stdout) or a trio measure in this process
(:func:`run_trio`), and the end of ``main``: run under
:func:`~benchlib.procs.terminate_on_signals`, write the JSON, print the
Markdown report.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import trio

from benchlib.procs import BenchError, Processes, read_json, terminate_on_signals
from benchlib.report import write_json

__all__ = [
    "abba_rounds",
    "add_output_args",
    "logger",
    "now_utc",
    "run_and_report",
    "run_load_client",
    "run_trio",
    "workdir",
]

_LIB = Path(__file__).resolve().parent


def add_output_args(parser: argparse.ArgumentParser, json_out: Path) -> None:
    """``--json-out`` (default ``json_out``), ``--check`` and ``--keep``."""
    parser.add_argument(
        "--json-out", type=Path, default=json_out, help="where to write the results as JSON"
    )
    parser.add_argument(
        "--check", action="store_true", help="exit with status 2 when a target is missed"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temp directory (databases, server logs)"
    )


def logger(mode: str) -> Callable[[str], None]:
    """A function printing progress lines ``[bench <mode>] ...`` on stderr."""

    def say(text: str) -> None:
        print(f"[bench {mode}] {text}", file=sys.stderr, flush=True)

    return say


def now_utc() -> str:
    """The date and time of a run, as reports show it."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


@contextlib.contextmanager
def workdir(mode: str, keep: bool) -> Iterator[Path]:
    """A fresh temp directory, removed afterwards unless ``keep`` (then its path is printed)."""
    path = Path(tempfile.mkdtemp(prefix=f"agentws-bench-{mode}-"))
    try:
        yield path
    finally:
        if keep:
            print(f"kept {path}", file=sys.stderr)
        else:
            shutil.rmtree(path, ignore_errors=True)


def abba_rounds(
    rounds: int,
    measures: dict[str, Callable[[int], dict[str, Any]]],
    note: Callable[[dict[str, Any]], None],
) -> dict[str, list[dict[str, Any]]]:
    """``rounds`` runs of each measure, odd rounds in order, even rounds reversed (ABBA).

    ``measures`` maps each server's name to a function measuring round
    ``n``; ``note`` is called on each result as it comes. The results of
    each, in order.
    """
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in measures}
    order = list(measures)
    for n in range(1, rounds + 1):
        for name in order if n % 2 else reversed(order):
            result = measures[name](n)
            note(result)
            runs[name].append(result)
    return runs


def run_load_client(
    procs: Processes, script: str, job: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """Run ``benchlib/<script>`` on ``job`` (JSON on its stdin); its JSON results.

    :raises BenchError: it failed, printed no JSON, or ran over ``timeout`` seconds.
    """
    child = procs.start("load", [sys.executable, str(_LIB / script)], stdin=subprocess.PIPE)
    try:
        out, _ = child.process.communicate(json.dumps(job).encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"the load client did not finish in {timeout:g} s") from None
    finally:
        procs.stop(child)
    if child.process.returncode != 0:
        raise BenchError(f"the load client failed\n{child.log_tail()}")
    return read_json(out, "the load client's output")


def run_trio(function: Callable[[], Any]) -> dict[str, Any]:
    """``trio.run(function)``; a group of one exception is raised as that exception."""
    try:
        result: dict[str, Any] = trio.run(function)
    except BaseExceptionGroup as group:
        leaves: list[BaseException] = []

        def flatten(error: BaseException) -> None:
            if isinstance(error, BaseExceptionGroup):
                for inner in error.exceptions:
                    flatten(inner)
            else:
                leaves.append(error)

        flatten(group)
        for leaf in leaves:
            if isinstance(leaf, KeyboardInterrupt | BenchError):
                raise leaf from None
        if len(leaves) == 1:
            raise leaves[0] from group
        raise
    return result


def run_and_report(
    mode: str,
    args: argparse.Namespace,
    run: Callable[[argparse.Namespace], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
) -> dict[str, Any] | int:
    """``run(args)``, then its results written to ``args.json_out`` and printed by ``render``.

    The results, or the exit status when the run did not finish: 1 after a
    :class:`~benchlib.procs.BenchError` (said on stderr), 130 when interrupted.
    """
    try:
        with terminate_on_signals():
            results = run(args)
    except BenchError as exc:
        print(f"scripts/bench {mode}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            f"scripts/bench {mode}: interrupted; every process it started is stopped",
            file=sys.stderr,
        )
        return 130
    write_json(args.json_out, results)
    print(render(results))
    print(f"\n(JSON: {args.json_out})")
    return results
