"""Helpers of ``scripts/bench``: corpus, servers, load clients, reports.

Each benchmark mode is one script (``scripts/bench_<mode>.py``); what they
share lives here. Every mode measures load with :mod:`benchlib.load` (the
measured window, the request loops, the latency figures) and processes with
:mod:`benchlib.procs` (starting, stopping and reading the services under
test); the larger modes keep their reports in ``<mode>_report`` modules.
Nothing in this package is imported by agentws itself.
"""
