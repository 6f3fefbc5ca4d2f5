"""What the adapter knows about one Hamilton run: an ``orchestra.bridge.RunRecord`` (internal)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any, final

import orchestra
from orchestra import TaskState
from orchestra.bridge import RunRecord

__all__ = ["Run", "Upstream"]


@final
class Upstream(Mapping[str, TaskState]):
    """The states of a node's upstream nodes, read from its run (a read-only view).

    Hamilton's inputs are dependencies without a state: they are not in it.
    """

    __slots__ = ("_deps", "_states")

    def __init__(self, deps: tuple[str, ...], states: Mapping[str, TaskState]) -> None:
        self._deps = deps
        self._states = states

    def __getitem__(self, dep: str) -> TaskState:
        if dep not in self._deps:
            raise KeyError(dep)
        return self._states[dep]

    def __iter__(self) -> Iterator[str]:
        return (dep for dep in self._deps if dep in self._states)

    def __len__(self) -> int:
        return sum(1 for dep in self._deps if dep in self._states)

    def __repr__(self) -> str:
        return f"{dict(self)!r}"


@final
class Run(RunRecord):
    """One ``driver.execute``: the run's record, and what the adapter knows of Hamilton's run.

    Attributes:
        async_driver: whether Hamilton's async driver runs it.
        ending: whether its ending began (the async driver calls the end twice).
        plan: the nodes it plans, by name, in a topological order (Hamilton node objects).
        request: what ``driver.execute`` was asked (graph, final vars, inputs, overrides).
    """

    __slots__ = ("async_driver", "ending", "plan", "request")

    def __init__(self, run_id: str, dag: str, *, async_driver: bool, keep_outputs: bool) -> None:
        super().__init__(dag, run_id, keep_outputs=keep_outputs)
        self.async_driver = async_driver
        self.plan: dict[str, Any] = {}  # name -> Hamilton node, in topological order
        self.ending = False
        self.request: tuple[Any, list[str], dict[str, Any], dict[str, Any]] | None = None

    def inputs_of(self, inputs: Any) -> Mapping[str, Any]:
        """A node's own keyword arguments, read-only (nothing changes them: no copy)."""
        return MappingProxyType(inputs)

    def upstream_of(self, task: orchestra.Task) -> Mapping[str, TaskState]:
        """The states of a node's upstream nodes (a view of the run's)."""
        return Upstream(task.deps, self.states)

    def unfinished(self) -> list[tuple[str, TaskState]]:
        """Planned nodes that never ended, with the state they end in now the run is over.

        A node downstream of a failure is UPSTREAM_FAILED; any other node the run never
        reached (Hamilton stops at the first error) is CANCELLED.
        """
        ended: list[tuple[str, TaskState]] = []
        for name, node in self.plan.items():
            if name in self.states:
                continue
            failed = any(
                self.states.get(dep.name) in (TaskState.FAILED, TaskState.UPSTREAM_FAILED)
                for dep in node.dependencies
            )
            state = TaskState.UPSTREAM_FAILED if failed else TaskState.CANCELLED
            self.states[name] = state
            self.attempts.setdefault(name, 0)
            ended.append((name, state))
        return ended
