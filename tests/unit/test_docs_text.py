"""What the README and the docs tell a new user agrees with the code they describe.

Tool names as callers see them (``<connector>_<tool>``, one underscore).
"""

from __future__ import annotations

import re
from pathlib import Path

from agentws.connectors.native import ACTIONS

ROOT = Path(__file__).resolve().parent.parent.parent
README = ROOT / "README.md"
PAGES = [
    README,
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "agentws" / "dashboard" / "templates").glob("*.html")),
]
# A name with a double underscore inside it (``github__create_issue``), not a
# Python dunder (``__init__``, ``__anext__``).
_DOUBLE_UNDERSCORE = re.compile(r"(?<![\w.])(?!__)[a-z][a-z0-9]*__[a-z0-9][a-z0-9_]*\b")
NATIVE_TOOLS = {f"{kind.value}_{name}" for kind, actions in ACTIONS.items() for name in actions}


def test_no_page_names_a_tool_with_a_double_underscore() -> None:
    found = [
        f"{page.relative_to(ROOT)}: {match.group()}"
        for page in PAGES
        for match in _DOUBLE_UNDERSCORE.finditer(page.read_text())
    ]
    assert found == []


def test_the_audit_pages_tool_example_is_a_real_tool_name() -> None:
    page = (ROOT / "agentws" / "dashboard" / "templates" / "audit.html").read_text()
    match = re.search(r'name="tool"[^>]*placeholder="([^"]+)"', page)
    assert match is not None
    assert match.group(1) in NATIVE_TOOLS
    for page in PAGES:
        for name in re.findall(r"--tool (\S+)", page.read_text()):
            assert name in NATIVE_TOOLS, (page.name, name)
