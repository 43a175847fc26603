"""Characters the dashboard shows escaped: what draws nothing, or reorders what follows.

Approval arguments, tool names, event bodies and headers, webhook names:
the dashboard shows text from outside, and some characters would make it
show something else than what is there. A right-to-left override turns
``invoice‮fdp.exe`` into what reads as ``invoiceexe.pdf``; a zero-width
space or a Unicode tag character hides text from the eye (but not from a
model); a terminal control or a line separator breaks the layout. The
admin deciding an approval must see the arguments as they are.

:func:`visible` is the Jinja environment's ``finalize``: every ``{{ … }}``
of every template goes through it, before HTML escaping, so no page or
later template can forget it. It writes each such character as a visible
escape (``\\u202e``; ``\\U000e0041`` beyond the BMP). Tab, line feed and
carriage return stay as they are. The set of characters is
:mod:`agentws.domain.hidden_chars`'s, which the CLI shows text through too.

A form field that sends a stored value back (a hidden tool name, a prompt
being edited) must hold the value itself, not its escaped view, or saving
would change it: it is written ``{{ value | exact }}``, which
:func:`visible` leaves alone (HTML escaping still applies). Where such a
field is shown (a prompt being edited), the page says, with the
``has_hidden`` test, that the value holds characters shown escaped elsewhere.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from agentws.domain.hidden_chars import HIDDEN as _HIDDEN
from agentws.domain.hidden_chars import escape_match as _escape

__all__ = ["exact", "has_hidden", "visible"]


class _Exact(str):
    """A value a form sends back as it is: :func:`visible` does not escape it."""

    __slots__ = ()


def visible(value: Any) -> Any:
    """``value`` as a template prints it, each hidden character written as its escape."""
    if value is None or isinstance(value, (_Exact, bool, int, float)):
        return value
    if hasattr(value, "__html__"):
        # Markup stays markup: the escapes hold no character HTML gives a meaning to.
        html = str(value.__html__())
        found = _HIDDEN.search(html)
        return Markup(_HIDDEN.sub(_escape, html)) if found else value  # noqa: S704 - see above
    text = value if isinstance(value, str) else str(value)
    return _HIDDEN.sub(_escape, text) if _HIDDEN.search(text) else value


def exact(value: Any) -> str:
    """The ``exact`` filter: ``value`` printed as it is, for a form field to send back."""
    return _Exact("" if value is None else value)


def has_hidden(value: Any) -> bool:
    """The ``has_hidden`` test: whether ``value`` holds a character :func:`visible` escapes."""
    return value is not None and _HIDDEN.search(str(value)) is not None
