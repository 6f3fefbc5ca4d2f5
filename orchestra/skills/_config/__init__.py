"""Reading one hook entry of a config: the pieces every source format and hook type use.

- ``yaml``: YAML that remembers its lines, and ``Problems`` (every problem, at its line);
- ``entry``: ``Entry``, one mapping being read into a hook, each field checked;
- ``matchers``: ``matcher:`` patterns, run in linear time (RE2);
- ``permission_rule`` and ``shell_words``: Claude Code's ``if:`` rules.

Imports: ``_protocol`` only. Held by ``make lint`` (import-linter).
"""
