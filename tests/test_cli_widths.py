"""Tables that keep every column in 80 columns (a small terminal, or a pipe: rich's width).

``orchestra runs list`` switches to a stacked layout (what a run resumed under its id,
the date over the time, a long DAG name cut with an ellipsis); ``orchestra trace show``
to a narrow one (a shorter bar, no vertical rules, span names cut at 9/32 of the
width), so the facts column keeps room and no row wraps over many lines.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.traces import pipeline, trace_runs
from tests.test_cli_failures import cli

LONG_DAG = "nightly-warehouse-refresh-of-everything"
FLOW = f"""
import orchestra
dag = orchestra.DAG({LONG_DAG!r})

@dag.task
def load():
    raise ValueError("no")

@dag.task(deps=[load])
def later(load):
    return load

@dag.task
def fine():
    return 1
"""


def journaled(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "flow.py").write_text(FLOW)
    assert cli("run", "flow.py", "--journal", "runs.db", cwd=tmp_path).returncode == 1
    out = cli("run", "flow.py", "--journal", "runs.db", "--resume", "last", cwd=tmp_path)
    assert out.returncode == 1
    listed = cli("runs", "list", "runs.db", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    ids = [line.split()[1] for line in listed.splitlines() if line.startswith("│ ")]
    assert len(ids) == 2, listed
    assert all(len(i) == 32 for i in ids), listed
    return ids[0], ids[1]  # newest first: the resumed run, then the first


def fits(text: str, width: int = 80) -> list[str]:
    lines = text.splitlines()
    assert lines
    too_wide = [line for line in lines if len(line) > width]
    assert too_wide == [], "\n".join(too_wide)
    return lines


def test_runs_list_keeps_every_column_in_80(tmp_path: Path) -> None:
    resumed, first = journaled(tmp_path)
    for columns in ("80", ""):  # 80 columns, and a pipe with no COLUMNS (rich's default: 80)
        out = cli("runs", "list", "runs.db", cwd=tmp_path, env={"COLUMNS": columns})
        assert out.returncode == 0, out.stderr
        lines = fits(out.stdout)
        text = out.stdout
        for header in ("run id", "resumed from", "DAG", "started", "tasks", "states"):
            assert header in text
        assert resumed in text
        assert first in text
        row = next(i for i, line in enumerate(lines) if line.startswith(resumed))
        assert f"↳ {first[:20]}" in lines[row + 1]  # what it resumed, under it
        assert LONG_DAG[:8] in lines[row]
        assert "…" in lines[row]
        assert " 3 " in lines[row]  # the task count
        states = "\n".join(lines[row : row + 3])
        assert "1 failed" in states
        assert "1 upstream_failed" in states
        assert "1 succeeded" in states
    wide = cli("runs", "list", "runs.db", cwd=tmp_path, env={"COLUMNS": "200"}).stdout
    assert LONG_DAG in wide
    assert "│" in wide


def test_trace_show_keeps_every_column_in_80(tmp_path: Path) -> None:
    trace_runs(tmp_path / "run.jsonl", pipeline("a-pipeline-with-a-rather-long-name"))
    for options in ((), ("--hooks",), ("--failed",)):
        out = cli("trace", "show", "run.jsonl", *options, cwd=tmp_path, env={"COLUMNS": "80"})
        assert out.returncode == 0, out.stderr
        lines = fits(out.stdout)
        header = next(line for line in lines if line.startswith("span"))
        for column in ("span", "waterfall", "duration", "state, attempt, decisions"):
            assert column in header
        facts_at = header.index("state, attempt")
        assert facts_at <= 80 - 24  # the facts keep room
        rows = [line for line in lines if line[:1] in "r├└│·" and line[:4] != "run "]
        assert any("task boom" in row for row in rows)
        wrapped = 0
        longest = 0
        table = lines[lines.index(header) + 2 :]
        for line in table:
            if line.startswith(" " * facts_at):
                wrapped += 1
                longest = max(longest, wrapped)
            elif line.strip():
                wrapped = 0
            if line.startswith("boom failed:"):
                break
        assert longest <= 3, out.stdout  # a cell wraps over at most 4 lines
    deep = cli("trace", "show", "run.jsonl", "--hooks", cwd=tmp_path, env={"COLUMNS": "80"})
    said = " ".join(deep.stdout.split())  # the words, across wrapped lines
    assert "RuntimeError: the input is corrupt" in said
    assert "skip by Gate.before_execute: not needed today" in said
    assert "retry after 0.01 s by RetryPolicy.on_failure" in said


LONG_IDS = """
import orchestra
dag = orchestra.DAG("long")

def parse(text):
    return int(text)

dag.task(lambda: parse("x"), id="load_the_customer_orders_from_the_warehouse_bucket")
dag.task(lambda **_: 1, id="aggregate_orders_by_region", deps=[
    "load_the_customer_orders_from_the_warehouse_bucket"])
"""


def test_the_run_summary_keeps_every_column_in_80(tmp_path: Path) -> None:
    (tmp_path / "long.py").write_text(LONG_IDS)
    out = cli("run", "long.py", cwd=tmp_path, env={"COLUMNS": "80"})
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    # the table, not the traceback below it (printed as Python prints one, unwrapped)
    table = fits("\n".join(lines[: next(i for i, x in enumerate(lines) if x.endswith(" failed:"))]))
    header = next(i for i, line in enumerate(table) if line.startswith("task "))
    state_at = table[header].index("attempts, duration")
    why_at = table[header].index("why")
    rows = table[header + 2 :]
    tasks = "".join(line[:state_at].strip() for line in rows)  # folded ids read back whole
    states = " ".join(" ".join(line[state_at:why_at] for line in rows).split())
    whys = [line[why_at:].strip() for line in rows]
    assert tasks == "load_the_customer_orders_from_the_warehouse_bucketaggregate_orders_by_region"
    assert states.startswith("failed 1 attempt, ")
    assert states.endswith(" ms upstream_failed 0 attempts")
    assert (
        " ".join(whys[:3]) == "ValueError: invalid literal for int() with base 10: 'x' at long.py:6"
    )
    assert "".join(whys[3:]) == "load_the_customer_orders_from_the_warehouse_bucket failed upstream"
    short = cli("run", "long.py", cwd=tmp_path, env={"COLUMNS": "200"})
    assert "┃ attempts ┃ duration ┃" in short.stdout  # room enough: a column each
