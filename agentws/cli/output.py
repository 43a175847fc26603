"""What every ``agentws`` command shares: its context, its output, and how both are printed.

A command is a :data:`Handler`: it gets the parsed arguments and a
:class:`Context` (settings, store, actor, the service key) and returns an
:class:`Output`, which :func:`print_output` prints as text or, with
``--json``, as one JSON document. Errors go to stderr through
:func:`print_error`. :func:`iso` and :func:`table` format what commands show.

Everything a command prints as text goes through :func:`terminal_text`
here, and nowhere else: names, errors and bodies come from outside (a
self-registered OAuth client names itself), and a terminal acts on the
control sequences such text may hold (clear the screen, retitle the
window, make a link). Each character that a terminal acts on, draws
nothing or reorders what follows is printed as its escape (``\\u001b``,
``\\u202e``; :mod:`agentws.domain.hidden_chars`), as the dashboard shows
it. ``--json`` prints exact JSON, whose encoder escapes every such
character itself (and everything beyond ASCII).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import attrs

from agentws.core.errors import AgentwsError, NoDatabaseError, error_body
from agentws.domain.hidden_chars import show_hidden
from agentws.settings.config import Settings
from agentws.settings.secret_box import Keys
from agentws.store.union import Store

T = TypeVar("T")

__all__ = [
    "Context",
    "Handler",
    "Output",
    "iso",
    "print_error",
    "print_followed",
    "print_json_line",
    "print_output",
    "print_text",
    "table",
    "terminal_text",
]


@attrs.frozen
class Output:
    """What a command prints: ``data`` with ``--json``, ``text`` otherwise."""

    data: Any
    text: str
    #: The exit status (a report that found problems prints them, then exits 1).
    status: int = 0


@attrs.frozen
class Context:
    #: ``base_url`` is the one URLs are printed with (see :mod:`agentws.cli.urls`).
    settings: Settings
    store: Store
    actor: str
    #: Said under a printed URL that is only a guess (no AGENTWS_BASE_URL, no instance).
    url_note: str | None = None

    @functools.cached_property
    def keys(self) -> Keys:
        """The service key, read the first time a command needs it and then kept.

        Commands that never open or seal a secret never read the key file.
        """
        return Keys.load(self.settings)

    def noted(self, text: str) -> str:
        """``text`` (which shows a URL), with the note on that URL if there is one."""
        return f"{text}\n{self.url_note}" if self.url_note else text


Handler = Callable[[argparse.Namespace, Context], Awaitable[Output]]


def iso(value: Any) -> str | None:
    """A datetime as ISO 8601; None stays None."""
    return value.isoformat() if value is not None else None


def terminal_text(text: str) -> str:
    """``text`` as it may reach a terminal: what a terminal would act on, escaped.

    Line feeds and tabs stay; so does a CR ending a line (a CRLF line end
    is printed as a line feed), while a lone CR, which moves back over what
    was printed, is escaped like the rest.
    """
    text = show_hidden(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\\u000d")
    return text


def print_text(text: str) -> None:
    """Print ``text`` on stdout, as :func:`terminal_text` makes it."""
    print(terminal_text(text))


def print_json_line(data: Any) -> None:
    """Print ``data`` as one line of JSON on stdout (ASCII: nothing a terminal acts on)."""
    print(json.dumps(data))


def print_followed(
    batch: Iterable[T], as_json: bool, as_data: Callable[[T], Any], as_text: Callable[[T], str]
) -> None:
    """Print what ``--follow`` found: JSON lines with ``--json``, else text; flushed at once."""
    for item in batch:
        if as_json:
            print_json_line(as_data(item))
        else:
            print_text(as_text(item))
    # Whoever follows reads as it comes, through a pipe too.
    sys.stdout.flush()


def table(rows: list[dict[str, Any]], columns: Sequence[str], empty: str) -> str:
    """``rows`` as aligned columns under an upper-case header; ``empty`` when there are none."""
    if not rows:
        return empty
    # One line per row, whatever a cell holds (an error stored before excerpts were bounded).
    cells = [[terminal_text(" ".join(str(r.get(c) or "-").split())) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(line.rstrip() for line in lines)


def print_output(output: Output, as_json: bool) -> int:
    """Print ``output`` on stdout; returns its exit status."""
    if as_json:
        print(json.dumps(output.data, indent=2))
    else:
        print_text(output.text)
    return output.status


def print_error(error: BaseException, as_json: bool) -> int:
    """Print ``error`` on stderr; returns the exit status it calls for."""
    code = error.code if isinstance(error, AgentwsError) else "error"
    message = error.message if isinstance(error, AgentwsError) else str(error)
    if as_json:
        print(json.dumps(error_body(code, message)), file=sys.stderr)
    else:
        print(f"agentws: error: {terminal_text(message)}", file=sys.stderr)
    # Pointed at no database is a usage mistake, like a malformed command line.
    return 2 if isinstance(error, NoDatabaseError) else 1
