"""A hook that may answer what CrewAI cannot carry out is refused at load.

CrewAI runs the tools and the delegations: a failed tool call can run again (``Retry``)
or be given up (``Skip``), but a failed delegation is only observed. A ``SubagentHooks``
whose ``on_failure`` says (its return annotation) it may answer ``Retry`` or ``Fail`` is
refused by ``with_hooks``, naming the hook, the moment and what the bridge carries out.
"""

from __future__ import annotations

from typing import Any

import pytest
from crewai import Agent, Crew, Task
from orchestra_crewai import with_hooks
from test_crewai import Scripted, act, final, ran, shell

from orchestra import Delegate, Fail, Retry, RetryPolicy, SubagentHooks, TaskHooks

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")


class RetriesAgents(SubagentHooks):
    def on_failure(self, ctx: Any, error: BaseException) -> Retry | Fail | None:
        return None


class RedirectsAgents(SubagentHooks):
    def before_dispatch(self, ctx: Any) -> Delegate | None:
        return None


class RewritesTools(TaskHooks):
    def before_execute(self, ctx: Any) -> Fail | None:
        return Fail("no shell today") if ctx.task.id == "shell" else None


def crew(llm: Scripted) -> Crew:
    ops = Agent(role="ops", goal="g", backstory="b", llm=llm, tools=[shell])
    return Crew(agents=[ops], tasks=[Task(description="d", expected_output="o", agent=ops)])


def test_a_subagent_hook_that_may_retry_a_delegation_is_refused_at_load() -> None:
    llm = Scripted(model="s", replies=[final()])
    with pytest.raises(TypeError) as refused:
        with_hooks(crew(llm), subagent_hooks=[RedirectsAgents(), RetriesAgents()])

    message = str(refused.value)
    assert message.startswith("RetriesAgents.on_failure may answer Retry or Fail")
    assert "which the CrewAI bridge" in message
    assert "at SubagentHooks.on_failure it carries out no answer" in message
    assert llm.prompts == []  # nothing ran


def test_hooks_whose_answers_crewai_carries_out_load_and_decide() -> None:
    ran.clear()
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    guarded = with_hooks(
        crew(llm), hooks=[RetryPolicy(), RewritesTools()], subagent_hooks=[RedirectsAgents()]
    )
    assert guarded.kickoff().raw == "done"
    assert ran == []  # the Fail was carried out: the tool never ran
    assert llm.read("no shell today")  # and the agent read why
