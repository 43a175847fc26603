"""Helpers of ``scripts/chaos``: failure scenarios against real ``agentws serve`` processes.

Each scenario is a function of :mod:`chaoslib.scenarios` (or
:mod:`chaoslib.slow_client`) that returns a :class:`chaoslib.common.Outcome`;
``scripts/chaos.py`` runs them, prints the table and writes the JSON. The
process plumbing (children that never outlive the run, /proc readings) comes
from :mod:`benchlib`. Nothing here is imported by agentws itself.
"""
