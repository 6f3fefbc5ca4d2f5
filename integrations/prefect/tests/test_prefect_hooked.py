"""hooked on real Prefect 3 flows (the shared scripts are in tests/conformance; these
are Prefect's own cases: its states, retry counts, async tasks, and the bad inputs)."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import orchestra

DOCS = Path(__file__).resolve().parents[3] / "docs" / "integrations" / "prefect.md"


# Not in a conftest.py: a module named ``conftest`` collected after the postgres tests'
# would shadow the helpers they import from theirs.
@pytest.fixture(scope="session")
def prefect_api() -> Iterator[str]:
    """Prefect's local API (temporary PREFECT_HOME and database), once per session."""
    from orchestra_prefect.testing import local_api

    with local_api() as url:
        yield url


class Always(orchestra.TaskHooks):
    def __init__(self, decision: Any) -> None:
        self.decision = decision
        self.attempts: list[int] = []

    def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
        self.attempts.append(ctx.attempt)
        return self.decision(ctx) if callable(self.decision) else self.decision


def test_a_hooks_retry_is_prefects_retry(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task

    runs: list[int] = []
    hooks = Always(lambda ctx: orchestra.Retry(delay=0.05) if ctx.attempt < 3 else None)

    @orchestra_prefect.hooked(hooks)
    @task
    def flaky() -> int:
        runs.append(1)
        if len(runs) < 3:
            raise ConnectionError("flaky")
        return len(runs)

    @flow
    def main() -> Any:
        return flaky(return_state=True)

    state = main()
    assert state.is_completed()
    assert state.result() == 3
    assert hooks.attempts == [1, 2]
    from prefect import get_client

    with get_client(sync_client=True) as client:
        run = client.read_task_run(state.state_details.task_run_id)
        history = client.read_task_run_states(run.id)
    assert run.run_count == 3
    names = [s.name for s in history]
    assert names.count("AwaitingRetry") == 2  # the hook's delay, as Prefect's own state
    assert names.count("Retrying") == 2


def test_no_opinion_keeps_the_tasks_own_retries(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task

    hooks = Always(None)

    @orchestra_prefect.hooked(hooks)
    @task(retries=2, retry_delay_seconds=0)
    def broken() -> int:
        raise ValueError("always")

    @flow
    def main() -> bool:
        return broken(return_state=True).is_failed()  # type: ignore[no-any-return]

    assert main()
    assert hooks.attempts == [1, 2, 3]  # 1 + its own 2 retries, not the hooks' cap


def test_skip_is_a_completed_state_named_skipped(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task

    class SkipAll(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Skip("not today")

    @orchestra_prefect.hooked(SkipAll())
    @task
    def work() -> int:
        raise AssertionError("never runs")

    @flow
    def main() -> Any:
        return work(return_state=True)

    state = main()
    assert state.is_completed()
    assert state.name == orchestra_prefect.SKIPPED
    assert "skipped by SkipAll.before_execute: not today" in (state.message or "")
    assert state.result() is None
    assert orchestra_prefect.task_state(state) is orchestra.TaskState.SKIPPED


def test_a_given_output_is_the_tasks_result_and_its_body_never_runs(prefect_api: str) -> None:
    """``Replace(GiveOutput(v))`` (a graph executor's block): the run completes with ``v``."""
    import orchestra_prefect
    from prefect import flow, task

    from orchestra.bridge import GiveOutput

    class Gives(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.ends: list[orchestra.TaskState] = []

        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Replace(GiveOutput({"given": True}))

        def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
            self.ends.append(state)

    hooks = Gives()

    @orchestra_prefect.hooked(hooks)
    @task
    def work(n: int) -> int:
        raise AssertionError("never runs")

    @flow
    def main() -> Any:
        return work(1, return_state=True)

    state = main()
    assert state.is_completed()
    assert state.result() == {"given": True}
    assert hooks.ends == [orchestra.TaskState.SUCCEEDED]


def test_async_task_and_async_hooks(prefect_api: str) -> None:
    import asyncio

    import orchestra_prefect
    from prefect import flow, task

    class Async(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.seen: list[tuple[str, Any]] = []

        async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            await asyncio.sleep(0)
            self.seen.append(("before", dict(ctx.inputs)))

        async def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
            self.seen.append(("after", result))

    hooks = Async()

    @orchestra_prefect.hooked(hooks)
    @task
    async def double(x: int) -> int:
        await asyncio.sleep(0)
        return x * 2

    @flow
    async def main() -> int:
        return await double(2)

    # Prefect's async flow engine reads the server's default result storage through a
    # sync client it never closes (a socket left to the garbage collector) unless a sync
    # client context is open: open one, as Prefect's sync engine does.
    from prefect.context import SyncClientContext

    with SyncClientContext.get_or_create():
        assert asyncio.run(main()) == 4
    assert hooks.seen == [("before", {"x": 2}), ("after", 4)]


def test_hook_context_names_the_task_and_its_prefect_run(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task

    contexts: list[orchestra.TaskHookContext] = []

    class Keep(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            contexts.append(ctx)

    @orchestra_prefect.hooked(Keep())
    @task(tags=["nightly"])
    def load() -> int:
        return 1

    @flow
    def main() -> None:
        load()

    main()
    (ctx,) = contexts
    assert ctx.task.id == "load"
    assert ctx.attempt == 1
    assert ctx.task.metadata["prefect.tags"] == ("nightly",)
    assert ctx.task.metadata["tags"] == ("nightly",)  # the engine's own tags, as everywhere
    assert ctx.run_id == ctx.task.metadata["prefect.flow_run_id"]


def test_delegate_is_a_hook_error_naming_prefect(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task

    class Delegating(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Delegate("someone")

    @orchestra_prefect.hooked(Delegating())
    @task
    def work() -> int:
        return 1

    @flow
    def main() -> int:
        return work()

    assert main() == 1
    errors = work.orchestra_hook_errors  # type: ignore[attr-defined]
    assert len(errors) == 1
    assert "Prefect runs no agents" in str(errors[0])


def test_hooked_below_task_is_refused_with_the_order_to_use() -> None:
    import orchestra_prefect

    with pytest.raises(TypeError, match=r"put it above @task"):

        @orchestra_prefect.hooked(Always(None))
        def plain() -> None: ...


def test_bad_hooks_and_bad_max_retries_are_refused() -> None:
    import orchestra_prefect

    with pytest.raises(TypeError, match="is not a TaskHooks"):
        orchestra_prefect.hooked(object())
    with pytest.raises(ValueError, match="max_retries must be an int >= 0"):
        orchestra_prefect.hooked(Always(None), max_retries=-1)


def test_prefect_outside_the_supported_range_is_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "2.20.0" if name == "prefect" else real(name)
    )
    for name in [m for m in sys.modules if m.startswith("orchestra_prefect")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"prefect >=3.4,<4; found 2.20.0"):
        importlib.import_module("orchestra_prefect")


def test_the_docs_examples_run(prefect_api: str, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {"__name__": "__main__"})
    assert "data" in capsys.readouterr().out


class RunHooks(orchestra.TaskHooks):
    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.events: list[tuple[str, Any]] = []

    def before_run(self, ctx: orchestra.RunContext) -> Any:
        self.events.append(("before_run", ctx))
        return orchestra.Fail("closed today") if self.refuse else None

    def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
        self.events.append(("after_run", result))


def test_run_hooks_around_a_hooked_flow(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow, task
    from prefect.context import FlowRunContext

    hooks = RunHooks()
    run_ids: list[str] = []

    @task
    def double(x: int) -> int:
        return x * 2

    @orchestra_prefect.hooked(hooks)
    @flow
    def pipeline(x: int) -> int:
        ctx = FlowRunContext.get()
        assert ctx is not None
        assert ctx.flow_run is not None
        run_ids.append(str(ctx.flow_run.id))
        return double(x) + 1

    state = pipeline(20, return_state=True)
    assert state.is_completed()
    assert state.result() == 41
    [(before, ctx), (after, result)] = hooks.events
    assert (before, after) == ("before_run", "after_run")
    assert (ctx.dag, ctx.run_id, ctx.task_ids) == ("pipeline", run_ids[0], ())
    assert result.ok
    assert result.run_id == run_ids[0]
    assert result.states == {"pipeline": orchestra.TaskState.SUCCEEDED}
    assert result.outputs == {"pipeline": 41}
    assert result.attempts == {"pipeline": 1}


def test_before_run_fail_ends_the_flow_run_before_its_body(prefect_api: str) -> None:
    import orchestra_prefect
    from prefect import flow

    hooks = RunHooks(refuse=True)
    ran: list[int] = []

    @orchestra_prefect.hooked(hooks)
    @flow
    def pipeline() -> int:
        ran.append(1)
        return 1

    state = pipeline(return_state=True)
    assert state.is_failed()
    with pytest.raises(orchestra.TaskFailed, match="closed today"):
        state.result()
    assert ran == []
    [_, (_, result)] = hooks.events
    assert not result.ok
    assert result.states == {"pipeline": orchestra.TaskState.FAILED}
    assert result.reasons == {"pipeline": "run failed by RunHooks.before_run: closed today"}


def test_after_run_sees_the_flows_error(prefect_api: str) -> None:
    import asyncio

    import orchestra_prefect
    from prefect import flow

    class AsyncRunHooks(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.results: list[orchestra.RunResult] = []

        async def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
            self.results.append(result)

    hooks = AsyncRunHooks()

    @orchestra_prefect.hooked(hooks)
    @flow
    async def pipeline() -> int:
        raise ConnectionError("down")

    from prefect.context import SyncClientContext

    with SyncClientContext.get_or_create():  # as in test_async_task_and_async_hooks
        state = asyncio.run(pipeline(return_state=True))
    assert state.is_failed()
    [result] = hooks.results
    assert not result.ok
    assert isinstance(result.errors["pipeline"], ConnectionError)
    assert result.states == {"pipeline": orchestra.TaskState.FAILED}


def test_hooks_without_run_moments_above_a_flow_are_refused() -> None:
    import orchestra_prefect
    from prefect import flow

    @flow
    def pipeline() -> None:
        return None

    with pytest.raises(TypeError, match="implements neither: put hooked"):
        orchestra_prefect.hooked(Always(None))(pipeline)
