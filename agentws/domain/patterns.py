"""Whether a text matches a JSON Schema pattern, in time linear in the text. No I/O.

Patterns come from remote servers' schemas (``patternProperties``) and
texts from callers: Python's ``re`` backtracks, and one pattern such as
``^(a+)+$`` on a short key can hold the event loop for seconds. Patterns
here run on jsonschema-rs's linear-time engine (its ECMA 262 dialect, as
JSON Schema asks); a pattern that needs backtracking (lookaround,
backreferences) is not run at all, and the caller decides what not knowing
means.
"""

from __future__ import annotations

import jsonschema_rs

__all__ = ["pattern_search"]

# Compiled patterns kept, by pattern text.
_MAX_KEPT = 1000
# A pattern: its validator, or None when it cannot run in linear time, or
# False when it is not a valid pattern at all.
_Compiled = jsonschema_rs.Validator | bool | None
_kept: dict[str, _Compiled] = {}


def _compiled(pattern: str) -> _Compiled:
    if pattern in _kept:
        return _kept[pattern]
    if len(_kept) >= _MAX_KEPT:
        _kept.clear()
    found: _Compiled
    try:
        found = jsonschema_rs.validator_for(
            {"pattern": pattern}, pattern_options=jsonschema_rs.RegexOptions()
        )
    except jsonschema_rs.ValidationError:
        try:
            jsonschema_rs.validator_for({"pattern": pattern})
        except jsonschema_rs.ValidationError:
            found = False
        else:
            found = None
    _kept[pattern] = found
    return found


def pattern_search(pattern: str, text: str) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text``; None: not run (needs backtracking).

    A pattern that is not valid matches nothing.
    """
    compiled = _compiled(pattern)
    if compiled is None:
        return None
    if isinstance(compiled, bool):
        return False
    return bool(compiled.is_valid(text))
