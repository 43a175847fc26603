"""Headless Chromium, driven by Playwright's sync API from trio tests.

Playwright's sync API belongs to the thread that started it, while the
server under test runs in the test's trio loop. :class:`Browser` therefore
drives one dedicated worker thread: Playwright is started there, Debian's
Chromium (``/usr/bin/chromium``: Playwright's own browser download does not
work here) is launched there, and every page is made and driven there. The
thread and the browser are the test process's, started by its first browser
test and stopped at the end of the session; each test's tabs are browser
contexts of its own (no cookies or storage shared), closed when it ends.
Tests write the browser's steps as plain functions of a :class:`Tab` and
hand them to :meth:`Browser.run`, which waits for the result without
blocking the trio loop, so the server keeps answering meanwhile.

Every tab records the console's errors and the page's uncaught exceptions
(:meth:`Tab.assert_clean`) and the dialogs it answered. The helpers sign an
admin in, take screenshots (``test-artifacts/screenshots/`` at the
repository root, in the thorough tier or with ``AGENTWS_SCREENSHOTS=1``;
each page photographed is checked with axe first, in every tier) and
check that a page fits its viewport without horizontal scrolling.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import re
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import attrs
import trio
from playwright.sync_api import (
    Browser as PlaywrightBrowser,
)
from playwright.sync_api import (
    BrowserContext,
    ConsoleMessage,
    Dialog,
    Error,
    Page,
    Playwright,
    sync_playwright,
)

from tests.e2e.axe_support import assert_accessible
from tests.tiers import THOROUGH

__all__ = [
    "CHROMIUM",
    "DESKTOP",
    "PHONE",
    "SCREENSHOTS",
    "Browser",
    "Tab",
    "close_shared_browser",
    "fits",
    "landed",
    "open_browser",
    "sign_in",
]

CHROMIUM = "/usr/bin/chromium"
#: Whether every page checked is photographed (see :meth:`Browser.screenshot`).
PHOTOGRAPH = THOROUGH or os.environ.get("AGENTWS_SCREENSHOTS", "") not in ("", "0")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
#: How long a Playwright action or assertion waits before failing.
ACTION_MS = 10_000
DESKTOP = (1280, 800)
PHONE = (390, 844)

P = ParamSpec("P")
T = TypeVar("T")


@attrs.define
class Tab:
    """A page in its own browser context (its own cookies), and what happened in it."""

    page: Page
    context: BrowserContext
    #: Console messages of type ``error`` and uncaught exceptions, in order.
    errors: list[str] = attrs.field(factory=list)
    #: The messages of the dialogs (``window.confirm``…) the tab accepted.
    dialogs: list[str] = attrs.field(factory=list)
    #: Paths whose failed loads are set aside in ``tolerated`` rather than ``errors``.
    tolerate: tuple[str, ...] = ()
    tolerated: list[str] = attrs.field(factory=list)

    def watch(self) -> None:
        # Plain functions: Playwright tags its handlers with attributes, which
        # the bound methods of a slotted class do not take.
        self.page.on("console", lambda message: self._console(message))
        self.page.on("pageerror", lambda error: self._page_error(error))
        self.page.on("dialog", lambda dialog: self._dialog(dialog))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location.get("url", "")
            text = f"console error at {self.page.url} ({where}): {message.text}"
            path = urllib.parse.urlsplit(where).path
            (self.tolerated if path in self.tolerate else self.errors).append(text)

    def _page_error(self, error: Error) -> None:
        self.errors.append(f"uncaught exception at {self.page.url}: {error.message}")

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.accept()

    def assert_clean(self, where: str) -> None:
        """Fail when the console logged an error or a script threw, since the last check."""
        found, self.errors[:] = list(self.errors), []
        assert not found, f"{where}: " + "\n".join(found)


class _Chromium:
    """Playwright and Chromium on a thread of their own, shared by the tests of a process.

    Starting them costs more than a second of CPU (Playwright's driver, then
    Chromium); each test's pages are in browser contexts of its own, closed
    when the test ends. Started on first use, again if Chromium went away, and
    stopped at the end of the session (:func:`close_shared_browser`).
    """

    def __init__(self) -> None:
        self.thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="playwright", initializer=_plain_asyncio
        )
        self._playwright: Playwright | None = None
        self._browser: PlaywrightBrowser | None = None

    def running(self) -> PlaywrightBrowser:
        """The browser, started if it is not running. (Browser thread.)"""
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        self.stop()
        playwright = sync_playwright().start()
        try:
            self._browser = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                # Tests run as root, where Chromium refuses its sandbox.
                args=["--no-sandbox"],
            )
        except BaseException:
            playwright.stop()
            raise
        self._playwright = playwright
        return self._browser

    def stop(self) -> None:
        """Close the browser and Playwright. (Browser thread.)"""
        try:
            if self._browser is not None:
                with contextlib.suppress(Error):
                    self._browser.close()
        finally:
            self._browser = None
            if self._playwright is not None:
                self._playwright.stop()
                self._playwright = None


_shared: list[_Chromium] = []
# Stopping the shared browser at the end of the session; a bound on a hang.
_STOP_S = 30.0
# Closing a test's tabs when it ends; a bound on a hang (the next test's calls
# then wait behind it on the browser's thread, each with its own timeout).
_CLOSE_TABS_S = 30.0


def close_shared_browser() -> None:
    """Stop the process's Chromium and Playwright, if a test started them."""
    while _shared:
        chromium = _shared.pop()
        try:
            chromium.thread.submit(chromium.stop).result(timeout=_STOP_S)
        finally:
            # Not waited for: a stop that outlasted its bound must not hang the session.
            chromium.thread.shutdown(wait=False, cancel_futures=True)


class Browser:
    """One test's use of the process's Chromium; see the module's docstring."""

    def __init__(self, label: str, screenshots: Path = SCREENSHOTS) -> None:
        self.label = label
        self.screenshots = screenshots
        if not _shared:
            _shared.append(_Chromium())
        self._chromium = _shared[0]
        self._thread = self._chromium.thread
        self._browser: PlaywrightBrowser | None = None
        self._contexts: list[BrowserContext] = []

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the browser's thread; its result (or its exception).

        Waiting is cancellable; a call already running finishes on its own
        (every Playwright action has a timeout, :data:`ACTION_MS`).
        """
        future = self._thread.submit(fn, *args, **kwargs)
        token = trio.lowlevel.current_trio_token()
        done = trio.Event()

        def wake(_: concurrent.futures.Future[T]) -> None:
            # Once the test is over, nobody waits for this result.
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(done.set)

        future.add_done_callback(wake)
        try:
            await done.wait()
        except BaseException:
            future.cancel()
            raise
        return future.result()

    async def new_tab(
        self,
        viewport: tuple[int, int] = DESKTOP,
        *,
        tolerate: tuple[str, ...] = (),
        scripts: bool = True,
    ) -> Tab:
        """A fresh context (no cookies) with one page at ``viewport`` (width, height).

        Failed loads of the paths in ``tolerate`` are not errors of this tab.
        ``scripts=False`` turns the pages' JavaScript off (what a page is without it);
        Playwright's locators and screenshots still work there, but ``page.evaluate``
        never returns, so neither axe nor :func:`fits` can check such a page.
        """
        return await self.run(self._new_tab, viewport, tolerate, scripts)

    def _new_tab(
        self, viewport: tuple[int, int], tolerate: tuple[str, ...], scripts: bool = True
    ) -> Tab:
        assert self._browser is not None, "the browser is not running"
        width, height = viewport
        context = self._browser.new_context(
            viewport={"width": width, "height": height}, java_script_enabled=scripts
        )
        self._contexts.append(context)
        context.set_default_timeout(ACTION_MS)
        tab = Tab(context.new_page(), context, tolerate=tolerate)
        tab.watch()
        return tab

    def screenshot(self, tab: Tab, name: str, *, accessible: bool = True) -> Path:
        """Check the page with axe and photograph it; the picture's path. (Browser thread.)

        Every page photographed is first checked with axe
        (:func:`tests.e2e.axe_support.assert_accessible`), unless ``accessible``
        is False (a test that checks and reports on its own). The picture
        (:meth:`save`) is taken in the thorough tier or with
        ``AGENTWS_SCREENSHOTS=1``: a full-page PNG costs the default run a
        sixth of its browser time and asserts nothing. A test that finds a
        problem on the page saves it whatever the tier.
        """
        if accessible:
            assert_accessible(tab, f"{self.label}: {name}")
        if PHOTOGRAPH:
            return self.save(tab, name)
        return self._path(tab, name)

    def save(self, tab: Tab, name: str) -> Path:
        """Save the whole page as ``<label>-<name>-<width>.png``; its path. (Browser thread.)"""
        path = self._path(tab, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        tab.page.screenshot(path=str(path), full_page=True)
        return path

    def _path(self, tab: Tab, name: str) -> Path:
        size = tab.page.viewport_size
        width = size["width"] if size else 0
        return self.screenshots / f"{self.label}-{_file_part(name)}-{width}.png"

    def _start(self) -> None:
        self._browser = self._chromium.running()

    def _stop(self) -> None:
        # This test's contexts (its tabs, their cookies); the browser stays for the next test.
        contexts, self._contexts = self._contexts, []
        for context in contexts:
            with contextlib.suppress(Error):
                context.close()
        self._browser = None


def _plain_asyncio() -> None:
    """Give the browser's thread asyncio's own loops (Playwright's sync API runs one).

    agentws imports trio-asyncio, whose event loop policy would make Playwright's
    loop a trio-asyncio one; a policy set outside trio is this thread's alone.
    """
    asyncio.set_event_loop_policy(asyncio.DefaultEventLoopPolicy())


def _file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "page"


@asynccontextmanager
async def open_browser(label: str) -> AsyncIterator[Browser]:
    """Chromium for the block; the tabs opened in it are closed after it, even on failure.

    ``label`` begins the names of the screenshots (usually the test's name).
    """
    browser = Browser(label)
    try:
        await browser.run(browser._start)
        yield browser
    finally:
        with trio.move_on_after(_CLOSE_TABS_S, shield=True):
            await browser.run(browser._stop)


# --- helpers that run on the browser's thread ---------------------------------------------------


def sign_in(tab: Tab, base_url: str, username: str, password: str, *, path: str = "") -> None:
    """Open the sign-in form (for ``path`` next), fill it in and submit it.

    It does not check the outcome: the test looks at the page it lands on.
    """
    query = "?" + urllib.parse.urlencode({"next": path}) if path else ""
    target = f"{base_url}/dashboard/login{query}"
    tab.page.goto(target)
    tab.page.fill("#username", username)
    tab.page.fill("#password", password)
    with tab.page.expect_navigation():
        tab.page.get_by_role("button", name="Sign in").click()


def fits(tab: Tab) -> tuple[bool, dict[str, Any]]:
    """Whether the page has no horizontal overflow at its viewport; the measures, to report.

    The measures name the widest elements that stick out past the viewport's
    right edge, so a failure says where to look.
    """
    measures: dict[str, Any] = tab.page.evaluate(
        """() => {
          const width = window.innerWidth;
          const clipped = (el) => {
            for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
              if (getComputedStyle(up).overflowX !== "visible") return true;
            }
            return false;
          };
          const out = [];
          for (const el of document.body.querySelectorAll("*")) {
            if (clipped(el)) continue;  // a scrolling box (a .table-wrap) keeps it in
            const box = el.getBoundingClientRect();
            const spills = getComputedStyle(el).overflowX === "visible";
            const right = spills ? Math.max(box.right, box.left + el.scrollWidth) : box.right;
            if (box.width > 0 && right > width + 1) {
              const id = el.id ? "#" + el.id : "";
              const cls = el.classList.length ? "." + [...el.classList].join(".") : "";
              const text = el.textContent.trim().replace(/\\s+/g, " ").slice(0, 40);
              const name = el.tagName.toLowerCase() + id + cls;
              out.push(`${name} to ${Math.round(right)} px: ${text}`);
            }
          }
          return {
            scrollWidth: document.documentElement.scrollWidth,
            innerWidth: width,
            sticking_out: out.slice(0, 8),
          };
        }"""
    )
    return measures["scrollWidth"] <= measures["innerWidth"] + 1, measures


def landed(browser: Browser, tab: Tab, name: str, problems: list[str]) -> None:
    """(Browser thread.) The page an action landed on: photographed (axe), fits, no errors.

    An overflow is added to ``problems`` (reported at the test's end, after the
    other pages are photographed); an axe violation or a console error fails at once.
    """
    browser.screenshot(tab, name)
    ok, measures = fits(tab)
    if not ok:
        problems.append(f"{name} overflows: {measures} (see {browser.save(tab, name).name})")
    tab.assert_clean(name)
