"""What passes between orchestra and a hook, shared by every layer above.

- ``catalog``: the events (``EVENTS``: what each matches, whether it can block or modify
  input), with ``claude_events``, the Claude Code column of that table;
- ``call``: what one hook run gets (the event JSON's fields and bytes, ``HookCall``);
- ``result``: what a hook answers (``HookResult``, ``HookRunError``, ``parse_result``),
  with ``claude_types``, the Claude Code output fields read but not acted on.

Imports: nothing of ``orchestra.skills`` (the bottom layer); of orchestra, its core
(``orchestra._errors``...). Held by ``make lint`` (import-linter, ``[tool.importlinter]``).
"""
