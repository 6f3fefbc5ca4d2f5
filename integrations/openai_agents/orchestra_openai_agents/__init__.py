"""orchestra-hooks-openai-agents: the OpenAI Agents SDK's lifecycle, bridged to orchestra.

Run an SDK agent through ``OrchestraRunHooks`` and its agents, handoffs, model calls and
tool calls fire orchestra's hooks and the YAML skills hooks (``orchestra.yaml``,
``SKILL.md``) you already use with orchestra's own engines::

    import orchestra.skills
    from agents import Agent, function_tool
    from orchestra_openai_agents import OrchestraRunHooks

    @function_tool
    def bash(command: str) -> str: ...

    agent = Agent(name="ops", instructions="...", tools=[bash])
    registry = orchestra.skills.load("orchestra.yaml")
    bridge = OrchestraRunHooks([MySubagentHooks(), RetryPolicy()], registry=registry)
    result = await bridge.run(agent, "clean the build folder")  # Runner.run underneath

- Agents are subagent dispatches (``SubagentHooks``; ``SubagentStart``/``SubagentStop``);
  tool calls are tasks (``TaskHooks``; ``PreToolUse``/``PostToolUse``/
  ``PostToolUseFailure``). The run itself fires ``SessionStart``, ``UserPromptSubmit``,
  ``Stop``, ``StopFailure`` and ``SessionEnd``.
- Every tool call of the guarded agent goes through ``PreToolUse``: function tools, agents
  used as tools, tools of agents reached by any handoff. A deny reaches the model as the
  call's output; a hook's ``ask`` pauses the run as an SDK interruption (answer it with
  ``answer_approval(bridge, state, item, {"decision": "approve"})``, ``deny`` or
  ``edit``; ``pending_request(bridge, item)`` is the pending request); hosted tools
  that the hooks match are refused unless ``hosted_tools="allow"``. An agent run inside a
  guarded tool, by a bridge of its own or the plain ``Runner.run``/``run_sync``/
  ``run_streamed``, follows the tool's policy (the SDK's default runner, wrapped).
- ``on_failure`` sees the original exception: a tool's ``Retry`` calls the tool again, a
  model error's ``Retry`` calls the model again (the SDK's own model retry), and a whole
  run is rerun only when nothing in it would be repeated.
- One run is one trace: ``invoke_workflow``, ``invoke_agent``, ``chat`` (model and token
  usage) and ``execute_tool`` spans, when a tracer provider is configured for orchestra.
"""

from orchestra_openai_agents._approvals import answer_approval as answer_approval
from orchestra_openai_agents._approvals import pending_request as pending_request
from orchestra_openai_agents._graph import guard_agent as guard_agent
from orchestra_openai_agents._graph import guard_tool as guard_tool
from orchestra_openai_agents._guard import AskCallback as AskCallback
from orchestra_openai_agents._guard import HostedTools as HostedTools
from orchestra_openai_agents._guard import OnDeny as OnDeny
from orchestra_openai_agents._hooks import OrchestraRunHooks as OrchestraRunHooks
from orchestra_openai_agents._invoker import is_guarded as is_guarded

__version__ = "0.1.0"

__all__ = [
    "AskCallback",
    "HostedTools",
    "OnDeny",
    "OrchestraRunHooks",
    "answer_approval",
    "guard_agent",
    "guard_tool",
    "is_guarded",
    "pending_request",
]

for _public in (
    OrchestraRunHooks,
    answer_approval,
    guard_agent,
    guard_tool,
    is_guarded,
    pending_request,
):
    _public.__module__ = __name__
