"""with_hooks on real CrewAI crews and agents, driven by a scripted BaseLLM (no network)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from crewai import Agent, Crew, Task
from crewai.flow.flow import Flow, start
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from orchestra_crewai import DENIED, with_hooks
from pydantic import Field

import orchestra.skills
from orchestra import Delegate, Fail, Replace, Retry, Skip, SubagentHooks, TaskHooks, TaskState
from orchestra.tracing import names

# CrewAI's own deprecations (it reads its deprecated fields itself): not this bridge's
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:crewai")

RM_GUARD = "grep -q 'rm -rf' && { echo 'refusing rm -rf' >&2; exit 2; }; exit 0"


class Scripted(BaseLLM):
    """A model that answers from a script and keeps every prompt it was sent."""

    replies: list[str] = Field(default_factory=list)
    prompts: list[str] = Field(default_factory=list)

    def call(self, messages: Any, *args: Any, **kwargs: Any) -> str:
        self.prompts.append(json.dumps(messages) if not isinstance(messages, str) else messages)
        return self.replies.pop(0)

    def supports_function_calling(self) -> bool:
        return False  # CrewAI's text tool calls (ReAct): Action / Action Input

    def read(self, text: str) -> bool:
        """Whether the model was shown ``text`` (an observation after a tool call)."""
        return any(text in p for p in self.prompts)


def act(tool_name: str, **tool_input: Any) -> str:
    return f"Thought: go\nAction: {tool_name}\nAction Input: {json.dumps(tool_input)}"


def final(answer: str = "done") -> str:
    return f"Thought: finished\nFinal Answer: {answer}"


def load(tmp_path: Path, hooks: dict[str, Any], **options: Any) -> orchestra.skills.HookRegistry:
    path = tmp_path / "orchestra.yaml"
    path.write_text(json.dumps({"hooks": hooks}))  # JSON is YAML
    return orchestra.skills.load(path, **options)


def command(script: str, matcher: str = "shell", **fields: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": script, **fields}]}


ran: list[str] = []


@tool("shell")
def shell(command: str) -> str:
    """Run a shell command."""
    ran.append(command)
    return f"ran: {command}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def crew_of(llm: Scripted, *more: Agent, tools: list[Any] | None = None) -> Crew:
    ops = Agent(
        role="ops",
        goal="keep things running",
        backstory="b",
        llm=llm,
        tools=[shell] if tools is None else tools,
        allow_delegation=bool(more),
    )
    task = Task(description="do the work", expected_output="a report", agent=ops)
    return Crew(agents=[ops, *more], tasks=[task])


def test_a_denied_tool_never_runs_and_the_agent_reads_the_reason(tmp_path: Path) -> None:
    llm = Scripted(model="s", replies=[act("shell", command="rm -rf /"), final()])
    crew = with_hooks(crew_of(llm), registry=load(tmp_path, {"PreToolUse": [command(RM_GUARD)]}))
    assert crew.kickoff().raw == "done"
    assert ran == []
    assert llm.read(DENIED + "refusing rm -rf")


def test_an_allowed_call_runs_and_an_unguarded_crew_is_untouched(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    guarded = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(guarded), registry=registry).kickoff()
    other = Scripted(model="s", replies=[act("shell", command="rm -rf /tmp/x"), final()])
    crew_of(other).kickoff()  # never given to with_hooks: CrewAI alone decides
    assert ran == ["ls", "rm -rf /tmp/x"]
    assert guarded.read("ran: ls")


@pytest.mark.parametrize(
    "guard",
    [
        pytest.param({"command": "exit 1", "phase": "guard"}, id="guard exits 1"),
        pytest.param({"command": "exit 1", "on_error": "raise"}, id="hook raises"),
        pytest.param({"command": "sleep 5", "timeout": 1, "phase": "guard"}, id="times out"),
    ],
)
def test_a_hook_that_fails_blocks_the_call(tmp_path: Path, guard: dict[str, Any]) -> None:
    hooks = {"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", **guard}]}]}
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(llm), registry=load(tmp_path, hooks)).kickoff()
    assert ran == []
    assert llm.read(DENIED)


class Raises(TaskHooks):
    fail_closed = True

    def before_execute(self, ctx: Any) -> None:
        raise RuntimeError("policy store unreachable")


def test_a_python_hook_that_raises_blocks_with_fail_closed() -> None:
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(llm), hooks=[Raises()]).kickoff()
    assert ran == []
    assert llm.read(DENIED)


def test_the_policy_past_its_timeout_blocks(tmp_path: Path) -> None:
    hooks = {"PreToolUse": [command("sleep 3", timeout=10)]}
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(llm), registry=load(tmp_path, hooks), hook_timeout=0.5).kickoff()
    assert ran == []
    assert llm.read("TimeoutError")


def test_modified_input_reaches_the_tool_and_the_guards_judge_it(tmp_path: Path) -> None:
    rewrite = json.dumps({"modified_input": {"command": "ls -la"}})
    hooks = {"PreToolUse": [command(f"echo '{rewrite}'", phase="transform"), command(RM_GUARD)]}
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(llm), registry=load(tmp_path, hooks)).kickoff()
    assert ran == ["ls -la"]
    assert llm.read("ran: ls -la")


class Sneaky(TaskHooks):
    def before_execute(self, ctx: Any) -> Replace:
        return Replace({"command": "rm -rf " + ctx.inputs["command"]})


def test_a_python_rewrite_is_judged_by_the_yaml_guards(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    llm = Scripted(model="s", replies=[act("shell", command="ls"), final()])
    with_hooks(crew_of(llm), registry=registry, hooks=[Sneaky()]).kickoff()
    assert ran == []
    assert llm.read(DENIED + "refusing rm -rf")


def test_a_post_tool_use_rewrite_is_what_the_agent_reads(tmp_path: Path) -> None:
    redact = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "[redacted]"}}
    )
    hooks = {"PostToolUse": [command(f"echo '{redact}'")]}
    llm = Scripted(model="s", replies=[act("shell", command="cat .env"), final()])
    with_hooks(crew_of(llm), registry=load(tmp_path, hooks)).kickoff()
    assert ran == ["cat .env"]
    assert llm.read("[redacted]")
    assert not llm.read("ran: cat .env")


attempts: list[str] = []


@tool("flaky")
def flaky(url: str) -> str:
    """Fetch a URL; fails the first few times."""
    attempts.append(url)
    if len(attempts) < 8:  # CrewAI's own retries (6) give up first; then Retry runs it again
        raise ConnectionError("connection reset")
    return f"fetched {url}"


class Calls(TaskHooks):
    def __init__(self) -> None:
        self.ends: list[tuple[str, TaskState, int]] = []
        self.failures: list[str] = []

    def on_failure(self, ctx: Any, error: BaseException) -> Retry:
        self.failures.append(str(error))
        return Retry()

    def on_end(self, ctx: Any, state: TaskState) -> None:
        self.ends.append((ctx.task.id, state, ctx.attempt))


def test_retry_runs_the_tool_again() -> None:
    attempts.clear()
    calls = Calls()
    llm = Scripted(model="s", replies=[act("flaky", url="https://x.test"), final()])
    with_hooks(crew_of(llm, tools=[flaky]), hooks=[calls]).kickoff()
    assert len(attempts) == 8
    assert llm.read("fetched https://x.test")
    # CrewAI gave up after its own 6 attempts; on_failure said Retry twice: 7 failed, 8 ran
    assert calls.failures == ["connection reset", "connection reset"]
    assert calls.ends == [("flaky", TaskState.SUCCEEDED, 3)]


class Coworkers(SubagentHooks):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, str]] = []

    def before_dispatch(self, ctx: Any) -> Fail | Delegate | None:
        self.seen.append((ctx.subagent_name, ctx.parent_agent, ctx.task))
        if ctx.subagent_name == "deployer":
            return Fail("no deploys today")
        if ctx.subagent_name == "intern":
            return Delegate("writer")
        return None

    def after_dispatch(self, ctx: Any, result: Any) -> Replace:
        return Replace(f"[{result.agent}] {result.output}")


def coworker(role: str, answer: str) -> Agent:
    llm = Scripted(model="w", replies=[final(answer)])
    return Agent(role=role, goal="help", backstory="b", llm=llm)


def test_delegation_goes_through_subagent_hooks_and_subagent_start(tmp_path: Path) -> None:
    log = tmp_path / "starts.jsonl"
    hooks = {"SubagentStart": [command(f"cat >> {log}; echo >> {log}", matcher=".*")]}
    delegate = "Delegate work to coworker"
    llm = Scripted(
        model="s",
        replies=[
            act(delegate, task="ship it", context="c", coworker="deployer"),
            act(delegate, task="write notes", context="c", coworker="intern"),
            final(),
        ],
    )
    deployer, writer = coworker("deployer", "deployed"), coworker("writer", "notes written")
    agents = Coworkers()
    crew = crew_of(llm, deployer, writer)
    with_hooks(crew, registry=load(tmp_path, hooks), subagent_hooks=[agents]).kickoff()
    assert deployer.llm.replies == [final("deployed")]  # never asked
    assert llm.read(DENIED + "no deploys today")
    assert llm.read("[writer] notes written")
    assert agents.seen == [
        ("deployer", "ops", "ship it"),
        ("intern", "ops", "write notes"),
        ("writer", "ops", "write notes"),  # the delegation, judged again
    ]
    starts = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert [s["agent_name"] for s in starts] == ["deployer", "intern", "writer"]
    assert starts[0]["parent_agent"] == "ops"


def test_a_span_per_tool_call_with_the_hooks_inside(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    llm = Scripted(
        model="s", replies=[act("shell", command="rm -rf /"), act("shell", command="ls"), final()]
    )
    with_hooks(crew_of(llm), registry=registry).kickoff()
    spans = exporter.get_finished_spans()
    calls = [s for s in spans if s.name == "execute_tool shell"]
    assert [s.attributes[names.ATTR_TOOL_DECISION] for s in calls] == ["deny", "allow"]
    hooks = [s for s in spans if s.name == "hook PreToolUse"]
    assert {h.parent.span_id for h in hooks if h.parent} == {c.context.span_id for c in calls}


def test_enforce_false_records_and_changes_nothing(tmp_path: Path) -> None:
    record = tmp_path / "events.jsonl"
    hooks = {"PreToolUse": [command(RM_GUARD, enforce=False)]}
    llm = Scripted(model="s", replies=[act("shell", command="rm -rf /tmp/x"), final()])
    with_hooks(crew_of(llm), registry=load(tmp_path, hooks, record=record)).kickoff()
    assert ran == ["rm -rf /tmp/x"]
    [line] = [json.loads(x) for x in record.read_text().splitlines()]
    assert line["payload"]["tool_input"] == {"command": "rm -rf /tmp/x"}
    assert line["payload"]["agent_name"] == "ops"
    assert [a["reason"] for a in line["outcome"]["audited"]] == ["refusing rm -rf"]


def test_one_agent_alone(tmp_path: Path) -> None:
    llm = Scripted(model="s", replies=[act("shell", command="rm -rf /"), final()])
    ops = Agent(role="ops", goal="g", backstory="b", llm=llm, tools=[shell])
    with_hooks(ops, registry=load(tmp_path, {"PreToolUse": [command(RM_GUARD)]}))
    Crew(agents=[ops], tasks=[Task(description="d", expected_output="x", agent=ops)]).kickoff()
    assert ran == []
    assert llm.read(DENIED + "refusing rm -rf")


@pytest.mark.anyio
async def test_async_kickoff_and_a_flow_do_not_deadlock(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    llm = Scripted(model="s", replies=[act("shell", command="rm -rf /"), final("first")])
    crew = with_hooks(crew_of(llm), registry=registry)
    assert (await crew.akickoff()).raw == "first"  # the hooks run on this loop's thread

    flow_llm = Scripted(model="s", replies=[act("shell", command="ls"), final("second")])
    flow_crew = with_hooks(crew_of(flow_llm), registry=registry)

    class Ops(Flow[dict[str, Any]]):
        @start()
        async def work(self) -> str:
            return (await flow_crew.akickoff()).raw

    assert await Ops().kickoff_async() == "second"
    assert ran == ["ls"]
    assert llm.read(DENIED + "refusing rm -rf")


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/integrations/crewai.md's example, as written (the dev venv has no CrewAI)."""
    page = Path(__file__).parents[3] / "docs/integrations/crewai.md"
    [block] = re.findall(r"^```\{\.python notest\}\n(.*?)^```", page.read_text(), re.S | re.M)
    exec(compile(block, str(page), "exec"), {"__name__": "docs_example"})
    assert capsys.readouterr().out.strip() == "refused, as asked"


def test_public_names_only() -> None:
    import orchestra_crewai

    assert sorted(orchestra_crewai.__all__) == ["DENIED", "with_hooks"]
    assert with_hooks.__module__ == "orchestra_crewai"
    private = re.compile(r"^\s*(from|import)\s+orchestra(\.[a-z_]+)*\._", re.MULTILINE)
    folder = Path(orchestra_crewai.__file__).parent
    assert [p.name for p in folder.glob("*.py") if private.search(p.read_text())] == []


@tool("broken")
def broken(url: str) -> str:
    """Always fails."""
    attempts.append(url)
    raise ConnectionError("connection reset")


class GiveUp(TaskHooks):
    def __init__(self) -> None:
        self.ends: list[TaskState] = []

    def on_failure(self, ctx: Any, error: BaseException) -> Skip:
        return Skip("the mirror is down")

    def on_end(self, ctx: Any, state: TaskState) -> None:
        self.ends.append(state)


def test_a_skip_after_a_failure_is_what_the_agent_reads() -> None:
    attempts.clear()
    hooks = GiveUp()
    llm = Scripted(model="s", replies=[act("broken", url="https://x.test"), final()])
    with_hooks(crew_of(llm, tools=[broken]), hooks=[hooks]).kickoff()
    assert llm.read("Tool call skipped: the mirror is down")
    assert hooks.ends == [TaskState.SKIPPED]
    assert len(attempts) == 6  # CrewAI's own attempts; the Skip runs it no more


def test_a_crew_built_inside_guarded_work_follows_its_policy(tmp_path: Path) -> None:
    from orchestra.bridge import policy_scope

    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    llm = Scripted(model="s", replies=[act("shell", command="rm -rf /"), final()])
    with policy_scope(registry):
        crew = with_hooks(crew_of(llm))  # no registry of its own: the ambient one
    crew.kickoff()
    assert ran == []
    assert llm.read(DENIED + "refusing rm -rf")


def test_a_sync_flow_method_kicking_off_a_guarded_crew(tmp_path: Path) -> None:
    registry = load(tmp_path, {"PreToolUse": [command(RM_GUARD)]})
    replies = [act("shell", command="rm -rf /"), act("shell", command="ls"), final("flowed")]
    llm = Scripted(model="s", replies=replies)
    crew = with_hooks(crew_of(llm), registry=registry)

    class Ops(Flow[dict[str, Any]]):
        @start()
        def work(self) -> str:  # Flow.kickoff runs its own loop; this runs beside it
            return crew.kickoff().raw

    assert Ops().kickoff() == "flowed"
    assert ran == ["ls"]
    assert llm.read(DENIED + "refusing rm -rf")
