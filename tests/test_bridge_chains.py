"""``orchestra.bridge``'s hook chains around a tool call: ``judge``, ``split_hooks``.

The rule both agent bridges whose engine runs the tool (the Claude Agent SDK, CrewAI)
follow: a ``before_*`` hook's new input goes back to every guard before the tool runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import orchestra.skills
from orchestra import (
    Delegate,
    ExecutionMode,
    Fail,
    HookError,
    Replace,
    RetryPolicy,
    Skip,
    SubagentHookContext,
    SubagentHooks,
    TaskHooks,
    TaskState,
)
from orchestra.bridge import (
    DISPATCH_AS_TOOL,
    MAX_REJUDGE,
    TOOL_AS_TASK,
    GiveOutput,
    Proceed,
    Refuse,
    ToolCall,
    ToolChains,
    ToolHooks,
    judge,
    no_agents,
    split_hooks,
)

pytestmark = pytest.mark.anyio


def deny_rm(tmp_path: Path) -> orchestra.skills.HookRegistry:
    hook = {"type": "permission", "decision": "deny", "reason": "no rm"}
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [hook]}]}}))
    return orchestra.skills.load(path, project_dir=tmp_path)


async def test_a_hooks_new_input_is_judged_by_the_guards_again() -> None:
    tools = ToolHooks(None)
    seen: list[Mapping[str, Any]] = []

    async def to_rm(call: ToolCall) -> Mapping[str, Any] | None:
        seen.append(call.tool_input)
        return {"command": "rm -rf /"} if call.tool_input["command"] == "ls" else None

    answer = await judge(tools, ToolCall("Bash", {"command": "ls"}), to_rm, can_pause=False)
    assert answer == Proceed({"command": "rm -rf /"}, modified=True)
    assert seen == [{"command": "ls"}, {"command": "rm -rf /"}]


async def test_a_guards_refusal_comes_before_the_hooks(tmp_path: Path) -> None:
    rules = deny_rm(tmp_path)  # deny every call
    called: list[ToolCall] = []

    async def before(call: ToolCall) -> None:
        called.append(call)

    answer = await judge(ToolHooks(rules), ToolCall("Bash"), before, can_pause=False)
    assert answer == Refuse("no rm")
    assert called == []  # the before_* moment never ran


async def test_a_refusal_an_output_and_an_endless_rewrite(tmp_path: Path) -> None:
    tools, call = ToolHooks(None), ToolCall("Bash", {"n": 0})

    async def refuse(call: ToolCall) -> str:
        return "skipped by a hook"

    async def give(call: ToolCall) -> GiveOutput:
        return GiveOutput("cached")

    rounds: list[int] = []

    async def again(call: ToolCall) -> Mapping[str, Any]:
        rounds.append(call.tool_input["n"])
        return {"n": call.tool_input["n"] + 1}

    assert await judge(tools, call, refuse, can_pause=False) == Refuse("skipped by a hook")
    assert await judge(tools, call, give, can_pause=False) == GiveOutput("cached")
    endless = await judge(tools, call, again, can_pause=False)
    assert endless == Refuse(f"the input was still being rewritten after {MAX_REJUDGE} rounds")
    assert rounds == list(range(MAX_REJUDGE))


def test_split_hooks_sorts_by_trait_and_refuses_other_objects() -> None:
    both = RetryPolicy()
    tasks, agents = split_hooks([both, TaskHooks()], None)
    assert tasks.has("on_failure")
    assert agents.has("on_failure")
    with pytest.raises(TypeError, match="neither a TaskHooks"):
        split_hooks([object()], None)


async def test_tool_chains_take_the_ambient_policy_and_keep_hook_errors() -> None:
    class Boom(TaskHooks):
        async def before_execute(self, ctx: Any) -> None:
            raise RuntimeError("boom")

    chains = ToolChains(None, [Boom()], [], timeout=5)
    ctx = chains.task_context("Bash", {"command": "ls"}, fields={"tool_use_id": "t1"})
    assert ctx.task.id == "Bash"
    assert ctx.task.metadata["tool_input"] == {"command": "ls"}
    assert ctx.run_id == chains.run_id
    assert dict(ctx.inputs) == {"command": "ls"}
    decision, _ = await chains.call(chains.tasks, "before_execute", "Bash", ctx)
    assert decision is None
    assert [e.moment for e in chains.errors] == ["before_execute"]


def test_no_agents_explains_a_delegate_only() -> None:
    plain = HookError("hook x failed", hook="x", moment="before_execute", subject="t")
    assert no_agents(plain, "Hamilton") is plain
    delegate = HookError("Delegate('a') is not carried", hook="x", moment="m", subject="t")
    explained = no_agents(delegate, "Hamilton")
    assert "Hamilton runs no agents: Delegate is for subagent dispatches" in str(explained)
    assert (explained.hook, explained.moment, explained.subject) == ("x", "m", "t")


class _Answering(ToolChains):
    """A bridge's chains, carrying out what a bridge whose engine runs the tool can."""

    __slots__ = ()

    task_answers = TOOL_AS_TASK
    agent_answers = DISPATCH_AS_TOOL


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, (None, None)),
        (Skip("later"), ("later", TaskState.SKIPPED)),
        (Fail(), ("fail by Script.before_execute", TaskState.FAILED)),
        (Replace({"command": "ls -l"}), ({"command": "ls -l"}, None)),
        (Replace({"command": "ls"}), (None, None)),  # the same input: nothing to judge again
        (Replace(GiveOutput("cached")), (GiveOutput("cached"), TaskState.SUCCEEDED)),
    ],
)
async def test_what_a_before_execute_answer_means_for_a_call_the_engine_runs(
    answer: Any, expected: Any
) -> None:
    class Script(TaskHooks):
        def before_execute(self, ctx: Any) -> Any:
            return answer

    chains = _Answering(None, [Script()], [], timeout=5)
    ctx = chains.task_context("Bash", {"command": "ls"}, fields={})
    assert await chains.before_task(ctx, {"command": "ls"}) == expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (None, None),
        (Fail(), "failed by Script.before_dispatch"),
        (Fail("no subagents"), "no subagents"),
        (Delegate("reviewer"), {"subagent_type": "reviewer", "prompt": "fix it"}),
        (Delegate("coder"), None),  # the agent it goes to already: nothing changes
        (Replace("fix it well"), {"subagent_type": "coder", "prompt": "fix it well"}),
        (Replace("fix it"), None),
    ],
)
async def test_what_a_before_dispatch_answer_means_for_a_dispatch_run_as_a_tool(
    answer: Any, expected: Any
) -> None:
    class Script(SubagentHooks):
        def before_dispatch(self, ctx: Any) -> Any:
            return answer

    chains = _Answering(None, [], [Script()], timeout=5)
    tool_input = {"subagent_type": "coder", "prompt": "fix it"}
    ctx = SubagentHookContext(
        parent_agent=None, subagent_name="coder", execution_mode=ExecutionMode.SYNC,
        task="fix it", attempt=1,
    )  # fmt: skip
    got = await chains.before_agent(ctx, tool_input, agent="subagent_type", text="prompt")
    assert got == expected


async def test_after_and_end_task_call_their_moments_once() -> None:
    seen: list[Any] = []

    class Script(TaskHooks):
        def after_execute(self, ctx: Any, result: Any) -> Any:
            seen.append(("after", result))
            return Replace(result.upper())

        def on_end(self, ctx: Any, state: TaskState) -> None:
            seen.append(("end", state))

    chains = _Answering(None, [Script()], [], timeout=5)
    ctx = chains.task_context("Bash", {"command": "ls"}, fields={})
    assert await chains.after(chains.tasks, "Bash", ctx, "out", None) == "OUT"
    await chains.end_task(ctx, TaskState.SUCCEEDED)
    assert seen == [("after", "out"), ("end", TaskState.SUCCEEDED)]
    idle = _Answering(None, [], [], timeout=5)
    assert await idle.after(idle.agents, "Agent", None, "out", "kept") == "kept"  # no hook
