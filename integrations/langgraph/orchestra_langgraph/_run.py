"""What the bridge knows about one graph run: states, attempts, errors, spans (internal).

A run starts when a hooked graph is streamed (``invoke``, ``ainvoke``, ``stream`` and
``astream`` all stream) outside any other hooked run; subgraphs and nodes find it in the
``contextvars`` context the bridge runs the graph in, so a hooked subgraph's nodes are
part of their parent's run.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, final

from orchestra.bridge import RunRecord

__all__ = ["Run", "current"]

current: Final[contextvars.ContextVar[Run | None]] = contextvars.ContextVar(
    "orchestra_langgraph_run", default=None
)
"""The hooked run the code here belongs to, if any."""


@final
class Run(RunRecord):
    """One run of a hooked graph: its record (what ``after_run`` gets) and its span.

    Attributes:
        nodes: the graph's node names (``RunContext.task_ids``).
    """

    __slots__ = ("nodes",)

    def __init__(self, graph: str, nodes: tuple[str, ...]) -> None:
        super().__init__(graph)
        self.nodes = nodes
        self.open_span(len(nodes))

    def inputs_of(self, inputs: Any) -> Mapping[str, Any]:
        """A node's state as ``ctx.inputs``: a copy of a mapping, else ``{"state": state}``."""
        return MappingProxyType(dict(inputs) if isinstance(inputs, Mapping) else {"state": inputs})
