"""Calls made on demand from every door: a connector's test and refresh."""
