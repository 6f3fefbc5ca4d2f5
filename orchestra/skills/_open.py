"""``load``: hook files, SKILL.md files and folders of skills into a ``HookRegistry``."""

from __future__ import annotations

import os
from pathlib import Path

from orchestra.skills._judge import Judge
from orchestra.skills._load import load_hooks
from orchestra.skills._record import DEFAULT_RECORD_BYTES
from orchestra.skills._registry import DEFAULT_MAX_PARALLEL_HOOKS, HookRegistry

__all__ = ["load"]


def load(
    *paths: str | os.PathLike[str],
    project_dir: str | os.PathLike[str] | None = None,
    session_id: str | None = None,
    judge: Judge | None = None,
    max_parallel_hooks: int = DEFAULT_MAX_PARALLEL_HOOKS,
    require_trust: bool = False,
    enforce: bool = True,
    record: str | os.PathLike[str] | None = None,
    record_max_bytes: int = DEFAULT_RECORD_BYTES,
    record_payload: bool = True,
) -> HookRegistry:
    """Load hooks from config files, ``SKILL.md`` files and folders of skills.

    ``orchestra.yaml`` files are read in the order given (pass the global one before
    the project's), then skills (a folder contributes its ``orchestra.yaml`` and every
    ``SKILL.md`` below it); identical hooks are kept once.

    Args:
        *paths: files and folders to read.
        project_dir: the hooks' working directory (see ``HookRegistry``).
        session_id: the default ``session_id`` of the event JSON.
        judge: what prompt hooks with a ``model`` and Claude Code's prompt and agent
            hooks ask (any async callable; see ``OpenAICompatibleJudge``).
        max_parallel_hooks: how many hook processes or requests run at once (default 32).
        require_trust: refuse every file that the user's trust store does not trust as
            it is now (``orchestra hooks trust PATH``); files in the user's own
            configuration folder (``$XDG_CONFIG_HOME/orchestra/``) are trusted.
        enforce: False puts every hook in audit mode (see ``HookRegistry``).
        record: append each fired event and its outcome to this file, one JSON line
            each, for ``orchestra hooks replay`` (see ``HookRegistry``).
        record_max_bytes: rotate the record file to ``PATH.1`` at this size (64 MiB).
        record_payload: keep each event's payload in the record (default; replay needs
            it, and it holds the tools' inputs).

    Returns:
        A registry of every hook, in the order they run.

    Raises:
        ConfigError: every problem found, each naming file:line and the field path.
    """
    notes: list[str] = []
    hooks = load_hooks([Path(path) for path in paths], notes, require_trust=require_trust)
    return HookRegistry(
        hooks,
        project_dir=project_dir,
        session_id=session_id,
        judge=judge,
        notes=notes,
        max_parallel_hooks=max_parallel_hooks,
        enforce=enforce,
        record=record,
        record_max_bytes=record_max_bytes,
        record_payload=record_payload,
    )
