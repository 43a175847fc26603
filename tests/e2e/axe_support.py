"""An accessibility check of a page with axe-core (npm ``axe-core``, pinned in tests/node).

:func:`assert_accessible` runs axe on the page a :class:`~tests.e2e.browser_support.Tab`
shows and fails on every violation axe rates ``serious`` or ``critical``,
naming the rule, its help text and the first elements it found. axe is
evaluated through the DevTools protocol, which the page's strict
Content-Security-Policy does not govern: the page is checked as it is
served, with its CSP in force. Runs on the browser's thread, like every
helper of :mod:`tests.e2e.browser_support`.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.e2e.browser_support import Tab

__all__ = ["AXE_SOURCE", "accessibility_violations", "assert_accessible"]

AXE_SOURCE = (
    Path(__file__).resolve().parents[1] / "node" / "node_modules" / "axe-core" / "axe.min.js"
)
#: The impacts a page may not have.
BLOCKING = ("serious", "critical")


@cache
def _axe() -> str:
    if not AXE_SOURCE.exists():
        raise RuntimeError(f"{AXE_SOURCE} is missing: run scripts/test (npm ci in tests/node)")
    return AXE_SOURCE.read_text(encoding="utf-8")


def accessibility_violations(tab: Tab) -> list[dict[str, Any]]:
    """axe's serious and critical violations on the tab's page, as axe reports them."""
    page = tab.page
    if not page.evaluate("() => typeof window.axe === 'object'"):
        # axe's UMD wrapper sets window.axe when there is no module system.
        page.evaluate(f"() => {{ {_axe()}\n; return true; }}")
    result: dict[str, Any] = page.evaluate(
        """async () => {
          const r = await window.axe.run(document, {
            runOnly: {
              type: "tag",
              values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"],
            },
            resultTypes: ["violations"],
          });
          return {violations: r.violations.map(v => ({
            id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + n.failureSummary),
          }))};
        }"""
    )
    return [v for v in result["violations"] if v["impact"] in BLOCKING]


def assert_accessible(tab: Tab, where: str) -> None:
    """Fail when axe finds a serious or critical violation on the tab's page."""
    found = accessibility_violations(tab)
    lines = [
        f"{v['impact']} {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in found
    ]
    assert not found, f"{where} ({tab.page.url}): accessibility violations:\n" + "\n".join(lines)
