"""The processes hooks run in, and what they are given.

- ``spawn``: a hook process started and watched without threads;
- ``command``: the command runner (one process from spawn to reaping, its output read);
- ``reaper``: the small process that keeps nothing a persistent hook started alive
  (run as a script: standard library only);
- ``sandbox``: ``sandbox: true`` under bubblewrap;
- ``environment`` and ``claude_env``: a hook's minimal environment and the agent's own
  kept from its hooks (non-dumpable), and the variables Claude Code sets.

Imports: ``_protocol`` and ``_config``. Held by ``make lint`` (import-linter).
"""
