"""orchestra-hooks-openai-agents: the OpenAI Agents SDK's lifecycle, bridged to orchestra.

Run an SDK agent through ``OrchestraRunHooks`` and its agents, handoffs and tool calls
fire orchestra's ``SubagentHooks`` and the YAML skills hooks (``orchestra.yaml``,
``SKILL.md``) you already use with orchestra's own engines::

    import orchestra.skills
    from agents import Agent, function_tool
    from orchestra_openai_agents import OrchestraRunHooks

    @function_tool
    def bash(command: str) -> str: ...

    agent = Agent(name="ops", instructions="...", tools=[bash])
    registry = orchestra.skills.load("orchestra.yaml")
    bridge = OrchestraRunHooks([MySubagentHooks()], registry=registry)
    result = await bridge.run(agent, "clean the build folder")  # Runner.run underneath

What fires when:

============================  ==========================================  ====================
SDK moment                    orchestra ``SubagentHooks``                 YAML event
============================  ==========================================  ====================
an agent starts               ``before_dispatch`` (``Fail`` stops it)     ``SubagentStart``
(first agent, handoff target)
it answers (final output)     ``after_dispatch(ctx, SubagentResult)``     ``SubagentStop``
it hands off                  ``after_dispatch`` (output None)            ``SubagentStop``
                                                                          (state ``handoff``)
the run raises (``run()``)    ``on_failure`` (``Retry`` reruns)           ``SubagentStop``
                                                                          (state ``failed``)
a function tool is called     --                                          ``PreToolUse``,
                                                                          ``PostToolUse``
============================  ==========================================  ====================

- ``PreToolUse`` gets ``tool_name``, ``tool_input`` (the arguments the model sent),
  ``tool_use_id`` and ``agent_name``, as Claude Code's hooks do: a deny stops the call
  (the model is told why; ``on_deny="raise"`` raises ``ToolDenied`` instead), a
  ``modified_input`` is what the tool receives. The SDK's tool guardrails cannot rewrite
  arguments, so ``guard_agent`` (which ``run()`` applies) copies the agents and wraps each
  ``FunctionTool``'s ``on_invoke_tool``; your agents are left unchanged.
- Use the pieces on their own with the SDK's runner:
  ``Runner.run(guard_agent(agent, registry), input, hooks=OrchestraRunHooks(...))``;
  only ``on_failure`` needs ``run()``, since the SDK has no callback for a failed run.
- Spans follow orchestra's tracing (``invoke_agent {name}``, ``execute_tool {name}``)
  when a tracer provider is configured.
"""

from orchestra_openai_agents._hooks import OrchestraRunHooks as OrchestraRunHooks
from orchestra_openai_agents._tools import AskCallback as AskCallback
from orchestra_openai_agents._tools import OnDeny as OnDeny
from orchestra_openai_agents._tools import guard_agent as guard_agent
from orchestra_openai_agents._tools import guard_tool as guard_tool
from orchestra_openai_agents._tools import is_guarded as is_guarded

__version__ = "0.1.0"

__all__ = ["AskCallback", "OnDeny", "OrchestraRunHooks", "guard_agent", "guard_tool", "is_guarded"]

OrchestraRunHooks.__module__ = __name__
