"""What the README and the docs tell a new user agrees with the code they describe.

Tool names as callers see them (``<connector>_<tool>``, one underscore),
and the prerequisites ``scripts/test`` installs or stops without.
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
    *sorted((ROOT / "agentws" / "doors" / "dashboard" / "templates").glob("*.html")),
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
    page = (ROOT / "agentws" / "doors" / "dashboard" / "templates" / "audit.html").read_text()
    match = re.search(r'name="tool"[^>]*placeholder="([^"]+)"', page)
    assert match is not None
    assert match.group(1) in NATIVE_TOOLS
    for page in PAGES:
        for name in re.findall(r"--tool (\S+)", page.read_text()):
            assert name in NATIVE_TOOLS, (page.name, name)


def test_the_readme_names_what_scripts_test_needs_and_installs() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    readme = README.read_text()
    # Debian packages it installs as root (and warns about otherwise).
    packages = re.findall(r"^apt_install (\S+) (\S+)$", script, re.MULTILINE)
    assert packages, "scripts/test no longer installs packages: update this test"
    for _, package in packages:
        assert f"`{package}`" in readme, package
    # What it says when not root, word for word.
    assert 'is not installed; the tests that need it will fail (apt-get install $2)"' in script
    assert "is not installed; the tests that need it will fail (apt-get install chromium)" in readme
    assert "**as root**" in readme
    # It stops without npm; Node's MCP SDK needs Node.js 20.
    assert "npm is not installed" in script
    assert "exit 1" in script
    assert "**npm, with Node.js 20 or newer**" in readme
