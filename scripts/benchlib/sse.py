"""Reading a Server-Sent Events stream: the one parser the bench and chaos clients share."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

__all__ = ["sse_events"]


async def sse_events(lines: AsyncIterator[str]) -> AsyncGenerator[tuple[str, str], None]:
    """``(event, data)`` for each event of a stream read line by line; comments are skipped."""
    event = "message"
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
