"""What happens when a non-system caller calls a tool: the pure decision, no I/O.

Three things decide it: the tool's *capability* (what it can do to the
world), its *permission* (what an admin said non-system callers get, or the
default for its capability), and the caller's *scope* (the highest
capability its token may use)::

    capability above the scope        -> DENY
    permission deny                   -> DENY
    permission allow                  -> RUN      (a destructive tool: CONFIRM)
    permission requires_confirmation  -> CONFIRM
    permission requires_approval      -> QUEUE
    pre-authorized write tool         -> RUN      (unless denied)

A destructive tool never runs on a caller's word alone: an ``allow`` on one
is read as ``requires_confirmation`` (and refused when an admin tries to set
it). MCP callers are never system actors, so nothing here can let a write
run without the permission an admin gave it.

Permissions are ordered by how much they ask before a call runs:
``allow`` < ``requires_confirmation`` (the caller confirms) <
``requires_approval`` (an admin approves) < ``deny``.
"""

from __future__ import annotations

from enum import StrEnum

from agentws.domain.models import Capability, Permission, default_permission

__all__ = [
    "Decision",
    "decide",
    "effective_permission",
    "looser_than",
    "permission_allowed",
    "strictness",
]

_STRICTNESS = {
    Permission.ALLOW: 0,
    Permission.REQUIRES_CONFIRMATION: 1,
    Permission.REQUIRES_APPROVAL: 2,
    Permission.DENY: 3,
}


class Decision(StrEnum):
    """What the gate does with one call."""

    RUN = "run"  # run it now
    QUEUE = "queue"  # queue it for an admin's approval
    CONFIRM = "confirm"  # ask the caller to confirm, synchronously
    DENY = "deny"  # refuse: "permission denied"


def strictness(permission: Permission) -> int:
    """How much ``permission`` asks before a call runs (higher asks more)."""
    return _STRICTNESS[permission]


def looser_than(permission: Permission, other: Permission) -> bool:
    """Whether ``permission`` asks less than ``other`` before a call runs."""
    return strictness(permission) < strictness(other)


def permission_allowed(capability: Capability, permission: Permission) -> bool:
    """Whether an admin may give a tool of ``capability`` this permission.

    Everything is allowed except ``allow`` on a destructive tool: those
    always need the caller's confirmation or an admin's approval.
    """
    return not (capability is Capability.DESTRUCTIVE and permission is Permission.ALLOW)


def effective_permission(
    capability: Capability,
    configured: Permission | None,
    *,
    configured_for_this_definition: bool = True,
) -> Permission:
    """The permission a call gets: the configured one, or the capability's default.

    Args:
        configured: what an admin set for the tool (group, else workspace), if anything.
        configured_for_this_definition: False when the tool's definition has
            changed since the admin set it; a permission looser than the
            default then no longer applies, a stricter one still does.
    """
    default = default_permission(capability)
    if configured is None:
        return default
    if not configured_for_this_definition and looser_than(configured, default):
        return default
    return configured


def decide(
    capability: Capability,
    permission: Permission,
    scope: Capability,
    *,
    preauthorized: bool = False,
) -> Decision:
    """What to do with a call of a ``capability`` tool with ``permission`` by a ``scope`` caller.

    ``preauthorized``: an admin authorized this write tool for this caller at
    configuration time (a webhook's ``--allow-tool``); it then runs without
    approval or confirmation. It never applies to a destructive tool, and a
    ``deny`` still holds.
    """
    if not capability.within(scope) or permission is Permission.DENY:
        return Decision.DENY
    if preauthorized and capability is Capability.WRITE:
        return Decision.RUN
    if permission is Permission.REQUIRES_APPROVAL:
        return Decision.QUEUE
    if permission is Permission.REQUIRES_CONFIRMATION or capability is Capability.DESTRUCTIVE:
        return Decision.CONFIRM
    return Decision.RUN
