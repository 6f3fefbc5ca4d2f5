"""The executor seam's extensions: outputs that stay remote, timeouts the executor applies.

``StoreExecutor`` is a small real executor of that kind: it runs bodies in the driver but
keeps every output in its own store and hands the scheduler a ``Handle``; dependents get
the handles back in their keyword arguments, and only ``fetch`` reads the store.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import dag_specs

import orchestra
from orchestra import DAG, Retry, Task, TaskHookContext, TaskHooks, TaskState

pytestmark = pytest.mark.anyio

S = TaskState


class Handle:
    __slots__ = ("number", "task_id")

    def __init__(self, number: int, task_id: str) -> None:
        self.number = number
        self.task_id = task_id

    def __repr__(self) -> str:
        return f"Handle({self.number}, {self.task_id!r})"


class StoreExecutor:
    """Outputs stay in ``store``; records fetches, releases and what bodies were given."""

    def __init__(self, keep: str | Collection[str] = "leaves", fail_fetch: str = "") -> None:
        self.keep = keep
        self.fail_fetch = fail_fetch
        self.store: dict[int, Any] = {}
        self.numbers = itertools.count()
        self.fetched: list[str] = []
        self.released: list[str] = []
        self.given: dict[str, dict[str, Any]] = {}
        self.log: list[str] = []  # "run ID" per execute, "release ID" per release

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        self.given[task.id] = dict(kwargs)
        self.log.append(f"run {task.id}")
        for name, value in kwargs.items():
            if isinstance(value, Handle):
                assert value.number in self.store, f"{task.id} got released {value}"
                kwargs[name] = self.store[value.number]
        result = task.fn(**kwargs)
        if task.is_async:
            result = await result
        number = next(self.numbers)
        self.store[number] = result
        return Handle(number, task.id)

    async def fetch(self, task: Task, output: Any) -> Any:
        await anyio.lowlevel.checkpoint()
        self.fetched.append(task.id)
        if task.id == self.fail_fetch:
            raise ConnectionError(f"lost {task.id}")
        return self.store[output.number] if isinstance(output, Handle) else output

    def release(self, task: Task, output: Any) -> None:
        self.released.append(task.id)
        self.log.append(f"release {task.id}")
        if isinstance(output, Handle):
            del self.store[output.number]

    def keeps_output(self, task: Task, *, leaf: bool) -> bool:
        if self.keep == "all":
            return True
        if self.keep == "leaves":
            return leaf
        return task.id in self.keep


def chain() -> DAG:
    dag = DAG("chain")

    @dag.task
    def a() -> int:
        return 1

    @dag.task(deps=[a])
    def b(a: int) -> int:
        return a + 1

    @dag.task(deps=[b])
    def c(b: int) -> int:
        return b * 10

    return dag


async def test_handles_flow_to_dependents_and_only_kept_outputs_come_back() -> None:
    executor = StoreExecutor()
    result = await orchestra.run(chain(), executor=executor)

    assert result.ok
    assert result.outputs == {"c": 20}
    assert isinstance(executor.given["b"]["a"], Handle)  # the scheduler passed the handle
    assert isinstance(executor.given["c"]["b"], Handle)
    assert executor.fetched == ["c"]  # no hooks: only the kept output was fetched
    assert executor.released == ["a", "b", "c"]  # each once, as soon as unneeded
    assert executor.store == {}


async def test_keep_all_and_named_outputs() -> None:
    executor = StoreExecutor(keep="all")
    result = await orchestra.run(chain(), executor=executor)
    assert result.outputs == {"a": 1, "b": 2, "c": 20}
    assert sorted(executor.fetched) == ["a", "b", "c"]
    assert executor.store == {}

    executor = StoreExecutor(keep=["b"])
    result = await orchestra.run(chain(), executor=executor)
    assert result.outputs == {"b": 2}
    assert sorted(executor.released) == ["a", "b", "c"]
    assert executor.store == {}


async def test_without_keeps_output_every_output_is_kept() -> None:
    class KeepsAll(StoreExecutor):
        keeps_output = None  # type: ignore[assignment]  # an executor without the method

    executor = KeepsAll()
    result = await orchestra.run(chain(), executor=executor)
    assert result.outputs == {"a": 1, "b": 2, "c": 20}


async def test_an_upstream_is_held_until_every_dependent_ended_retries_included() -> None:
    dag = DAG("fan")
    attempts: list[str] = []

    @dag.task
    def source() -> list[int]:
        return [1, 2, 3]

    def reader(n: int) -> Any:
        def read(source: list[int]) -> int:
            attempts.append(f"r{n}")
            if n == 1 and attempts.count("r1") == 1:
                raise RuntimeError("first read fails")
            return source[n]

        return read

    for n in range(3):
        dag.add(Task(id=f"r{n}", fn=reader(n), deps=["source"], retries=1))

    executor = StoreExecutor()
    result = await orchestra.run(dag, executor=executor, max_concurrency=1)

    assert result.ok, result.errors
    assert result.outputs == {"r0": 1, "r1": 2, "r2": 3}
    assert result.attempts["r1"] == 2  # the retry got the source's handle again
    assert executor.released.count("source") == 1
    assert executor.log[:6] == [
        "run source",
        "run r0",
        "run r1",
        "run r1",  # the retry got the source's handle again
        "run r2",
        "release source",  # after the last dependent, before the end of the run
    ]
    assert sorted(executor.log[6:]) == ["release r0", "release r1", "release r2"]  # fetched
    assert executor.store == {}


async def test_upstream_failure_releases_what_the_skipped_dependents_would_have_used() -> None:
    dag = DAG("partial")

    @dag.task
    def good() -> int:
        return 1

    @dag.task
    def bad() -> int:
        raise ValueError("bad")

    @dag.task(deps=[good, bad])
    def both(good: int, bad: int) -> int:
        return good + bad

    @dag.task(deps=[both])
    def last(both: int) -> int:
        return both

    executor = StoreExecutor()
    result = await orchestra.run(dag, executor=executor)

    assert result.states == {
        "good": S.SUCCEEDED,
        "bad": S.FAILED,
        "both": S.UPSTREAM_FAILED,
        "last": S.UPSTREAM_FAILED,
    }
    assert executor.released == ["good"]
    assert result.outputs == {}
    assert executor.store == {}


class Seen(TaskHooks):
    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        self.seen[ctx.task.id] = result


class SeenHandles(Seen):
    needs_outputs = False


async def test_after_execute_hooks_see_values_unless_they_say_they_need_none() -> None:
    executor = StoreExecutor()
    hooks = Seen()
    result = await orchestra.run(chain(), executor=executor, hooks=[hooks])
    assert hooks.seen == {"a": 1, "b": 2, "c": 20}
    assert result.outputs == {"c": 20}
    assert isinstance(executor.given["b"]["a"], Handle)  # dependents still get handles
    assert executor.store == {}

    executor = StoreExecutor()
    handles = SeenHandles()
    await orchestra.run(chain(), executor=executor, hooks=[handles])
    assert all(isinstance(v, Handle) for v in handles.seen.values())
    assert executor.fetched == ["c"]

    executor = StoreExecutor()
    await orchestra.run(chain(), executor=executor, hooks=[SeenHandles(), Seen()])
    assert sorted(executor.fetched) == ["a", "b", "c", "c"]  # one hook needs values


async def test_a_fetch_for_hooks_that_fails_fails_the_attempt() -> None:
    class Recover(TaskHooks):
        def on_failure(self, ctx: TaskHookContext, error: BaseException) -> Retry | None:
            return Retry() if ctx.attempt == 1 else None

    executor = StoreExecutor(fail_fetch="b")
    result = await orchestra.run(chain(), executor=executor, hooks=[Seen(), Recover()])
    assert result.states == {"a": S.SUCCEEDED, "b": S.FAILED, "c": S.UPSTREAM_FAILED}
    assert result.attempts["b"] == 2
    assert isinstance(result.errors["b"], ConnectionError)


async def test_a_kept_output_that_cannot_be_fetched_is_an_error_not_a_loss() -> None:
    executor = StoreExecutor(fail_fetch="c")
    result = await orchestra.run(chain(), executor=executor)
    assert result.states["c"] is S.SUCCEEDED
    assert "c" not in result.outputs
    assert isinstance(result.errors["c"], ConnectionError)
    assert executor.store == {}


async def test_a_cancelled_run_releases_every_handle() -> None:
    dag = DAG("cancelled")
    started = anyio.Event()

    @dag.task
    def a() -> int:
        return 1

    @dag.task(deps=[a])
    async def waits(a: int) -> int:
        started.set()
        await anyio.sleep_forever()
        return a

    executor = StoreExecutor()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: orchestra.run(dag, executor=executor))
            await started.wait()
            scope.cancel()
    assert executor.released == ["a"]
    assert executor.store == {}


async def test_plain_executors_are_unaffected() -> None:
    class Plain:
        async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
            return task.fn(**kwargs)

    hooks = Seen()
    result = await orchestra.run(chain(), executor=Plain(), hooks=[hooks])
    assert result.outputs == {"a": 1, "b": 2, "c": 20}
    assert hooks.seen == {"a": 1, "b": 2, "c": 20}


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=dag_specs(max_tasks=10), keep=st.sampled_from(["leaves", "all", ["t0", "t3"]]))
def test_random_dags_release_every_handle_once_and_never_too_early(
    backend: str, specs: list[dict[str, Any]], keep: Any
) -> None:
    dag = DAG("random")
    for spec in specs:
        fails = list(spec["fails"])

        def body(_fails: list[bool] = fails, **upstream: Any) -> int:
            if _fails and _fails.pop(0):
                raise RuntimeError("scripted")
            return 1 + sum(upstream.values())

        dag.add(
            Task(
                id=spec["id"],
                fn=body,
                deps=spec["deps"],
                trigger=spec["trigger"],
                retries=spec["retries"],
            )
        )
    dependents = {s["id"]: [d["id"] for d in specs if s["id"] in d["deps"]] for s in specs}

    executor = StoreExecutor(keep=keep)  # execute asserts no handle it gets was released

    class States(TaskHooks):
        needs_outputs = False

        def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
            assert isinstance(result, Handle)

    result = orchestra.run_sync(dag, executor=executor, backend=backend, hooks=[States()])

    assert executor.store == {}  # everything released, kept outputs after their fetch
    assert sorted(executor.released) == sorted(set(executor.released))  # once each
    succeeded = {t for t, s in result.states.items() if s is S.SUCCEEDED}
    assert set(executor.released) == succeeded
    tasks = {t.id: t for t in dag.plan().order}
    kept = {t for t in succeeded if executor.keeps_output(tasks[t], leaf=not dependents[t])}
    assert set(result.outputs) == kept
    for tid in kept:
        assert isinstance(result.outputs[tid], int)


class TimingExecutor:
    """Applies ``task.timeout`` itself, to the body's own running time only."""

    applies_timeouts = True

    def __init__(self) -> None:
        self.queue = anyio.Lock()  # one body at a time: the others wait, untimed

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        async with self.queue:
            with anyio.fail_after(task.timeout) if task.timeout else anyio.CancelScope():
                return await task.fn(**kwargs)


async def test_an_executor_that_applies_timeouts_is_not_timed_by_the_scheduler() -> None:
    # Margins of 0.5 s each way, so a loaded machine does not flip the outcome: timed by
    # the scheduler, `second` (1 s queued + 1 s running) would fail its 1.5 s timeout.
    dag = DAG("queued")

    @dag.task(timeout=1.5)
    async def first() -> str:
        await anyio.sleep(1.0)
        return "first"

    @dag.task(timeout=1.5)  # waits 1 s in the executor's queue, then runs 1 s
    async def second() -> str:
        await anyio.sleep(1.0)
        return "second"

    @dag.task(timeout=0.05)
    async def slow() -> None:
        await anyio.sleep(3)

    result = await orchestra.run(dag, executor=TimingExecutor())
    assert result.outputs == {"first": "first", "second": "second"}
    assert result.states["slow"] is S.FAILED
    assert isinstance(result.errors["slow"], TimeoutError)


async def test_without_a_cap_every_ready_task_runs_at_once() -> None:
    dag = DAG("uncapped")
    n = 100
    arrived = 0
    everyone = anyio.Event()

    async def meet() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == n:
            everyone.set()
        with anyio.fail_after(10):
            await everyone.wait()

    for i in range(n):
        dag.add(Task(id=f"t{i}", fn=meet))
    result = await orchestra.run(dag, max_concurrency=None)
    assert result.ok, result.errors
    with pytest.raises(ValueError, match="max_concurrency must be None or an int >= 1, got 0"):
        await orchestra.run(dag, max_concurrency=0)


class ChainingStore(StoreExecutor):
    """A ``StoreExecutor`` that records what ``chain`` is told, and chains nothing itself."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, tuple[str, ...]]] | None = None

    def chain(self, links: list[tuple[Task, tuple[str, ...]]]) -> StoreExecutor:
        self.links = [(task.id, ups) for task, ups in links]
        return self


def rules_dag() -> DAG:
    dag = DAG("rules")
    dag.add(Task(id="a", fn=lambda: 1))
    dag.add(Task(id="b", fn=lambda: 2))
    dag.add(Task(id="takes_all", fn=lambda a, b: a + b, deps=["a", "b"]))
    dag.add(Task(id="takes_any", fn=lambda **up: len(up), deps=["a"]))
    dag.add(Task(id="takes_one", fn=lambda a: a, deps=["a", "b"]))  # b is not an input
    dag.add(Task(id="all_done", fn=lambda **up: 0, deps=["a"], trigger="all_done"))
    dag.add(Task(id="early", fn=lambda **up: 0, deps=["a", "b"], trigger="one_success"))
    dag.add(Task(id="on_fail", fn=lambda **up: 0, deps=["a"], trigger="one_failed"))
    dag.add(Task(id="always", fn=lambda **up: 0, deps=["a"], trigger="always"))
    return dag


class Before(TaskHooks):
    def before_execute(self, ctx: TaskHookContext) -> None:
        pass


class After(TaskHooks):
    def after_execute(self, ctx: TaskHookContext, result: Any) -> None:
        pass


class OnFailure(TaskHooks):
    def on_failure(self, ctx: TaskHookContext, error: BaseException) -> None:
        pass


async def test_chain_is_offered_the_tasks_that_run_exactly_when_their_upstreams_succeed() -> None:
    executor = ChainingStore()
    result = await orchestra.run(
        rules_dag(), executor=executor, max_concurrency=None, hooks=[OnFailure()]
    )
    assert result.states["on_fail"] is S.SKIPPED
    assert executor.links == [
        ("takes_all", ("a", "b")),
        ("takes_any", ("a",)),
        ("all_done", ("a",)),
    ]


@pytest.mark.parametrize(
    "why",
    ["nothing", "before_execute", "after_execute", "fail_fast", "capped", "traced", "journal"],
)
async def test_chain_is_not_offered_when_the_driver_acts_between_tasks(
    why: str, exporter: Any, tmp_path: Any
) -> None:
    executor = ChainingStore()
    options: dict[str, Any] = {"max_concurrency": None}
    if why == "before_execute":
        options["hooks"] = [Before()]
    elif why == "after_execute":
        options["hooks"] = [After()]
    elif why == "fail_fast":
        options["fail_fast"] = True
    elif why == "capped":
        options["max_concurrency"] = 4
    elif why == "journal":
        options["journal"] = tmp_path / "runs.db"
    if why != "traced":
        orchestra.tracing.set_enabled(False)
    result = await orchestra.run(chain(), executor=executor, **options)
    assert result.outputs == {"c": 20}
    if why == "nothing":
        assert executor.links == [("b", ("a",)), ("c", ("b",))]
    else:
        assert executor.links is None
