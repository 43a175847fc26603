"""Serving HTTP: what the doors share, and what the server process needs.

The plain-ASGI plumbing, Quart route tables and capped bodies, request
ids, the Quart-Trio fix, and the cycle collector's tuning. Only the doors
and the entry points import it.
"""
