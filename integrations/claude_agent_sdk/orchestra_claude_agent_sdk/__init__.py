"""orchestra-hooks-claude-agent-sdk: one policy in the Claude Agent SDK.

Wrap the options once::

    import orchestra.skills
    from claude_agent_sdk import ClaudeAgentOptions, query
    from orchestra_claude_agent_sdk import with_hooks

    registry = orchestra.skills.load("orchestra.yaml")
    options = with_hooks(ClaudeAgentOptions(), registry=registry, hooks=[RetryPolicy()])
    async for message in query(prompt="...", options=options):
        ...

- The CLI's hook payloads are Claude Code's, and go to the registry's hooks as they are;
  the answers go back as the SDK's hook output: a deny is ``permissionDecision: "deny"``
  with the hook's reason, a rewrite ``updatedInput`` (judged by the guards again first),
  context ``additionalContext``, a block ``decision: "block"``, a ``PostToolUse`` rewrite
  ``updatedToolOutput``. ``enforce: false`` hooks are recorded and answer nothing.
- ``PreToolUse`` fails closed: an error in orchestra's callback is a deny, and its
  matcher sets ``on_failure="block"``.
- ``TaskHooks`` decide around each tool call; ``SubagentHooks`` around each call of the
  ``Agent`` tool. The CLI runs the tools, so ``Retry`` is not carried out.
- A registry with ``PermissionRequest`` hooks answers ``can_use_tool``.
- With orchestra's tracing configured, every callback is one span.
"""

from orchestra_claude_agent_sdk._options import with_hooks as with_hooks

__version__ = "0.1.0"

__all__ = ["with_hooks"]

with_hooks.__module__ = __name__
