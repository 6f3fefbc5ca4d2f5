"""Headless Chromium for tests that look at a page as a person would.

``chromium()`` launches the machine's Debian ``chromium`` (``.ci/run`` installs it when
missing) through Playwright, headless, with a throwaway profile and no network beyond
127.0.0.1: a request to any other host is aborted and shows up as a failed request, so a
page that would reach a CDN fails its test instead of hanging. ``watch(page)`` collects
what a person would see go wrong (console errors, uncaught exceptions, failed requests);
``serve(folder)`` serves a built site on a free local port.

Mermaid diagrams (Material for MkDocs) are drawn into a *closed* shadow root; the
browser is started with a script that opens shadow roots so a test can find the SVG.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

try:
    from playwright.sync_api import BrowserContext, Page, Route, sync_playwright
except ImportError:  # the dev set brings playwright; the core tests run without it
    if os.environ.get("ORCHESTRA_CORE_TESTS") != "1":
        raise
    pytest.skip(
        "the browser tests need playwright (the dev set): `make test` runs them",
        allow_module_level=True,
    )

#: Flags for a quiet, offline, reproducible headless browser (Playwright adds
#: ``--headless``; the profile is the ``user_data_dir`` of ``launch_persistent_context``).
FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attach.call(this, Object.assign({}, init, { mode: "open" }));
};
"""


def chromium_path() -> str:
    """The Chromium binary; fails the test with what to install when there is none."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.fail(
        "chromium is not installed: `apt-get install -y chromium` (.ci/run installs it)",
        pytrace=False,
    )


def _local_only(route: Route) -> None:
    host = urlsplit(route.request.url).hostname
    if host in (None, "", "127.0.0.1", "localhost"):
        route.continue_()
    else:
        route.abort("internetdisconnected")


@contextmanager
def chromium(
    width: int = 1280, height: int = 900, *, javascript: bool = True
) -> Iterator[BrowserContext]:
    """A headless Chromium context, offline but for 127.0.0.1, closed on exit.

    With ``javascript=False`` pages load several times faster: enough to measure a
    page's content, not to see what its scripts draw.
    """
    executable = chromium_path()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=executable,
            headless=True,
            args=list(FLAGS),
            viewport={"width": width, "height": height},
            java_script_enabled=javascript,
        )
        try:
            context.add_init_script(_OPEN_SHADOW_ROOTS)
            context.route("**/*", _local_only)
            yield context
        finally:
            context.close()


def watch(page: Page) -> list[str]:
    """Start collecting the page's console errors, uncaught errors and failed requests."""
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    return problems


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(folder: Path) -> Iterator[str]:
    """Serve ``folder`` over HTTP on 127.0.0.1; yields the base URL (ending in ``/``)."""
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
