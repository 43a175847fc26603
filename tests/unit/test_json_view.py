"""``agentws.doors.dashboard.json_view.indented``: JSON shown indented, cut by structure past a
bound.

What fits is exactly what ``json.dumps(value, indent=2, ensure_ascii=False)``
writes; what does not ends in ``…`` with its brackets closed; and the work
is bounded by the view, not the document.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentws.doors.dashboard.json_view import JsonView, indented
from tests.scaling import BOUNDED, growth

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@settings(database=None, max_examples=300, deadline=None)
@given(_JSON, st.sampled_from([{}, {"ensure_ascii": False}, {"separators": (",", ":")}]))
def test_what_fits_is_written_as_json_dumps_indents_it(value: Any, sent: dict[str, Any]) -> None:
    body = json.dumps(value, **sent).encode()
    assert indented(body, limit=10**6) == JsonView(
        json.dumps(value, indent=2, ensure_ascii=False), cut=False
    )


@pytest.mark.parametrize(
    ("body", "view"),
    [
        (b'{"a": [1, 2, 3], "b": 4}', '{\n  "a": [\n    1\n    …\n  ]\n}'),
        (b'{"a": "' + b"x" * 100 + b'"}', '{\n  "a": "xxxxxxxxxxxxxx…\n}'),
        (b"[" * 1000 + b"]" * 1000, "[\n  [\n    …\n  ]\n]"),
    ],
)
def test_what_does_not_fit_ends_in_an_ellipsis_with_its_brackets_closed(
    body: bytes, view: str
) -> None:
    assert indented(body, limit=30) == JsonView(view, cut=True)


@pytest.mark.parametrize("body", [b"not json", b'{"a" 1}', b"[1 2]", b'{"a": 1} x', b"[1,]", b""])
def test_text_that_is_not_json_is_shown_as_it_is(body: bytes) -> None:
    assert indented(body, limit=100) == JsonView(body.decode(), cut=False)
    assert indented(body * 50, limit=20) == JsonView((body * 50).decode()[:20], cut=bool(body))


_SHAPES = {
    "many keys": lambda n: "{" + ",".join(f'"k{i:07d}":{i}' for i in range(n // 14)) + "}",
    "many objects": lambda n: "[" + ",".join(['{"a":1}'] * (n // 8)) + "]",
    "deep": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "a long string": lambda n: '{"a":"' + "x" * n + '"}',
    "escapes": lambda n: '{"a":"' + "\\u00e9" * (n // 6) + '"}',
    "spaces": lambda n: "{" + " " * n + '"a":1}',
}


@pytest.mark.parametrize("make", _SHAPES.values(), ids=_SHAPES.keys())
def test_the_work_is_bounded_by_the_view_not_the_document(make: Any) -> None:
    # A document four times as large costs what the view does: the same.
    assert growth(lambda n: make(n).encode(), lambda b: indented(b, limit=4096), 1 << 18) < BOUNDED
    view = indented(make(1 << 20).encode(), limit=4096)
    assert view.cut and len(view.text) <= 4096
