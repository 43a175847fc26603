"""Which model runs the agent: Anthropic's when a key is set, the offline digest otherwise."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from agentws.agent.model import ModelClient
from agentws.agent.offline import OfflineModel
from agentws.settings.config import Settings

__all__ = ["describe_model", "open_model"]

# Closing the API client's connections must finish, but not hang shutdown.
_CLOSE_S = 5.0


@asynccontextmanager
async def open_model(settings: Settings) -> AsyncIterator[ModelClient]:
    """The model the settings call for (``ANTHROPIC_API_KEY`` set: ``AGENTWS_MODEL``).

    Resource handling:
        The API client's connections are closed when the block exits.
    """
    if not settings.anthropic_api_key:
        yield OfflineModel()
        return
    # Imported only when it runs: the API client's import is most of the
    # service's start-up time, which a service on the offline model need not pay.
    from agentws.agent.anthropic_model import AnthropicModel

    model = AnthropicModel.from_settings(settings)
    try:
        yield model
    finally:
        # Closing happens on the way out of a cancelled service too.
        with trio.move_on_after(_CLOSE_S, shield=True):
            await model.aclose()


def describe_model(settings: Settings) -> str:
    """What runs the agent, for people: the model and where it comes from."""
    if not settings.anthropic_api_key:
        return "offline digest (no ANTHROPIC_API_KEY)"
    where = settings.anthropic_base_url or "Anthropic API"
    return f"{settings.model} ({where})"
