"""The built docs site, read as a user reads it: every public name, pages in a browser.

``make docs-check`` runs these on the site ``make docs`` just built
(``ORCHESTRA_DOCS_SITE=site``); run alone, they build the site first into a temporary
folder (``scripts/docs_assets.py`` then ``mkdocs build --strict``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from types import ModuleType

import pytest

from tests.helpers.browser import chromium, serve, watch

pytestmark = pytest.mark.docs_site

ROOT = Path(__file__).resolve().parent.parent
#: Packages whose ``__all__`` the API reference must cover. ``orchestra.cli`` is the
#: command, documented on the CLI page from the command itself.
PACKAGES = (
    "orchestra",
    "orchestra.dag",
    "orchestra.executors",
    "orchestra.bridge",
    "orchestra.bridge.testing",
    "orchestra.agents",
    "orchestra.bridge",
    "orchestra.skills",
    "orchestra.tracing",
    "orchestra.tracing.names",
    "orchestra.journal",
    *sorted(p.parent.name for p in ROOT.glob("integrations/*/orchestra_*/__init__.py")),
)
#: The pages allowed to be long: the reference a hook author reads end to end, and the
#: changelog, one line per change (about 22,000 px at 1280 px wide by now).
LONG_PAGES = {"reference/hook-protocol/", "changelog/"}
# CSS pixels, at 1280 px wide: the longest other pages (the journal how-to and reference)
# reach about 13,500; a layout that breaks (a table or a diagram that runs away) goes far
# past it.
MAX_HEIGHT = 16000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site: ``$ORCHESTRA_DOCS_SITE``, or a fresh strict build."""
    given = os.environ.get("ORCHESTRA_DOCS_SITE")
    if given:
        path = (ROOT / given).resolve()
        assert (path / "index.html").is_file(), f"no built site at {path}: run `make docs`"
        return path
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    for args in (
        [sys.executable, "scripts/docs_assets.py"],
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
    ):
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}{done.stderr}"
    return out


class _Page(HTMLParser):
    """The ids, code texts and link targets of one built page."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: set[str] = set()
        self.code: set[str] = set()
        self.cells: set[str] = set()  # code in table cells: a constants table
        self.h1 = ""
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.hrefs.add(str(found["href"]))
        self._in.append(tag)

    def handle_endtag(self, tag: str) -> None:
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if "code" in self._in:
            self.code.add(data.strip())
            if "td" in self._in:
                self.cells.add(data.strip())
        if "h1" in self._in:
            self.h1 += data


def _pages(site: Path) -> dict[str, _Page]:
    pages = {}
    for html in sorted(site.glob("reference/api*/index.html")):
        page = _Page()
        page.feed(html.read_text())
        pages[html.parent.name] = page
    return pages


def _own_pages(pages: dict[str, _Page], package: str) -> list[_Page]:
    """The pages of a package: titled `API: package`, else its closest parent's."""
    titled: dict[str, list[_Page]] = {}
    for page in pages.values():
        found = re.match(r"API:\s*([\w.]+)", page.h1.strip())
        if found:
            titled.setdefault(found.group(1), []).append(page)
    for prefix in sorted(titled, key=len, reverse=True):
        if package == prefix or package.startswith(f"{prefix}."):
            return titled[prefix]
    return []


_LOADED: dict[str, ModuleType] = {}


def _load(package: str) -> ModuleType:
    """The package, imported; an integration not installed in this venv (CrewAI has a venv
    of its own, see the Makefile) as its ``__init__``'s ``__all__``, read, not run."""
    if package in _LOADED:
        return _LOADED[package]
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError:
        if importlib.util.find_spec(package) is not None or not package.startswith("orchestra_"):
            raise  # installed here, and broken
        [init] = ROOT.glob(f"integrations/*/{package}/__init__.py")
        names = next(
            ast.literal_eval(node.value)
            for node in ast.parse(init.read_text()).body
            if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        )
        module = ModuleType(package)
        module.__all__ = list(names)
        for name in names:
            setattr(module, name, object())  # its own object: a home of its own
    _LOADED[package] = module
    return module


def _homes(module: ModuleType, name: str) -> set[str]:
    """Every public path of an object: ``orchestra.Retry``, ``orchestra.agents.Fork``..."""
    obj = getattr(module, name)
    paths = {f"{module.__name__}.{name}"}
    for other in PACKAGES:
        mod = _load(other)
        if name in getattr(mod, "__all__", ()) and getattr(mod, name) is obj:
            paths.add(f"{other}.{name}")
    return paths


def test_every_public_name_is_in_the_api_reference(site: Path) -> None:
    pages = _pages(site)
    assert pages, "no reference/api*.md page was built"
    every_id = set().union(*(p.ids for p in pages.values()))
    missing = []
    for package in PACKAGES:
        module = _load(package)
        own = _own_pages(pages, package)
        assert own, (
            f"no API page has the title `API: {package}`: add docs/reference/api-*.md "
            "(docs/reference/api-dask.md is a small one to copy) and its line in mkdocs.yml"
        )
        for name in module.__all__:
            homes = _homes(module, name)
            documented = bool(homes & every_id)  # its own heading somewhere
            mentioned = any(
                homes & page.ids
                or name in page.code
                or any(href.endswith(tuple(f"#{h}" for h in homes)) for href in page.hrefs)
                for page in own
            )
            constant = name.isupper() and any(name in page.cells for page in own)
            if not (mentioned and (documented or constant)):
                missing.append(f"{package}.{name}")
    assert not missing, (
        "public names missing from the API reference (add `::: package.Name` to the "
        f"package's docs/reference/api-*.md page): {', '.join(missing)}"
    )


def test_every_example_script_is_on_the_examples_page(site: Path) -> None:
    page = (site / "examples" / "index.html").read_text()
    scripts = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "examples").rglob("*.py"))
    assert scripts
    missing = [s for s in scripts if s not in page]
    assert not missing, f"examples not on docs/examples.md: {missing}"
    for output in (site / "generated" / "examples").glob("*.txt"):
        assert output.read_text().strip(), f"{output.name}: the example printed nothing"


def test_the_trace_picture_is_generated_and_offline(site: Path) -> None:
    svg = (site / "generated" / "trace-show.svg").read_text()
    assert svg.startswith("<svg")
    assert "research-report" in svg  # the demo's DAG, drawn
    assert "@font-face" not in svg  # a picture that would fetch its font from a CDN


def test_the_sitemap_lists_every_page(site: Path) -> None:
    """``site_url`` is set, so the sitemap lists every page."""
    sitemap = (site / "sitemap.xml").read_text()
    listed = {loc.split("/", 3)[-1] for loc in re.findall(r"<loc>([^<]+)</loc>", sitemap)}
    assert set(_all_pages(site)) <= listed


def _all_pages(site: Path) -> Iterator[str]:
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        if not rel.startswith(("generated", "assets")):
            yield "" if rel == "." else f"{rel}/"


def _drawn(site: Path, path: str) -> bool:
    """Whether a page has pictures: mermaid diagrams or images."""
    html = (site / path / "index.html").read_text()
    return 'class="mermaid"' in html or "<img " in html


#: Pages a reader lands on first, and how many diagrams each shows.
LANDING_PAGES = {"": 1, "concepts/hooks/": 2, "reference/api/": 0}


def test_pages_render_in_a_browser(site: Path) -> None:
    """No console error, no outside request, every diagram an SVG, no endless page.

    The landing pages and every page with a picture are opened as a reader gets them;
    the other pages are only measured, with scripts off (several times faster).
    """
    pages = list(_all_pages(site))
    assert set(LANDING_PAGES) <= set(pages)
    drawn = [p for p in pages if p in LANDING_PAGES or _drawn(site, p)]
    heights = {}
    with serve(site) as base:
        with chromium(width=1280, height=900) as browser:
            for path in drawn:
                page = browser.new_page()
                problems = watch(page)
                page.goto(base + path, wait_until="load")
                if page.locator(".mermaid").count():
                    page.wait_for_function(
                        "[...document.querySelectorAll('.mermaid')].every("
                        "  e => e.shadowRoot && e.shadowRoot.querySelector('svg'))",
                        timeout=30_000,
                    )
                diagrams = page.evaluate(_DIAGRAMS)
                if path in LANDING_PAGES:
                    assert len(diagrams) == LANDING_PAGES[path], f"{path}: {diagrams}"
                assert all(d["width"] > 100 and not d["error"] for d in diagrams), (path, diagrams)
                images = page.evaluate(_IMAGES)
                assert all(width > 0 for _, width in images), f"{path}: broken images {images}"
                heights[path] = page.evaluate("document.documentElement.scrollHeight")
                page.close()
                assert not problems, f"{path}: {problems}"
        with chromium(width=1280, height=900, javascript=False) as browser:
            page = browser.new_page()
            for path in pages:
                if path not in heights:
                    page.goto(base + path, wait_until="load")
                    heights[path] = page.evaluate("document.documentElement.scrollHeight")
    tall = {p: h for p, h in heights.items() if h > MAX_HEIGHT and p not in LONG_PAGES}
    assert not tall, f"pages taller than {MAX_HEIGHT} px at 1280 px wide: {tall}"


#: Each rendered diagram: its width and whether mermaid drew its error picture instead.
_DIAGRAMS = """[...document.querySelectorAll('.mermaid')].map(e => {
    const svg = e.shadowRoot.querySelector('svg');
    return {width: svg.getBoundingClientRect().width,
            error: svg.getAttribute('aria-roledescription') === 'error'};
})"""

#: Every image, loaded now (lazy ones too): its address and natural width (0: broken).
_IMAGES = """async () => Promise.all([...document.images].map(async i => {
    i.loading = 'eager';
    try { await i.decode(); } catch (e) { return [i.src, 0]; }
    return [i.src, i.naturalWidth];
}))"""
