"""MCP log levels, and the log message that tells a session what became of a queued call."""

from __future__ import annotations

from typing import Any

from mcp_types import LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParams

__all__ = ["LOG_LEVELS", "outcome_notification", "wanted"]

#: MCP log levels, lowest first (RFC 5424 severities).
LOG_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def wanted(level: str, threshold: str | None) -> bool:
    """Whether a client that set ``threshold`` (``logging/setLevel``; None: all) hears ``level``."""
    if threshold not in LOG_LEVELS or level not in LOG_LEVELS:
        return True
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(threshold)


def outcome_notification(
    data: dict[str, Any], threshold: str | None
) -> LoggingMessageNotification | None:
    """A queued call's outcome (``outcome_data``) as a log message, unless below ``threshold``."""
    level: LoggingLevel = "warning"
    if data["status"] == "executed":
        level = "notice"
    elif data["status"] == "failed":
        level = "error"
    if not wanted(level, threshold):
        return None
    return LoggingMessageNotification(
        params=LoggingMessageNotificationParams(level=level, logger="agentws.approvals", data=data)
    )
