"""Exceptions raised by orchestra.

The whole tree::

    OrchestraError                      base of every orchestra error
    ├── BudgetExceeded (RuntimeError)   a run that reached a limit of its Budget
    ├── DAGError (ValueError)           a DAG that cannot run: duplicate ids, unknown deps, cycles
    ├── ConfigError (ValueError)        a YAML hook config that does not validate (file:line, field)
    ├── HookError (RuntimeError)        a hook raised or answered something invalid
    ├── TaskFailed (RuntimeError)       a task failed by a decision, not by an exception of its own
    ├── DispatchError (RuntimeError)    a subagent dispatch that finally failed
    ├── JournalError (RuntimeError)     a run journal that cannot be opened, read or resumed
    └── ToolDenied (PermissionError)    a guarded tool call denied by a PreToolUse hook

Each subclasses the builtin that fits, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "DAGError",
    "DispatchError",
    "HookError",
    "JournalError",
    "OrchestraError",
    "TaskFailed",
    "ToolDenied",
]


class OrchestraError(Exception):
    """Base class of every error orchestra raises on purpose."""


class DAGError(OrchestraError, ValueError):
    """A DAG that cannot run: a duplicate id, an unknown or foreign dependency, a cycle."""


class ConfigError(OrchestraError, ValueError):
    """A hook configuration that does not validate.

    The message names the file, the line and the field path. When a load finds several
    problems, one ``ConfigError`` carries them all in ``errors``, one line each in its
    message.

    Attributes:
        file: the file the (first) problem is in, if known.
        line: its 1-based line, if known.
        field: the field path, e.g. ``"hooks.PreToolUse[0].hooks[1].timeout"``, if any.
        errors: every problem found, each a ``ConfigError`` of its own (``(self,)`` for
            a single problem).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        errors: tuple[ConfigError, ...] = (),
    ) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.field = field
        self.errors: tuple[ConfigError, ...] = errors or (self,)


class HookError(OrchestraError, RuntimeError):
    """A hook raised, or returned an answer that is not valid for its moment.

    Attributes:
        hook: a printable name of the hook object (its class name).
        moment: the hook method that failed, e.g. ``"on_failure"``.
        subject: what the hook was called about (a task id or an agent name), if any.

    The original exception, if any, is the ``__cause__``.
    """

    def __init__(self, message: str, *, hook: str, moment: str, subject: str | None = None) -> None:
        super().__init__(message)
        self.hook = hook
        self.moment = moment
        self.subject = subject


class HookBlocked(HookError):
    """A fail-closed hook object's own verdict, raised as an error (internal).

    A hook object with ``fail_closed = True`` that raises it fails the task with the
    error's message as the reason, once: it is the task's error, not also a hook error.
    The YAML adapter raises it for an Arc ``blocking`` ``stage_complete`` hook that
    blocked (a verify gate), whose moment (``after_execute``) answers only a ``Replace``.
    """


class TaskFailed(OrchestraError, RuntimeError):
    """A task failed by a decision (a hook's ``Fail``), not by an exception it raised.

    ``RunResult.raise_for_failures()`` raises one for a whole run that is not ok: its
    ``task_ids`` name every task that did not end well.

    Attributes:
        task_id: the id of the task (the first one, for a run).
        reason: the reason the decision gave, if any.
        task_ids: the ids of every task the error is about (``(task_id,)`` for one task).
    """

    def __init__(
        self,
        task_id: str,
        reason: str | None,
        *,
        task_ids: tuple[str, ...] = (),
        message: str | None = None,
    ) -> None:
        super().__init__(message or f"task {task_id!r} failed: {reason or 'failed by a hook'}")
        self.task_id = task_id
        self.reason = reason
        self.task_ids = task_ids or (task_id,)


class DispatchError(OrchestraError, RuntimeError):
    """A subagent dispatch that finally failed; the last error is its ``__cause__``.

    Attributes:
        agent: the agent the failure concerns (the one dispatched or delegated to), if any.
        delegated_from: the agents tried before ``agent`` in the delegation chain.
        attempts: the attempts ``agent`` made in this dispatch (0 if it never ran).
        reason: the reason a hook's ``Fail`` gave, if a hook failed the dispatch.
        hook_errors: the hook errors recorded during the dispatch, in order.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        delegated_from: tuple[str, ...] = (),
        attempts: int = 0,
        reason: str | None = None,
        hook_errors: tuple[HookError, ...] = (),
    ) -> None:
        super().__init__(message)
        self.agent = agent
        self.delegated_from = delegated_from
        self.attempts = attempts
        self.reason = reason
        self.hook_errors = hook_errors


class JournalError(OrchestraError, RuntimeError):
    """A run journal that cannot be used: not a journal, a newer schema, an unknown run.

    Raised before any task runs (opening the journal, beginning the run, finding the
    run to resume); the message names the journal and what is wrong.

    Attributes:
        journal: a printable name of the journal (its file, or its database).
    """

    def __init__(self, message: str, *, journal: str) -> None:
        super().__init__(message)
        self.journal = journal


class BudgetExceeded(OrchestraError, RuntimeError):
    """A run that reached a limit of its ``Budget``: the run ends here.

    Raised at the model call past ``max_model_calls`` (it is not made), or after the call
    whose usage crossed a token or cost limit.

    Attributes:
        kind: the limit reached: ``"model_calls"``, ``"input_tokens"``,
            ``"output_tokens"`` or ``"cost_usd"``.
        used: what the run had used of it (the call that crossed it included).
        limit: the limit.
        reason: the one-line reason, e.g. ``"budget: model calls 3/3"``.
    """

    def __init__(self, reason: str, *, kind: str, used: float, limit: float) -> None:
        super().__init__(reason)
        self.kind = kind
        self.used = used
        self.limit = limit
        self.reason = reason


class ToolDenied(OrchestraError, PermissionError):
    """A guarded tool call that a ``PreToolUse`` hook denied.

    Attributes:
        tool: the tool's name.
        reason: the reason the hook gave, if any.
        retry: a ``PermissionDenied`` hook said the agent may try the call again
            (Claude Code's ``retry: true``).
    """

    def __init__(self, tool: str, reason: str | None, *, retry: bool = False) -> None:
        super().__init__(f"tool {tool!r} denied: {reason or 'denied by a hook'}")
        self.tool = tool
        self.reason = reason
        self.retry = retry


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str:
    """Return `` (did you mean 'x'?)`` for the choice closest to ``word``, else ``""``.

    The comparison ignores case; the suggestion keeps the choice's own spelling. Every
    "unknown name" message in orchestra builds its hint here, so they all read alike.
    """
    import difflib  # here: loaded on a mistake only (``orchestra --help`` stays quick)

    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=cutoff)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""
