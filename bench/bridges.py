"""The agent-framework bridges' cost over the plain engines, as ratios measured in one run.

Each engine runs one agent turn loop on its own scripted model (no network): the model
asks for a tool call, reads the answer, asks for a second one, then answers.

- LangGraph: a ``StateGraph`` (model node -> prebuilt ``ToolNode`` -> model node) on
  langchain-core's ``GenericFakeChatModel``, ``invoke``: plain ``compile()`` against
  ``with_hooks(builder)`` with 0 hooks and with 2 no-op ``TaskHooks`` (every node moment).
- pydantic-ai: an ``Agent`` on ``FunctionModel`` with one tool, ``run``: plain against
  ``OrchestraCapability()`` with 0 hooks and with 2 no-op hooks (a ``SubagentHooks`` and a
  ``TaskHooks``: every agent-run and tool-call moment).
- OpenAI Agents SDK: an ``Agent`` on the SDK's ``ScriptedModel``, ``Runner.run`` (on the
  SDK's own ``AgentRunner``) against ``OrchestraRunHooks().run`` with 0 hooks and with 2
  no-op hooks (as for pydantic-ai), and against the plain ``Runner.run`` through the
  default runner the bridge puts in (``plain Runner.run, 0 hooks``: outside guarded work
  it hands each run on, unchanged).
- CrewAI (in ``.venv-crewai``: ``make bench`` runs this script there too): a ``Crew`` on a
  scripted ``BaseLLM``, ``akickoff`` against ``with_hooks(crew)`` with 0 and 2 no-op hooks.
- Claude Agent SDK: ``query`` on a fake CLI behind the SDK's ``Transport`` (its control
  protocol, no process) against ``with_hooks(options)`` with 0 and 2 no-op hooks.

Each bridge also runs given an empty ``HookRegistry`` (``registry, 0 hooks``): it asks the
registry once which tool and step events have hooks, and nothing more may happen per
model turn or tool call. LangGraph, pydantic-ai and the OpenAI Agents SDK also run given
an ``orchestra.Budget`` that no run reaches (``a budget``): every model call and tool
call is charged to it; it must cost at most 1.1x the plain engine too.

The variants of one engine take turns run by run, ``RUNS`` runs each per round, for
``ROUNDS`` rounds (after a warm-up round that is not counted): in each round the order of
the variants rotates from one run to the next, and each run starts after a
``gc.collect()`` that is not timed, so that a burst of load from other processes, a
collection left by the run before or a cache warmed by it falls on every variant alike.
The heap built before the rounds (the engines' imports, the graphs and agents) is frozen
(``gc.freeze()``) for all of them: no collection rescans it. Printed per variant: the
median time per run over the rounds with its spread (min-max), in CPU time of this
process (what the bridge adds; other processes' load does not count) and in wall time,
and the median over the rounds of the round's ratio to the plain engine (its total over
the plain engine's total in that round), with the ratios' min-max. Verdict, on that
median ratio in CPU time: with 0 hooks (no registry or an empty one) and given a budget,
a bridge must cost at most 1.1x the plain engine; 2 no-op hooks are reported. A variant
over its target is marked ``MISSED`` (``make bench`` fails then). Run with
``python bench/bridges.py [ROUNDS] [RUNS]``.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

TARGET = 1.1  # a bridge with no hooks (or a budget) against its plain engine: CPU, median ratio
Sample = tuple[float, float]  # (CPU seconds, wall seconds) per run, one round


def rounds(
    variants: dict[str, Callable[[], Awaitable[object]]], rounds_: int, runs: int
) -> dict[str, list[Sample]]:
    """Per-run (CPU, wall) seconds of each variant in each of ``rounds_`` rounds.

    In a round the variants take turns run by run, the order rotating, each run after a
    ``gc.collect()`` outside its timing (see the module's docstring).
    """
    names = list(variants)

    async def measure() -> dict[str, list[Sample]]:
        for run in variants.values():  # the warm-up round: first calls, caches; not counted
            for _ in range(runs):
                await run()
        gc.collect()
        gc.freeze()  # what was built so far is no variant's garbage: no collection rescans it
        samples: dict[str, list[Sample]] = {k: [] for k in names}
        try:
            for round_ in range(rounds_):
                cpu, wall = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0)
                for i in range(runs):
                    shift = (round_ + i) % len(names)
                    for name in names[shift:] + names[:shift]:
                        gc.collect()
                        start_cpu, start_wall = time.process_time(), time.perf_counter()
                        await variants[name]()
                        cpu[name] += time.process_time() - start_cpu
                        wall[name] += time.perf_counter() - start_wall
                for name in names:
                    samples[name].append((cpu[name] / runs, wall[name] / runs))
        finally:
            gc.unfreeze()
        return samples

    return asyncio.run(measure())


def ratios(samples: list[Sample], base: list[Sample], kind: int) -> list[float]:
    """Each round's ratio of ``samples`` to ``base`` (``kind`` 0: CPU time, 1: wall time)."""
    return [mine[kind] / theirs[kind] for mine, theirs in zip(samples, base, strict=True)]


def report(engine: str, samples: dict[str, list[Sample]], rounds_: int, runs: int) -> bool:
    """Print one engine's table and verdicts; True when every variant with a target met it."""
    names = list(samples)
    base = samples[names[0]]
    print(
        f"{engine}: {rounds_} rounds x {runs} runs per variant, per run (median, min-max); "
        "x = the median of the rounds' ratios to the plain engine (min-max)"
    )
    ok = True
    for name in names:
        cpu = [s[0] for s in samples[name]]
        wall = [s[1] for s in samples[name]]
        by_cpu, by_wall = ratios(samples[name], base, 0), ratios(samples[name], base, 1)
        ratio = statistics.median(by_cpu)
        line = (
            f"  {name:<26} cpu {statistics.median(cpu) * 1e3:7.3f} ms "
            f"({min(cpu) * 1e3:.3f}-{max(cpu) * 1e3:.3f})  x{ratio:4.2f} "
            f"({min(by_cpu):.2f}-{max(by_cpu):.2f})   "
            f"wall {statistics.median(wall) * 1e3:7.3f} ms  x{statistics.median(by_wall):4.2f}"
        )
        if name.endswith(("0 hooks", "a budget")):
            met = ratio <= TARGET
            ok = ok and met
            line += f"   target <= {TARGET}x: {'ok' if met else 'MISSED'}"
        print(line)
    return ok


# --- the hooks ---------------------------------------------------------------------------


def noop_hooks() -> tuple[Any, Any, Any]:
    """Two no-op ``TaskHooks`` objects and a no-op ``SubagentHooks``."""
    import orchestra

    class NoopTask(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            return None

        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
            return None

        def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
            return None

    class NoopAgent(orchestra.SubagentHooks):
        def before_dispatch(self, ctx: orchestra.SubagentHookContext) -> None:
            return None

        def after_dispatch(self, ctx: orchestra.SubagentHookContext, result: Any) -> None:
            return None

    return NoopTask(), NoopTask(), NoopAgent()


def budget() -> Any:
    """A budget no run reaches: every call is charged, none refused."""
    import orchestra

    return orchestra.Budget(max_model_calls=10**9, max_tool_calls=10**9, max_input_tokens=10**9)


def empty_registry() -> Any:
    """A registry with no hooks: the bridges ask it which events have hooks (step events
    included) and must then cost what they cost without one."""
    from orchestra.skills import HookRegistry

    return HookRegistry([])


# --- LangGraph ---------------------------------------------------------------------------


def langgraph_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from orchestra_langgraph import with_hooks

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def call(i: int, a: int, b: int) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": "add", "args": {"a": a, "b": b}, "id": f"c{i}"}])

    script = itertools.cycle([call(1, 1, 2), call(2, 3, 4), AIMessage("3 and 7")])
    model = GenericFakeChatModel(messages=script)

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: Any) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([add]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    one, two, _ = noop_hooks()
    graphs = {
        "plain compile()": builder.compile(),
        "with_hooks, 0 hooks": with_hooks(builder).compile(),
        "registry, 0 hooks": with_hooks(builder, registry=empty_registry()).compile(),
        "with_hooks, 2 no-op hooks": with_hooks(builder, [one, two]).compile(),
        "with_hooks, a budget": with_hooks(builder, [budget()]).compile(),
    }
    start = {"messages": [HumanMessage("add")]}

    def runner(graph: Any) -> Callable[[], Awaitable[object]]:
        async def run() -> object:
            return graph.invoke(start)  # the sync graph, as most users run it

        return run

    return {name: runner(graph) for name, graph in graphs.items()}


# --- pydantic-ai -------------------------------------------------------------------------


def pydantic_ai_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    from orchestra_pydantic_ai import OrchestraCapability
    from pydantic_ai import Agent
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        if returns == 0:
            return ModelResponse(parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1")])
        if returns == 1:
            return ModelResponse(parts=[ToolCallPart("add", {"a": 3, "b": 4}, tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("3 and 7")])

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    tools, _, agents = noop_hooks()
    capabilities: dict[str, list[Any]] = {
        "plain Agent": [],
        "capability, 0 hooks": [OrchestraCapability()],
        "registry, 0 hooks": [OrchestraCapability(registry=empty_registry())],
        "capability, 2 no-op hooks": [OrchestraCapability([agents, tools])],
        "capability, a budget": [OrchestraCapability([budget()])],
    }

    def runner(caps: list[Any]) -> Callable[[], Awaitable[object]]:
        agent: Agent[None, str] = Agent(
            FunctionModel(model), name="calc", tools=[add], capabilities=caps
        )

        async def run() -> object:
            return await agent.run("add")

        return run

    return {name: runner(caps) for name, caps in capabilities.items()}


# --- OpenAI Agents SDK -------------------------------------------------------------------


def openai_agents_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.run import AgentRunner, get_default_agent_runner, set_default_agent_runner
    from agents.testing import ScriptedModel, assistant_message, function_call
    from orchestra_openai_agents import OrchestraRunHooks

    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-offline")  # the SDK wants one; unused
    set_tracing_disabled(True)

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def script() -> list[Any]:
        return [
            [function_call("add", {"a": 1, "b": 2}, call_id="c1")],
            [function_call("add", {"a": 3, "b": 4}, call_id="c2")],
            [assistant_message("3 and 7")],
        ]

    tools, _, agents = noop_hooks()
    model = ScriptedModel()
    agent = Agent(name="calc", model=model, tools=[add])
    bare, hooked = OrchestraRunHooks(), OrchestraRunHooks([agents, tools])
    listened = OrchestraRunHooks(registry=empty_registry())
    spending = OrchestraRunHooks([budget()])

    def scripted(run: Callable[[], Awaitable[object]]) -> Callable[[], Awaitable[object]]:
        async def one() -> object:
            model.extend(script())
            return await run()

        return one

    # Once a bridge has guarded something, every Runner.run goes through its default runner
    # (a plain run inside guarded work follows the policy); the bare engine is the SDK's own.
    sdk_runner = AgentRunner()

    async def sdk_run() -> object:
        ours = get_default_agent_runner()
        set_default_agent_runner(sdk_runner)
        try:
            return await Runner.run(agent, "add")
        finally:
            set_default_agent_runner(ours)

    return {
        "Runner.run": scripted(sdk_run),
        "bridge.run, 0 hooks": scripted(lambda: bare.run(agent, "add")),
        "plain Runner.run, 0 hooks": scripted(lambda: Runner.run(agent, "add")),
        "registry, 0 hooks": scripted(lambda: listened.run(agent, "add")),
        "bridge.run, 2 no-op hooks": scripted(lambda: hooked.run(agent, "add")),
        "bridge.run, a budget": scripted(lambda: spending.run(agent, "add")),
    }


# --- Claude Agent SDK --------------------------------------------------------------------


def claude_agent_sdk_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    """``query`` against the fake CLI of the bridge's tests (the SDK's real control
    protocol, no process): 2 tool calls, each a ``PreToolUse`` and a ``PostToolUse`` hook
    callback when something listens; the bare engine gets none."""
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "integrations/claude_agent_sdk/tests"))
    from claude_agent_sdk import ClaudeAgentOptions, query
    from fake_cli import FakeCLI
    from orchestra_claude_agent_sdk import with_hooks

    def call(n: int) -> list[tuple[str, dict[str, Any]]]:
        fields = {"tool_name": "Bash", "tool_input": {"command": f"ls {n}"}, "tool_use_id": f"t{n}"}
        return [("PreToolUse", fields), ("PostToolUse", {**fields, "tool_response": "a"})]

    script = call(1) + call(2)
    tools, more, _ = noop_hooks()
    plain = ClaudeAgentOptions()
    bare, hooked = with_hooks(plain), with_hooks(plain, hooks=[tools, more])
    listened = with_hooks(plain, registry=empty_registry())

    def run(options: Any) -> Callable[[], Awaitable[object]]:
        async def one() -> object:  # 5 sessions: one is too short to time apart from noise
            for _ in range(5):
                messages = [
                    m async for m in query(prompt="go", options=options, transport=FakeCLI(script))
                ]
            return messages

        return one

    return {
        "query": run(plain),
        "with_hooks, 0 hooks": run(bare),
        "registry, 0 hooks": run(listened),
        "with_hooks, 2 no-op hooks": run(hooked),
    }


# --- CrewAI (its own venv: .venv-crewai) --------------------------------------------------


def crewai_variants() -> dict[str, Callable[[], Awaitable[object]]]:
    """A ``Crew`` of one agent on a scripted ``BaseLLM`` (text tool calls), ``akickoff``:
    plain against ``with_hooks(crew)`` with 0 hooks, an empty registry and 2 no-op hooks."""
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from crewai import Agent, Crew, Task
        from crewai.llms.base_llm import BaseLLM
        from crewai.tools import tool
    from orchestra_crewai import with_hooks

    turns = [
        'Thought: t\nAction: add\nAction Input: {"a": 1, "b": 2}',
        'Thought: t\nAction: add\nAction Input: {"a": 3, "b": 4}',
        "Thought: t\nFinal Answer: 3 and 7",
    ]

    class Scripted(BaseLLM):
        step: int = 0

        def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
            self.step += 1
            return turns[(self.step - 1) % len(turns)]

        def supports_function_calling(self) -> bool:
            return False

    @tool("add")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def crew() -> Any:
        agent = Agent(role="calc", goal="g", backstory="b", llm=Scripted(model="s"), tools=[add])
        return Crew(
            agents=[agent], tasks=[Task(description="add", expected_output="x", agent=agent)]
        )

    tools, more, _ = noop_hooks()
    plain, bare, listened, hooked = crew(), crew(), crew(), crew()
    with_hooks(bare)
    with_hooks(listened, registry=empty_registry())
    with_hooks(hooked, hooks=[tools, more])

    def run(c: Any) -> Callable[[], Awaitable[object]]:
        async def one() -> object:  # the native async path: hooks on this loop's thread
            return await c.akickoff()

        return one

    return {
        "akickoff": run(plain),
        "with_hooks, 0 hooks": run(bare),
        "registry, 0 hooks": run(listened),
        "with_hooks, 2 no-op hooks": run(hooked),
    }


def main(rounds_: int, runs: int) -> int:
    print(
        "Agent-framework bridges: 3 model turns and 2 tool calls per run, scripted models "
        "(the machine may be shared: ratios of interleaved rounds are what count)"
    )
    ok = True
    for engine, variants in (
        ("LangGraph", langgraph_variants),
        ("pydantic-ai", pydantic_ai_variants),
        ("OpenAI Agents SDK", openai_agents_variants),
        ("Claude Agent SDK", claude_agent_sdk_variants),
        ("CrewAI", crewai_variants),
    ):
        try:
            made = variants()
        except ImportError as missing:  # an engine of its own venv (see the Makefile)
            print(f"{engine}: skipped here, {missing.name} is not in this venv")
            continue
        ok = report(engine, rounds(made, rounds_, runs), rounds_, runs) and ok
    print("verdict:", "every bridge within target" if ok else "MISSED: a bridge is over target")
    return 0


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*(args + [15, 10][len(args) :])))
