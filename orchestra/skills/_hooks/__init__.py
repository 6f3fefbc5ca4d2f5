"""The hook types: ``HookSpec`` and one module per ``type:``, each with one ``async def run``.

- ``spec``: ``HookSpec``, what every type shares (event, matcher, timeout, ``on_error``,
  ``phase``), and ``run(call) -> HookResult``, the one contract of every type;
- ``command`` (``CommandHook``, and the check of a script that is not executable),
  ``http`` (with ``http_post`` and ``network``, where it may connect), ``mcp`` (with
  ``mcp_client``), ``python``, ``fixed`` (prompt, agent, permission; ``judge``, the
  model they ask);
- ``claude_output``: a Claude Code source's hook output, read as Claude Code reads it;
- ``table``: the one table from ``type:`` to its class. A new type is a module here and
  a row there.

Imports: ``_persistent``, ``_processes``, ``_config``, ``_protocol``; the types do not
import each other. Held by ``make lint`` (import-linter).
"""
