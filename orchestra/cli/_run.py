"""``orchestra run FILE.py[:NAME]``: run a DAG defined in a file, with live progress.

What the file may define, and how ``NAME`` picks a DAG or a factory: see ``_load``.
The command builds a ``Dispatcher`` from the file's ``agents`` (with its ``agent_hooks``
and the YAML subagent hooks) unless the file has a ready ``dispatcher`` (to which YAML
subagent hooks cannot be added); ``--hooks`` guards the file's ``tools`` in place.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, MutableMapping
from contextlib import AsyncExitStack
from contextvars import ContextVar
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, final

import anyio
import click
from opentelemetry import context as otel_context
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from orchestra import (
    DAG,
    Dispatcher,
    HookChain,
    LocalExecutor,
    RunResult,
    TaskState,
)
from orchestra import run as run_dag
from orchestra.cli._load import RunTarget, build_spec, find_target, load_module
from orchestra.cli._runs import journal_arg
from orchestra.cli._stopping import Stop, StopHooks, resume_command, run_stoppable
from orchestra.cli._summary import print_summary
from orchestra.journal import Journal
from orchestra.tracing import configure, extract_env

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from orchestra.dag import Task

__all__ = ["run"]


@final
class _Progress:
    """Live counts of a run, drawn with rich (internal)."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress = progress
        self.bar = progress.add_task("starting", total=total)
        self.seen: set[str] = set()
        self.running: set[str] = set()
        self.failing: set[str] = set()
        self.cancelled: set[str] = set()
        self.done = 0
        self.retried = 0

    def start(self, task_id: str) -> None:
        if task_id in self.seen:
            self.retried += 1
        self.seen.add(task_id)
        self.failing.discard(task_id)
        self.running.add(task_id)
        self.draw()

    def end(self, task_id: str, ok: bool) -> None:
        self.running.discard(task_id)
        if ok:
            self.done += 1
        else:
            self.failing.add(task_id)
        self.draw()

    def cancel(self, task_id: str) -> None:
        self.running.discard(task_id)
        self.cancelled.add(task_id)
        self.draw()

    def settle(self, result: RunResult) -> None:
        """The final counts, from the result: tasks that never started included."""
        self.running.clear()
        self.done = sum(state is TaskState.SUCCEEDED for state in result.states.values())
        self.failing = {t for t, s in result.states.items() if s is TaskState.FAILED}
        self.cancelled = {t for t, s in result.states.items() if s is TaskState.CANCELLED}
        self.draw()

    def draw(self) -> None:
        text = (
            f"done {self.done}  running {len(self.running)}  "
            f"failed {len(self.failing)}  retried {self.retried}"
        )
        if self.cancelled:
            text += f"  cancelled {len(self.cancelled)}"
        self.progress.update(self.bar, description=text, completed=self.done)


@final
class _ProgressExecutor:
    """Wraps the executor to see attempts start and end, without any hook (internal)."""

    def __init__(self, inner: LocalExecutor, progress: _Progress, stop: Stop) -> None:
        self.inner = inner
        self.progress = progress
        self.stop = stop

    async def execute(self, task: Task, kwargs: dict[str, Any]) -> Any:
        self.progress.start(task.id)
        threaded = not task.is_async and not task.inline
        if threaded:
            self.stop.threaded.add(task.id)
        try:
            result = await self.inner.execute(task, kwargs)
        except anyio.get_cancelled_exc_class():
            self.progress.cancel(task.id)  # a body in a thread goes on: it stays threaded
            raise
        except BaseException:
            self.stop.threaded.discard(task.id)
            self.progress.end(task.id, ok=False)
            raise
        self.stop.threaded.discard(task.id)
        if task.agent is None:
            self.progress.end(task.id, ok=True)
        else:
            _AGENT_TASK.set(task.id)  # the dispatch that follows, in this same context
        return result


@final
class _ProgressDispatcher:
    """Wraps the dispatcher so an agent task counts as running until its agent answers."""

    def __init__(self, inner: Dispatcher, progress: _Progress) -> None:
        self.inner = inner
        self.progress = progress

    async def dispatch(self, name: str, task: str, /, *, parent: str | None = None) -> Any:
        task_id = _AGENT_TASK.get()
        try:
            result = await self.inner.dispatch(name, task, parent=parent)
        except BaseException:
            if task_id is not None:
                self.progress.end(task_id, ok=False)
            raise
        if task_id is not None:
            self.progress.end(task_id, ok=True)
        return result


_AGENT_TASK: Final[ContextVar[str | None]] = ContextVar("orchestra_cli_agent_task", default=None)


def _guard_tools(tools: object, registry: Any) -> None:
    if not isinstance(tools, MutableMapping):
        raise click.BadParameter("'tools' must be a dict of tool functions by name")
    for name, fn in list(tools.items()):
        tools[name] = registry.guard(str(name))(fn)


async def _run(
    target: RunTarget,
    module: ModuleType,
    registry: Any,
    max_concurrency: int,
    fail_fast: bool,
    console: Console,
    journaling: dict[str, Any],
    stop: Stop,
) -> tuple[DAG, RunResult]:
    agent_hooks: list[object] = list(getattr(module, "agent_hooks", ()) or ())
    if registry is not None:
        agent_hooks.append(registry.as_subagent_hooks())
    dispatcher: Dispatcher | None = getattr(module, "dispatcher", None)
    agents: Iterable[Any] | None = getattr(module, "agents", None)
    async with AsyncExitStack() as stack:
        if registry is not None:  # stops its persistent hooks' processes at the end
            await stack.enter_async_context(registry)
        if dispatcher is None and agents is not None:
            dispatcher = await stack.enter_async_context(Dispatcher(agents, hooks=agent_hooks))
        elif dispatcher is not None and registry is not None:
            console.print(
                "[yellow]note:[/] the file's 'dispatcher' is used as is: define 'agents' "
                "instead to have --hooks attach SubagentStart/SubagentStop hooks"
            )
        spec = build_spec(target, module, dispatcher)
        dag = spec.dag
        dag.validate(fail_fast=fail_fast)  # a DAGError before the progress bar (plan cached)
        stop.dag = dag
        hooks: list[object] = list(spec.hooks)
        if registry is not None:
            hooks.append(registry.as_task_hooks())
            if spec.tools is not None:
                _guard_tools(spec.tools, registry)
        HookChain(hooks)  # a misspelt moment's TypeError before the progress bar
        hooks.append(StopHooks(stop))
        progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        with progress:
            counts = _Progress(progress, len(dag))
            executor = _ProgressExecutor(
                LocalExecutor(anyio.CapacityLimiter(max_concurrency)), counts, stop
            )
            try:
                result = await run_dag(
                    dag,
                    hooks=hooks,
                    max_concurrency=max_concurrency,
                    fail_fast=fail_fast,
                    executor=executor,
                    dispatcher=(
                        _ProgressDispatcher(dispatcher, counts) if dispatcher is not None else None
                    ),
                    **journaling,
                )
            finally:
                if stop.result is not None:
                    counts.settle(stop.result)
            progress.update(counts.bar, completed=len(dag))
    return dag, result


@click.command("run")
@click.argument("target", metavar="FILE.py[:NAME]")
@click.option(
    "--trace",
    "trace_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the run's spans to this file (OTLP JSON, one export request per line).",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the run as a self-contained HTML page (see orchestra trace report).",
)
@click.option("--all", "show_all", is_flag=True, help="List every task in the summary.")
@click.option("--otlp", metavar="URL", help="Send spans to an OTLP/HTTP endpoint.")
@click.option(
    "--hooks",
    "hook_paths",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="YAML hooks (orchestra.yaml, SKILL.md or a skills folder); repeatable. Their "
    "files must be trusted: orchestra hooks trust PATH.",
)
@click.option("--trust-all", is_flag=True, help="Run --hooks files even if they are not trusted.")
@click.option(
    "--record-events",
    "record_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append each event the --hooks fire, with its outcome and payload, to this file "
    "(JSON lines) for orchestra hooks replay.",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="How many tasks may run at once.",
)
@click.option("--fail-fast", is_flag=True, help="Cancel the rest on the first failure.")
@click.option(
    "--capture-content", is_flag=True, help="Put payload content (inputs, outputs) on spans."
)
@click.option(
    "--journal",
    metavar="PATH|URL",
    help="Journal the run (a file, or a postgresql:// URL) so that it can be resumed.",
)
@click.option("--resume", metavar="last|RUN_ID", help="Continue a run of --journal.")
def run(
    target: str,
    trace_path: Path | None,
    report_path: Path | None,
    show_all: bool,
    otlp: str | None,
    hook_paths: tuple[Path, ...],
    trust_all: bool,
    record_path: Path | None,
    max_concurrency: int,
    fail_fast: bool,
    capture_content: bool,
    journal: str | None,
    resume: str | None,
) -> None:
    """Run the DAG defined in FILE.py (NAME picks one if the file has several).

    Shows live progress, then the tasks that did not succeed and why; exits with
    status 1 if the run failed. Ctrl-C or SIGTERM stops the run (it says which tasks it
    waits for; a journaled run prints its resume command), a second one exits at once:
    status 130 after Ctrl-C, 143 after SIGTERM.
    """
    file, _, name = target.partition(":")
    path = Path(file)
    if not path.is_file():
        raise click.BadParameter(f"{file}: no such file", param_hint="FILE")
    console = Console(highlight=False)
    provider = _tracing(trace_path, otlp, report_path, capture_content)
    kept = _keep_spans(provider) if report_path is not None and provider is not None else None
    registry = _registry(hook_paths, trust_all, record_path)
    module = load_module(path)
    what = find_target(module, name or None, file)
    if resume and not journal:
        raise click.BadParameter("--resume needs --journal", param_hint="--resume")
    journaling = {"journal": journal_arg(journal), "resume": resume} if journal else {}
    stop = Stop(resume_command if journal else None)
    token = otel_context.attach(extract_env())  # a TRACEPARENT parents the run span
    try:  # a DAGError or JournalError is one line (see _errors)
        # Ctrl-C or SIGTERM cancels the run; a second one exits at once (see _stopping)
        args = (what, module, registry, max_concurrency, fail_fast, console, journaling, stop)
        ran = run_stoppable(stop, _run, *args)
    finally:
        if isinstance(opened := journaling.get("journal"), Journal):
            opened.close()
        otel_context.detach(token)
        if provider is not None:
            provider.shutdown()  # flush the spans still queued
    dag, result = ran if ran is not None else (stop.dag, stop.result)
    if result is not None and dag is not None:
        if report_path is not None and kept is not None:
            _write_report(kept, report_path, result.run_id, console)
        print_summary(
            console, result, dag, show_all=show_all, trace=trace_path, report=report_path,
            journal=journal,
        )  # fmt: skip
    if stop.signum is not None:
        stop.exit()  # says so, the resume command, waits for abandoned bodies' threads
    if result is not None and not result.ok:
        sys.exit(1)


def _registry(hook_paths: tuple[Path, ...], trust_all: bool, record_path: Path | None) -> Any:
    """The registry of ``--hooks``, or None; a ConfigError is one line (see _errors)."""
    if record_path is not None and not hook_paths:
        raise click.BadParameter("--record-events needs --hooks", param_hint="--record-events")
    if not hook_paths:
        return None
    from orchestra.skills import load

    return load(*hook_paths, require_trust=not trust_all, record=record_path)


def _tracing(
    trace_path: Path | None, otlp: str | None, report_path: Path | None, capture_content: bool
) -> TracerProvider | None:
    """The provider that ``--trace``, ``--otlp`` and ``--report`` need, or None."""
    if trace_path is None and not otlp and report_path is None:
        return None
    try:
        return configure(jsonl=trace_path, otlp=otlp, capture_content=capture_content or None)
    except ImportError as exc:
        raise click.ClickException(
            "--otlp needs the OTLP exporter: pip install 'orchestra-hooks[otlp]'"
        ) from exc


def _keep_spans(provider: TracerProvider) -> InMemorySpanExporter:
    """An in-memory copy of the run's spans, for ``--report``."""
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    kept = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    return kept


def _write_report(kept: InMemorySpanExporter, out: Path, run_id: str, console: Console) -> None:
    from orchestra.cli._report import write_report_of_spans

    warning = write_report_of_spans(kept.get_finished_spans(), out, run_id=run_id)
    if warning:
        console.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
