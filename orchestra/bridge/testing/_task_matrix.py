"""The task half of the one-policy conformance matrix: the same cells over every engine.

An engine's tests implement ``TaskEngine`` (run one unit of work named ``"work"``, whose
body is given, under given hooks and tags) and run every cell of ``TASK_CELLS`` with
``check_task_cell``; an engine that cannot do a cell lists it in ``cannot`` with the
reason, and ``check_task_cell`` returns that reason instead of checking (the test then
skips with it). An engine is done when its column passes. ``task_matrix_row`` renders
its row of docs/howto/one-policy.md, so a test checks the page against the engine.

| cell                  | the hooks...                           | the work ends...       |
|-----------------------|----------------------------------------|------------------------|
| ``retry``             | ``on_failure`` -> ``Retry`` once       | SUCCEEDED, body twice  |
| ``skip_by_tags``      | ``Skip`` when ``metadata["tags"]`` has | SKIPPED, body unrun    |
| ``fail``              | ``before_execute`` -> ``Fail``         | FAILED, ``TaskFailed`` |
| ``replace``           | ``after_execute`` -> ``Replace``       | SUCCEEDED, replaced    |
| ``give_output``       | ``Replace(GiveOutput(v))``             | SUCCEEDED ``v``, unrun |
| ``on_end_once``       | ``on_failure`` -> ``Skip``             | ``on_end`` once        |
| ``raising_hook``      | raises (fail-open by default)          | SUCCEEDED              |
| ``raising_hook_closed``| raises, ``fail_closed = True``        | FAILED, body unrun     |
| ``hanging_hook``      | past its ``timeout`` (fail-open)       | SUCCEEDED              |
| ``hanging_hook_closed``| past its ``timeout``, ``fail_closed`` | FAILED, body unrun     |
| ``one_trace``         | any                                    | its spans in one trace |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol, final

import anyio
import attrs

from orchestra._decisions import Fail, GiveOutput, Replace, Retry, Skip
from orchestra._errors import TaskFailed
from orchestra._hooks import TaskHooks
from orchestra.bridge.testing._tables import header, row
from orchestra.dag import TaskState

__all__ = [
    "TASK_CELLS",
    "EndRecorder",
    "TaskEngine",
    "TaskRun",
    "check_task_cell",
    "task_matrix_header",
    "task_matrix_row",
]

_TAG: Final = "optional"
_HANG: Final = 0.2  # a hanging hook's timeout (seconds); it would sleep 30


@final
@attrs.frozen
class TaskRun:
    """How the work ended in an engine, as the engine's adapter reads it.

    Attributes:
        state: its terminal state.
        output: its output (what flows downstream), or None.
        error: the error it failed with (raised by the engine, or on its result), or None.
    """

    state: TaskState
    output: Any = None
    error: BaseException | None = None


class TaskEngine(Protocol):
    """What an engine's tests implement to run the matrix.

    Attributes:
        name: the engine, for messages.
        cannot: cell -> why this engine cannot do it (documented, shown as the skip).
    """

    name: str
    cannot: Mapping[str, str]

    def run(self, hooks: Sequence[object], body: Callable[[], Any], tags: Sequence[str]) -> TaskRun:
        """Run one unit of work ``"work"`` whose body calls ``body()`` and returns its value.

        ``tags`` are the engine's own tags of the work (Prefect tags, Hamilton ``@tag``,
        LangGraph node metadata, a task's ``metadata``): hooks read them as
        ``ctx.task.metadata["tags"]``. A hook given here runs at the work's moments.
        """
        ...


class EndRecorder(TaskHooks):
    """A hook that keeps every state ``on_end`` is called with, for an engine's adapter.

    An engine that raises nothing for work its hooks gave up (an agent's tool call: the
    model reads why) reads the work's state here: add one to the hooks it is given.

    Attributes:
        ends: each state, in order.
    """

    def __init__(self) -> None:
        self.ends: list[TaskState] = []

    @property
    def state(self) -> TaskState:
        """The state of the last ``on_end``.

        Raises:
            AssertionError: ``on_end`` was never called.
        """
        if not self.ends:
            raise AssertionError("on_end was not called")
        return self.ends[-1]

    def on_end(self, ctx: Any, state: TaskState) -> None:
        """Keep ``state``."""
        self.ends.append(state)


_Ends = EndRecorder


class _Body:
    """The work's body: fails its first ``failures`` calls, then returns ``{"out": "body"}``."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError("503 from upstream")
        return {"out": "body"}


class _Answers(_Ends):
    """Answers one moment with ``answer(ctx)``; records ``on_end``."""

    def __init__(self, moment: str, answer: Callable[[Any], Any]) -> None:
        super().__init__()
        self.moment = moment
        self.answer = answer

    def before_execute(self, ctx: Any) -> Any:
        return self.answer(ctx) if self.moment == "before_execute" else None

    def after_execute(self, ctx: Any, result: Any) -> Any:
        return self.answer(ctx) if self.moment == "after_execute" else None

    def on_failure(self, ctx: Any, error: BaseException) -> Any:
        return self.answer(ctx) if self.moment == "on_failure" else None


_answering = _Answers


class _Raises(_Ends):
    def before_execute(self, ctx: Any) -> None:
        raise RuntimeError("a hook's own bug")


class _RaisesClosed(_Raises):
    fail_closed = True


class _Hangs(_Ends):
    timeout = _HANG

    async def before_execute(self, ctx: Any) -> None:
        await anyio.sleep(30)


class _HangsClosed(_Hangs):
    fail_closed = True


def _expect(engine: TaskEngine, cell: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"{engine.name}, cell {cell!r}: {what}")


def _retry(engine: TaskEngine) -> None:
    body, hooks = _Body(failures=1), _answering("on_failure", lambda ctx: Retry())
    run = engine.run([hooks], body, ())
    _expect(engine, "retry", run.state is TaskState.SUCCEEDED, f"ended {run}")
    _expect(engine, "retry", body.calls == 2, f"body ran {body.calls} times, not 2")
    _expect(engine, "retry", run.output == {"out": "body"}, f"output {run.output!r}")


def _skip_by_tags(engine: TaskEngine) -> None:
    def skip_optional(ctx: Any) -> Any:
        tags = ctx.task.metadata.get("tags") or ()
        return Skip("optional work") if _TAG in tags else None

    body, hooks = _Body(), _answering("before_execute", skip_optional)
    run = engine.run([hooks], body, (_TAG,))
    _expect(engine, "skip_by_tags", run.state is TaskState.SKIPPED, f"ended {run}")
    _expect(engine, "skip_by_tags", body.calls == 0, "the body ran")
    plain = engine.run([_answering("before_execute", skip_optional)], _Body(), ())
    _expect(engine, "skip_by_tags", plain.state is TaskState.SUCCEEDED, f"untagged: {plain}")


def _fail(engine: TaskEngine) -> None:
    body, hooks = _Body(), _answering("before_execute", lambda ctx: Fail("not allowed"))
    run = engine.run([hooks], body, ())
    _expect(engine, "fail", run.state is TaskState.FAILED, f"ended {run}")
    _expect(engine, "fail", isinstance(run.error, TaskFailed), f"error {run.error!r}")
    _expect(engine, "fail", body.calls == 0, "the body ran")


def _replace(engine: TaskEngine) -> None:
    hooks = _answering("after_execute", lambda ctx: Replace({"out": "changed"}))
    run = engine.run([hooks], _Body(), ())
    _expect(engine, "replace", run.state is TaskState.SUCCEEDED, f"ended {run}")
    _expect(engine, "replace", run.output == {"out": "changed"}, f"output {run.output!r}")


def _give_output(engine: TaskEngine) -> None:
    body = _Body()
    hooks = _answering("before_execute", lambda ctx: Replace(GiveOutput({"out": "given"})))
    run = engine.run([hooks], body, ())
    _expect(engine, "give_output", run.state is TaskState.SUCCEEDED, f"ended {run}")
    _expect(engine, "give_output", run.output == {"out": "given"}, f"output {run.output!r}")
    _expect(engine, "give_output", body.calls == 0, "the body ran")


def _on_end_once(engine: TaskEngine) -> None:
    hooks = _answering("on_failure", lambda ctx: Skip("gave up"))
    run = engine.run([hooks], _Body(failures=5), ())
    _expect(engine, "on_end_once", run.state is TaskState.SKIPPED, f"ended {run}")
    _expect(engine, "on_end_once", hooks.ends == [TaskState.SKIPPED], f"on_end: {hooks.ends}")
    ok = _Ends()
    engine.run([ok], _Body(), ())
    _expect(engine, "on_end_once", ok.ends == [TaskState.SUCCEEDED], f"on_end: {ok.ends}")


def _hook_error(cell: str, hook: _Ends, closed: bool) -> Callable[[TaskEngine], None]:
    def check(engine: TaskEngine) -> None:
        body = _Body()
        run = engine.run([hook], body, ())
        if closed:
            _expect(engine, cell, run.state is TaskState.FAILED, f"ended {run}")
            _expect(engine, cell, body.calls == 0, "the body ran")
        else:
            _expect(engine, cell, run.state is TaskState.SUCCEEDED, f"ended {run}")
            _expect(engine, cell, body.calls == 1, f"body ran {body.calls} times")

    return check


def _one_trace(engine: TaskEngine) -> None:
    from orchestra.tracing.testing import recording  # the SDK: only when this cell runs

    with recording() as exporter:
        engine.run([_answering("on_failure", lambda ctx: Retry())], _Body(failures=1), ())
    spans = exporter.get_finished_spans()
    traces = {s.context.trace_id for s in spans if s.context is not None}
    _expect(engine, "one_trace", bool(spans), "no span recorded")
    _expect(engine, "one_trace", len(traces) == 1, f"{len(traces)} traces, not 1")


_CELLS: Final[dict[str, Callable[[TaskEngine], None]]] = {
    "retry": _retry,
    "skip_by_tags": _skip_by_tags,
    "fail": _fail,
    "replace": _replace,
    "give_output": _give_output,
    "on_end_once": _on_end_once,
    "raising_hook": lambda e: _hook_error("raising_hook", _Raises(), False)(e),
    "raising_hook_closed": lambda e: _hook_error("raising_hook_closed", _RaisesClosed(), True)(e),
    "hanging_hook": lambda e: _hook_error("hanging_hook", _Hangs(), False)(e),
    "hanging_hook_closed": lambda e: _hook_error("hanging_hook_closed", _HangsClosed(), True)(e),
    "one_trace": _one_trace,
}

TASK_CELLS: Final = tuple(_CELLS)
"""Every cell of the task matrix, by name (parametrize an engine's test over it)."""


def check_task_cell(engine: TaskEngine, cell: str) -> str | None:
    """Check one cell on ``engine``; None when it passed, the reason when it cannot.

    Raises:
        AssertionError: the engine did not do what the cell says (the message names both).
        KeyError: ``cell`` is not a cell of ``TASK_CELLS``, or ``cannot`` names one that is not.
    """
    _check_cannot(engine)
    if cell in engine.cannot:
        return engine.cannot[cell]
    _CELLS[cell](engine)
    return None


def _check_cannot(engine: TaskEngine) -> None:
    stray = set(engine.cannot) - set(_CELLS)
    if stray:
        raise KeyError(f"{engine.name}: cannot names unknown cells {sorted(stray)}")


def task_matrix_header() -> str:
    """The header of the task table in docs/howto/one-policy.md (two Markdown lines)."""
    return header(["engine", *_CELLS])


def task_matrix_row(engine: TaskEngine) -> str:
    """The engine's row of the task table in docs/howto/one-policy.md (Markdown).

    ``| name | pass | cannot: reason | ... |``, one column per cell of ``TASK_CELLS``.
    """
    _check_cannot(engine)
    return row([engine.name], engine.cannot, _CELLS)
