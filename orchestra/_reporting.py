"""Hook errors reported from inside a hook object (internal).

An adapter hook (``registry.as_task_hooks()``) runs hooks of its own: a YAML command
that exits 1 is isolated by the registry and never raises. So that its error still
reaches ``RunResult.hook_errors``, the engine makes its recorder current for the run
(``start_reporting``), and the adapter calls ``report_hook_error``: the error is logged once
at WARNING on the ``orchestra`` logger and recorded beside the Python hooks' own.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Final, TypeAlias

from orchestra._errors import HookError

__all__ = ["Recorder", "report_also", "report_hook_error", "start_reporting", "stop_reporting"]

_logger: Final = logging.getLogger("orchestra")
Recorder: TypeAlias = "Callable[[HookError], object] | None"
_RECORDER: Final[ContextVar[Recorder]] = ContextVar("orchestra_hook_errors", default=None)


def start_reporting(record: Recorder) -> Token[Recorder]:
    """Make ``record`` what ``report_hook_error`` calls in this context (and its copies)."""
    return _RECORDER.set(record)


def report_also(record: Callable[[HookError], object]) -> Token[Recorder]:
    """Make ``report_hook_error`` call ``record``, then what it called before, if anything.

    A dispatch inside a DAG run: its hooks' errors are on its result and on the run's.
    """
    outer = _RECORDER.get()
    if outer is None:
        return _RECORDER.set(record)

    def both(error: HookError) -> None:
        record(error)
        outer(error)

    return _RECORDER.set(both)


def stop_reporting(token: Token[Recorder]) -> None:
    """Undo the ``start_reporting`` that gave ``token``."""
    _RECORDER.reset(token)


def report_hook_error(error: HookError) -> None:
    """Log ``error`` once at WARNING and record it on the current run, if there is one."""
    _logger.warning("%s", error)
    record = _RECORDER.get()
    if record is not None:
        record(error)
