"""What a group endpoint answers: the SDK's lowlevel ``Server`` with our handlers.

Tools, prompts, resources and completion, confirmation of destructive
calls, list changes, and the stateless (2026-07-28) revision.
"""
