"""A run's budget use as ``orchestra trace show`` and ``orchestra trace report`` read it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestra.tracing.names import ATTR_BUDGET_PREFIX, ATTR_RUN_ID

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["check_budget_trace"]


def check_budget_trace(
    spans: Sequence[ReadableSpan], folder: Path, *, shown: str
) -> dict[str, Any]:
    """Check that a traced run's budget use reads as ``shown`` in the trace tools.

    The spans (one run's, as an in-memory exporter kept them) go to ``folder/run.jsonl``;
    ``orchestra trace show`` must print ``shown`` (``"budget: model calls 3/10, tool
    calls 2/5"``) and ``orchestra trace report`` must put it in the page's run data.

    Returns:
        The ``orchestra.budget.*`` attributes of the run's span (the span with
        ``orchestra.run.id`` that is no part of another run), for the test to compare.

    Raises:
        AssertionError: no run span, or a command that failed or did not say ``shown``,
            with what it printed.
    """
    from click.testing import CliRunner  # the CLI and the SDK load only when a test checks

    from orchestra.cli import main
    from orchestra.tracing import JsonlSpanExporter

    parents = {s.context.span_id: s.parent.span_id if s.parent else None for s in spans}
    ids = {s.context.span_id for s in spans if ATTR_RUN_ID in (s.attributes or {})}
    runs = [s for s in spans if s.context.span_id in ids and not _inside(s, ids, parents)]
    if len(runs) != 1:
        raise AssertionError(f"expected one run span, got {[s.name for s in runs]}")
    path = folder / "run.jsonl"
    JsonlSpanExporter(path).export(spans)
    cli = CliRunner()
    show = cli.invoke(main, ["trace", "show", str(path), "--width", "250"])
    if show.exit_code != 0 or shown not in show.output:
        raise AssertionError(f"orchestra trace show did not say {shown!r}:\n{show.output}")
    page = folder / "run.html"
    report = cli.invoke(main, ["trace", "report", str(path), "-o", str(page)])
    if report.exit_code != 0 or f'"budget":"{shown}"' not in page.read_text(encoding="utf-8"):
        raise AssertionError(f"orchestra trace report did not say {shown!r}:\n{report.output}")
    attributes = runs[0].attributes or {}
    return {k: v for k, v in attributes.items() if k.startswith(ATTR_BUDGET_PREFIX)}


def _inside(span: ReadableSpan, runs: set[int], parents: dict[int, int | None]) -> bool:
    """Whether a span above ``span`` is a run span."""
    above = parents.get(span.context.span_id)
    while above is not None:
        if above in runs:
            return True
        above = parents.get(above)
    return False
