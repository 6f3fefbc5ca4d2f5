"""FORK and TEAMMATE lifetimes, timeouts and cancellation, on both anyio backends."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest

from orchestra import (
    Dispatcher,
    DispatchError,
    ExecutionMode,
    Retry,
    Subagent,
    SubagentHookContext,
    SubagentHooks,
)
from orchestra.agents import AgentContext, Fork

pytestmark = pytest.mark.anyio

FORK = ExecutionMode.FORK
TEAMMATE = ExecutionMode.TEAMMATE


class Gate(Subagent):
    """Waits until ``release`` is set (forever if never), recording start and finish."""

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self.started = anyio.Event()
        self.release = anyio.Event()
        self.running = 0
        self.log: list[str] = []

    async def run(self, task: str, ctx: AgentContext) -> str:
        self.running += 1
        self.log.append(f"start {task}")
        self.started.set()
        try:
            await self.release.wait()
        except anyio.get_cancelled_exc_class():
            self.log.append(f"cancelled {task}")
            raise
        finally:
            self.running -= 1
        self.log.append(f"end {task}")
        return f"{self.name}: {task}"


class Echo(Subagent):
    def __init__(self, name: str) -> None:
        self.name = name

    async def run(self, task: str, ctx: AgentContext) -> str:
        if task == "boom":
            raise ValueError("boom")
        return f"{self.name}: {task}"


class Chat(Subagent):
    """A teammate that remembers what each parent told it."""

    name = "chat"

    def __init__(self) -> None:
        self.closed: list[tuple[str, ...]] = []
        self.active = 0
        self.overlap = False

    async def run(self, task: str, ctx: AgentContext) -> tuple[str, ...]:
        self.active += 1
        self.overlap |= self.active > 1
        try:
            history = ctx.state.setdefault("history", [])
            if not history:
                ctx.on_close(lambda: self.closed.append(tuple(history)))
            history.append(task)
            await anyio.lowlevel.checkpoint()
            return tuple(history)
        finally:
            self.active -= 1


# -- FORK ------------------------------------------------------------------------------------


async def test_fork_runs_beside_the_caller_and_is_awaited() -> None:
    gate = Gate()
    async with Dispatcher([gate]) as d:
        fork = await d.dispatch("gate", "t", parent="p", mode=FORK)
        assert isinstance(fork, Fork)
        await gate.started.wait()  # it runs while the caller goes on
        assert not fork.done()
        assert "running" in repr(fork)
        gate.release.set()
        result = await fork
        assert (result.agent, result.output) == ("gate", "gate: t")
        assert fork.done()
        assert not fork.cancelled
        assert await fork.wait() is result  # a handle can be awaited again
        assert (fork.agent, fork.task, fork.parent) == ("gate", "t", "p")


async def test_fork_failure_is_kept_for_whoever_awaits() -> None:
    async with Dispatcher([Echo("e")]) as d:
        fork = await d.dispatch("e", "boom", mode=FORK)
        with pytest.raises(DispatchError, match="agent 'e' failed") as info:
            await fork
    assert isinstance(info.value.__cause__, ValueError)
    assert "failed" in repr(fork)


async def test_unawaited_fork_failure_is_logged_at_close(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="orchestra"):
        async with Dispatcher([Echo("e")]) as d:
            await d.dispatch("e", "boom", mode=FORK)
    assert "fork of 'boom' to agent 'e' failed and was never awaited" in caplog.text


async def test_fork_needs_an_open_dispatcher() -> None:
    d = Dispatcher([Echo("e")])
    with pytest.raises(DispatchError, match=r"agent 'e' as FORK: open the dispatcher"):
        await d.dispatch("e", "t", mode=FORK)


async def test_leaving_the_block_waits_for_running_forks() -> None:
    gate = Gate()
    async with Dispatcher([gate]) as d:
        fork = await d.dispatch("gate", "t", mode=FORK)
        await gate.started.wait()
        gate.release.set()
    assert gate.running == 0
    assert (await fork).output == "gate: t"  # the result outlives the dispatcher


async def test_a_failing_block_cancels_forks_and_nothing_is_left_running() -> None:
    gate = Gate()
    forks: list[Fork] = []

    async def block() -> None:
        async with Dispatcher([gate]) as d:
            forks.append(await d.dispatch("gate", "t", mode=FORK))
            await gate.started.wait()
            raise KeyError("block failed")

    with pytest.raises(KeyError):  # the block's own error, not an ExceptionGroup
        await block()
    (fork,) = forks
    assert gate.running == 0
    assert gate.log == ["start t", "cancelled t"]
    assert fork.cancelled
    with pytest.raises(DispatchError, match="fork of 't' to agent 'gate' was cancelled"):
        await fork


async def test_cancelling_the_caller_cancels_its_forks() -> None:
    gate = Gate()
    with anyio.CancelScope() as scope:
        async with Dispatcher([gate]) as d:
            fork = await d.dispatch("gate", "t", mode=FORK)
            await gate.started.wait()
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert gate.running == 0
    assert fork.cancelled


async def test_cancelling_a_task_awaiting_a_fork_cancels_the_fork() -> None:
    gate = Gate()
    async with Dispatcher([gate]) as d:
        fork = await d.dispatch("gate", "t", mode=FORK)
        with anyio.CancelScope() as scope:
            await gate.started.wait()
            scope.cancel()
            await fork
        assert scope.cancelled_caught
        with pytest.raises(DispatchError, match="cancelled"):
            await fork
    assert gate.log == ["start t", "cancelled t"]


async def test_fork_cancel() -> None:
    gate = Gate()
    async with Dispatcher([gate]) as d:
        fork = await d.dispatch("gate", "t", mode=FORK)
        await gate.started.wait()
        fork.cancel()
        with pytest.raises(DispatchError, match="cancelled"):
            await fork
        assert "cancelled" in repr(fork)
        fork.cancel()  # no effect once ended
    assert gate.running == 0


async def test_forks_run_concurrently() -> None:
    gates = [Gate(f"g{i}") for i in range(3)]
    async with Dispatcher(gates) as d:
        forks = [await d.dispatch(g.name, "t", mode=FORK) for g in gates]
        for g in gates:
            await g.started.wait()  # all three started before any finished
        assert sum(g.running for g in gates) == 3
        for g in gates:
            g.release.set()
        assert [(await f).agent for f in forks] == ["g0", "g1", "g2"]


class Fatal(BaseException):
    pass


async def test_fatal_base_exception_in_a_fork_ends_the_dispatcher() -> None:
    class Doomed(Subagent):
        name = "doomed"

        async def run(self, task: str, ctx: AgentContext) -> None:
            raise Fatal

    gate = Gate()
    forks: list[Fork] = []

    async def block() -> None:
        async with Dispatcher([Doomed(), gate]) as d:
            forks.append(await d.dispatch("gate", "t", mode=FORK))
            forks.append(await d.dispatch("doomed", "t", mode=FORK))
            await anyio.sleep_forever()

    with pytest.raises(Fatal):
        await block()
    other, fork = forks
    assert other.cancelled
    assert gate.running == 0
    with pytest.raises(Fatal):
        await fork


# -- TEAMMATE --------------------------------------------------------------------------------


async def test_teammate_keeps_state_per_parent_and_closes_with_the_dispatcher() -> None:
    chat = Chat()
    async with Dispatcher([chat]) as d:
        assert (await d.dispatch("chat", "hi", parent="alice", mode=TEAMMATE)).output == ("hi",)
        r = await d.dispatch("chat", "again", parent="alice", mode=TEAMMATE)
        assert r.output == ("hi", "again")
        assert (await d.dispatch("chat", "yo", parent="bob", mode=TEAMMATE)).output == ("yo",)
        # a SYNC dispatch has a session of its own, closed when it ends
        assert (await d.dispatch("chat", "sync", parent="alice")).output == ("sync",)
        assert chat.closed == [("sync",)]
    assert sorted(chat.closed[1:]) == [("hi", "again"), ("yo",)]
    with pytest.raises(DispatchError, match="agent 'chat': the dispatcher is closed"):
        await d.dispatch("chat", "late", parent="alice", mode=TEAMMATE)


async def test_teammate_dispatches_to_one_session_run_one_at_a_time() -> None:
    chat = Chat()
    async with Dispatcher([chat]) as d, anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(lambda i=i: d.dispatch("chat", str(i), parent="p", mode=TEAMMATE))
    assert not chat.overlap
    assert len(chat.closed) == 1
    assert sorted(chat.closed[0]) == ["0", "1", "2", "3", "4"]


async def test_teammate_needs_an_open_dispatcher() -> None:
    d = Dispatcher([Chat()])
    with pytest.raises(DispatchError, match=r"agent 'chat' as TEAMMATE: open the dispatcher"):
        await d.dispatch("chat", "t", mode=TEAMMATE)


async def test_teammate_dispatch_still_running_is_cancelled_when_the_dispatcher_closes() -> None:
    gate = Gate()
    errors: list[BaseException] = []

    async def caller(d: Dispatcher) -> None:
        try:
            await d.dispatch("gate", "t", parent="p", mode=TEAMMATE)
        except DispatchError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as tg, Dispatcher([gate]) as d:
        tg.start_soon(caller, d)
        await gate.started.wait()
    (error,) = errors
    assert "agent 'gate' was cancelled: the dispatcher closed" in str(error)
    assert gate.running == 0


# -- lifetime and timeouts -------------------------------------------------------------------


async def test_dispatcher_opens_once_and_refuses_dispatch_when_closed() -> None:
    d = Dispatcher([Echo("e")])
    async with d:
        assert "open" in repr(d)
    assert d.closed
    with pytest.raises(RuntimeError, match="can be opened only once"):
        async with d:
            pass
    with pytest.raises(DispatchError, match="closed"):
        await d.dispatch("e", "t")


class Never(Subagent):
    name = "never"

    async def run(self, task: str, ctx: AgentContext) -> None:
        await anyio.sleep_forever()


@pytest.mark.parametrize("mode", [ExecutionMode.SYNC, TEAMMATE, FORK])
async def test_timeout_ends_an_agent_that_never_returns(mode: ExecutionMode) -> None:
    seen: list[tuple[str, int, type[BaseException]]] = []

    class Spy(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> Retry:
            seen.append((ctx.subagent_name, ctx.attempt, type(error)))
            return Retry(0)  # ignored: the dispatch's time is up

    async def dispatch(d: Dispatcher) -> Any:
        answer = await d.dispatch("never", "t", mode=mode, timeout=0.01)
        return await answer if isinstance(answer, Fork) else answer

    async with Dispatcher([Never()], hooks=[Spy()]) as d:
        with pytest.raises(DispatchError, match=r"'t' to agent 'never' timed out after 0.01 s"):
            await dispatch(d)
    assert seen == [("never", 1, TimeoutError)]


async def test_cancelled_dispatch_is_not_shown_to_hooks_and_propagates() -> None:
    seen: list[BaseException] = []

    class Spy(SubagentHooks):
        def on_failure(self, ctx: SubagentHookContext, error: BaseException) -> None:
            seen.append(error)

    d = Dispatcher([Never()], hooks=[Spy()])
    with anyio.move_on_after(0.01) as scope:
        await d.dispatch("never", "t")
    assert scope.cancelled_caught
    assert seen == []
