"""Building DAGs in bulk: ``DAG.add_many``, and what a ``Task`` learns of its function."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import orchestra
from orchestra import DAG, DAGError, Task


def noop() -> None:
    return None


async def anoop() -> None:
    return None


def test_add_many_adds_in_order_and_returns_the_tasks() -> None:
    dag = DAG("d")
    first = dag.add(Task(id="first", fn=noop))
    added = dag.add_many(Task(id=f"t{i}", fn=noop, deps=[first]) for i in range(3))
    assert [t.id for t in added] == ["t0", "t1", "t2"]
    assert list(dag.tasks) == ["first", "t0", "t1", "t2"]
    assert all(dag.tasks[t.id] is t for t in added)
    assert [t.id for t in dag.validate()] == ["first", "t0", "t1", "t2"]
    assert dag.add_many([]) == []


def test_add_many_runs_like_add_in_a_loop() -> None:
    graph = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}

    def body(**upstreams: int) -> int:
        return 1 + sum(upstreams.values())

    looped, bulk = DAG("looped"), DAG("bulk")
    for tid, deps in graph.items():
        looped.add(Task(id=tid, fn=body, deps=deps, inline=True))
    bulk.add_many(Task(id=tid, fn=body, deps=deps, inline=True) for tid, deps in graph.items())
    one, two = orchestra.run_sync(looped), orchestra.run_sync(bulk)
    assert one.ok
    assert two.ok
    assert dict(one.outputs) == dict(two.outputs) == {"a": 1, "b": 2, "c": 2, "d": 5}


def test_add_many_refuses_as_add_does_and_keeps_the_tasks_before() -> None:
    dag = DAG("d")
    with pytest.raises(DAGError, match="already has a task 'a'"):
        dag.add_many([Task(id="a", fn=noop), Task(id="b", fn=noop), Task(id="a", fn=noop)])
    assert list(dag.tasks) == ["a", "b"]
    with pytest.raises(TypeError, match="takes a Task"):
        dag.add_many([Task(id="c", fn=noop), "d"])  # type: ignore[list-item]
    assert list(dag.tasks) == ["a", "b", "c"]
    assert gc.isenabled()  # the collector runs again after an error too


def test_add_many_pauses_the_collector_while_it_takes_the_tasks() -> None:
    seen: list[bool] = []

    def tasks() -> Iterator[Task]:
        for i in range(3):
            seen.append(gc.isenabled())
            yield Task(id=f"t{i}", fn=noop)

    dag = DAG("d")
    assert gc.isenabled()
    dag.add_many(tasks())
    assert seen == [False, False, False]
    assert gc.isenabled()
    gc.disable()  # a program that runs without it: add_many leaves it off
    try:
        dag.add_many([Task(id="more", fn=noop)])
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_is_async_of_callables_that_are_equal_or_unhashable() -> None:
    class Same:
        """Instances all equal (and hashing alike): each type says for itself."""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Same)

        def __hash__(self) -> int:
            return 1

    class SyncSame(Same):
        def __call__(self) -> int:
            return 1

    class AsyncSame(Same):
        async def __call__(self) -> int:
            return 1

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        async def __call__(self) -> int:
            return 1

    assert SyncSame() == AsyncSame()
    assert not Task(id="s", fn=SyncSame()).is_async
    assert Task(id="a", fn=AsyncSame()).is_async
    assert not Task(id="s2", fn=SyncSame()).is_async
    assert Task(id="u", fn=Unhashable()).is_async
    for i in range(300):  # more functions than are remembered: each still inspected right
        assert Task(id=f"f{i}", fn=(anoop if i % 2 else noop)).is_async == bool(i % 2)
        assert Task(id=f"l{i}", fn=lambda: None).is_async is False
