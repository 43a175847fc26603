"""Helpers of ``scripts/bench``: corpus, servers, load clients, reports.

Each benchmark mode is one script (``scripts/bench_<mode>.py``); what they
share lives here. Nothing in this package is imported by agentws itself.
"""
