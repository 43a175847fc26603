"""Administrators: accounts, dashboard sessions, admin API tokens, login throttling."""
