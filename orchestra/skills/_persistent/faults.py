"""A persistent hook's recent failures: the backoff before a restart, and when it breaks."""

from __future__ import annotations

import collections
import functools
import time
from typing import TYPE_CHECKING, Final, final

if TYPE_CHECKING:
    import tenacity

__all__ = ["FAULT_WINDOW", "MAX_FAULTS", "Faults"]

MAX_FAULTS: Final = 5
"""Failures within ``FAULT_WINDOW`` seconds after which a persistent hook is broken."""
FAULT_WINDOW: Final = 60.0
"""The window, in seconds, in which ``MAX_FAULTS`` failures break a persistent hook."""


@functools.cache
def _strategy() -> tuple[tenacity.wait.wait_base, tenacity.Retrying]:
    """The wait before a restart, by the number of recent failures: 50 ms, 100 ms, ... 2 s.

    tenacity is imported here, at the first failure: with tornado installed it loads
    tornado, asyncio and ssl (~45 ms) that loading ``orchestra.skills`` need not pay.
    """
    import tenacity

    backoff = tenacity.wait_exponential(multiplier=0.05, max=2.0)
    return backoff, tenacity.Retrying(wait=backoff)


def _backoff(failures: int) -> float:
    import tenacity

    backoff, retrying = _strategy()
    state = tenacity.RetryCallState(retrying, None, (), {})
    state.attempt_number = failures
    return float(backoff(state))


@final
class Faults:
    """The failures of one persistent hook within the last ``FAULT_WINDOW`` seconds.

    Attributes:
        restart_at: when the next process may start (``time.monotonic()``).
    """

    __slots__ = ("_times", "restart_at")

    def __init__(self) -> None:
        self._times: collections.deque[float] = collections.deque()
        self.restart_at = 0.0

    def count(self, reason: str) -> str | None:
        """Count one failure; why the hook is now broken, or None.

        The next start waits a backoff that grows with the recent failures.
        """
        now = time.monotonic()
        times = self._times
        times.append(now)
        while times[0] < now - FAULT_WINDOW:
            times.popleft()
        self.restart_at = now + _backoff(len(times))
        if len(times) < MAX_FAULTS:
            return None
        return (
            f"broken: failed {len(times)} times in {FAULT_WINDOW:g} s (last: {reason}); "
            "not restarted until the registry is closed"
        )
