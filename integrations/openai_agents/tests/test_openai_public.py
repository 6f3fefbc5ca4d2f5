from __future__ import annotations

import inspect
import re
from pathlib import Path
from types import ModuleType

import orchestra_openai_agents


def _bound_publicly(package: ModuleType) -> set[str]:
    """The names the package binds for its users: not private, not a submodule."""
    return {
        name
        for name, value in vars(package).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }


def test_all_is_exactly_what_the_package_binds_publicly() -> None:
    # The names themselves are pinned once, in tests/test_integrations_api.py; here: an
    # import added to __init__ without its __all__ line (or a stale line) is caught.
    exported = set(orchestra_openai_agents.__all__)
    assert len(exported) == len(orchestra_openai_agents.__all__)  # no name twice
    assert exported == _bound_publicly(orchestra_openai_agents)


def test_only_public_orchestra_names_are_used() -> None:
    package = Path(orchestra_openai_agents.__file__).parent
    private = re.compile(r"^\s*(from|import)\s+orchestra(\.[a-z_.]*)?\._", re.MULTILINE)
    offenders = [p.name for p in package.glob("*.py") if private.search(p.read_text())]
    assert offenders == []
