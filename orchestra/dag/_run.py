"""``run`` and ``run_sync``: the public entry points of the DAG scheduler."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from orchestra._attempts import DEFAULT_MAX_ATTEMPTS
from orchestra._chain import DEFAULT_HOOK_TIMEOUT
from orchestra._errors import TaskFailed
from orchestra.dag._executor import AgentDispatcher, Executor
from orchestra.dag._model import DAG, Task
from orchestra.dag._result import RunResult
from orchestra.dag._scheduler import _Run
from orchestra.dag._signals import run_terminable

if TYPE_CHECKING:
    from orchestra.dag._journal import JournalArg, RunJournal
    from orchestra.journal import Serializer

__all__ = ["run", "run_sync"]

logger: Final = logging.getLogger("orchestra")


async def run(
    dag: DAG,
    *,
    hooks: Iterable[object] = (),
    max_concurrency: int | None = 64,
    fail_fast: bool = False,
    retry_budget: int | None = None,
    executor: Executor | None = None,
    dispatcher: AgentDispatcher | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    hook_timeout: float | None = DEFAULT_HOOK_TIMEOUT,
    journal: JournalArg | None = None,
    resume: str | None = None,
    serializer: Serializer | None = None,
    journal_key: bytes | str | None = None,
    resume_wait: float | None = None,
) -> RunResult:
    """Run a DAG and return its ``RunResult``.

    Args:
        dag: the DAG; it is validated first (``DAGError`` if it cannot run).
        hooks: ``TaskHooks`` objects, called in this order at each moment.
        max_concurrency: how many tasks may run at once (>= 1); None = no cap (every
            ready task runs: for executors that queue work themselves, such as a cluster).
        fail_fast: on the first FAILED task, cancel the rest (they end CANCELLED).
        retry_budget: how many retries the whole run may spend (None = no limit); past
            it a ``Retry`` becomes a ``Fail`` whose reason says so.
        executor: where task bodies run (default: ``LocalExecutor``). An executor may
            keep outputs where it computed them and apply timeouts itself (see
            ``Executor``).
        dispatcher: the subagent dispatcher for tasks that name an ``agent``.
        max_attempts: hard cap on the attempts of any one task, whatever hooks answer.
        hook_timeout: seconds each hook call may take, unless the hook object has a
            ``timeout`` attribute of its own (None = no limit); a call past it is
            cancelled and counts as a hook error.
        journal: record every settled task and its output as the run goes: a path (the
            embedded SQLite journal) or a ``Journal`` (see "Resuming runs").
        resume: a run id of ``journal`` (or ``"last"``, the DAG's latest run) to continue:
            its SUCCEEDED tasks whose code and inputs are unchanged are not run again.
        serializer: how outputs are journaled (default: ``PickleSerializer()``).
        journal_key: the key that authenticates the journal's payloads (at least 16
            bytes; a ``str`` counts as its UTF-8 bytes). Default: the user's own key,
            ``$XDG_STATE_HOME/orchestra/journal.key``, made on first use. A payload whose
            tag does not check under it is never deserialized: its task runs again, and
            ``RunResult.resume_notes`` says why.
        resume_wait: seconds a resume waits for the run it resumes while another process
            (or run) holds it; past them, or at once by default, it is refused.

    Raises:
        TypeError: ``dag`` is not a ``DAG``, or a hook object is refused (see
            ``HookChain``).
        DAGError: the DAG cannot run (see ``DAG.validate``).
        JournalError: the journal cannot be used, has no run ``resume`` names, or that
            run is held by another resume, or is still going (the message names the
            holder); raised before any task runs.

    Cancelling ``run()`` cancels running tasks and retry sleeps (they end CANCELLED)
    and re-raises the cancellation. A ``KeyboardInterrupt``, ``SystemExit`` or other
    non-``Exception`` raised by a body is never retried: its task is recorded FAILED, the
    others are cancelled, and it propagates.
    """
    _check_dag(dag, "run")
    return await _Run(
        dag,
        hooks=hooks,
        max_concurrency=max_concurrency,
        fail_fast=fail_fast,
        retry_budget=retry_budget,
        executor=executor,
        dispatcher=dispatcher,
        max_attempts=max_attempts,
        hook_timeout=hook_timeout,
        journal=_journal(journal, resume, serializer, journal_key, resume_wait),
    ).execute()


def run_sync(
    dag: DAG,
    *,
    hooks: Iterable[object] = (),
    max_concurrency: int | None = 64,
    fail_fast: bool = False,
    retry_budget: int | None = None,
    executor: Executor | None = None,
    dispatcher: AgentDispatcher | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    hook_timeout: float | None = DEFAULT_HOOK_TIMEOUT,
    journal: JournalArg | None = None,
    resume: str | None = None,
    serializer: Serializer | None = None,
    journal_key: bytes | str | None = None,
    resume_wait: float | None = None,
    backend: str = "asyncio",
) -> RunResult:
    """Run a DAG from synchronous code: ``run()`` in a new event loop.

    Takes the same arguments as ``run()``, plus the anyio ``backend`` ("asyncio" or "trio").

    In the main thread, a SIGTERM is handled as a SIGINT is: the run is cancelled (its
    tasks end CANCELLED, hook processes are killed, ``on_end`` and ``after_run`` run, the
    journal records what settled and releases the run), then ``SystemExit(143)`` is
    raised, so that a process left to exit ends with the status of a SIGTERM. A SIGTERM
    handler the program installed itself is left alone.

    A run that did not end ok is returned as any other, and also logged as a warning
    (logger ``orchestra``) naming the tasks and why, so that a script that does not look
    at ``result.ok`` still says so.

    Raises:
        RuntimeError: called from a running event loop (use ``await orchestra.run(...)``).
        TypeError: ``dag`` is not a ``DAG``.
        SystemExit: with code 143, after a SIGTERM cancelled the run.
    """
    _check_dag(dag, "run_sync")
    running = _running_loop()
    if running is not None:
        raise RuntimeError(
            f"run_sync() cannot start an event loop inside the running {running} loop: "
            "use `await orchestra.run(...)` there"
        )
    done: list[RunResult] = []

    async def main() -> None:
        # Not main's return value: asyncio's runner formats that as it closes (its SIGINT
        # handler's repr), and a result's repr counts its states, O(tasks).
        done.append(
            await run(
                dag,
                hooks=hooks,
                max_concurrency=max_concurrency,
                fail_fast=fail_fast,
                retry_budget=retry_budget,
                executor=executor,
                dispatcher=dispatcher,
                max_attempts=max_attempts,
                hook_timeout=hook_timeout,
                journal=journal,
                resume=resume,
                serializer=serializer,
                journal_key=journal_key,
                resume_wait=resume_wait,
            )
        )

    run_terminable(main, backend=backend)
    _tell_failures(done[0])
    return done[0]


def _tell_failures(result: RunResult) -> None:
    try:
        result.raise_for_failures()
    except TaskFailed as failure:  # its message names every task, as raise_for_failures'
        logger.warning(
            "%s (result.ok is False: see result.errors, or call result.raise_for_failures())",
            failure,
        )


def _check_dag(dag: object, function: str) -> None:
    if not isinstance(dag, DAG):
        hint = f" (task {dag.id!r}: pass the DAG it belongs to)" if isinstance(dag, Task) else ""
        raise TypeError(f"{function}() takes a DAG, got {type(dag).__name__}{hint}")


def _journal(
    journal: JournalArg | None,
    resume: str | None,
    serializer: Serializer | None,
    journal_key: bytes | str | None,
    resume_wait: float | None,
) -> RunJournal | None:
    """``RunJournal.create``; its modules (sqlite3, tenacity) load only for a journaled run."""
    if journal is None and all(o is None for o in (resume, serializer, journal_key, resume_wait)):
        return None
    from orchestra.dag._journal import RunJournal

    return RunJournal.create(journal, resume, serializer, journal_key, resume_wait)


def _running_loop() -> str | None:
    """The event loop running in this thread ("asyncio", "trio"), or None."""
    asyncio = sys.modules.get("asyncio")  # not imported = not running (a light import)
    if asyncio is not None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            return "asyncio"
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return None
        return "trio"
    return None
