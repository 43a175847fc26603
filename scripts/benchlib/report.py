"""Plain-text output of a benchmark: Markdown tables, number formatting, common notes."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "QUIET_CORES",
    "fmt",
    "machine_line",
    "markdown_table",
    "report_head",
    "rounds_note",
    "verdict",
    "write_json",
]

# Other processes' CPU (in cores) above which a run is flagged as noisy.
QUIET_CORES = 0.15


def fmt(value: float | None, digits: int = 1) -> str:
    """A number for a table: thousands separated, ``—`` for missing or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def verdict(passed: bool | None) -> str:
    if passed is None:
        return "—"
    return "PASS" if passed else "MISS"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table, columns padded so it also reads as plain text."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    separator = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(headers), separator, *(line(row) for row in rows)])


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` to ``path`` (parents created), NaN written as null."""

    def clean(value: Any) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v) for v in value]
        return value

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(clean(document), indent=2, ensure_ascii=False) + "\n")


def machine_line(machine: dict[str, Any]) -> str:
    """The report's ``- Machine: ...`` line, from :func:`benchlib.machine.describe_machine`."""
    return (
        f"- Machine: {machine['cpu']}, {machine['cores']} cores"
        + (
            f" ({machine['usable_cores']} usable)"
            if machine["usable_cores"] != machine["cores"]
            else ""
        )
        + (f", {machine['memory_gib']} GiB" if machine["memory_gib"] else "")
        + f", {machine['os']}, {machine['python']}."
    )


def report_head(
    mode: str, date: str, rows: Sequence[Sequence[str]], machine: dict[str, Any]
) -> list[str]:
    """A report's first lines: its title, the table of measures, the machine line."""
    return [
        f"## scripts/bench {mode} — {date}",
        "",
        markdown_table(["measure", "agentws", "reference", "target", "result"], rows),
        "",
        machine_line(machine),
    ]


def rounds_note(what: str, rounds: str, client: float, noise: float) -> str:
    """The note on each round's figure and on the CPU the client and other processes took.

    ``what`` names the figure (``"Calls/s"``), ``rounds`` lists it per round;
    ``client`` and ``noise`` are the most cores the load client and other
    processes used in any measured window.
    """
    return (
        f"- {what} in each round: {rounds}. The load client used up to {client:.2f} cores"
        + (
            " (near saturation: the client, not the server, may be the limit)"
            if client > 0.8
            else ""
        )
        + f"; other processes up to {noise:.2f} cores during the measured windows"
        + (
            f": the machine was not quiet (more than {QUIET_CORES} cores), so expect noise."
            if noise > QUIET_CORES
            else "."
        )
    )
