"""The engines the conformance suite runs each hook script on, behind one interface.

A script is a small DAG of ``Node``s (an id, the ids it depends on, a body taking them as
keyword arguments) and a list of ``TaskHooks``; each engine runs it its own way and
reports an ``Outcome`` in orchestra's vocabulary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orchestra
from orchestra import TaskState


@dataclass(frozen=True)
class Node:
    id: str
    body: Callable[..., Any]
    deps: tuple[str, ...] = ()


@dataclass
class Outcome:
    states: dict[str, TaskState]
    outputs: dict[str, Any] = field(default_factory=dict)


class Engine(Protocol):
    name: str

    def run(self, nodes: Sequence[Node], hooks: Sequence[object]) -> Outcome: ...


def _renamed(node: Node) -> Callable[..., Any]:
    """The body as a function named after the node, taking its deps (Hamilton, Prefect)."""
    params = ", ".join(f"{d}: Any" for d in node.deps)
    args = ", ".join(f"{d}={d}" for d in node.deps)
    scope: dict[str, Any] = {"_body": node.body, "Any": Any}
    exec(f"def {node.id}({params}) -> Any:\n    return _body({args})\n", scope)
    return scope[node.id]  # type: ignore[no-any-return]


class OrchestraEngine:
    name = "orchestra"

    def __init__(self, executor: Any = None) -> None:
        self.executor = executor

    def run(self, nodes: Sequence[Node], hooks: Sequence[object]) -> Outcome:
        dag = orchestra.DAG("conformance")
        for node in nodes:
            dag.add(orchestra.Task(id=node.id, fn=_renamed(node), deps=list(node.deps)))
        result = orchestra.run_sync(dag, hooks=list(hooks), executor=self.executor)
        return Outcome(dict(result.states), dict(result.outputs))


class DaskEngine(OrchestraEngine):
    name = "dask"


class _Outputs(orchestra.TaskHooks):
    """The last hook of a Hamilton run: keeps the run's outputs (Hamilton returns none
    when a node fails), recovered failures included."""

    def __init__(self) -> None:
        self.outputs: dict[str, Any] = {}

    def after_run(self, ctx: orchestra.RunContext, result: orchestra.RunResult) -> None:
        self.outputs = dict(result.outputs)


class HamiltonEngine:
    name = "hamilton"

    def run(self, nodes: Sequence[Node], hooks: Sequence[object]) -> Outcome:
        from hamilton import ad_hoc_utils, driver
        from orchestra_hamilton import HookAdapter

        module = ad_hoc_utils.create_temporary_module(*(_renamed(n) for n in nodes))
        kept = _Outputs()
        adapter = HookAdapter(*hooks, kept, name="conformance")
        dr = driver.Builder().with_modules(module).with_adapters(adapter).build()
        logging.getLogger("hamilton").disabled = True  # it logs every failed attempt
        try:
            dr.execute([n.id for n in nodes])
        except Exception:  # a failed node stops Hamilton: the states say which
            pass
        finally:
            logging.getLogger("hamilton").disabled = False
        result = adapter.last_result
        assert result is not None
        return Outcome(
            dict(result.states),
            {k: v for k, v in kept.outputs.items() if result.states[k] is TaskState.SUCCEEDED},
        )


class PrefectEngine:
    name = "prefect"

    def run(self, nodes: Sequence[Node], hooks: Sequence[object]) -> Outcome:
        import orchestra_prefect
        from prefect import flow, task

        tasks = {
            n.id: orchestra_prefect.hooked(*hooks)(
                task(_renamed(n), name=n.id, persist_result=False)
            )
            for n in nodes
        }

        final: dict[str, Any] = {}

        @flow(name="conformance")
        def script() -> None:
            futures: dict[str, Any] = {}
            for n in nodes:
                futures[n.id] = tasks[n.id].submit(**{d: futures[d] for d in n.deps})
            for key, future in futures.items():
                future.wait()
                final[key] = future.state

        script()
        states = {k: orchestra_prefect.task_state(s) for k, s in final.items()}
        outputs = {k: s.result() for k, s in final.items() if states[k] is TaskState.SUCCEEDED}
        return Outcome(states, outputs)
