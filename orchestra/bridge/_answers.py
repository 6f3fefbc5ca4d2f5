"""What the attempt driver answers: every outcome an engine must carry out (public values).

| answer     | the engine...                                         | task state  |
|------------|-------------------------------------------------------|-------------|
| ``DoRun``  | runs the body with ``inputs``, then feeds the outcome | (running)   |
| ``DoSleep``| waits ``delay`` seconds, then starts the next attempt | (running)   |
| ``DoGive`` | ends the work with ``output`` (no error raised)       | SUCCEEDED   |
| ``DoSkip`` | gives the work up, the run goes on                    | SKIPPED     |
| ``DoFail`` | raises ``error`` (or marks the work failed with it)   | FAILED      |

``DoGive``, ``DoSkip`` and ``DoFail`` end the work (``Ended``): by the time the driver gives
one, it has settled the work and called its ``on_end`` hooks once. Each carries
``reason`` (why a hook or a cap ended it, or None) and ``error`` (the error kept on the
result, or None), so an engine records any of them the same way.
"""

from __future__ import annotations

from typing import Any, TypeAlias, final

import attrs

from orchestra._decisions import Decision
from orchestra.dag import TaskState

__all__ = ["Answer", "DoFail", "DoGive", "DoRun", "DoSkip", "DoSleep", "Ended", "carry", "keep"]


@final
@attrs.frozen
class DoRun:
    """Run the body now with ``inputs`` (as the ``before_execute`` hooks replaced them).

    Attributes:
        inputs: what the body gets: its keyword arguments, or the engine's own value (a
            LangGraph node's state).
    """

    inputs: Any


@final
@attrs.frozen
class DoSleep:
    """Wait ``delay`` seconds, then start the next attempt (a ``Retry`` that goes ahead).

    Attributes:
        delay: seconds to wait (0: start again at once).
    """

    delay: float


@final
@attrs.frozen
class DoGive:
    """The work ends SUCCEEDED with ``output``: the body's, a hook's replacement or a given one.

    Attributes:
        output: the work's output (what flows downstream).
        reason: ``"output given by X"`` when a ``before_execute`` hook gave it,
            ``"recovered by X"`` when an ``on_failure`` ``Replace`` did (as orchestra's
            scheduler says), else None.
        error: the body's error that an ``on_failure`` ``Replace`` recovered from, else
            None (kept on the result).
    """

    output: Any
    reason: str | None = None
    error: BaseException | None = None

    state = TaskState.SUCCEEDED
    """The state the work ends in."""


@final
@attrs.frozen
class DoSkip:
    """The work ends SKIPPED: given up without failing the run.

    Attributes:
        reason: ``"skipped by Class.moment: why"``.
        error: the body's error, when it was skipped after a failure, else None.
        decision: the ``Skip`` that gave it up (its own ``reason`` is the hook's words:
            what a model or agent reads), None when the work never ran.
    """

    reason: str
    error: BaseException | None = None
    decision: Decision | None = None

    state = TaskState.SKIPPED
    """The state the work ends in."""


@final
@attrs.frozen
class DoFail:
    """The work ends FAILED: the engine raises ``error`` (or records it as its failure).

    Attributes:
        error: the body's own error (a note added when a hook decided), or an
            ``orchestra.TaskFailed`` when a hook failed the work before or after its body.
        reason: ``"failed by X: why"`` when a hook (or a cap: ``orchestra``) decided, None
            for a plain failure nobody had an opinion about.
        decision: the decision that failed it (a ``Fail``), None for a plain failure (an
            engine with a retry policy of its own applies it then).
    """

    error: BaseException
    reason: str | None = None
    decision: Decision | None = None

    state = TaskState.FAILED
    """The state the work ends in."""


Ended: TypeAlias = DoGive | DoSkip | DoFail
"""An answer that ends the work."""

Answer: TypeAlias = DoRun | DoSleep | DoGive | DoSkip | DoFail
"""Any answer of the driver."""


def carry(end: Ended, *, skipped: Any = None) -> Any:
    """Carry out an ending answer where the engine wants a value: the output, or raise.

    ``DoGive`` -> its output; ``DoSkip`` -> ``skipped`` (what the engine's downstream gets
    for work given up: None, an unchanged state); ``DoFail`` -> raises its error.
    """
    if type(end) is DoFail:
        raise end.error
    return end.output if type(end) is DoGive else skipped


def keep(end: Ended, name: str, errors: dict[str, BaseException], reasons: dict[str, str]) -> None:
    """Keep what an ending answer says on a run's result: ``errors[name]``, ``reasons[name]``."""
    if end.error is not None:
        errors[name] = end.error
    if end.reason is not None:
        reasons[name] = end.reason
