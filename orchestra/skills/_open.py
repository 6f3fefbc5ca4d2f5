"""``load``: hook files, SKILL.md files and folders of skills into a ``HookRegistry``.

And how a registry travels to another process: as its sources and options. A registry
holds live state (hook processes, background hooks, per-thread gates, a record file's
handle): none of it may cross a process boundary. What crosses it instead is what made
the registry: the files and keyword arguments ``load`` was given (then the other process
loads them again: the same files, validated and trusted there), or, for a registry made
in code, its hooks (frozen values) and options. A dask task body that calls a
``@registry.guard`` tool is then guarded on the worker.

The receiving process loads each origin once (``_LOADED``), so a worker running many
bodies of one run shares one registry, as the driver does. ``HookRegistry`` is
registered with ``copyreg``, so ``pickle`` and cloudpickle (dask's) both use it.
"""

from __future__ import annotations

import copyreg
import logging
import os
import pickle
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import attrs

from orchestra._budget import Budget
from orchestra.skills._config.entry import check_glob
from orchestra.skills._firing.record import DEFAULT_RECORD_BYTES
from orchestra.skills._firing.registry import DEFAULT_MAX_PARALLEL_HOOKS, HookRegistry
from orchestra.skills._hooks.command import not_executable
from orchestra.skills._hooks.judge import Judge
from orchestra.skills._hooks.spec import HookSpec
from orchestra.skills._sources.read import load_hooks

__all__ = ["load"]

logger: Final = logging.getLogger("orchestra.skills")


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
    pass_env: Iterable[str] = (),
) -> HookRegistry:
    """Load hooks from config files, ``SKILL.md`` files and folders of skills.

    ``orchestra.yaml`` files are read in the order given (pass the global one before
    the project's), then skills (a folder contributes its ``orchestra.yaml`` and every
    ``SKILL.md`` below it); identical hooks are kept once.

    Args:
        *paths: files and folders to read (a leading `~` is the home folder).
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
        pass_env: names or globs of this process's variables that every hook process
            of every source gets (command hooks, Claude Code's, the graph executor's,
            Arc's), beside the minimal environment and each file's own ``pass_env:``.

    A command hook whose script exists but is not executable is logged as a warning
    (logger ``orchestra.skills``): each time it fires it would fail with exit 126.

    Returns:
        A registry of every hook, in the order they run.

    Raises:
        ConfigError: every problem found, each naming file:line and the field path.
        TypeError: ``pass_env`` is a string, not a collection of names.
        ValueError: a ``pass_env`` entry is not a variable name or glob.
    """
    passed = _pass_env(pass_env)
    notes: list[str] = []
    budgets: list[Budget] = []
    hooks = load_hooks(
        [Path(path).expanduser() for path in paths],
        notes,
        require_trust=require_trust,
        budgets=budgets,
    )
    for hook in hooks:
        if (warning := not_executable(hook, project_dir)) is not None:
            logger.warning("%s: %s", hook.source, warning)
    registry = HookRegistry(
        [_passing(hook, passed) for hook in hooks] if passed else hooks,
        project_dir=project_dir,
        session_id=session_id,
        judge=judge,
        notes=notes,
        max_parallel_hooks=max_parallel_hooks,
        enforce=enforce,
        record=record,
        record_max_bytes=record_max_bytes,
        record_payload=record_payload,
        budgets=budgets,
    )
    options: dict[str, Any] = {
        "project_dir": registry.project_dir,
        "session_id": registry.session_id,
        "judge": judge,
        "max_parallel_hooks": max_parallel_hooks,
        "require_trust": require_trust,
        "enforce": enforce,
        "record": record,
        "record_max_bytes": record_max_bytes,
        "record_payload": record_payload,
        "pass_env": passed,
    }
    # what travels to another process for it: these files, these options
    remember(registry, [Path(p).expanduser().resolve() for p in paths], options)
    return registry


def _pass_env(names: Iterable[str]) -> tuple[str, ...]:
    """``load``'s ``pass_env``, checked."""
    if isinstance(names, str):
        raise TypeError(f"pass_env takes names, not a string: write pass_env=({names!r},)")
    passed = tuple(names)
    for name in passed:
        problem = check_glob(name) if isinstance(name, str) else f"{name!r} is not a string"
        if problem is not None:
            raise ValueError(f"pass_env: {problem}")
    return passed


def _passing(hook: HookSpec, names: tuple[str, ...]) -> HookSpec:
    """``hook`` with ``names`` added to what its process gets, if it starts one."""
    current = getattr(hook, "pass_env", None)
    if current is None or not attrs.has(type(hook)):
        return hook  # no process of its own (prompt, http, python, ...)
    passed: dict[str, Any] = {"pass_env": tuple(dict.fromkeys((*current, *names)))}
    return attrs.evolve(hook, **passed)  # a field of some hook types, not of HookSpec


_ORIGINS: Final[weakref.WeakKeyDictionary[Any, bytes]] = weakref.WeakKeyDictionary()
_LOADED: Final[dict[bytes, Any]] = {}  # origin -> the registry made from it here
_LOCK: Final = threading.Lock()


def remember(registry: HookRegistry, paths: Sequence[Any], options: Mapping[str, Any]) -> None:
    """Note that ``load(*paths, **options)`` made ``registry`` (what travels for it).

    Raises:
        TypeError: an option (a judge, say) cannot be pickled: the message says which.
    """
    try:
        origin = pickle.dumps(("load", tuple(str(p) for p in paths), dict(options)))
    except Exception:  # an option that cannot travel: the registry then cannot either
        return
    _ORIGINS[registry] = origin
    _LOADED.setdefault(origin, registry)


def _reduce(registry: HookRegistry) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
    origin = _ORIGINS.get(registry)
    if origin is None:  # made in code: its hooks and options
        options = {
            "project_dir": registry.project_dir,
            "session_id": registry.session_id,
            "judge": registry.judge,
            "notes": registry.notes,
            "max_parallel_hooks": registry.max_parallel_hooks,
            "budgets": registry.budgets,
        }
        try:
            origin = pickle.dumps(("made", registry.hooks, options))
        except Exception as exc:
            raise TypeError(
                f"{registry!r} cannot travel to another process: {exc} (a registry "
                "travels as its sources and options; make its judge picklable)"
            ) from exc
    return _rebuilt, (origin,)


def _rebuilt(origin: bytes) -> HookRegistry:
    """The registry ``origin`` makes in this process (made once, then shared)."""
    with _LOCK:
        known = _LOADED.get(origin)
        if known is not None:
            return known  # type: ignore[no-any-return]  # a HookRegistry, kept above
        how, what, options = pickle.loads(origin)  # our own bytes, from _reduce
        made = load(*what, **options) if how == "load" else HookRegistry(what, **options)
        _LOADED[origin] = made
        return made


copyreg.pickle(HookRegistry, _reduce)  # a registry pickles as its sources and options
