"""Helpers of ``scripts/chaos``: failure scenarios against real ``agentws serve`` processes.

Each scenario is a function of :mod:`chaoslib.scenarios` (or
:mod:`chaoslib.db_restart`, :mod:`chaoslib.slow_client`) that fills in a
:class:`chaoslib.common.Outcome`, with the steps of :mod:`chaoslib.steps`;
``scripts/chaos.py`` runs them, prints the table and writes the JSON. The
process plumbing (children that never outlive the run, /proc readings) comes
from :mod:`benchlib`. Nothing here is imported by agentws itself.
"""
