"""A hook that may answer what the Claude Code CLI cannot carry out is refused at load.

The CLI runs the tools: nothing here can run one again (``Retry``), so a hook whose
``on_failure`` says (its return annotation) it may answer ``Retry`` is refused by
``with_hooks``, naming the hook, the moment and what the bridge carries out there.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, query
from fake_cli import FakeCLI
from orchestra_claude_agent_sdk import with_hooks

from orchestra import Delegate, Fail, Retry, RetryPolicy, Skip, SubagentHooks, TaskHooks


class RetriesTools(TaskHooks):
    def on_failure(self, ctx: Any, error: BaseException) -> Retry | None:
        return Retry(0)


class SkipsTools(TaskHooks):
    def before_execute(self, ctx: Any) -> Skip | Fail | None:
        return Skip("not today") if ctx.task.id == "Bash" else None


class Unannotated(TaskHooks):
    def on_failure(self, ctx, error):  # type: ignore[no-untyped-def]  # no annotation: no claim
        return None


class RetriesAgents(SubagentHooks):
    def on_failure(self, ctx: Any, error: BaseException) -> Retry | Fail | None:
        return None


class RedirectsAgents(SubagentHooks):
    def before_dispatch(self, ctx: Any) -> Delegate | None:
        return Delegate("reviewer") if ctx.subagent_name == "writer" else None


@pytest.mark.parametrize(
    ("given", "says", "where"),
    [
        (
            {"hooks": [SkipsTools(), RetriesTools()]},
            "RetriesTools.on_failure may answer Retry (its return annotation)",
            "at TaskHooks.on_failure it carries out no answer",
        ),
        (
            {"hooks": [RetryPolicy()]},
            "RetryPolicy.on_failure may answer Retry (its return annotation)",
            "at TaskHooks.on_failure it carries out no answer",
        ),
        (
            {"subagent_hooks": [RedirectsAgents(), RetriesAgents()]},
            "RetriesAgents.on_failure may answer Retry or Fail (its return annotation)",
            "at SubagentHooks.on_failure it carries out no answer",
        ),
    ],
    ids=["a tool-call hook", "RetryPolicy", "a subagent hook"],
)
def test_a_hook_that_may_answer_what_the_cli_cannot_do_is_refused_at_load(
    given: dict[str, Any], says: str, where: str
) -> None:
    with pytest.raises(TypeError) as refused:
        with_hooks(ClaudeAgentOptions(), **given)

    message = str(refused.value)
    assert message.startswith(says)
    assert "which the Claude Agent SDK bridge" in message
    assert where in message


def test_hooks_whose_answers_are_carried_out_load_and_decide() -> None:
    options = with_hooks(
        ClaudeAgentOptions(),
        hooks=[SkipsTools(), Unannotated()],
        subagent_hooks=[RedirectsAgents()],
    )
    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    cli = FakeCLI([("tool", call)], tools={"Bash": lambda tool_input: "listing"})

    async def main() -> None:
        async for _ in query(prompt="go", options=options, transport=cli):
            pass

    anyio.run(main)
    [read] = cli.read
    assert "not today" in str(read)  # the Skip was carried out: the model reads why
