"""orchestra-hooks-langgraph: orchestra's hooks around every node of a LangGraph graph.

Hook a finished ``StateGraph`` builder and compile it as before::

    from langgraph.graph import StateGraph
    import orchestra, orchestra.skills
    from orchestra_langgraph import with_hooks

    class Retry503(orchestra.TaskHooks):
        def on_failure(self, ctx, error):
            if isinstance(error, ConnectionError) and ctx.attempt < 3:
                return orchestra.Retry(delay=0.5)
            return None

    graph = with_hooks(builder, [Retry503()], registry=orchestra.skills.load("orchestra.yaml"))
    app = graph.compile()
    app.invoke({"messages": [...]})

What the decisions do in LangGraph:

- ``Retry(delay)`` runs the node again after ``delay`` seconds;
- ``Skip`` leaves the state unchanged (the node's update is None) and the graph goes on;
- ``Fail`` raises: ``orchestra.TaskFailed`` from ``before_execute``, the node's own error,
  with a note naming the hook, from ``on_failure``;
- ``Replace`` changes the state the node gets (``before_execute``), the update it returns
  (``after_execute``), or recovers a failure with a substitute update (``on_failure``).

``on_end`` runs once per node run. ``before_run``/``after_run`` wrap every ``invoke``,
``ainvoke``, ``stream`` and ``astream`` (``after_run`` also when the run fails or a stream is
closed early). A compiled subgraph added as a node has its nodes hooked too (task ids
``parent/child``). With a registry, every tool call of a prebuilt ``ToolNode`` fires
``PreToolUse``/``PostToolUse``/``PostToolUseFailure``: a deny is the error ``ToolMessage``
the model reads, a modified input is what the tool gets. ``guard_tools(tools, registry)``
guards tools wherever they are called (a hand-written tool node, a node function, an
agent loop of your own): a refusal is what the caller reads. A tool started anywhere else
in a hooked run (a plain ``ToolNode`` or compiled graph a node function calls) is judged
through the run's callbacks: a deny refuses it before its body. ``with_hooks`` also takes
an ``@entrypoint``'s Pregel: its body is one hooked node, its tools are judged the same.
``OrchestraMiddleware(hooks, registry)`` is the same policy in a LangChain v1
``create_agent`` agent (tool events and TaskHooks around each tool call,
``StepStart``/``StepEnd`` around each model call). Interrupts
(``langgraph.types.interrupt``) pass through untouched. Spans (a ``run`` span, a ``task``
span per node attempt, ``execute_tool`` per tool call) make one trace when orchestra's
tracing is configured. Sync and async graphs alike; async graphs run on asyncio, as
LangGraph does.
"""

from orchestra_langgraph._graph import HookedEntrypoint as HookedEntrypoint
from orchestra_langgraph._graph import HookedGraph as HookedGraph
from orchestra_langgraph._graph import HookedStateGraph as HookedStateGraph
from orchestra_langgraph._graph import with_hooks as with_hooks
from orchestra_langgraph._guard import GuardedTool as GuardedTool
from orchestra_langgraph._guard import guard_tools as guard_tools
from orchestra_langgraph._middleware import OrchestraMiddleware as OrchestraMiddleware

__version__ = "0.1.0"

__all__ = [
    "GuardedTool",
    "HookedEntrypoint",
    "HookedGraph",
    "HookedStateGraph",
    "OrchestraMiddleware",
    "guard_tools",
    "with_hooks",
]

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
