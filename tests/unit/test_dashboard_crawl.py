"""The benchmark's crawl of the dashboard (scripts/benchlib/dashboard_crawl.py), on fake pages."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from benchlib.dashboard_crawl import Answer, crawl, links

HTML = "text/html; charset=utf-8"


def test_links_are_same_origin_dashboard_paths_once_each() -> None:
    html = """
      <a href="/dashboard/w/acme/events">Events</a>
      <a href="events?cursor=2#top">Next</a>
      <a href="/dashboard/w/acme/events">Again</a>
      <a href="https://example.com/dashboard/x">Elsewhere</a>
      <a href="//example.com/dashboard/y">Elsewhere too</a>
      <a href="/hooks/agwh_x">Not the dashboard</a>
      <a href="#main">Skip</a>
      <a>No address</a>
    """
    assert links(html, "/dashboard/w/acme/webhooks") == [
        "/dashboard/w/acme/events",
        "/dashboard/w/acme/events?cursor=2",
    ]


def test_one_page_a_route_to_the_depth_following_redirects() -> None:
    site = {
        "/dashboard/": Answer(302, "text/html", "/dashboard/w/acme/home"),
        "/dashboard/w/acme/home": Answer(
            200,
            HTML,
            text='<a href="/dashboard/r/1">1</a><a href="/dashboard/r/2">2</a>'
            '<a href="/dashboard/export">x</a><a href="/dashboard/a">a</a>',
        ),
        "/dashboard/r/1": Answer(200, HTML, text='<a href="/dashboard/deep">deep</a>'),
        "/dashboard/a": Answer(200, HTML, text='<a href="/dashboard/b">b</a>'),
        "/dashboard/b": Answer(200, HTML, text='<a href="/dashboard/c">c</a>'),
        "/dashboard/deep": Answer(200, HTML),
        "/dashboard/export": Answer(200, "application/x-ndjson", text="{}"),
    }
    fetched: list[str] = []

    def fetch(path: str) -> Answer:
        fetched.append(path)
        return site[path]

    def route(path: str) -> str:
        return "record" if path.startswith("/dashboard/r/") else path

    pages = crawl(fetch, route, depth=2)
    assert [(p.path, p.depth) for p in pages] == [
        ("/dashboard/", 0),
        ("/dashboard/w/acme/home", 0),
        ("/dashboard/r/1", 1),  # /dashboard/r/2 is the same route
        ("/dashboard/export", 1),
        ("/dashboard/a", 1),
        ("/dashboard/deep", 2),
        ("/dashboard/b", 2),  # /dashboard/c is three links away
    ]
    assert fetched == [p.path for p in pages]
    assert not pages[3].html
