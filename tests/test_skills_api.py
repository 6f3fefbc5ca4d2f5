"""The public names of ``orchestra.skills``: exported once, documented, as DESIGN names them."""

from __future__ import annotations

import inspect
from pathlib import Path

import orchestra
import orchestra.skills as skills


def test_all_is_exported_once_and_documented() -> None:
    assert len(set(skills.__all__)) == len(skills.__all__)
    for name in skills.__all__:
        obj = getattr(skills, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), f"orchestra.skills.{name} has no docstring"


def test_design_contract_names() -> None:
    assert {"load", "HookRegistry", "HookOutcome", "ConfigError", "ToolDenied", "EVENTS"} <= set(
        skills.__all__
    )
    assert skills.ConfigError is orchestra.ConfigError
    assert skills.ToolDenied is orchestra.ToolDenied
    assert issubclass(skills.ConfigError, ValueError)
    assert issubclass(skills.ToolDenied, PermissionError)
    for method in ("fire", "as_task_hooks", "as_subagent_hooks", "guard"):
        assert inspect.getdoc(getattr(skills.HookRegistry, method)), method


def test_outcome_fields() -> None:
    outcome = skills.HookOutcome()
    assert (outcome.decision, outcome.blocked, outcome.reason) == (None, False, None)
    assert (outcome.modified_input, outcome.messages) == (None, ())
    assert skills.HookRegistry.__module__ == "orchestra.skills"


def test_skills_does_not_import_the_engines() -> None:
    # skills sits beside dag/ and agents/: none of its modules may import them
    package = Path(skills.__file__).parent
    for module in package.glob("*.py"):
        for line in module.read_text().splitlines():
            if line.lstrip().startswith(("import ", "from ")):
                assert "orchestra.dag" not in line, (module.name, line)
                assert "orchestra.agents" not in line, (module.name, line)
