"""Firing an event: the registry, which hooks run and in what order, and the outcome.

- ``registry``: ``HookRegistry`` (``fire``, its options, its lifetime);
- ``chain``: which of a registry's hooks an event runs, in which stages and order;
- ``call``: one hook call (its timeout, its errors, its span);
- ``merge`` and ``outcome``: the results folded into ``HookOutcome`` (``HookRecord`` per
  hook, ``CriticalHookError``);
- ``background``: Claude Code's ``async`` hooks; ``record`` and ``replay``: recorded
  events, and what other hooks would decide on them.

Imports: ``_sources`` and the layers below; ``registry`` hands itself to ``_engines``'
adapters (``as_task_hooks``...), the one import upward. Held by ``make lint``.
"""
