from __future__ import annotations

import re
from pathlib import Path

import orchestra_openai_agents
from orchestra_openai_agents import OrchestraRunHooks


def test_public_names() -> None:
    assert sorted(orchestra_openai_agents.__all__) == [
        "AskCallback",
        "HostedTools",
        "OnDeny",
        "OrchestraRunHooks",
        "answer_approval",
        "guard_agent",
        "guard_tool",
        "is_guarded",
        "pending_request",
    ]
    assert OrchestraRunHooks.__module__ == "orchestra_openai_agents"
    for name in orchestra_openai_agents.__all__:
        assert hasattr(orchestra_openai_agents, name)


def test_only_public_orchestra_names_are_used() -> None:
    package = Path(orchestra_openai_agents.__file__).parent
    private = re.compile(r"^\s*(from|import)\s+orchestra(\.[a-z_.]*)?\._", re.MULTILINE)
    offenders = [p.name for p in package.glob("*.py") if private.search(p.read_text())]
    assert offenders == []
