"""The ambient policy: the registry and hooks of the guarded work that is running.

A guarded run, node or tool call enters ``policy_scope(registry, hooks)`` while it runs;
work started inside it (an agent used inside a tool, a compiled graph called from a node,
a nested ``Runner.run``, a guarded tool) asks ``resolve_policy(registry, hooks)`` and is
guarded by the same policy unless given its own. Each part resolves on its own: a bridge
given only hooks still has the surrounding registry's guards. The policy lives in a
context variable, so it follows asyncio and trio tasks and ``contextvars.copy_context()``
into worker threads, and never leaks to sibling work.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Final, final

import attrs

if TYPE_CHECKING:
    from orchestra.skills import HookRegistry

__all__ = [
    "Policy",
    "current_policy",
    "policy_scope",
    "reset_policy",
    "resolve_policy",
    "set_policy",
]


def _hooks_tuple(hooks: Iterable[object]) -> tuple[object, ...]:
    return tuple(hooks)


@final
@attrs.frozen
class Policy:
    """A registry and hook objects that decide about the work running inside them.

    Attributes:
        registry: the YAML hooks (``orchestra.skills.load(...)``), or None.
        hooks: ``TaskHooks``/``SubagentHooks`` objects, in calling order.
    """

    registry: HookRegistry | None = None
    hooks: tuple[object, ...] = attrs.field(default=(), converter=_hooks_tuple)

    @property
    def empty(self) -> bool:
        """Whether the policy holds nothing (no registry, no hooks)."""
        return self.registry is None and not self.hooks


_NONE: Final = Policy()
_current: Final[contextvars.ContextVar[Policy]] = contextvars.ContextVar(
    "orchestra_policy", default=_NONE
)


def current_policy() -> Policy:
    """The policy of the guarded work running here (an empty ``Policy`` outside any)."""
    return _current.get()


def resolve_policy(
    registry: HookRegistry | None = None,
    hooks: Iterable[object] = (),
    *,
    kinds: tuple[type, ...] | None = None,
) -> Policy:
    """The policy a bridge follows: what it was given, else the ambient one, part by part.

    Args:
        registry: the bridge's own registry; None: the ambient policy's.
        hooks: the bridge's own hook objects; empty: the ambient policy's.
        kinds: the hook classes the bridge takes (``(TaskHooks,)``): of the ambient
            hooks, only their instances are inherited (its own are kept as given).
    """
    own = tuple(hooks)
    ambient = _current.get()
    if ambient is _NONE:
        return Policy(registry, own)
    inherited = ambient.hooks
    if not own and kinds is not None:
        inherited = tuple(h for h in inherited if isinstance(h, kinds))
    return Policy(registry if registry is not None else ambient.registry, own or inherited)


def set_policy(
    registry: HookRegistry | None = None, hooks: Iterable[object] = ()
) -> contextvars.Token[Policy]:
    """Make ``resolve_policy(registry, hooks)`` the ambient policy until ``reset_policy``.

    For engines that run work in a context of their own (``contextvars.Context.run``),
    where a ``with policy_scope(...)`` block cannot span the work: set it in that context.
    """
    return _current.set(resolve_policy(registry, hooks))


def reset_policy(token: contextvars.Token[Policy]) -> None:
    """Restore the ambient policy ``set_policy`` replaced (in the same context)."""
    _current.reset(token)


@contextlib.contextmanager
def policy_scope(
    registry: HookRegistry | None = None, hooks: Iterable[object] = ()
) -> Iterator[Policy]:
    """Make ``resolve_policy(registry, hooks)`` the ambient policy while the block runs.

    Examples:
        >>> with policy_scope(hooks=["h"]) as policy:
        ...     current_policy() is policy
        True
        >>> current_policy().empty
        True
    """
    policy = resolve_policy(registry, hooks)
    token = _current.set(policy)
    try:
        yield policy
    finally:
        _current.reset(token)
