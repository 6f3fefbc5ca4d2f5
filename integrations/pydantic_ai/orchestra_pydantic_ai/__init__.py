"""orchestra-hooks-pydantic-ai: orchestra's hooks and YAML guards inside pydantic-ai agents.

Add one capability to the agent::

    import orchestra.skills
    from pydantic_ai import Agent
    from orchestra_pydantic_ai import OrchestraCapability

    registry = orchestra.skills.load("orchestra.yaml")
    agent = Agent(
        "openai:gpt-5",
        tools=[delete_file],
        capabilities=[OrchestraCapability([RetryPolicy()], registry=registry)],
    )

- Every tool call goes through ``PreToolUse`` (a deny is pydantic-ai's ``ToolDenied``: the
  model reads the reason and the run goes on; a ``modified_input`` is what the tool gets;
  an ``ask`` is pydantic-ai's approval, ``ApprovalRequired``: the run ends with
  ``DeferredToolRequests`` whose ``metadata[call_id]`` is the pending request), then
  ``PostToolUse`` or ``PostToolUseFailure``. Resume with
  ``deferred_tool_results=answer_deferred(requests, {call_id: {"decision": "approve"}})``
  (or ``deny`` with a ``reason``, or ``edit`` with a ``tool_input`` judged again).
- Tool calls are tasks for ``TaskHooks`` (the task id is the tool's name): ``Retry`` calls
  the tool again, ``Skip`` tells the model the call was skipped, ``Fail`` tells it the call
  was refused, ``Replace`` changes the arguments or the result.
- Each agent run is a subagent dispatch for ``SubagentHooks`` (``SubagentStart``/
  ``SubagentStop`` with a registry): ``Fail`` raises ``orchestra.DispatchError``, ``Retry``
  reruns a run that called no tool, ``Replace`` in ``after_dispatch`` changes the output.
- With orchestra's tracing configured, a run is one trace: ``invoke_agent`` and
  ``execute_tool`` spans with the hooks' spans inside.
"""

from orchestra_pydantic_ai._answers import answer_deferred as answer_deferred
from orchestra_pydantic_ai._capability import OrchestraCapability as OrchestraCapability

__version__ = "0.1.0"

__all__ = ["OrchestraCapability", "answer_deferred"]

OrchestraCapability.__module__ = __name__
answer_deferred.__module__ = __name__
