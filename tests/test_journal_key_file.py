"""The journal key file: a regular file in an owner-only folder, or refused (issue 49, 14).

The audit: a FIFO in the key's place hung the run (the open waited for a writer), and
a key folder of mode 0777 was used.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RUN = textwrap.dedent(
    """
    import orchestra
    dag = orchestra.DAG("keyed")
    dag.add(orchestra.Task(id="one", fn=lambda: 1))
    try:
        orchestra.run_sync(dag, journal="runs.db")
    except orchestra.JournalError as exc:
        print(exc)
    else:
        print("ran")
    """
)


def _run(tmp_path: Path, state: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", RUN],
        env={**os.environ, "XDG_STATE_HOME": str(state)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,  # a hang is a failure, not a stuck suite
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX's")
def test_a_fifo_as_the_key_file_is_refused_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "orchestra"
    folder.mkdir(parents=True, mode=0o700)
    os.mkfifo(folder / "journal.key", 0o600)
    said = _run(tmp_path, tmp_path / "state")
    assert said.startswith(f"journal key {folder / 'journal.key'}: not a regular file")


@pytest.mark.skipif(os.name != "posix", reason="mode bits are POSIX's")
def test_a_key_folder_others_may_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "orchestra"
    folder.mkdir(parents=True)
    assert _run(tmp_path, tmp_path / "state") == "ran"  # the key made, 0600 in 0700
    assert (folder / "journal.key").stat().st_mode & 0o777 == 0o600
    folder.chmod(0o777)
    said = _run(tmp_path, tmp_path / "state")
    assert f"its folder {folder} has mode 777: others may replace the key" in said
    assert f"chmod 700 {folder}" in said
