"""``RetryPolicy``: tenacity's stop, wait and retry strategies turned into decisions."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Final, TypeAlias, final

from orchestra._decisions import Retry
from orchestra._errors import BudgetExceeded
from orchestra._hooks import SubagentHookContext, SubagentHooks, TaskHookContext, TaskHooks

if TYPE_CHECKING:
    import tenacity
    from tenacity import RetryCallState

__all__ = ["RetryPolicy"]

# tenacity's strategy objects, or plain callables of the retry state, as tenacity takes them.
StopStrategy: TypeAlias = "tenacity.stop.stop_base | Callable[[RetryCallState], bool]"
WaitStrategy: TypeAlias = "tenacity.wait.wait_base | Callable[[RetryCallState], float]"
RetryStrategy: TypeAlias = "tenacity.retry_base | Callable[[RetryCallState], bool]"


# The strategy to write for each argument, from what was given (``stop=3``, ``wait=2``,
# ``retry=ValueError``); ``{}`` is the value given when it fits, else an example.
_FIXES: Final = {
    "stop": ("stop_after_attempt({})", "3"),
    "wait": ("wait_fixed({})", "2"),
    "retry": ("retry_if_exception_type({})", "ConnectionError"),
}


def _fix(name: str, value: object) -> str:
    template, example = _FIXES[name]
    fits = {
        "stop": isinstance(value, int) and not isinstance(value, bool),
        "wait": isinstance(value, int | float) and not isinstance(value, bool),
        "retry": isinstance(value, type) and issubclass(value, BaseException),
    }[name]
    shown = getattr(value, "__name__", repr(value)) if fits else example
    return f"write {name}=tenacity.{template.format(shown)}"


def _strategy(name: str, value: object) -> None:
    """Refuse what tenacity would take and fail on at run time (``stop=3``, a class)."""
    shown = value.__name__ if isinstance(value, type) else repr(value)
    if isinstance(value, type):
        what = "an exception class" if issubclass(value, BaseException) else "a class"
        problem = f"{what}, not a strategy object"
    elif not callable(value):
        problem = f"{type(value).__name__} is not a strategy"
    else:
        try:
            inspect.signature(value).bind(None)
        except TypeError:
            problem = "a strategy is called with one argument, the retry state"
        except ValueError:  # a builtin without a signature: tenacity will tell
            return
        else:
            return
    raise TypeError(f"RetryPolicy({name}={shown}): {problem}: {_fix(name, value)}")


@final
class RetryPolicy(TaskHooks, SubagentHooks):
    """A ready ``TaskHooks`` and ``SubagentHooks`` that answers failures with tenacity.

    Built from tenacity's own strategy objects, so the retry vocabulary users know works
    unchanged, operators included::

        from tenacity import retry_if_exception_type, stop_after_attempt, wait_exponential

        policy = RetryPolicy(
            stop=stop_after_attempt(4) | stop_after_delay(30),
            wait=wait_exponential(multiplier=0.5, max=8) + wait_random(0, 1),
            retry=retry_if_exception_type(ConnectionError),
        )

    In ``on_failure`` it builds a tenacity ``RetryCallState`` for the failed attempt and
    answers ``Retry(delay)`` with the delay that ``wait`` computes, or None (no opinion)
    when ``retry`` says the error is not retryable or ``stop`` says to stop. No backoff
    arithmetic of its own.

    Args:
        stop: when to stop retrying (default: after 3 attempts).
        wait: how long to wait before the next attempt (default: no wait).
        retry: which failures to retry (default: any ``Exception``).

    Raises:
        TypeError: an argument that is not a strategy (``stop=3``, ``retry=ValueError``),
            naming the strategy to write instead.
    """

    def __init__(
        self,
        stop: StopStrategy | None = None,
        wait: WaitStrategy | None = None,
        retry: RetryStrategy | None = None,
    ) -> None:
        # tenacity here, not at import: with tornado installed it loads tornado (~45 ms)
        import tenacity

        for name, value in (("stop", stop), ("wait", wait), ("retry", retry)):
            if value is not None:
                _strategy(name, value)
        self.stop = stop if stop is not None else tenacity.stop_after_attempt(3)
        self.wait = wait if wait is not None else tenacity.wait_none()
        self.retry = retry if retry is not None else tenacity.retry_if_exception_type()
        self._retrying = tenacity.AsyncRetrying(stop=self.stop, wait=self.wait, retry=self.retry)
        self._state = tenacity.RetryCallState

    def __repr__(self) -> str:
        return f"RetryPolicy(stop={self.stop!r}, wait={self.wait!r}, retry={self.retry!r})"

    def on_failure(
        self, ctx: TaskHookContext | SubagentHookContext, error: BaseException
    ) -> Retry | None:
        """Answer ``Retry(delay)`` from tenacity's strategies, or None to stop."""
        if not isinstance(error, Exception) or isinstance(error, BudgetExceeded):
            return None  # cancellation, KeyboardInterrupt, SystemExit, a spent budget
        state = self._state(retry_object=self._retrying, fn=None, args=(), kwargs={})
        state.attempt_number = ctx.attempt
        if ctx.started_at:
            state.start_time = ctx.started_at
        state.set_exception((type(error), error, error.__traceback__))
        state.outcome_timestamp = time.monotonic()
        if not self.retry(state) or self.stop(state):
            return None
        return Retry(float(self.wait(state)))
