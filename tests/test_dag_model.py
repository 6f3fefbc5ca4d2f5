from __future__ import annotations

import sys
from typing import Any

import pytest

import orchestra
from orchestra import DAG, DAGError, Task


def noop() -> None:
    return None


def test_decorator_bare_and_with_options() -> None:
    dag = DAG("d")

    @dag.task
    def first() -> int:
        return 1

    @dag.task(deps=[first], retries=2, retry_delay=0.5, timeout=3, trigger="all_done", id="second")
    async def other(first: int) -> int:
        return first

    assert isinstance(first, Task)
    assert first() == 1  # still callable like the function
    assert first.id == "first"
    assert other.id == "second"
    assert other.deps == ("first",)
    assert (other.retries, other.retry_delay, other.timeout, other.trigger) == (
        2,
        0.5,
        3,
        "all_done",
    )
    assert other.is_async
    assert not first.is_async
    assert [t.id for t in dag.validate()] == ["first", "second"]


def test_add_and_deps_by_id_or_object() -> None:
    dag = DAG("d")
    a = dag.add(Task(id="a", fn=noop))
    b = dag.add(Task(id="b", fn=noop, deps=[a]))
    c = dag.add(Task(id="c", fn=noop, deps=["a", b]))
    assert c.deps == ("a", "b")
    assert "a" in dag
    assert len(dag) == 3
    assert list(dag.tasks) == ["a", "b", "c"]


def test_duplicate_id_refused_at_add_and_nothing_lost() -> None:
    dag = DAG("d")
    first = dag.add(Task(id="a", fn=noop))
    with pytest.raises(DAGError, match="already has a task 'a'"):
        dag.add(Task(id="a", fn=noop))
    assert dag.tasks["a"] is first
    assert len(dag) == 1


def test_unknown_dep() -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=noop, deps=["ghost"]))
    with pytest.raises(DAGError, match="'a' depends on unknown task 'ghost'"):
        dag.validate()


def test_self_dependency() -> None:
    with pytest.raises(DAGError, match="'a' depends on itself"):
        Task(id="a", fn=noop, deps=["a"])


def test_cycle_names_its_tasks_in_order() -> None:
    dag = DAG("d")
    dag.add(Task(id="start", fn=noop))
    dag.add(Task(id="a", fn=noop, deps=["start", "c"]))
    dag.add(Task(id="b", fn=noop, deps=["a"]))
    dag.add(Task(id="c", fn=noop, deps=["b"]))
    dag.add(Task(id="after", fn=noop, deps=["c"]))
    with pytest.raises(DAGError, match="cycle") as info:
        dag.validate()
    message = str(info.value)
    path = message.split("cycle: ")[1].split(" -> ")
    assert path[0] == path[-1]
    assert set(path) == {"a", "b", "c"}
    assert "after" not in message
    assert "start" not in path


def test_dep_on_task_of_another_dag() -> None:
    one, two = DAG("one"), DAG("two")
    foreign = one.add(Task(id="x", fn=noop))
    two.add(Task(id="x", fn=noop))
    two.add(Task(id="y", fn=noop, deps=[foreign]))
    with pytest.raises(DAGError, match="'y' depends on 'x', a task of another DAG"):
        two.validate()


def test_fn_not_callable() -> None:
    with pytest.raises(TypeError, match="fn must be callable"):
        Task(id="a", fn=42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"retries": -1}, "retries"),
        ({"retries": 1.5}, "retries"),
        ({"retry_delay": -0.1}, "retry_delay"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1}, "timeout"),
        ({"trigger": "one_of_them"}, "unknown trigger rule 'one_of_them'"),
    ],
)
def test_bad_task_options(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Task(id="a", fn=noop, **kwargs)  # type: ignore[arg-type]


def test_bad_dep_type() -> None:
    with pytest.raises(TypeError, match="task id or a Task"):
        Task(id="a", fn=noop, deps=[3])  # type: ignore[list-item]


@pytest.mark.parametrize("value", [0, -3])
def test_max_concurrency_below_one(value: int) -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=noop))
    with pytest.raises(ValueError, match="max_concurrency"):
        orchestra.run_sync(dag, max_concurrency=value)


def test_negative_retry_budget() -> None:
    dag = DAG("d")
    dag.add(Task(id="a", fn=noop))
    with pytest.raises(ValueError, match="retry_budget"):
        orchestra.run_sync(dag, retry_budget=-1)


def test_deep_chain_validates_and_runs_without_recursion() -> None:
    depth = 10_000
    assert depth > sys.getrecursionlimit()
    dag = DAG("deep")
    for i in range(depth):
        dag.add(Task(id=f"t{i}", fn=noop, deps=[f"t{i - 1}"] if i else [], inline=True))
    assert len(dag.validate()) == depth
    result = orchestra.run_sync(dag)
    assert result.ok
    assert result.count(orchestra.TaskState.SUCCEEDED) == depth


def test_deep_chain_failure_propagates_without_recursion() -> None:
    dag = DAG("deep")

    def boom() -> None:
        raise ValueError("root")

    dag.add(Task(id="t0", fn=boom, inline=True))
    for i in range(1, 10_000):
        dag.add(Task(id=f"t{i}", fn=noop, deps=[f"t{i - 1}"]))
    result = orchestra.run_sync(dag)
    assert result.states["t0"] is orchestra.TaskState.FAILED
    assert result.count(orchestra.TaskState.UPSTREAM_FAILED) == 9_999


def test_deep_cycle_is_found_without_recursion() -> None:
    dag = DAG("ring")
    n = 5_000
    for i in range(n):
        dag.add(Task(id=f"t{i}", fn=noop, deps=[f"t{(i - 1) % n}"]))
    with pytest.raises(DAGError, match="cycle"):
        dag.validate()


def test_task_is_frozen_and_pickles() -> None:
    import pickle

    import attrs

    task = Task(id="a", fn=noop, deps=["x", "y", "x"], retries=2, metadata={"k": 1})
    assert task.deps == ("x", "y")  # duplicates dropped, order kept
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        task.retries = 3  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        del task.fn
    again = pickle.loads(pickle.dumps(task))
    assert (again.id, again.fn, again.deps, again.retries, dict(again.metadata)) == (
        "a",
        noop,
        ("x", "y"),
        2,
        {"k": 1},
    )
    bare = pickle.loads(pickle.dumps(Task(id="b", fn=noop)))
    assert dict(bare.metadata) == {}


def test_tasks_added_before_their_upstreams_run_in_a_topological_order() -> None:
    dag = DAG("d")
    dag.add(Task(id="c", fn=lambda a, b: a + b, deps=["a", "b"]))
    dag.add(Task(id="b", fn=lambda a: a * 10, deps=["a"]))
    dag.add(Task(id="a", fn=lambda: 1))
    order = [t.id for t in dag.validate()]
    assert order.index("a") < order.index("b") < order.index("c")
    result = orchestra.run_sync(dag)
    assert result.outputs == {"a": 1, "b": 10, "c": 11}


def test_unknown_dep_named_among_many_tasks() -> None:
    dag = DAG("d")
    for i in range(100):
        dag.add(Task(id=f"t{i}", fn=noop, deps=[f"t{i - 1}"] if i else []))
    dag.add(Task(id="late", fn=noop, deps=["t5", "nowhere"]))
    with pytest.raises(DAGError, match="'late' depends on unknown task 'nowhere'"):
        dag.validate()


def test_async_callable_objects_and_partials_are_async() -> None:
    import functools

    class Body:
        async def __call__(self) -> int:
            return 1

    async def add(x: int) -> int:
        return x

    assert Task(id="a", fn=Body()).is_async
    assert Task(id="b", fn=functools.partial(add, 1)).is_async
    assert not Task(id="c", fn=functools.partial(noop)).is_async


def test_task_options_read_back_as_given() -> None:
    import pickle

    plain = Task(id="p", fn=noop)
    assert (plain.retries, plain.retry_delay, plain.timeout, plain.trigger) == (
        0,
        0.0,
        None,
        "all_success",
    )
    assert (plain.agent, plain.inline, plain.run_on_fail_fast, dict(plain.metadata)) == (
        None,
        False,
        False,
        {},
    )
    assert Task(id="i", fn=noop, inline=True).inline is True
    # Values equal to a default but not it are kept as given, not replaced by it.
    odd = Task(id="o", fn=noop, retries=False, retry_delay=0, inline=0)  # type: ignore[arg-type]
    assert (odd.retries, odd.retry_delay, odd.inline) == (False, 0, 0)
    assert type(odd.retries) is bool
    assert type(odd.retry_delay) is int
    full = Task(
        id="f",
        fn=noop,
        deps=["a"],
        retries=1,
        retry_delay=0.25,
        timeout=2.0,
        trigger="all_done",
        metadata={"k": "v"},
        agent="writer",
        inline=True,
        run_on_fail_fast=True,
    )
    fields = ("retries", "retry_delay", "timeout", "trigger", "agent", "inline")
    expected = (1, 0.25, 2.0, "all_done", "writer", True)
    for task in (full, pickle.loads(pickle.dumps(full))):
        assert tuple(getattr(task, name) for name in fields) == expected
        assert task.run_on_fail_fast is True
        assert dict(task.metadata) == {"k": "v"}


def test_unknown_task_option_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'retrys'"):
        Task(id="a", fn=noop, retrys=2)  # type: ignore[call-arg]
    dag = DAG("d")
    dag.add(Task(id="a", fn=noop))
    with pytest.raises(TypeError, match="unexpected keyword argument 'timeot'"):
        dag.add(Task(id="b", fn=noop, deps=["a"], timeot=1.0))  # type: ignore[call-arg]
    assert list(dag.tasks) == ["a"]  # nothing half-added


def test_task_signature_names_every_option() -> None:
    import inspect

    params = inspect.signature(Task).parameters
    assert list(params) == [
        "id",
        "fn",
        "deps",
        "inline",
        "retries",
        "retry_delay",
        "timeout",
        "trigger",
        "metadata",
        "agent",
        "run_on_fail_fast",
        "branch",
    ]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    defaults = {name: p.default for name, p in params.items() if name not in ("id", "fn")}
    assert defaults == {
        "deps": (),
        "inline": False,
        "retries": 0,
        "retry_delay": 0.0,
        "timeout": None,
        "trigger": "all_success",
        "metadata": None,
        "agent": None,
        "run_on_fail_fast": False,
        "branch": False,
    }
    # The options the signature names are the ones the class takes, and no more.
    assert set(params) - {"id", "fn", "deps", "inline"} == set(
        orchestra.TaskOptions.__annotations__
    )


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({}, "async"),
        ({"inline": True}, "async"),
        ({"timeout": 1.0}, "full"),
        ({"retries": 1}, "full"),
        ({"agent": "writer"}, "full"),
        ({"trigger": "all_done"}, "async"),
        ({"metadata": {"k": 1}}, "async"),
        ({"branch": True}, "full"),
    ],
)
def test_a_task_runs_in_place_only_when_nothing_surrounds_its_body(
    options: dict[str, Any], kind: str
) -> None:
    from orchestra.dag._plan import KIND_ASYNC, KIND_FULL, KIND_INLINE

    def kind_of(task: Task) -> int:  # as its DAG's plan says
        dag = DAG("kinds")
        dag.add(task)
        return dag.plan().kinds[0]

    async def body() -> None:
        return None

    def sync_body() -> None:
        return None

    kinds = {"async": KIND_ASYNC, "full": KIND_FULL}
    assert kind_of(Task(id="a", fn=body, **options)) == kinds[kind]
    # A sync body runs in place only inline; with a thread or around it, the full path.
    inline = options.get("inline", False)
    expected_sync = KIND_INLINE if inline and kind == "async" else KIND_FULL
    assert kind_of(Task(id="s", fn=sync_body, **options)) == expected_sync


def test_deps_may_be_str_subclasses_such_as_a_str_enum() -> None:
    import enum

    class Step(enum.StrEnum):
        LOAD = "load"
        CLEAN = "clean"

    dag = DAG("d")
    dag.add(Task(id="load", fn=lambda: 1))
    dag.add(Task(id="clean", fn=lambda load: load + 1, deps=[Step.LOAD]))
    dag.add(Task(id="report", fn=lambda clean: clean * 10, deps=[Step.CLEAN, Step.LOAD]))
    assert dag.tasks["report"].deps == ("clean", "load")
    with pytest.raises(DAGError, match="depends on itself"):
        Task(id="load", fn=noop, deps=[Step.LOAD])
    result = orchestra.run_sync(dag)
    assert result.outputs["report"] == 20


def test_task_is_a_frozen_attrs_value_sharing_nothing() -> None:
    import attrs

    assert attrs.has(Task)
    given = {"k": [1]}
    one = Task(id="one", fn=noop, metadata=given)
    two = Task(id="two", fn=noop)
    three = Task(id="three", fn=noop)
    given["other"] = [2]  # the caller's dict changes: the task's metadata does not
    assert dict(one.metadata) == {"k": [1]}
    with pytest.raises(TypeError):
        one.metadata["k"] = 2  # type: ignore[index]
    for name in ("retries", "timeout", "trigger", "deps", "metadata", "branch"):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(two, name, getattr(three, name))
    assert not hasattr(two, "__dict__")  # slotted: no attribute can be added either
    assert (two.retries, three.retries) == (0, 0)


def test_every_trigger_rule_is_one_class_in_one_table() -> None:
    from typing import get_args

    from orchestra.dag._rules import RULES, Rule

    assert set(get_args(orchestra.TriggerRule)) == set(RULES)
    assert {type(rule) for rule in RULES.values()} == set(Rule.__subclasses__())
    assert all(name == rule.name for name, rule in RULES.items())


def test_deps_given_as_a_sequence_with_no_truth_value_are_read_as_ids() -> None:
    class Ids(list[str]):  # as an array of ids (numpy's, pandas' Index) refuses bool()
        def __bool__(self) -> bool:
            raise ValueError("the truth value of an array is ambiguous")

    assert Task(id="c", fn=noop, deps=Ids(["a", "b", "a"])).deps == ("a", "b")
    assert Task(id="d", fn=noop, deps=Ids()).deps == ()


def test_an_empty_list_or_tuple_of_deps_is_a_source() -> None:
    for empty in ([], ()):
        task = Task(id="s", fn=noop, deps=empty)
        assert task.deps == ()
