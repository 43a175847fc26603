"""A dashboard form's body held to a size before anything reads it: :func:`capped`.

The app sets no overall body limit (each door has its own), so a form
page says how large its request may be: the sign-in form a few KiB, a
document upload its file's limit and room for the fields. A body over the
cap, whether its length was declared or it is found so while it is read
(:class:`agentws.http.request_bodies.CappedBody`), and a form with more parts
than Quart parses (``MAX_FORM_PARTS``, a folder of a thousand files), is
answered by the page's own refusal (a page with a notice saying why), not
by a bare 413.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from quart import Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from agentws.http.request_bodies import CappedBody

__all__ = ["Refusal", "capped"]

P = ParamSpec("P")
R = TypeVar("R")

#: What a page answers a refused body with: given the page's arguments (its
#: services, then its path's), and whether the body was over the cap (else the
#: form held more parts, or a longer field, than Quart parses).
Refusal = Callable[[tuple[Any, ...], dict[str, Any], bool], Awaitable[Response]]


def _within(limit: int) -> bool:
    body = request.body
    if isinstance(body, CappedBody):
        return body.cap(limit)
    length = request.content_length  # an app without the capped request class
    return length is None or length <= limit


def _closing(response: Response) -> Response:
    # The rest of the body is never read, so the connection cannot carry another
    # request: saying so keeps a client from sending its next one down it.
    response.headers["Connection"] = "close"
    return response


def capped(
    limit: int, refused: Refusal
) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R | Response]]]:
    """Hold the request's body to ``limit`` bytes; answer ``refused`` past it.

    Put it above :func:`~agentws.doors.dashboard.session.signed_in`, which reads a
    signed-in admin's form: the cap is set before that, and a stranger's body
    is never read.
    """

    def wrap(page: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R | Response]]:
        @functools.wraps(page)
        async def wrapped(*args: P.args, **kwargs: P.kwargs) -> R | Response:
            if not _within(limit):
                return _closing(await refused(args, kwargs, True))
            try:
                return await page(*args, **kwargs)
            except RequestEntityTooLarge:
                body = request.body
                over = isinstance(body, CappedBody) and body.over
                return _closing(await refused(args, kwargs, over))

        return wrapped

    return wrap
