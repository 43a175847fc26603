"""The base every layer may use.

The error tree, logging, metrics, redaction of outside text, and the
loops and waits every layer shares.
"""
