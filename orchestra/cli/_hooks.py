"""``orchestra hooks ...``: validate, list and test YAML hook configs.

- ``orchestra hooks validate PATH...``: every problem as ``file:line: field: message``;
  exit status 1 if there is any.
- ``orchestra hooks list PATH...``: the merged hooks, in the order they run.
- ``orchestra hooks test EVENT --payload JSON|@file PATH...``: fires the event for real
  and shows what each hook answered, its latency, its exit code and stderr, and the
  final outcome; ``--repeat N`` fires it N times and shows each hook's latency once
  warm (a persistent hook's process starts at the first event). The files must be
  trusted (``--trust-all`` to skip the check).
- ``orchestra hooks trust|untrust PATH...``: record or forget the files' content in the
  user's trust store; ``orchestra hooks trusted`` lists it.
- ``orchestra hooks events``: the events catalog.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

import anyio
import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from orchestra._errors import ConfigError, did_you_mean
from orchestra.skills import EVENTS, HookOutcome, HookRecord, HookRegistry, HookSpec, load
from orchestra.skills._claude import to_orchestra_yaml
from orchestra.skills._load import read_sources
from orchestra.skills._trust import Trusted, TrustStore, digest, summary
from orchestra.skills._yaml import Problems

__all__ = ["hooks"]

_STDERR_SHOWN: Final = 2000
_PATHS = click.argument(
    "paths", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=True)
)


def _console() -> Console:
    # Off a terminal, do not wrap: file:line must stay on one line for grep and tests.
    return Console(width=None if sys.stdout.isatty() else 10_000, highlight=False)


def _load(
    paths: Sequence[Path], project_dir: Path | None = None, *, require_trust: bool = False
) -> HookRegistry:
    # ``type: python`` hooks import "module:function": from the current folder too, as
    # ``python -m`` would.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return load(*paths, project_dir=project_dir, require_trust=require_trust)
    except ConfigError as error:
        _fail(error)


def _fail(error: ConfigError) -> NoReturn:
    for problem in error.errors:
        click.echo(str(problem))
    count = len(error.errors)
    click.echo(f"{count} problem{'s' if count != 1 else ''} found", err=True)
    raise SystemExit(1)


def _spec_json(hook: HookSpec) -> dict[str, Any]:
    return {
        "event": hook.event,
        "matcher": hook.matcher,
        "type": hook.type,
        "what": hook.describe(),
        "timeout": hook.timeout,
        "on_error": hook.on_error,
        "source": hook.source,
    }


@click.group("hooks")
def hooks() -> None:
    """Validate, list, test and import hooks (orchestra.yaml, SKILL.md, skills, Claude Code)."""


@hooks.command("validate")
@_PATHS
def validate(paths: tuple[Path, ...]) -> None:
    """Check hook configs; print every problem as file:line and exit 1 if any.

    What was ignored on purpose (a Claude Code settings file's other keys, events and
    hook types this version does not run) is listed as notes.
    """
    registry = _load(paths)
    for note in registry.notes:
        click.echo(f"note: {note}")
    for hook in registry.hooks:
        for warning in hook.warnings():
            click.echo(f"warning: {hook.source}: {warning}")
    count = len(registry.hooks)
    click.echo(f"ok: {count} hook{'s' if count != 1 else ''} in {len(paths)} path(s)")


@hooks.command("import")
@_PATHS
def import_hooks(paths: tuple[Path, ...]) -> None:
    """Print the orchestra.yaml equivalent of Claude Code files (settings.json, hooks.json).

    For moving hooks over: redirect the output to orchestra.yaml and review it; the
    notes of what was left out go to stderr.
    """
    registry = _load(paths)
    notes = list(registry.notes)
    text = to_orchestra_yaml(list(registry.hooks), notes)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    click.echo(text, nl=False)


@hooks.command("list")
@_PATHS
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_hooks(paths: tuple[Path, ...], as_json: bool) -> None:
    """Show the merged hooks in the order they run: event, matcher, type, source."""
    registry = _load(paths)
    if as_json:
        click.echo(json.dumps([_spec_json(hook) for hook in registry.hooks], indent=2))
        return
    console = _console()
    count = len(registry.hooks)
    console.print(f"{count} hook{'s' if count != 1 else ''}, in the order they run")
    table = Table()
    for column in ("event", "matcher", "type", "what", "on_error", "timeout", "source"):
        table.add_column(column, overflow="fold" if column == "what" else "ellipsis")
    for hook in registry.hooks:
        table.add_row(
            hook.event,
            escape(hook.matcher or "*"),
            hook.type,
            escape(hook.describe()),
            hook.on_error,
            f"{hook.timeout:g} s",
            escape(hook.source),
        )
    console.print(table)


@hooks.command("events")
def events() -> None:
    """Show the events catalog: matcher field, can block, can modify, default on_error."""
    table = Table()
    for column in ("event", "matcher field", "can block", "can modify", "on_error", "fires"):
        table.add_column(column)
    for spec in EVENTS.values():
        table.add_row(
            spec.name,
            spec.matcher_field or "-",
            "yes" if spec.can_block else "no",
            "yes" if spec.can_modify else "no",
            spec.default_on_error,
            spec.description,
        )
    _console().print(table)


def _payload(value: str) -> dict[str, Any]:
    text = value
    if value.startswith("@"):
        name = value[1:]
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise click.BadParameter(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise click.BadParameter("the payload must be a JSON object")
    return data


def _event(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if value not in EVENTS:
        raise click.BadParameter(f"unknown event {value!r}{did_you_mean(value, EVENTS)}")
    return value


def _result_text(record: HookRecord) -> str:
    if record.error is not None:
        return f"[red]error: {escape(record.error)}[/red]"
    result = record.result
    assert result is not None
    parts: list[str] = []
    if result.decision:
        parts.append(f"decision: {result.decision}")
    if result.reason:
        parts.append(f"reason: {escape(result.reason)}")
    if result.modified_input is not None:
        parts.append(f"modified_input: {escape(json.dumps(result.modified_input, default=str))}")
    parts.extend(f"message: {escape(message)}" for message in result.messages)
    if result.stop:
        parts.append("stop" + (f": {escape(result.stop_reason)}" if result.stop_reason else ""))
    return "\n".join(parts) or "[dim]no opinion[/dim]"


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _warm(durations: Sequence[float]) -> float | None:
    """The median latency after the first call (None with fewer than two calls)."""
    return statistics.median(durations[1:]) if len(durations) > 1 else None


def _time_text(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1000:.1f} ms"


def _latency_text(durations: Sequence[float]) -> str:
    first = _time_text(durations[0])
    warm = _warm(durations)
    if warm is None:
        return first
    return f"{first}, then {_time_text(warm)} (median of {len(durations) - 1})"


def _record_json(record: HookRecord, durations: Sequence[float]) -> dict[str, Any]:
    result = record.result
    warm = _warm(durations)
    return {
        **_spec_json(record.hook),
        "duration_ms": _ms(record.duration),
        "warm_ms": None if warm is None else _ms(warm),
        "runs": len(durations),
        "exit_code": record.exit_code,
        "stderr": record.stderr,
        "error": record.error,
        "note": record.note,
        "result": None
        if result is None
        else {
            "decision": result.decision,
            "reason": result.reason,
            "modified_input": result.modified_input,
            "messages": list(result.messages),
            "stop": result.stop,
            "stop_reason": result.stop_reason,
        },
    }


def _outcome_json(outcome: HookOutcome) -> dict[str, Any]:
    return {
        "decision": outcome.decision,
        "blocked": outcome.blocked,
        "reason": outcome.reason,
        "decided_by": outcome.decided_by,
        "modified_input": outcome.modified_input,
        "messages": list(outcome.messages),
        "stop": outcome.stop,
        "stop_reason": outcome.stop_reason,
        "system_message": outcome.system_message,
        "output": outcome.output,
        "retry": outcome.retry,
    }


@hooks.command("test")
@click.argument("event", callback=_event)
@_PATHS
@click.option(
    "--payload",
    default="{}",
    show_default=True,
    help="The event's fields as a JSON object, or @FILE to read them (@- for stdin).",
)
@click.option(
    "--project-dir",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The hooks' working directory (default: the current one).",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Fire the event N times and show each hook's latency once warm (median of the "
    "runs after the first); results shown are the first run's.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option(
    "--trust-all", is_flag=True, help="Run the hooks even if their files are not trusted."
)
def test(
    event: str,
    paths: tuple[Path, ...],
    payload: str,
    project_dir: Path | None,
    repeat: int,
    as_json: bool,
    trust_all: bool,
) -> None:
    """Fire EVENT with a payload and show each hook's result and the final outcome.

    The hooks really run (commands, http calls, MCP tools, Python functions), so their
    files must be trusted (orchestra hooks trust PATH) unless --trust-all. Example:

        orchestra hooks test PreToolUse --payload '{"tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"}}' orchestra.yaml

    Exits 0, or 2 when the outcome is blocked (for scripts: `if ! orchestra hooks
    test ...`), or 1 when the config does not load.
    """
    data = _payload(payload)
    registry = _load(paths, project_dir, require_trust=not trust_all)
    matching = registry.hooks_for(event, data)
    outcomes = anyio.run(_fire, registry, event, data, repeat)
    outcome = outcomes[0]
    latency: dict[int, list[float]] = {}
    for fired in outcomes:
        for record in fired.records:
            latency.setdefault(id(record.hook), []).append(record.duration)
    if as_json:
        report = {
            "event": event,
            "hooks": [_record_json(r, latency[id(r.hook)]) for r in outcome.records],
            "not_run": [_spec_json(h) for h in matching[len(outcome.records) :]],
            "outcome": _outcome_json(outcome),
        }
        click.echo(json.dumps(report, indent=2, default=str))
        raise SystemExit(2 if outcome.blocked else 0)
    console = _console()
    total = sum(1 for hook in registry.hooks if hook.event == event)
    console.print(
        f"[bold]{event}[/bold]: {len(matching)} of {total} hook{'s' if total != 1 else ''} "
        "match the payload"
    )
    if matching:
        table = Table()
        for column in ("#", "source", "type", "result", "latency", "exit", "stderr", "note"):
            table.add_column(column, overflow="fold")
        for i, record in enumerate(outcome.records, 1):
            stderr = record.stderr[-_STDERR_SHOWN:].rstrip()
            table.add_row(
                str(i),
                escape(record.hook.source),
                record.hook.type,
                _result_text(record),
                _latency_text(latency[id(record.hook)]),
                "-" if record.exit_code is None else str(record.exit_code),
                escape(stderr),
                escape(record.note or ""),
            )
        for i, hook in enumerate(matching[len(outcome.records) :], len(outcome.records) + 1):
            table.add_row(str(i), escape(hook.source), hook.type, "[dim]not run: chain ended[/dim]")
        console.print(table)
    _print_outcome(console, outcome)
    if outcome.blocked:
        raise SystemExit(2)


async def _fire(
    registry: HookRegistry, event: str, data: dict[str, Any], repeat: int
) -> list[HookOutcome]:
    async with registry:  # stops persistent hooks' processes when done
        return [await registry.fire(event, data) for _ in range(repeat)]


def _print_outcome(console: Console, outcome: HookOutcome) -> None:
    if outcome.blocked:
        verdict = "[bold red]blocked (deny)[/bold red]"
    elif outcome.decision is not None:
        verdict = f"[bold]{outcome.decision}[/bold]"
    else:
        verdict = "no opinion"
    lines: list[str] = [f"outcome: {verdict}"]
    fields: Mapping[str, Any] = {
        "reason": outcome.reason,
        "decided by": outcome.decided_by,
        "modified_input": None
        if outcome.modified_input is None
        else json.dumps(outcome.modified_input, default=str),
        "stop": outcome.stop_reason or "requested" if outcome.stop else None,
    }
    lines.extend(f"  {name}: {escape(str(value))}" for name, value in fields.items() if value)
    lines.extend(f"  message: {escape(message)}" for message in outcome.messages)
    if outcome.system_message:
        lines.append(f"  system message: {escape(outcome.system_message)}")
    if outcome.output is not None:
        lines.append(f"  output: {escape(json.dumps(outcome.output, default=str))}")
    if outcome.retry:
        lines.append("  retry: the agent may try again")
    console.print("\n".join(lines))


@hooks.command("trust")
@_PATHS
def trust(paths: tuple[Path, ...]) -> None:
    """Trust hook files as they are now (a folder: its orchestra.yaml and every SKILL.md).

    Read them first: a trusted hook runs commands as you. A file that changes later
    needs trusting again.
    """
    problems = Problems()
    loaded = read_sources(paths, problems)
    try:
        problems.raise_if_any()
    except ConfigError as error:
        _fail(error)
    TrustStore().trust(
        Trusted(str(item.source.path.resolve()), item.sha256, summary(item.hooks))
        for item in loaded
    )
    for item in loaded:
        count = len(item.hooks)
        click.echo(
            f"trusted {item.source.path} ({count} hook{'s' if count != 1 else ''}, "
            f"sha256 {item.sha256[:12]})"
        )


@hooks.command("untrust")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
def untrust(paths: tuple[Path, ...]) -> None:
    """Forget hook files from the trust store (a folder: every file trusted below it)."""
    store = TrustStore()
    known = store.read()
    wanted: list[str] = []
    for path in paths:
        resolved = path.resolve()
        wanted += [p for p in known if p == str(resolved) or Path(p).is_relative_to(resolved)]
    removed = store.untrust(wanted)
    for name in removed:
        click.echo(f"untrusted {name}")
    if not removed:
        click.echo("nothing to untrust: none of these is trusted")


@hooks.command("trusted")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def trusted(as_json: bool) -> None:
    """List the trusted hook files and whether each is still as it was trusted."""
    store = TrustStore()
    rows = []
    for path, entry in sorted(store.read().items()):
        try:
            state = "ok" if digest(Path(path).read_bytes()) == entry.sha256 else "changed"
        except OSError:
            state = "missing"
        rows.append((path, entry, state))
    if as_json:
        listed = [
            {"path": p, "state": s, "hooks": list(e.hooks), "trusted_at": e.trusted_at}
            for p, e, s in rows
        ]
        click.echo(json.dumps(listed, indent=2))
        return
    console = _console()
    console.print(f"{len(rows)} trusted file{'s' if len(rows) != 1 else ''} in {store.path}")
    if rows:
        table = Table()
        for column in ("file", "state", "hooks", "trusted at"):
            table.add_column(column)
        for path, entry, state in rows:
            table.add_row(escape(path), state, str(len(entry.hooks)), entry.trusted_at)
        console.print(table)
