"""The dashboard's pages, found by following its links as an operator would.

:func:`crawl` starts at the home page and follows every same-origin
``<a href>`` under ``/dashboard/`` (GET only: forms are not submitted), to
``depth`` links from the home page, keeping ONE page of each route: two
events' timelines are the same page to measure, but the events list and
its second page (``?cursor=…``) are not, so a route is the endpoint that
answers the path (:func:`route_matcher`, from the dashboard's own URL map)
and the names of its query's parameters. Pages the dashboard gains later
are found the same way, with nothing to list here.

A redirect (the home page sends you to a workspace) is followed at the
same depth. Only HTML pages are read for links; other answers (an export
download) are listed as found but not followed.

Some pages no link leads to (the OAuth consent page, where
``/oauth/authorize`` sends the browser; the sign-in page once signed in;
the Overview's ``overview.json``, which its script fetches): the crawl
takes a built URL for each route the links did not reach (``built``, made
with :func:`build_paths` from :func:`get_routes`, the blueprint's own GET
routes), so every route of the dashboard can be checked off.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Callable, Mapping
from html.parser import HTMLParser
from typing import Any, cast

import attrs

__all__ = [
    "Answer",
    "Page",
    "build_paths",
    "crawl",
    "endpoint_of",
    "get_routes",
    "links",
    "route_matcher",
]

PREFIX = "/dashboard/"
# A path segment that names one record (evt_k3…, apr_…, a number): one route for all.
_RECORD = re.compile(r"^(?:[a-z]{2,5}_[a-z0-9]{6,}|\d+)$")


@attrs.frozen
class Answer:
    """What one GET answered: its status, content type, redirect target and body."""

    status: int
    content_type: str
    location: str | None = None
    text: str = ""
    #: The body's length in bytes.
    size: int = 0


@attrs.frozen
class Page:
    """One page found: the first path of its route, and how far from the home page."""

    path: str
    route: str
    #: Links from the home page; -1 for a built URL (no link reached its route).
    depth: int
    status: int
    content_type: str
    size: int = 0

    @property
    def endpoint(self) -> str:
        return endpoint_of(self.route)

    @property
    def built(self) -> bool:
        return self.depth < 0

    @property
    def html(self) -> bool:
        return self.content_type.startswith("text/html")


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def links(html: str, page_path: str) -> list[str]:
    """The same-origin dashboard paths (with their query) ``html`` links to, in order, once each.

    ``page_path`` is where ``html`` was served (relative links are resolved
    against it); links to another origin, a fragment of the same page, or
    outside ``/dashboard/`` are left out.
    """
    parser = _Anchors()
    parser.feed(html)
    parser.close()
    found: list[str] = []
    for href in parser.hrefs:
        if href.strip().startswith("#"):
            continue
        target = urllib.parse.urlsplit(urllib.parse.urljoin(page_path, href.strip()))
        if target.scheme or target.netloc or not target.path.startswith(PREFIX):
            continue
        path = target.path + (f"?{target.query}" if target.query else "")
        if path not in found:
            found.append(path)
    return found


def _segments_route(path: str) -> str:
    return "/".join("<id>" if _RECORD.match(part) else part for part in path.split("/"))


@functools.cache
def _adapter() -> Any:
    """The dashboard's URL map, bound (built without a service: no handler is called)."""
    from quart import Quart

    from agentws.doors.dashboard.pages import dashboard_blueprint

    app = Quart("dashboard-routes")
    app.register_blueprint(dashboard_blueprint(cast(Any, None)))
    return app.url_map.bind("localhost")


def endpoint_of(route: str) -> str:
    """The endpoint of a route :func:`route_matcher` named (its query's names left out)."""
    return route.split("?", 1)[0]


def get_routes() -> dict[str, list[str]]:
    """Every GET route of the dashboard (static files aside): endpoint -> its URL's arguments."""
    return {
        rule.endpoint: sorted(rule.arguments)
        for rule in _adapter().map.iter_rules()
        if rule.endpoint.startswith("dashboard.")
        and rule.endpoint != "dashboard.static"
        and "GET" in (rule.methods or ())
    }


def build_paths(values: Mapping[str, str]) -> dict[str, str]:
    """A path for each GET route whose arguments ``values`` has (the others are left out)."""
    adapter = _adapter()
    return {
        endpoint: str(adapter.build(endpoint, {name: values[name] for name in arguments}))
        for endpoint, arguments in get_routes().items()
        if all(name in values for name in arguments)
    }


def route_matcher() -> Callable[[str], str | None]:
    """``route(path_and_query)``: the route a dashboard path is (None: a static file).

    The endpoint comes from the dashboard blueprint's own URL map; a path
    the map does not know keeps its shape, record ids made ``<id>``.
    """
    from werkzeug.exceptions import HTTPException

    adapter = _adapter()

    def route(path: str) -> str | None:
        split = urllib.parse.urlsplit(path)
        try:
            endpoint, _ = adapter.match(split.path, method="GET")
        except HTTPException:
            endpoint = _segments_route(split.path)
        if endpoint == "dashboard.static":
            return None
        names = sorted({name for name, _ in urllib.parse.parse_qsl(split.query, True)})
        return f"{endpoint}?{'&'.join(names)}" if names else str(endpoint)

    return route


def crawl(
    fetch: Callable[[str], Answer],
    route: Callable[[str], str | None],
    *,
    start: str = PREFIX,
    depth: int = 2,
    max_redirects: int = 5,
    built: Mapping[str, str] | None = None,
) -> list[Page]:
    """Every route reachable from ``start`` within ``depth`` links, one page each, in BFS order.

    Args:
        fetch: GETs a path (without following redirects).
        route: The route of a path (:func:`route_matcher`); None: not a page.
        start: The home page.
        depth: How many links away from ``start`` pages are still fetched.
        max_redirects: Redirects followed in a row from one link.
        built: Endpoint -> a path of it (:func:`build_paths`): fetched, after
            the links, for each endpoint no link reached (its page's depth -1).
    """
    pages: list[Page] = []
    seen: set[str] = set()
    queue: list[tuple[str, int]] = [(start, 0)]

    def visit(path: str, key: str, level: int) -> Answer:
        answer = fetch(path)
        pages.append(Page(path, key, level, answer.status, answer.content_type, answer.size))
        return answer

    while queue:
        path, level = queue.pop(0)
        key = route(path)
        if key is None or key in seen:
            continue
        seen.add(key)
        answer = visit(path, key, level)
        hops = 0
        while answer.location is not None and 300 <= answer.status < 400 and hops < max_redirects:
            hops += 1
            target = urllib.parse.urlsplit(urllib.parse.urljoin(path, answer.location))
            if target.netloc or not target.path.startswith(PREFIX):
                break
            path = target.path + (f"?{target.query}" if target.query else "")
            key = route(path)
            if key is None or key in seen:
                break
            seen.add(key)
            answer = visit(path, key, level)
        if level < depth and answer.status == 200 and answer.content_type.startswith("text/html"):
            queue.extend((link, level + 1) for link in links(answer.text, path))
    reached = {page.endpoint for page in pages}
    for endpoint, path in (built or {}).items():
        key = route(path)
        if endpoint not in reached and key is not None and key not in seen:
            seen.add(key)
            visit(path, key, -1)
    return pages
