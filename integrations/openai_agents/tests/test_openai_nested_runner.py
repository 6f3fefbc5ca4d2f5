"""A plain ``Runner.run`` started inside guarded work follows the ambient policy.

The bridge puts its runner in the SDK's default-runner seam (``agents.run``) the first time
it guards something; these tests pin that seam, and check what goes through the runner
unchanged (work outside any guarded run, a run given its own policy, an agent used as a
tool) and what the caller's own ``RunHooks`` still hear. The ways around the guard
(``test_openai_ways``) run the deny and allow cells on each plain entry point.
"""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, RunHooks, Runner, function_tool
from agents import run as sdk_run
from agents.testing import ScriptedModel, assistant_message, function_call
from bridge_helpers import drive, events, log_hook, permission, tool_outputs, write_config
from orchestra_openai_agents import OrchestraRunHooks, guard_agent, is_guarded

pytestmark = pytest.mark.anyio

DENY_FETCH = {"PreToolUse": [permission("deny", "not /data", matcher="fetch")]}


def fetcher(ran: list[str]) -> tuple[Agent[Any], ScriptedModel]:
    """An agent whose model asks to fetch /data once, then answers."""

    @function_tool
    def fetch(path: str) -> str:
        """Fetch a path."""
        ran.append(path)
        return f"fetched {path}"

    model = ScriptedModel(
        [[function_call("fetch", {"path": "/data"}, call_id="f1")], [assistant_message("ok")]]
    )
    return Agent(name="inner", model=model, tools=[fetch]), model


async def outer_run(registry: Any, tool: FunctionTool) -> ScriptedModel:
    """A guarded run whose model calls ``tool`` (named ``research``) once."""
    model = ScriptedModel(
        [[function_call("research", {}, call_id="r1")], [assistant_message("done")]]
    )
    agent = Agent(name="outer", model=model, tools=[tool])
    await OrchestraRunHooks(registry=registry).run(agent, "go")
    return model


class Recorder(RunHooks[Any]):
    """The caller's own ``RunHooks``: what it heard."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    async def on_agent_start(self, context: Any, agent: Any) -> None:
        self.heard.append(f"start {agent.name}")

    async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
        self.heard.append(f"end {agent.name}: {output}")


async def test_the_sdk_seam_the_bridge_relies_on() -> None:
    """``agents.run`` has the default-runner functions, ``Runner`` hands each entry point to
    the default runner's method of its name with ``hooks=``, and the SDK still calls the
    seam experimental (so the integration page says so)."""
    assert list(inspect.signature(sdk_run.set_default_agent_runner).parameters) == ["runner"]
    assert not inspect.signature(sdk_run.get_default_agent_runner).parameters
    for seam in (sdk_run.set_default_agent_runner, sdk_run.get_default_agent_runner):
        assert "not part of the public API" in (seam.__doc__ or ""), seam

    before = sdk_run.get_default_agent_runner()
    calls: list[tuple[str, bool]] = []

    class Recording:
        def __getattr__(self, name: str) -> Any:
            def call(agent: Any, input: Any, **kwargs: Any) -> Any:
                calls.append((name, "hooks" in kwargs))
                return getattr(before, name)(agent, input, **kwargs)

            return call

    def run_sync(agent: Agent[Any]) -> None:
        Runner.run_sync(agent, "fetch")
        asyncio.get_event_loop_policy().get_event_loop().close()  # this thread's, left open

    ran: list[str] = []
    sdk_run.set_default_agent_runner(Recording())  # type: ignore[arg-type]  # duck-typed
    try:
        await Runner.run(fetcher(ran)[0], "fetch")
        await asyncio.to_thread(run_sync, fetcher(ran)[0])
        async for _ in Runner.run_streamed(fetcher(ran)[0], "fetch").stream_events():
            pass
    finally:
        sdk_run.set_default_agent_runner(before)
    assert calls == [("run", True), ("run_sync", True), ("run_streamed", True)]
    assert ran == ["/data"] * 3


def test_the_runner_goes_in_once_when_the_bridge_first_guards(tmp_path: Path) -> None:
    """Not at import; at the first guard (``guard_agent`` here), wrapping the SDK's runner,
    once however often the bridge guards again (a process of its own: a fresh SDK)."""
    script = textwrap.dedent(
        """
        from agents import Agent
        from agents.run import get_default_agent_runner as default
        import orchestra_openai_agents as bridge

        print(type(default()).__name__)
        bridge.guard_agent(Agent(name="a"))
        ours = default()
        print(type(ours).__name__, type(ours.inner).__name__)
        bridge.guard_agent(Agent(name="b"))
        bridge.OrchestraRunHooks().guard(Agent(name="c"))
        print(default() is ours)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    assert out[:3] == ["AgentRunner", "AmbientRunner AgentRunner", "True"], out


async def test_outside_guarded_work_a_plain_run_is_unchanged() -> None:
    guard_agent(Agent(name="first"))  # the bridge's runner is in (if it was not already)
    assert type(sdk_run.get_default_agent_runner()).__name__ == "AmbientRunner"
    ran: list[str] = []
    agent, model = fetcher(ran)
    result = await Runner.run(agent, "fetch")
    assert result.last_agent is agent  # the SDK ran the caller's agent, not a guarded clone
    assert not is_guarded(result.last_agent)
    assert ran == ["/data"]
    assert tool_outputs(model) == {"f1": "fetched /data"}


async def test_the_callers_own_run_hooks_hear_the_guarded_run(tmp_path: Path) -> None:
    """Given ``hooks=`` of the caller's own, a plain nested run is still guarded: the
    bridge's hooks first, then the caller's (as ``hooks=`` of ``bridge.run``)."""
    ran: list[str] = []
    agent, inner = fetcher(ran)
    recorder = Recorder()

    @function_tool
    async def research() -> str:
        """Ask the research agent."""
        await Runner.run(agent, "fetch", hooks=recorder)
        return "asked"

    await outer_run(write_config(tmp_path, DENY_FETCH), research)
    assert ran == []
    assert tool_outputs(inner) == {"f1": "Tool call denied: not /data"}
    assert recorder.heard == ["start inner", "end inner: ok"]


@pytest.mark.parametrize("own", ["guard_agent", "a bridge as hooks"])
async def test_a_plain_run_given_its_own_policy_keeps_it(tmp_path: Path, own: str) -> None:
    """Inside a tool whose policy denies ``fetch``, a run given a policy of its own (an agent
    ``guard_agent`` guarded, or an ``OrchestraRunHooks`` as ``hooks=``) follows that one."""
    (tmp_path / "own").mkdir()
    allow = write_config(tmp_path / "own", {})
    ran: list[str] = []
    agent, inner = fetcher(ran)

    @function_tool
    async def research() -> str:
        """Ask the research agent."""
        if own == "guard_agent":
            await Runner.run(guard_agent(agent, allow), "fetch")
        else:
            await Runner.run(agent, "fetch", hooks=OrchestraRunHooks(registry=allow))
        return "asked"

    await outer_run(write_config(tmp_path, DENY_FETCH), research)
    assert ran == ["/data"]
    assert tool_outputs(inner) == {"f1": "fetched /data"}


async def test_an_agent_used_as_a_tool_is_guarded_once(tmp_path: Path, mode: str) -> None:
    """The SDK runs an ``as_tool`` agent by ``Runner.run``: the bridge guarded its clone
    already, so the runner hands it on (one ``PreToolUse`` per call, no run events)."""
    log = tmp_path / "events.jsonl"
    registry = write_config(
        tmp_path, {"PreToolUse": [log_hook(log)], "SessionStart": [log_hook(log)]}
    )
    ran: list[str] = []
    agent, inner = fetcher(ran)
    outer = ScriptedModel(
        [[function_call("inner", {"input": "fetch"}, call_id="t1")], [assistant_message("done")]]
    )
    triage = Agent(name="triage", model=outer, tools=[agent.as_tool("inner", "Fetches.")])
    await drive(OrchestraRunHooks(registry=registry), triage, "go", mode)
    seen = [(e["hook_event_name"], e.get("tool_name")) for e in events(log)]
    assert seen == [("SessionStart", None), ("PreToolUse", "inner"), ("PreToolUse", "fetch")]
    assert ran == ["/data"]
    assert tool_outputs(inner) == {"f1": "fetched /data"}
