"""Incoming webhooks: management, the HTTP door, the queue's worker."""
