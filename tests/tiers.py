"""How deep the suite goes: the default run, or the thorough tier.

Every test runs in both. What the tier changes is depth: how many examples a
property (hypothesis), a fuzz run or schemathesis draws, and how many events
a load test sends. The default run
draws a share of them, enough to find what they are there to find, and keeps
the suite well under ten minutes on two cores; the thorough tier
(``AGENTWS_THOROUGH=1``, or ``scripts/test --thorough``) draws the full
counts, for a release or after a change to what a property covers. Both are
deterministic where the test fixes its seed, so a default run that passes
passes again.
"""

from __future__ import annotations

import os

__all__ = ["THOROUGH", "examples"]

#: Whether this is the thorough tier (``AGENTWS_THOROUGH`` set to anything but "" or "0").
THOROUGH = os.environ.get("AGENTWS_THOROUGH", "") not in ("", "0")


def examples(thorough: int, default: int) -> int:
    """The count (of examples, of events) for this tier: ``thorough`` in the
    thorough tier, else ``default``."""
    assert 0 < default <= thorough, (default, thorough)
    return thorough if THOROUGH else default
