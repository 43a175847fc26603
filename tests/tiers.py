"""How deep the suite goes: the default run, or the thorough tier.

The default run (``scripts/test``, and CI) is the quick one. The thorough tier
(``AGENTWS_THOROUGH=1``, or ``scripts/test --thorough``) is for a release or
after a change to what a property, a fuzz run or a dashboard journey covers.
It differs in three ways:

- depth: how many examples a property (hypothesis), a fuzz run or
  schemathesis draws, and how many events a load test sends
  (:func:`examples`); the default run draws a share of them, enough to find
  what they are there to find;
- slow repeats: tests marked ``thorough`` (long browser journeys whose
  actions a default-run test checks at the HTTP level) run in it only
  (``tests/conftest.py`` leaves them out otherwise);
- pictures: browser pages are photographed into ``test-artifacts/screenshots/``
  (``AGENTWS_SCREENSHOTS=1`` asks for them in the default run); the axe check
  of each page runs in both.

Both are deterministic where the test fixes its seed, so a default run that
passes passes again.
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
