"""Request bodies a handler can cap once it knows the route: :class:`CappedRequest`.

Bodies are limited per door, so the app sets no ``MAX_CONTENT_LENGTH``.
Quart's own limit would not bound a body sent without a length (chunked)
anyway: it measures what is waiting to be read, and the form parser reads
as it goes. :class:`CappedBody` counts every byte that arrives, so
``request.body.cap(n)`` (``CappedRequest`` is the app's request class)
holds the whole body to ``n`` bytes from the first byte, whether its length
was declared or not: past it, reading the body or its form raises
``RequestEntityTooLarge`` and what else arrives is dropped unread. The
files of a form refused half-read (too large, too many parts) are closed
then and there, not left to the garbage collector.
"""

from __future__ import annotations

from typing import IO, Any

from quart_trio.formparser import TrioFormDataParser
from quart_trio.wrappers.request import TrioBody, TrioRequest
from werkzeug.exceptions import RequestEntityTooLarge

__all__ = ["CappedBody", "CappedRequest"]


class CappedBody(TrioBody):
    """A request body that counts what arrives and can be held to a cap after routing."""

    def __init__(self, expected_content_length: int | None, max_content_length: int | None) -> None:
        super().__init__(expected_content_length, max_content_length)
        self._expected = expected_content_length
        self._received = 0
        self._cap: int | None = None
        self.over = False

    def cap(self, limit: int) -> bool:
        """Hold the whole body to ``limit`` bytes; False (and refused) if it is over already.

        A declared length over ``limit`` is over at once, before any byte is read.
        """
        self._cap = limit
        if (self._expected is not None and self._expected > limit) or self._received > limit:
            self._refuse()
        return not self.over

    async def __anext__(self) -> bytes:
        try:
            return await super().__anext__()
        except StopAsyncIteration:
            # Refused while the reader waited: the end it sees is not the body's.
            if self._must_raise is not None:
                raise self._must_raise from None
            raise

    def append(self, data: bytes) -> None:
        if self.over:
            return
        self._received += len(data)
        if self._cap is not None and self._received > self._cap:
            self._refuse()
            return
        super().append(data)

    def _refuse(self) -> None:
        self.over = True
        self._data.clear()
        self._must_raise = RequestEntityTooLarge()
        self.set_complete()


class _ClosingParser(TrioFormDataParser):
    """Quart-Trio's form parser, closing the files of a form it could not read to its end."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._opened: list[IO[bytes]] = []
        factory = self.stream_factory

        def opening(
            total: int | None, kind: str | None, name: str | None, length: int | None
        ) -> IO[bytes]:
            file = factory(total, kind, name, length)
            self._opened.append(file)
            return file

        self.stream_factory = opening

    async def parse(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().parse(*args, **kwargs)
        except BaseException:
            for file in self._opened:
                file.close()
            raise


class CappedRequest(TrioRequest):
    """Quart-Trio's request, with a :class:`CappedBody` and a parser that closes what it opened."""

    body_class = CappedBody
    form_data_parser_class = _ClosingParser
    body: CappedBody
