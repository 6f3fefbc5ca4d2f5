"""Stopping ``orchestra run`` with Ctrl-C or SIGTERM, as a user does, with real signals.

What a new user met: during a sync task, nothing was said for 18 s (the worker thread
cannot be interrupted), then ``Aborted!`` with no resume hint and no word about which task
it waited for; a second Ctrl-C ended with Python's ``Exception ignored in: <module
'threading'>`` traceback; the progress line counted the cancelled task as failed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as NoLine
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# ``crunch`` is a sync body that cannot be interrupted: it runs until the test releases it
# (or two minutes pass). ``after`` waits for it. ``quick`` is done before crunch starts (its
# dependent): had the two started together, a loaded machine could still be running quick
# when the test presses Ctrl-C, and the command would rightly name both.
FLOW = """
import time
from pathlib import Path

import orchestra

HERE = Path(__file__).parent
dag = orchestra.DAG("slow")


@dag.task
def quick() -> int:
    return 2


@dag.task(deps=[quick])
def crunch() -> int:
    (HERE / "started").touch()
    deadline = time.monotonic() + 120
    while not (HERE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return 1


@dag.task(deps=[crunch])
def after(crunch: int) -> int:
    return crunch
"""


_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _no_command_left() -> Iterator[None]:
    """A command a failed assertion left running is killed and its pipes closed (else it
    runs on for two minutes and its unclosed pipes warn in a later test)."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def _start(tmp_path: Path, flow: str = FLOW) -> subprocess.Popen[str]:
    (tmp_path / "flow.py").write_text(flow)
    # PYTHONFAULTHANDLER: a command that hangs is sent SIGABRT, which prints its threads
    env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "orchestra.cli", "run", "flow.py", "--journal", "runs.db"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _STARTED.append(proc)
    deadline = time.monotonic() + 120  # a loaded machine starts Python slowly
    while not (tmp_path / "started").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"crunch did not start (exit {proc.returncode}):\n{out}\n{err}")
        time.sleep(0.05)
    return proc


def _finish(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str]:
    """What the command printed once it exited; killed if it did not (no orphan process)."""
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _read_line(proc: subprocess.Popen[str], timeout: float = 60) -> str:
    """The command's next line on stderr; a failure naming where it hangs if none comes.

    The line is due at once; the deadline is a loaded machine's margin, and ends the wait
    of a command that will not say it (its threads' stacks are then in the failure).

    It is read from the pipe a byte at a time, so nothing after it is taken: a buffered
    ``readline`` that started late (a loaded machine) took the lines said after it too, and
    ``communicate``, which reads the pipe itself, never saw them (stop 56's CI: the resume
    command missing from stderr).
    """
    assert proc.stderr is not None
    fd = proc.stderr.fileno()

    def line_of_the_pipe() -> str:
        said = bytearray()
        while not said.endswith(b"\n") and (byte := os.read(fd, 1)):
            said += byte
        return said.decode()

    with ThreadPoolExecutor(1) as reader:
        line = reader.submit(line_of_the_pipe)
        try:
            return line.result(timeout).rstrip("\n")
        except NoLine:
            proc.send_signal(signal.SIGABRT)  # the faulthandler prints every thread's stack
            out, err = _finish(proc, 30)
            pytest.fail(f"nothing said {timeout:.0f} s after the signal:\n{out}\n{err}")


def test_a_first_ctrl_c_says_what_it_waits_for_and_the_run_ends_cancelled(
    tmp_path: Path,
) -> None:
    proc = _start(tmp_path)
    proc.send_signal(signal.SIGINT)
    said = _read_line(proc)  # at once, while crunch still runs
    assert said == (
        "orchestra run: Ctrl-C: stopping the run; waiting for crunch (a sync body in a "
        "thread cannot be interrupted): press Ctrl-C again to abandon it"
    )
    assert proc.poll() is None
    (tmp_path / "release").touch()
    out, err = _finish(proc, 120)
    assert proc.returncode == 130  # 128 + SIGINT, as a shell reports a Ctrl-C
    assert "Traceback" not in err
    assert "Aborted!" not in err
    assert "cancelled 2" in out  # crunch and after: counted as cancelled, not failed
    assert "failed 0" in out
    run_id = out.split("journaled as run ")[1].split()[0]
    assert f"resume it with: orchestra run flow.py --journal runs.db --resume {run_id}" in err
    resumed = subprocess.run(
        [
            sys.executable,
            "-m",
            "orchestra.cli",
            "run",
            "flow.py",
            "--journal",
            "runs.db",
            "--resume",
            run_id,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr  # crunch returns at once now


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_signal_exits_at_once_cleanly(
    tmp_path: Path, signum: signal.Signals, code: int
) -> None:
    proc = _start(tmp_path)
    proc.send_signal(signum)
    assert "stopping the run; waiting for crunch" in _read_line(proc)
    proc.send_signal(signum)
    _, err = _finish(proc, 60)  # crunch, never released, would take two minutes
    assert proc.returncode == code
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert "exiting now, abandoning crunch" in err
    assert "--journal runs.db --resume " in err


# The kernel delivers a process's signal to any thread that does not block it: here to the
# sync body's own thread, while the main thread sleeps in the event loop's poll. Python
# runs the handler only in the main thread, once it runs Python code again: nothing woke
# it, and the first Ctrl-C said nothing until the body returned (a flake of the suite, one
# run in a few hundred; here every time).
SIGNALLED_IN_THE_BODY = FLOW.replace(
    '    (HERE / "started").touch()\n',
    '    (HERE / "started").touch()\n'
    "    import signal, threading\n"
    "    signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread\n",
)


def test_a_ctrl_c_delivered_to_a_body_s_thread_is_said_at_once(tmp_path: Path) -> None:
    assert SIGNALLED_IN_THE_BODY != FLOW
    proc = _start(tmp_path, SIGNALLED_IN_THE_BODY)
    assert "Ctrl-C: stopping the run; waiting for crunch" in _read_line(proc, timeout=30)
    (tmp_path / "release").touch()
    out, err = _finish(proc, 120)
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "cancelled 2" in out
