"""Persistent command hooks: one long-lived process per hook, one JSON line per event.

A ``CommandHook`` with ``persistent: true`` is not spawned per event. Its process starts
at the hook's first event, with the command, environment and process group of its own
that any command hook gets, and stays: each event is one line on its stdin (the event
JSON a command hook reads, plus ``"id": N``), answered by one line on its stdout (a
result object as a command hook prints it, with the same ``id``). ``HookProcesses``
holds the processes of one registry; ``registry.aclose()`` stops them all.

What the process does, and what follows (each error is a ``HookRunError`` for the
events concerned, which then follow their hook's ``on_error``):

============================================  ========================================
the process                                   then
============================================  ========================================
answers ``{"id": N, "error": "..."}``         that event fails; the process is kept
answers a result of the wrong shape           that event fails; the process is kept
exits, or closes its stdout                   the events in flight fail; its group is
                                              killed; it restarts at the next event
prints a line that is not a JSON object       the same, the process killed first
answers an id that is not in flight           the same
answers without an id, ``max_in_flight`` > 1  the same
prints a line over 1 MiB                      the same
gives no answer within the hook's ``timeout``  the same
fails 5 times within 60 s                     broken: each event fails at once, saying
                                              so, until the registry is closed
============================================  ========================================

A restart waits a backoff after the last failure (50 ms, doubling, at most 2 s).
Stderr is read all along, so it never fills up and blocks the process; each answer
carries what the process wrote there since the answer before (at most 64 KiB).

The process itself, and the events in flight to it: ``_persistent_hook.PersistentHook``.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

import anyio
from opentelemetry import context as otel_context

from orchestra.skills._persistent.faults import FAULT_WINDOW, MAX_FAULTS
from orchestra.skills._persistent.hook import PersistentHook
from orchestra.skills._persistent.process import HookProcess
from orchestra.skills._processes.command import command_argv
from orchestra.skills._protocol.call import HookCall
from orchestra.skills._protocol.result import HookResult, HookRunError

if TYPE_CHECKING:
    from orchestra.skills._hooks.command import CommandHook

__all__ = [
    "FAULT_WINDOW",
    "MAX_FAULTS",
    "MAX_IN_FLIGHT",
    "HookProcesses",
    "PersistentHook",
    "run_persistent",
]

MAX_IN_FLIGHT: Final = 256
"""The most events a persistent hook may have in flight at once (``max_in_flight``)."""


class HookProcesses:
    """The processes of a registry's persistent hooks: one per hook, started on demand.

    Those of a registry still open when the interpreter exits are killed then (a
    process in a session of its own would outlive it otherwise).
    """

    def __init__(self) -> None:
        self._hooks: dict[int, PersistentHook] = {}

    def __len__(self) -> int:
        """How many processes are running."""
        return sum(1 for hook in self._hooks.values() if hook.pid is not None)

    def get(self, hook: CommandHook, call: HookCall) -> PersistentHook:
        """The state of ``hook``'s process (made at its first event)."""
        found = self._hooks.get(id(hook))
        if found is None or found.hook is not hook:
            found = self._hooks[id(hook)] = PersistentHook(hook, _spawner(hook, call))
            _OPEN.add(self)
        return found

    async def aclose(self) -> None:
        """Stop every process (concurrently) and forget every failure."""
        hooks, self._hooks = list(self._hooks.values()), {}
        _OPEN.discard(self)
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for hook in hooks:
                    group.start_soon(hook.aclose)

    def kill(self) -> int:
        """Kill every process at once, outside any event loop; how many were running."""
        hooks, self._hooks = list(self._hooks.values()), {}
        _OPEN.discard(self)
        return sum(hook.kill() for hook in hooks)


_OPEN: Final[weakref.WeakSet[HookProcesses]] = weakref.WeakSet()
"""The ``HookProcesses`` that may have processes running."""


@atexit.register
def _kill_at_exit() -> None:
    """Kill the processes of registries nobody closed, as the interpreter exits."""
    for processes in list(_OPEN):
        processes.kill()


def _spawner(hook: CommandHook, call: HookCall) -> Callable[[int], HookProcess]:
    """How to start the hook's process: its argv, environment and folder, as any command."""
    where = HookCall(call.event, {}, call.project_dir)
    argv = [*hook.wrap(where), *command_argv(hook.command, hook.args)]

    def spawn(wake: int) -> HookProcess:
        # The process outlives this event's span: no TRACEPARENT in its environment
        # (each event line has the event's own ``traceparent`` when tracing is on).
        token = otel_context.attach(otel_context.Context())
        try:
            env = hook.environment(where)
        finally:
            otel_context.detach(token)
        # Sandboxed, its PID namespace ends everything it started; else the reaper does.
        reaped = hook.sandbox is None
        return HookProcess.start(argv, env, where.project_dir, wake, reaped=reaped)

    return spawn


async def run_persistent(hook: CommandHook, call: HookCall) -> HookResult:
    """Send an event to a persistent hook's process (started if need be), read its answer.

    Raises:
        HookRunError: the process failed or is broken, or no registry holds it.
    """
    if call.processes is None:
        raise HookRunError("a persistent hook runs in a HookRegistry, which holds its process")
    return await call.processes.get(hook, call).run(call)
