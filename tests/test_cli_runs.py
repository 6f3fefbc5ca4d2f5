"""``orchestra run --journal/--resume`` and ``orchestra runs list|show``, as subprocesses."""

from __future__ import annotations

import textwrap
from pathlib import Path

from test_cli_run import cli

FLOW = textwrap.dedent(
    """
    import os
    import orchestra

    dag = orchestra.DAG("nightly")

    @dag.task
    def fetch():
        with open("fetch.log", "a") as f:
            f.write("ran\\n")
        return [3, 1, 2]

    @dag.task(deps=[fetch])
    def publish(fetch):
        if os.path.exists("down"):
            raise ConnectionError("warehouse down")
        return sorted(fetch)
    """
)


def test_run_journal_resume_and_runs_list_show(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    (tmp_path / "down").touch()
    first = cli("run", "flow.py", "--journal", "runs.db", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    assert "journaled as run" in first.stdout
    first_id = first.stdout.split("journaled as run ")[1].split()[0]

    (tmp_path / "down").unlink()
    second = cli("run", "flow.py", "--journal", "runs.db", "--resume", "last", cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"reused from run {first_id}" in second.stdout
    second_id = second.stdout.split("journaled as run ")[1].split()[0]
    assert (tmp_path / "fetch.log").read_text().split() == ["ran"]  # fetched once

    listed = cli("runs", "list", "runs.db", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    rows = {line.split("│")[1].strip(): line for line in lines if line.count("│") > 2}
    new_row, old_row = rows[second_id], rows[first_id]
    assert "nightly" in new_row
    assert "2 succeeded" in new_row
    assert first_id in new_row  # resumed from
    assert "1 succeeded" in old_row
    assert "1 failed" in old_row
    assert lines.index(new_row) < lines.index(old_row)  # newest first

    shown = cli("runs", "show", "runs.db", first_id, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "ConnectionError: warehouse down" in shown.stdout
    last = cli("runs", "show", "runs.db", cwd=tmp_path)
    assert f"resumed from {first_id}" in last.stdout
    assert "reused" in last.stdout


def test_cli_errors_are_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "flow.py").write_text(FLOW)
    resume_only = cli("run", "flow.py", "--resume", "last", cwd=tmp_path)
    assert resume_only.returncode == 2
    assert "--resume needs --journal" in resume_only.stderr
    unknown = cli("run", "flow.py", "--journal", "runs.db", "--resume", "nope", cwd=tmp_path)
    assert unknown.returncode == 2
    assert "has no run 'nope' to resume" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    missing = cli("runs", "list", "nothing.db", cwd=tmp_path)
    assert missing.returncode == 2
    assert "nothing.db: no such file" in missing.stderr
    (tmp_path / "notes.db").write_text("not a journal")
    stranger = cli("runs", "show", "notes.db", cwd=tmp_path)
    assert stranger.returncode == 2
    assert "not an orchestra journal" in stranger.stderr
    empty = tmp_path / "empty.db"
    cli("run", "flow.py", "--journal", str(empty), cwd=tmp_path)
    no_run = cli("runs", "show", str(empty), "abc", cwd=tmp_path)
    assert no_run.returncode == 2
    assert "no run 'abc'" in no_run.stderr
    postgres = cli("runs", "list", "postgresql://127.0.0.1:1/x", cwd=tmp_path)
    assert postgres.returncode == 2
    assert "cannot connect" in postgres.stderr or "orchestra-hooks-postgres" in postgres.stderr
