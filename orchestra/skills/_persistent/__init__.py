"""Persistent command hooks: one long-lived process per hook, one JSON line per event.

- ``pool``: ``HookProcesses``, a registry's processes, one per hook;
- ``hook``: ``PersistentHook``, one hook's process and the events in flight to it;
- ``process``: ``HookProcess``, its pipes; ``lines``: the lines sent and read;
- ``waiters``, ``deadlines``, ``faults``: each event's waiter and the FIFO gates, the
  timing thread, the backoff before a restart;
- ``serve``: the other side, ``serve(handler)`` for hook authors.

Imports: ``_processes``, ``_config`` and ``_protocol``. Held by ``make lint``.
"""
