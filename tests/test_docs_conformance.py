"""The Claude Code conformance page is generated from the catalog and kept current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from orchestra.skills._protocol.claude_events import CLAUDE_EVENTS
from orchestra.skills._sources.claude.reader import _CLAUDE_FIELDS

ROOT = Path(__file__).resolve().parent.parent


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "conformance", ROOT / "scripts" / "conformance.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["conformance"] = module
    spec.loader.exec_module(module)
    return module


def test_the_pages_are_what_the_catalog_generates() -> None:
    module = generator()
    assert module.main(["--check"]) == 0, "run: python scripts/conformance.py"


def test_every_event_and_every_field_of_claude_code_has_a_row() -> None:
    module = generator()
    page = module.page()
    assert len(CLAUDE_EVENTS) == 31
    for name in CLAUDE_EVENTS:
        assert f"\n| {name} |" in page
    for field in {f for names in _CLAUDE_FIELDS.values() for f in names}:
        assert f"\n| `{field}` |" in page


def test_the_how_to_includes_the_differences_and_none_that_were_fixed() -> None:
    howto = (ROOT / "docs" / "howto" / "from-claude-code.md").read_text()
    assert '--8<-- "docs/snippets/claude-code-differences.md"' in howto
    differences = (ROOT / "docs" / "snippets" / "claude-code-differences.md").read_text()
    for fixed in ("awaited before", "runs at most once per registry", "none of the file's hooks"):
        assert fixed not in howto + differences
