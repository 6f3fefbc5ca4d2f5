"""Journal payloads are authenticated: the key file, planted pickles, bad key arguments."""

from __future__ import annotations

import os
import pickle
import sqlite3
import stat
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import orchestra
from orchestra import DAG, JournalError, Task


class _Planted:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


def _rows() -> list[int]:
    return [1, 2]


def _dag() -> DAG:
    dag = DAG("rows")
    dag.add(Task(id="rows", fn=_rows))
    return dag


@pytest.fixture
def state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(home))
    return home


def test_a_pickle_planted_in_a_journal_file_never_runs_on_resume(
    tmp_path: Path, state_home: Path
) -> None:
    path = tmp_path / "runs.db"
    marker = tmp_path / "pwned"
    orchestra.run_sync(_dag(), journal=path)
    with closing(sqlite3.connect(path)) as db:  # the attack: the stored output replaced
        db.execute("UPDATE outputs SET payload = ?", (pickle.dumps(_Planted(marker)),))
        db.commit()
    again = orchestra.run_sync(_dag(), journal=path, resume="last")
    assert not marker.exists()
    assert again.reused == frozenset()
    assert again.outputs == {"rows": [1, 2]}
    assert "failed authentication" in again.resume_notes["rows"]


def test_a_journal_file_from_elsewhere_is_not_trusted(tmp_path: Path, state_home: Path) -> None:
    path = tmp_path / "runs.db"
    code = (
        "import orchestra, sys; sys.path.insert(0, sys.argv[2]); "
        "from test_journal_trust import _dag; orchestra.run_sync(_dag(), journal=sys.argv[1])"
    )
    elsewhere = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "someone-else")}
    here = str(Path(__file__).parent)
    subprocess.run([sys.executable, "-c", code, str(path), here], env=elsewhere, check=True)
    again = orchestra.run_sync(_dag(), journal=path, resume="last")
    assert again.reused == frozenset()  # another user's key: their payloads are not ours
    mine = orchestra.run_sync(_dag(), journal=path, resume="last")
    assert mine.reused == {"rows"}  # what this user's run journaled is trusted


def test_the_users_key_is_made_once_private_and_kept(tmp_path: Path, state_home: Path) -> None:
    orchestra.run_sync(_dag(), journal=tmp_path / "runs.db")
    key = state_home / "orchestra" / "journal.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    first = key.read_bytes()
    assert len(first.strip()) >= 32
    orchestra.run_sync(_dag(), journal=tmp_path / "runs.db")
    assert key.read_bytes() == first


def test_processes_making_the_key_at_once_agree_on_one(tmp_path: Path, state_home: Path) -> None:
    code = (
        "from orchestra.journal._key import resolve_key; print(resolve_key(None).tag(b'payload'))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    tags = {p.communicate()[0].strip() for p in procs}
    assert len(tags) == 1
    assert [p.returncode for p in procs] == [0] * 4


def test_a_key_file_others_can_read_is_refused(tmp_path: Path, state_home: Path) -> None:
    key = state_home / "orchestra" / "journal.key"
    key.parent.mkdir(parents=True)
    key.write_text("x" * 40)
    key.chmod(0o644)
    ran: list[int] = []
    dag = DAG("rows")
    dag.add(Task(id="rows", fn=lambda: ran.append(1)))
    with pytest.raises(JournalError) as info:
        orchestra.run_sync(dag, journal=tmp_path / "runs.db")
    message = str(info.value)
    assert str(key) in message
    assert "mode 644" in message
    assert f"chmod 600 {key}" in message
    assert ran == []


def test_a_key_folder_that_cannot_be_made_is_a_clear_error(
    tmp_path: Path, state_home: Path
) -> None:
    state_home.write_text("a file where the folder should be")
    with pytest.raises(JournalError, match=r"journal key .*: cannot .*journal_key="):
        orchestra.run_sync(_dag(), journal=tmp_path / "runs.db")


def test_a_team_key_given_as_journal_key_needs_no_file(tmp_path: Path, state_home: Path) -> None:
    team = "k3y-the-team-keeps-in-its-vault!"
    first = orchestra.run_sync(_dag(), journal=tmp_path / "runs.db", journal_key=team)
    again = orchestra.run_sync(
        _dag(), journal=tmp_path / "runs.db", resume=first.run_id, journal_key=team.encode()
    )
    assert again.reused == {"rows"}
    assert not (state_home / "orchestra" / "journal.key").exists()


def test_bad_key_and_wait_arguments_are_refused_before_the_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with pytest.raises(ValueError, match="at least 16 bytes, got 5"):
        orchestra.run_sync(_dag(), journal=path, journal_key="short")
    with pytest.raises(TypeError, match="journal_key must be bytes or str, got int"):
        orchestra.run_sync(_dag(), journal=path, journal_key=12345)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="journal_key= needs a journal="):
        orchestra.run_sync(_dag(), journal_key="x" * 20)
    with pytest.raises(ValueError, match="resume_wait= needs a resume="):
        orchestra.run_sync(_dag(), journal=path, resume_wait=5)
    for bad in (-1, float("nan"), "5", True):
        with pytest.raises(ValueError, match="resume_wait must be seconds >= 0"):
            orchestra.run_sync(_dag(), journal=path, resume="last", resume_wait=bad)  # type: ignore[arg-type]
    assert not path.exists()
