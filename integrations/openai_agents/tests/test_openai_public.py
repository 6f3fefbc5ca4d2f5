from __future__ import annotations

import orchestra_openai_agents
from orchestra_openai_agents import OrchestraRunHooks


def test_public_names() -> None:
    assert sorted(orchestra_openai_agents.__all__) == [
        "AskCallback",
        "HostedTools",
        "OnDeny",
        "OrchestraRunHooks",
        "guard_agent",
        "guard_tool",
        "is_guarded",
    ]
    assert OrchestraRunHooks.__module__ == "orchestra_openai_agents"
    for name in orchestra_openai_agents.__all__:
        assert hasattr(orchestra_openai_agents, name)
