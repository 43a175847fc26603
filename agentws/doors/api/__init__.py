"""The admin JSON API under ``/api/v1``: the service layer's operations for scripts."""
