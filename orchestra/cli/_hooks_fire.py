"""``orchestra hooks test``: fire an event for real and show what each hook answered."""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from orchestra._errors import did_you_mean
from orchestra.cli._hooks_common import PATHS, load_registry, spec_json, table_console
from orchestra.skills import EVENTS, HookOutcome, HookRecord, HookRegistry

__all__ = ["test"]

_STDERR_SHOWN: Final = 2000


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
        **spec_json(record.hook),
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


@click.command("test")
@click.argument("event", callback=_event)
@PATHS
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

    Exits 0, or 1 when the outcome is blocked (for scripts: `if ! orchestra hooks
    test ...`), or 2 when the config or the payload cannot be used.
    """
    data = _payload(payload)
    registry = load_registry(paths, project_dir, require_trust=not trust_all)
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
            "not_run": [spec_json(h) for h in matching[len(outcome.records) :]],
            "outcome": _outcome_json(outcome),
        }
        click.echo(json.dumps(report, indent=2, default=str))
        raise SystemExit(1 if outcome.blocked else 0)
    console = table_console()
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
        raise SystemExit(1)


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
