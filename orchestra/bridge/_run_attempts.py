"""The attempts of a whole agent run (``SubagentHooks``), without I/O: ``RunAttempts``.

An engine that retries a whole run on ``on_failure`` (the OpenAI Agents bridge's entry
points) iterates a ``RunAttempts``, as tenacity's ``Retrying`` yields its
``AttemptManager``: it runs the attempt, feeds a failure with the hooks' ``Again`` (or
None) and its own veto to ``failed``, and carries out the answer (``DoSleep``: roll back
what it must, wait, next attempt; None: give up). The flow owns the attempt number, the
errors so far, the attempt cap and the segments a ``Stop`` hook continued the run into.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import final

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS
from orchestra._decisions import Again
from orchestra.bridge._answers import DoSleep

__all__ = ["RunAttempts"]


@final
class RunAttempts:
    """One agent run's attempts: iterate it for each attempt's 1-based number.

    ::

        flow = RunAttempts(max_attempts)
        for attempt in flow:            # a new attempt only after a DoSleep or a segment
            try:
                result = await run(attempt, flow.errors)
            except Exception as exc:
                sleep = flow.failed(exc, decision, veto=why_not)  # the hooks' Again or None
                if sleep is not None:
                    await anyio.sleep(sleep.delay)
                    continue
                raise                   # flow.refused: why an Again was not carried out
            if stop_reason is not None and flow.next_segment():
                continue                # the run goes on where a Stop hook blocked it
            return result

    Attributes:
        attempt: the current attempt, 1-based within its segment (0 before the first).
        errors: the errors of the segment's failed attempts so far, oldest first.
        segments: how many segments the run has (1, plus each ``next_segment``).
        refused: why the last ``Again`` was not carried out (the cap, or the veto), or None.
        max_attempts: the cap on attempts per segment, and on segments.
    """

    __slots__ = ("_again", "attempt", "errors", "max_attempts", "refused", "segments")

    def __init__(self, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> None:
        self.max_attempts = max_attempts
        self.attempt = 0
        self.errors: tuple[BaseException, ...] = ()
        self.segments = 1
        self.refused: str | None = None
        self._again = True

    def __iter__(self) -> Iterator[int]:
        """Each attempt's number: the first, then one after each ``DoSleep`` or segment."""
        while self._again:
            self._again = False
            self.attempt += 1
            yield self.attempt

    def failed(
        self, error: BaseException, decision: Again | None, veto: str | None = None
    ) -> DoSleep | None:
        """The attempt failed with ``error``: ``DoSleep`` to run it again, or None to give up.

        Args:
            error: the attempt's error (kept in ``errors`` for the next attempts' contexts).
            decision: the ``on_failure`` hooks' ``Retry`` (any ``Again``), or None.
            veto: the engine's reason a rerun would be unsafe (it would repeat tool calls),
                or None; the attempt cap's reason comes first.
        """
        self.errors = (*self.errors, error)
        if decision is None:
            return None
        if self.attempt >= self.max_attempts:
            veto = f"the run made {self.attempt} attempts (max_attempts)"
        if veto is not None:
            self.refused = veto
            return None
        self._again = True
        return DoSleep(decision.delay)

    def next_segment(self) -> bool:
        """A ``Stop`` hook blocked the run's end: go on in a new segment, unless at the cap.

        A new segment starts its attempts at 1 with no errors; False (nothing changes)
        once the run has ``max_attempts`` segments.
        """
        if self.segments >= self.max_attempts:
            return False
        self.segments += 1
        self.attempt, self.errors, self._again = 0, (), True
        return True
