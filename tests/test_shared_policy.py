"""One policy, four engines: the same YAML guard file and the same TaskHooks object decide
alike in orchestra's DAG, LangGraph, pydantic-ai and the OpenAI Agents SDK.

The policy (docs/howto/one-policy.md shows it to users):

- ``orchestra.yaml``: ``PreToolUse`` denies ``delete`` ("deleting is not allowed") and
  rewrites the path ``write`` gets into the sandbox (a command hook).
- ``Policy`` (``TaskHooks``): ``on_failure`` retries a ``ConnectionError`` (``fetch`` fails
  once); ``before_execute`` skips ``notify``.

Each engine runs the same four units of work, named alike: ``fetch`` and ``notify`` are
tasks (DAG tasks, LangGraph nodes, the agents' tool calls), ``delete`` and ``write`` are
tool calls (a ``@registry.guard`` tool in a DAG task, a ``ToolNode``'s tools, the agents'
tools). Every engine must show the same outcome: ``fetch`` ran twice and succeeded,
``notify`` never ran, ``delete`` never ran and the caller read the reason, ``write`` got the
sandboxed path.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import orchestra
import orchestra.skills
from orchestra import Retry, Skip, TaskHooks, ToolDenied

REASON = "deleting is not allowed"
REWRITE = (
    "import json, sys; e = json.load(sys.stdin); p = e['tool_input']['path']; "
    "print(json.dumps({'modified_input': {'path': '/sandbox/' + p.lstrip('/')}}))"
)


def policy_file(tmp_path: Path) -> orchestra.skills.HookRegistry:
    """The one YAML guard file every engine loads."""
    path = tmp_path / "orchestra.yaml"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(REWRITE)}"
    path.write_text(
        "hooks:\n"
        "  PreToolUse:\n"
        '    - matcher: "delete"\n'
        "      hooks:\n"
        f"        - {{type: permission, decision: deny, reason: {json.dumps(REASON)}}}\n"
        '    - matcher: "write"\n'
        "      hooks:\n"
        f"        - {{type: command, command: {json.dumps(command)}}}\n"
    )
    return orchestra.skills.load(path)


class Policy(TaskHooks):
    """The one TaskHooks object every engine gets."""

    def before_execute(self, ctx: orchestra.TaskHookContext) -> Skip | None:
        return Skip("notifications are muted") if ctx.task.id == "notify" else None

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Retry | None:
        if isinstance(error, ConnectionError) and ctx.attempt < 3:
            return Retry()
        return None


@attrs.define
class Work:
    """The four units of work, and what each engine did with them."""

    fetch_calls: int = 0
    notified: bool = False
    deleted: list[str] = attrs.Factory(list)
    written: list[str] = attrs.Factory(list)
    read: list[str] = attrs.Factory(list)  # what the caller (a task, a model) read back

    def fetch(self) -> str:
        self.fetch_calls += 1
        if self.fetch_calls == 1:
            raise ConnectionError("503 from upstream")
        return "fetched"

    def notify(self) -> str:
        self.notified = True
        return "notified"

    def delete(self, path: str) -> str:
        self.deleted.append(path)
        return f"deleted {path}"

    def write(self, path: str) -> str:
        self.written.append(path)
        return f"wrote {path}"

    def outcome(self) -> dict[str, Any]:
        return {
            "fetch ran": self.fetch_calls,
            "notify ran": self.notified,
            "delete ran": self.deleted,
            "the reason was read": any(REASON in text for text in self.read),
            "write got": self.written,
        }


EXPECTED = {
    "fetch ran": 2,  # retried once by Policy.on_failure
    "notify ran": False,  # skipped by Policy.before_execute
    "delete ran": [],  # denied by the YAML guard
    "the reason was read": True,
    "write got": ["/sandbox/notes.txt"],  # rewritten by the YAML guard
}


# --- orchestra's DAG ----------------------------------------------------------------------


def run_dag(tmp_path: Path) -> Work:
    work, registry = Work(), policy_file(tmp_path)
    delete = registry.guard("delete")(work.delete)
    write = registry.guard("write")(work.write)
    dag = orchestra.DAG("one-policy")

    @dag.task
    def fetch() -> str:
        return work.fetch()

    @dag.task
    def notify() -> str:
        return work.notify()

    @dag.task
    def cleanup() -> str:
        try:
            return str(delete(path="/"))
        except ToolDenied as denied:
            work.read.append(str(denied.reason))
            return "refused"

    @dag.task
    def save() -> str:
        return str(write(path="notes.txt"))

    result = orchestra.run_sync(dag, hooks=[Policy()])
    assert result.ok
    assert result.states["notify"] is orchestra.TaskState.SKIPPED
    return work


# --- LangGraph ----------------------------------------------------------------------------


def run_langgraph(tmp_path: Path) -> Work:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode
    from orchestra_langgraph import with_hooks

    work = Work()

    @tool
    def delete(path: str) -> str:
        """Delete a file."""
        return work.delete(path)

    @tool
    def write(path: str) -> str:
        """Write a file."""
        return work.write(path)

    calls = [
        {"name": "delete", "args": {"path": "/"}, "id": "c1"},
        {"name": "write", "args": {"path": "notes.txt"}, "id": "c2"},
    ]
    model = GenericFakeChatModel(messages=iter([AIMessage("", tool_calls=calls), AIMessage("ok")]))

    def fetch(state: Any) -> dict[str, Any]:
        work.fetch()
        return {}

    def notify(state: Any) -> dict[str, Any]:
        work.notify()
        return {}

    def agent(state: Any) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def route(state: Any) -> str:
        return "tools" if state["messages"][-1].tool_calls else END

    builder = StateGraph(MessagesState)
    for name, node in (("fetch", fetch), ("notify", notify), ("agent", agent)):
        builder.add_node(name, node)
    builder.add_node("tools", ToolNode([delete, write]))
    builder.add_edge(START, "fetch")
    builder.add_edge("fetch", "notify")
    builder.add_edge("notify", "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")

    app = with_hooks(builder, [Policy()], registry=policy_file(tmp_path)).compile()
    messages = app.invoke({"messages": [HumanMessage("tidy up")]})["messages"]
    work.read += [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    return work


# --- pydantic-ai --------------------------------------------------------------------------


def run_pydantic_ai(tmp_path: Path) -> Work:
    from orchestra_pydantic_ai import OrchestraCapability
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    work = Work()

    def model(messages: list[Any], info: Any) -> ModelResponse:
        returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if returns:
            work.read += [str(p.content) for p in returns]
            return ModelResponse(parts=[TextPart("ok")])
        return ModelResponse(
            parts=[
                ToolCallPart("fetch", {}, tool_call_id="c1"),
                ToolCallPart("notify", {}, tool_call_id="c2"),
                ToolCallPart("delete", {"path": "/"}, tool_call_id="c3"),
                ToolCallPart("write", {"path": "notes.txt"}, tool_call_id="c4"),
            ]
        )

    capability = OrchestraCapability([Policy()], registry=policy_file(tmp_path))
    agent: Agent[None, str] = Agent(FunctionModel(model), name="ops", capabilities=[capability])
    for fn in (work.fetch, work.notify, work.delete, work.write):
        agent.tool_plain(name=fn.__name__)(fn)
    assert asyncio.run(agent.run("tidy up")).output == "ok"  # run_sync leaves its loop open
    return work


# --- OpenAI Agents SDK --------------------------------------------------------------------


def run_openai_agents(tmp_path: Path) -> Work:
    from agents import Agent, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call
    from orchestra_openai_agents import OrchestraRunHooks

    set_tracing_disabled(True)
    work = Work()
    model = ScriptedModel(
        [
            [
                function_call("fetch", {}, call_id="c1"),
                function_call("notify", {}, call_id="c2"),
                function_call("delete", {"path": "/"}, call_id="c3"),
                function_call("write", {"path": "notes.txt"}, call_id="c4"),
            ],
            [assistant_message("ok")],
        ]
    )
    tools = [
        function_tool(work.fetch, name_override="fetch"),
        function_tool(work.notify, name_override="notify"),
        function_tool(work.delete, name_override="delete"),
        function_tool(work.write, name_override="write"),
    ]
    agent = Agent(name="ops", model=model, tools=tools)
    bridge = OrchestraRunHooks([Policy()], registry=policy_file(tmp_path))
    assert asyncio.run(bridge.run(agent, "tidy up")).final_output == "ok"
    for call in model.calls[1:]:
        for item in call.input if isinstance(call.input, list) else ():
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                work.read.append(str(item["output"]))
    return work


ENGINES = {
    "orchestra DAG": run_dag,
    "LangGraph": run_langgraph,
    "pydantic-ai": run_pydantic_ai,
    "OpenAI Agents SDK": run_openai_agents,
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_the_same_policy_decides_alike_in_every_engine(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # the SDK wants one; no network
    work = ENGINES[engine](tmp_path)
    assert work.outcome() == EXPECTED
