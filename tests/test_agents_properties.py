"""Property: whatever agents do and hooks answer, every dispatch ends within its caps."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestra import (
    Delegate,
    Dispatcher,
    DispatchError,
    Fail,
    Retry,
    Skip,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
    SubagentResult,
)
from orchestra.agents import AgentContext

NAMES = ("a", "b", "c", "d")

# What a hook may answer (or do), invalid answers included: Skip is not valid for
# subagents and "raise" is a hook that crashes; both must count as no opinion.
answers = st.one_of(
    st.none(),
    st.just(Retry(0)),
    st.just(Fail("scripted")),
    st.just(Skip("invalid here")),
    st.just("raise"),
    st.sampled_from([*NAMES, "ghost"]).map(Delegate),
)


class Scripted(Subagent):
    """Fails or answers each run as its script says (cycled)."""

    def __init__(self, name: str, script: list[bool], log: list[tuple[str, int]]) -> None:
        self.name = name
        self.script = script
        self.log = log
        self.runs = 0

    async def run(self, task: str, ctx: AgentContext) -> str:
        self.log.append((self.name, ctx.attempt))
        fail = self.script[self.runs % len(self.script)] if self.script else False
        self.runs += 1
        if fail:
            raise ConnectionError(f"{self.name} run {self.runs}")
        return self.name


class ScriptedHooks(SubagentHooks):
    def __init__(self, before: list[Any], failure: list[Any]) -> None:
        self.before = before
        self.failure = failure
        self.calls = 0

    def answer(self, script: list[Any]) -> Any:
        self.calls += 1
        answer = script[self.calls % len(script)] if script else None
        if answer == "raise":
            raise RuntimeError("scripted hook crash")
        return answer

    def before_dispatch(self, ctx: SubagentHookContext) -> Any:
        return self.answer(self.before)

    def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Any:
        return self.answer(self.failure)


scripts = st.fixed_dictionaries(
    {
        "agents": st.lists(st.lists(st.booleans(), max_size=4), min_size=4, max_size=4),
        "hooks": st.lists(
            st.tuples(st.lists(answers, max_size=5), st.lists(answers, max_size=5)),
            max_size=3,
        ),
        "max_delegations": st.integers(0, 4),
        "max_attempts": st.integers(1, 6),
        "start": st.sampled_from(NAMES),
    }
)


async def dispatch_once(script: dict[str, Any]) -> None:
    log: list[tuple[str, int]] = []
    agents = [Scripted(n, s, log) for n, s in zip(NAMES, script["agents"], strict=True)]
    hooks = [ScriptedHooks(list(b), list(f)) for b, f in script["hooks"]]
    max_delegations, max_attempts = script["max_delegations"], script["max_attempts"]
    d = Dispatcher(agents, hooks=hooks, max_delegations=max_delegations, max_attempts=max_attempts)
    try:
        outcome: SubagentResult | DispatchError = await d.dispatch(script["start"], "t")
    except DispatchError as exc:
        outcome = exc
    # It ended, within the caps.
    assert len(log) <= (max_delegations + 1) * max_attempts
    assert all(attempt <= max_attempts for _, attempt in log)
    chain = outcome.delegated_from
    assert len(chain) <= max_delegations
    assert len(set(chain)) == len(chain)
    assert chain[:1] in ((), (script["start"],))
    agents_run = [name for name, _ in log]
    assert set(agents_run) <= {*chain, outcome.agent}
    if isinstance(outcome, SubagentResult):
        assert outcome.agent not in chain
        assert outcome.output == outcome.agent
        assert 1 <= outcome.attempts <= max_attempts
        assert log[-1] == (outcome.agent, outcome.attempts)
    else:
        assert outcome.agent is not None
        assert outcome.agent in str(outcome) or "ghost" in str(outcome)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=150, deadline=None)
@given(script=scripts)
def test_every_dispatch_ends_within_its_caps(backend: str, script: dict[str, Any]) -> None:
    anyio.run(partial(dispatch_once, script), backend=backend)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("answer", [Retry(0), Delegate("b"), Delegate("a")])
def test_a_hook_that_always_answers_the_same_cannot_loop(backend: str, answer: Any) -> None:
    script = {
        "agents": [[True]] * 4,
        "hooks": [([None], [answer])],
        "max_delegations": 3,
        "max_attempts": 4,
        "start": "a",
    }
    anyio.run(partial(dispatch_once, script), backend=backend)
