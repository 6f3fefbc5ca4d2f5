"""A ``HookRegistry`` travels to another process as its sources and options (internal).

A registry holds live state (hook processes, background hooks, per-thread gates, a
record file's handle): none of it may cross a process boundary. What crosses it instead
is what made the registry: the files and keyword arguments ``load`` was given (then the
other process loads them again: the same files, validated and trusted there), or, for a
registry made in code, its hooks (frozen values) and options. A dask task body that
calls a ``@registry.guard`` tool is then guarded on the worker.

The receiving process loads each origin once (``_LOADED``), so a worker running many
bodies of one run shares one registry, as the driver does. Registered with ``copyreg``,
so ``pickle`` and cloudpickle (dask's) both use it.
"""

from __future__ import annotations

import copyreg
import pickle
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from orchestra.skills._firing.registry import HookRegistry

__all__ = ["register", "remember"]

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
        if how == "load":
            from orchestra.skills._open import load  # here: _open imports this module

            registry = load(*what, **options)
        else:
            from orchestra.skills._firing.registry import HookRegistry

            registry = HookRegistry(what, **options)
        _LOADED[origin] = registry
        return registry


def register(cls: type) -> None:
    """Make ``pickle`` (and cloudpickle) send ``cls`` instances as their origin."""
    copyreg.pickle(cls, _reduce)
