"""Prose that could go stale is checked against the code it describes.

The README, the changelog and every page of ``docs/`` are read as text (whitespace
folded, so a phrase may wrap); a test fails when they disagree with the code:

- a count of events ("28 agent events") in prose is the catalog's,
  ``len(orchestra.skills.EVENTS)`` (a span's event limit is another matter: "A span
  keeps 128 events"; so is a command's output in a code block: "4 events replayed");
- a precedence chain (``Fail > Skip > ... > None``) is the merge's own order
  (``orchestra._decisions``), whole, or restricted to the answers of one hook trait
  (``SubagentHooks`` never answer ``Skip``);
- a passage that names several integrations' distributions names every one of
  ``integrations/*/pyproject.toml``, and the README's "Integrations" lists each folder;
- what ``make demo`` does is what the Makefile's ``demo`` target does;
- the troubleshooting page says what a misspelt moment really does.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import SubagentHooks, TaskHooks
from orchestra._decisions import _RANK
from orchestra._moments import MOMENTS
from orchestra.skills import EVENTS

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    + [p for p in (ROOT / "docs").rglob("*.md") if "generated" not in p.parts]
)
_DECISION = r"(?:Fail|Skip|Delegate|Retry|Replace|None)"
_CHAIN = re.compile(rf"\b{_DECISION}(?:\s*>\s*{_DECISION})+")
_EVENT_COUNT = re.compile(r"\b(\d+)\s+(?:agent\s+|hook\s+|Claude Code\s+)?events\b")
_CODE = re.compile(r"```.*?```")
_DISTRIBUTION = re.compile(r"orchestra-hooks-[a-z][a-z0-9-]*[a-z0-9]")


def text(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))


def where(path: Path) -> str:
    return str(path.relative_to(ROOT))


def integrations() -> dict[str, str]:
    """Each integration's folder name and distribution, from its own pyproject.toml."""
    found = {}
    for pyproject in sorted((ROOT / "integrations").glob("*/pyproject.toml")):
        project: dict[str, Any] = tomllib.loads(pyproject.read_text())["project"]
        found[pyproject.parent.name] = project["name"]
    return found


def test_the_pages_are_found() -> None:
    names = {where(p) for p in PAGES}
    assert {"README.md", "CHANGELOG.md", "docs/index.md", "docs/troubleshooting.md"} <= names
    assert len(integrations()) >= 5  # dask, hamilton, openai_agents, postgres, prefect, ...


def event_counts(body: str) -> list[tuple[int, str]]:
    """Every "N events" of a text about the catalog; a span's event limit is not one."""
    counts = []
    for match in _EVENT_COUNT.finditer(body):
        if "span" in body[max(0, match.start() - 30) : match.start()]:
            continue  # "a span keeps 128 events": the SDK's limit, not the catalog
        counts.append((int(match[1]), match[0]))
    return counts


def test_every_event_count_is_the_catalogs() -> None:
    sample = "YAML hooks at 20 agent events. A span keeps 128 events by default; the 34 events"
    assert event_counts(sample) == [(20, "20 agent events"), (34, "34 events")]
    wrong = [
        (where(page), said)
        for page in PAGES
        for count, said in event_counts(_CODE.sub(" ", text(page)))  # prose, not outputs
        if count != len(EVENTS)
    ]
    assert wrong == [], f"the catalog has {len(EVENTS)} events: say so, or say no number"


def test_every_precedence_chain_is_the_merges() -> None:
    order = [t.__name__ for t in sorted(_RANK, key=_RANK.__getitem__, reverse=True)] + ["None"]
    assert order == ["Fail", "Skip", "Delegate", "Retry", "Replace", "None"]
    by_trait = {
        trait.__name__: {t.__name__ for m in MOMENTS[trait].values() for t in m.allowed}
        for trait in (TaskHooks, SubagentHooks)
    }
    allowed = {frozenset(order), *(frozenset({*names, "None"}) for names in by_trait.values())}
    chains = [
        (where(page), re.split(r"\s*>\s*", match[0]))
        for page in PAGES
        for match in _CHAIN.finditer(text(page))
    ]
    assert len(chains) >= 4  # the README, the index, decisions, troubleshooting, ...
    wrong = [
        (page, " > ".join(chain))
        for page, chain in chains
        if frozenset(chain) not in allowed or chain != [d for d in order if d in chain]
    ]
    assert wrong == [], "the merge's order is " + " > ".join(order)


def test_every_list_of_integrations_is_complete() -> None:
    every = set(integrations().values())
    partial = []
    for page in PAGES:
        if page.parent.name == "integrations" or page.name == "CHANGELOG.md":
            continue  # a page about one; the changelog says when each came
        for passage in re.split(r"\n\s*\n", page.read_text(encoding="utf-8")):
            named = set(_DISTRIBUTION.findall(passage))
            if len(named) >= 2 and named != every:
                partial.append((where(page), sorted(every - named)))
    assert partial == [], "a passage that names several integrations names them all"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Integrations\n", 1)[1].split("\n## ", 1)[0]
    missing = [d for d in integrations() if f"`integrations/{d}`" not in section]
    assert missing == [], "the README's Integrations section lists every integration"


def _demo_target() -> tuple[list[str], list[str]]:
    """What ``make demo`` installs (pip arguments) and the examples it runs."""
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    stamp = makefile.split("\n$(DEMO_STAMP):", 1)[1].split("\n\n", 1)[0]
    installs = re.findall(r"pip install (.*)", stamp)
    scripts = re.findall(r"\$\(PY\) (examples/\S+\.py)", demo)
    return installs, scripts


def test_what_make_demo_does_is_the_makefiles() -> None:
    installs, scripts = _demo_target()
    assert installs
    assert all(line.split()[-1] == "." for line in installs)
    assert scripts
    sentences = [
        (where(page), sentence)
        for page in PAGES
        for sentence in re.split(r"(?<=[.;])\s", _CODE.sub(" ", text(page)))
        if "`make demo`" in sentence
    ]
    assert sentences
    for page, sentence in sentences:
        assert not re.search(r"install(s|ing)? (everything|all|the dev|extras)", sentence), (
            page,
            sentence,
        )
    (getting_started,) = [s for p, s in sentences if p == "docs/getting-started.md"]
    for script in scripts:
        assert f"`{script}`" in getting_started
    assert "library alone" in getting_started


class OnFail(TaskHooks):
    def on_fail(self, ctx: Any, error: BaseException) -> None:
        pass


def test_troubleshooting_says_what_a_misspelt_moment_does() -> None:
    with pytest.raises(TypeError, match=r"OnFail\.on_fail is not a moment.*'on_failure'"):
        orchestra.HookChain([OnFail()])
    page = text(ROOT / "docs" / "troubleshooting.md")
    (said,) = [s for s in re.split(r"(?<=\.)\s", page) if "`on_fail`" in s and "`TypeError`" in s]
    assert "refused" in said
    assert "`on_fail` is never called" not in page
    assert "a method with another name is never called" not in page
