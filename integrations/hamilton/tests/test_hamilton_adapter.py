"""HookAdapter on real Hamilton drivers, sync and async (the shared scripts are in
tests/conformance; these are Hamilton's own cases and the bad inputs)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hamilton import ad_hoc_utils, async_driver, driver, version
from hamilton.function_modifiers import tag
from hamilton.plugins.h_threadpool import FutureAdapter
from orchestra_hamilton import HookAdapter

import orchestra


@pytest.fixture(autouse=True)
def quiet_hamilton() -> Iterator[None]:
    logging.getLogger("hamilton").disabled = True  # Hamilton logs every failed attempt
    yield
    logging.getLogger("hamilton").disabled = False


@tag(owner="data-team")
def source() -> int:
    return 4


def doubled(source: int) -> int:
    return source * 2


async def slow_source() -> int:
    await asyncio.sleep(0)
    return 4


async def slow_doubled(slow_source: int) -> int:
    await asyncio.sleep(0)
    return slow_source * 2


class Seen(orchestra.TaskHooks):
    def __init__(self) -> None:
        self.contexts: list[orchestra.TaskHookContext] = []

    def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
        self.contexts.append(ctx)


def build(*hooks: object) -> tuple[driver.Driver, HookAdapter]:
    adapter = HookAdapter(*hooks)
    module = ad_hoc_utils.create_temporary_module(source, doubled)
    return driver.Builder().with_modules(module).with_adapters(adapter).build(), adapter


def test_context_carries_the_node_name_tags_attempt_and_run() -> None:
    seen = Seen()
    dr, adapter = build(seen)
    assert dr.execute(["doubled"]) == {"doubled": 8}
    by_id = {ctx.task.id: ctx for ctx in seen.contexts}
    assert set(by_id) == {"source", "doubled"}
    assert by_id["source"].task.metadata["owner"] == "data-team"
    assert by_id["doubled"].task.deps == ("source",)
    assert {ctx.attempt for ctx in seen.contexts} == {1}
    assert len({ctx.run_id for ctx in seen.contexts}) == 1
    assert adapter.last_result is not None
    assert adapter.last_result.ok
    assert adapter.last_result.run_id == seen.contexts[0].run_id


def test_async_driver_with_async_hooks() -> None:
    class AsyncRetry(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.events: list[tuple[str, str, int]] = []

        async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            await asyncio.sleep(0)
            self.events.append(("before", ctx.task.id, ctx.attempt))

        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            self.events.append(("failure", ctx.task.id, ctx.attempt))
            return orchestra.Retry(delay=0.01)

    calls = {"n": 0}

    async def flaky(slow_source: int) -> int:
        calls["n"] += 1
        if calls["n"] < 2:
            raise ConnectionError("once")
        return slow_source + 1

    hooks = AsyncRetry()

    async def main() -> dict[str, Any]:
        module = ad_hoc_utils.create_temporary_module(slow_source, slow_doubled, flaky)
        dr = (
            await async_driver.Builder()
            .with_modules(module)
            .with_adapters(HookAdapter(hooks))
            .build()
        )
        return await dr.execute(["slow_doubled", "flaky"])  # type: ignore[no-any-return]

    assert asyncio.run(main()) == {"slow_doubled": 8, "flaky": 5}
    assert [e for e in hooks.events if e[1] == "flaky"] == [
        ("before", "flaky", 1),
        ("failure", "flaky", 1),
        ("before", "flaky", 2),
    ]


def test_fail_from_on_failure_raises_the_nodes_own_error_with_a_note() -> None:
    def broken(source: int) -> int:
        raise KeyError("corrupt")

    class FailIt(orchestra.TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            return orchestra.Fail("corrupt input")

    adapter = HookAdapter(FailIt())
    module = ad_hoc_utils.create_temporary_module(source, broken)
    dr = driver.Builder().with_modules(module).with_adapters(adapter).build()
    with pytest.raises(KeyError) as info:
        dr.execute(["broken"])
    assert "orchestra: failed by FailIt.on_failure: corrupt input" in info.value.__notes__
    assert adapter.last_result is not None
    assert adapter.last_result.reasons["broken"] == "failed by FailIt.on_failure: corrupt input"


def test_fail_before_execute_raises_task_failed() -> None:
    class Closed(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Fail("closed") if ctx.task.id == "doubled" else None

    dr, _ = build(Closed())
    with pytest.raises(orchestra.TaskFailed, match="'doubled' failed: closed"):
        dr.execute(["doubled"])


def test_before_run_fail_ends_every_node_and_the_run_once() -> None:
    # As orchestra's scheduler does: no node runs, each ends CANCELLED (attempt 0) through
    # on_end, and after_run runs once with the run's result.
    events: list[tuple[Any, ...]] = []

    class Gate(orchestra.TaskHooks):
        def before_run(self, ctx: orchestra.RunContext) -> Any:
            return orchestra.Fail("maintenance window")

        def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            events.append(("before_execute", ctx.task.id))

        def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
            events.append(("end", ctx.task.id, state, ctx.attempt))

        def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
            events.append(("after_run", result.ok, dict(result.states)))

    dr, adapter = build(Gate())
    with pytest.raises(orchestra.TaskFailed, match="maintenance window"):
        dr.execute(["doubled"])
    cancelled = orchestra.TaskState.CANCELLED
    assert events == [
        ("end", "source", cancelled, 0),
        ("end", "doubled", cancelled, 0),
        ("after_run", False, {"source": cancelled, "doubled": cancelled}),
    ]
    assert adapter.last_result is not None
    assert (
        adapter.last_result.reasons["doubled"]
        == "run failed by Gate.before_run: maintenance window"
    )


def test_delegate_is_a_hook_error_naming_hamilton() -> None:
    class Delegating(orchestra.TaskHooks):
        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            return orchestra.Delegate("someone")

    dr, adapter = build(Delegating())
    assert dr.execute(["doubled"]) == {"doubled": 8}  # isolated: counts as no opinion
    assert adapter.hook_errors
    assert all("Hamilton runs no agents" in str(e) for e in adapter.hook_errors)
    assert "Delegating.before_execute" in str(adapter.hook_errors[0])


def test_a_hook_that_raises_is_isolated() -> None:
    class Broken(orchestra.TaskHooks):
        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
            raise RuntimeError("hook bug")

    dr, adapter = build(Broken())
    assert dr.execute(["doubled"]) == {"doubled": 8}
    assert len(adapter.hook_errors) == 2
    assert "raised RuntimeError: hook bug" in str(adapter.hook_errors[0])


def test_attempt_cap_ends_endless_retries() -> None:
    def broken() -> int:
        raise ConnectionError("down")

    class Always(orchestra.TaskHooks):
        def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            return orchestra.Retry()

    adapter = HookAdapter(Always(), max_attempts=3)
    module = ad_hoc_utils.create_temporary_module(broken)
    dr = driver.Builder().with_modules(module).with_adapters(adapter).build()
    with pytest.raises(ConnectionError):
        dr.execute(["broken"])
    assert adapter.last_result is not None
    assert adapter.last_result.attempts["broken"] == 3
    assert adapter.last_result.reasons["broken"] == "failed by orchestra: attempt cap of 3 reached"


def test_task_spans_per_attempt(exporter: Any) -> None:
    dr, _ = build(Seen())
    dr.execute(["doubled"])
    names = [span.name for span in exporter.get_finished_spans()]
    assert names.count("task source") == 1
    assert names.count("task doubled") == 1
    assert "run hamilton" in names
    assert "hook before_execute" in names


@pytest.mark.parametrize("bad", [0, -1, 1.5])
def test_bad_max_attempts(bad: Any) -> None:
    with pytest.raises(ValueError, match="max_attempts must be an int >= 1"):
        HookAdapter(max_attempts=bad)


def test_an_object_that_is_no_hook_is_refused() -> None:
    with pytest.raises(TypeError, match="is not a TaskHooks"):
        HookAdapter(object())


def test_another_do_remote_execute_adapter_conflicts_clearly() -> None:
    module = ad_hoc_utils.create_temporary_module(source, doubled)
    with pytest.raises(ValueError, match="Multiple adapters cannot"):
        driver.Builder().with_modules(module).with_adapters(
            HookAdapter(Seen()), FutureAdapter()
        ).build()


def test_hamilton_outside_the_supported_range_is_an_import_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(version, "VERSION", (2, 1, 0))
    for name in [m for m in sys.modules if m.startswith("orchestra_hamilton")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match=r"apache-hamilton >=1.80,<2; found 2.1.0"):
        importlib.import_module("orchestra_hamilton")


def test_sync_driver_with_async_hooks() -> None:
    class AsyncHooks(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.events: list[tuple[str, str, int]] = []

        async def before_execute(self, ctx: orchestra.TaskHookContext) -> None:
            await asyncio.sleep(0)
            self.events.append(("before", ctx.task.id, ctx.attempt))

        async def on_failure(self, ctx: orchestra.TaskHookContext, error: BaseException) -> Any:
            self.events.append(("failure", ctx.task.id, ctx.attempt))
            return orchestra.Retry(delay=0.01)

        async def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> Any:
            return orchestra.Replace(result + 100) if ctx.task.id == "flaky" else None

    calls = {"n": 0}

    def flaky(source: int) -> int:
        calls["n"] += 1
        if calls["n"] < 2:
            raise ConnectionError("once")
        return source + 1

    hooks = AsyncHooks()
    module = ad_hoc_utils.create_temporary_module(source, flaky)
    dr = driver.Builder().with_modules(module).with_adapters(HookAdapter(hooks)).build()
    assert dr.execute(["flaky"]) == {"flaky": 105}
    assert [e for e in hooks.events if e[1] == "flaky"] == [
        ("before", "flaky", 1),
        ("failure", "flaky", 1),
        ("before", "flaky", 2),
    ]


def test_the_moments_of_an_attempt_share_its_messages() -> None:
    class Notes(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.seen: dict[str, tuple[str, ...]] = {}

        def before_execute(self, ctx: orchestra.TaskHookContext) -> Any:
            ctx.add_message(f"checked {ctx.task.id}")
            return orchestra.Replace(dict(ctx.inputs)) if ctx.task.id == "doubled" else None

        def after_execute(self, ctx: orchestra.TaskHookContext, result: Any) -> None:
            self.seen[f"after {ctx.task.id}"] = ctx.messages

        def on_end(self, ctx: orchestra.TaskHookContext, state: orchestra.TaskState) -> None:
            self.seen[f"end {ctx.task.id}"] = ctx.messages

    notes = Notes()
    dr, _ = build(notes)
    assert dr.execute(["doubled"]) == {"doubled": 8}
    # a Replace of the inputs makes a new context: the messages go with it
    assert notes.seen == {
        "after source": ("checked source",),
        "end source": ("checked source",),
        "after doubled": ("checked doubled",),
        "end doubled": ("checked doubled",),
    }


def test_spans_without_hooks(exporter: Any) -> None:
    dr, adapter = build()
    assert dr.execute(["doubled"]) == {"doubled": 8}
    names = [span.name for span in exporter.get_finished_spans()]
    assert sorted(names) == ["run hamilton", "task doubled", "task source"]
    assert adapter.last_result is None  # no hooks: nothing recorded


def test_one_adapter_across_drivers_whose_nodes_share_names() -> None:
    seen = Seen()
    adapter = HookAdapter(seen)

    def other_source() -> int:
        return 5

    other_source.__name__ = "source"
    for module in (
        ad_hoc_utils.create_temporary_module(source, doubled),
        ad_hoc_utils.create_temporary_module(other_source, doubled),
    ):
        driver.Builder().with_modules(module).with_adapters(adapter).build().execute(["doubled"])
    sources = [ctx.task.fn for ctx in seen.contexts if ctx.task.id == "source"]
    assert [fn() for fn in sources] == [4, 5]


def test_a_given_output_is_the_nodes_value_and_its_body_never_runs() -> None:
    """``Replace(GiveOutput(v))`` (a graph executor's block): the node is ``v``, unrun."""
    from orchestra.bridge import GiveOutput

    class Gives(orchestra.TaskHooks):
        def __init__(self) -> None:
            self.ends: list[tuple[str, orchestra.TaskState]] = []

        def before_execute(self, ctx: Any) -> Any:
            return orchestra.Replace(GiveOutput(21)) if ctx.task.id == "source" else None

        def on_end(self, ctx: Any, state: orchestra.TaskState) -> None:
            self.ends.append((ctx.task.id, state))

    hooks = Gives()
    dr, adapter = build(hooks)
    assert dr.execute(["doubled"]) == {"doubled": 42}
    assert hooks.ends == [
        ("source", orchestra.TaskState.SUCCEEDED),
        ("doubled", orchestra.TaskState.SUCCEEDED),
    ]
    assert adapter.last_result is not None
    assert adapter.last_result.reasons["source"] == "output given by Gives.before_execute"
