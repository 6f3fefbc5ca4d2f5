"""The environment of a hook process: minimal by default, opened by the config.

A command hook gets, from the parent's environment, only ``PATH``, ``HOME``, ``USER``,
``LOGNAME``, ``SHELL``, ``LANG``, ``LC_*``, ``TZ``, ``TERM`` and ``TMPDIR`` (tox's
``pass_env`` idea): a secret in the agent's environment (``AWS_SECRET_ACCESS_KEY``,
``OPENAI_API_KEY``) never reaches a hook that was not given it. The config opens more:

- ``pass_env: [NAME, GLOB, ...]``: the parent's variables by name or glob (``AWS_*``,
  ``["*"]`` for all);
- ``env: {NAME: value}``: variables set by the config; ``${VAR}`` in a value is the
  parent's ``VAR`` (empty when unset).

Then the project variables, which the config cannot override: ``ORCHESTRA_EVENT``,
``ORCHESTRA_PROJECT_DIR`` and ``CLAUDE_PROJECT_DIR`` (the project folder), ``SKILL_DIR``
for a skill's hooks, and ``TRACEPARENT`` when traced.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from typing import Final

from orchestra._children import MINIMAL_ENV, minimal_environment
from orchestra.tracing import inject_env

__all__ = ["KEPT_MINIMAL", "MINIMAL_ENV", "hook_environment"]

KEPT_MINIMAL: Final = (
    "get orchestra's minimal environment (PATH, HOME, ...), not the whole one their "
    "own runner passes: a hook is not handed the run's secrets; "
    "load(..., pass_env=(NAME, ...)) passes named variables"
)
"""The end of the note a source's loader gives once where it keeps this difference."""

_GLOB_CHARS: Final = frozenset("*?[")
_REFERENCE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _passed(environ: Mapping[str, str], pass_env: tuple[str, ...]) -> dict[str, str]:
    if "*" in pass_env:
        return dict(environ)
    passed = minimal_environment(environ)
    for pattern in pass_env:
        if _GLOB_CHARS.isdisjoint(pattern):
            if pattern in environ:
                passed[pattern] = environ[pattern]
        else:
            passed.update(
                (name, value)
                for name, value in environ.items()
                if fnmatch.fnmatchcase(name, pattern)
            )
    return passed


def hook_environment(
    *,
    event: str,
    project_dir: str,
    env: tuple[tuple[str, str], ...] = (),
    pass_env: tuple[str, ...] = (),
    project: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The whole environment of one hook process.

    Args:
        event: the event's name (``ORCHESTRA_EVENT``).
        project_dir: the project folder (``ORCHESTRA_PROJECT_DIR``, ``CLAUDE_PROJECT_DIR``).
        env: variables the config sets; ``${VAR}`` in a value reads the parent's.
        pass_env: names and globs of the parent's variables to pass on.
        project: more project variables (``SKILL_DIR``), which nothing overrides.
    """
    environ = os.environ
    result = _passed(environ, pass_env)
    for name, value in env:
        result[name] = _REFERENCE.sub(lambda match: environ.get(match.group(1), ""), value)
    result["ORCHESTRA_EVENT"] = event
    result["ORCHESTRA_PROJECT_DIR"] = project_dir
    result["CLAUDE_PROJECT_DIR"] = project_dir
    if project:
        result.update(project)
    return inject_env(result)  # TRACEPARENT: the hook's own span, when traced
