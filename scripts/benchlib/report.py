"""Plain-text output of a benchmark: Markdown tables and number formatting."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["fmt", "markdown_table", "verdict", "write_json"]


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
