"""The command runner: one hook process, supervised from spawn to reaping.

``run_command`` starts ``sh -c COMMAND`` (or ``args`` without a shell) in a process
group of its own, writes the event JSON on its stdin while reading stdout and stderr,
and always leaves nothing behind: the group is killed once the hook is over (a
grandchild the hook put in the background goes with it; a hook that wants something to
outlive it must start it with ``setsid``), the child is reaped and every pipe is
closed, also when the caller is cancelled.

Outcomes:

======================================  ==============================================
the hook                                ``run_command``
======================================  ==============================================
exits 0                                 ``parse_result(stdout)`` (empty = no opinion;
                                        plain text, not starting with ``{`` or ``[``,
                                        as ``plain_text`` says)
exits 2                                 ``HookResult(decision="block")``, reason =
                                        stderr
exits with another code                 ``HookRunError("exited N")``; from ``sh``,
                                        126 and 127 say "not executable" and
                                        "command not found"
dies by a signal                        ``HookRunError("killed by SIGKILL")``
cannot be started                       ``HookRunError("could not start: ...")``
runs past ``timeout``                   SIGTERM to the group, SIGKILL 0.5 s later,
                                        ``HookRunError("timed out after 5 s")``
writes over 1 MiB on stdout or stderr   the group is killed,
                                        ``HookRunError("output over 1 MiB on stdout")``
======================================  ==============================================

Once the direct child has exited, the runner reads what is left in the pipes for at
most 0.5 s: it never waits for the end of a pipe that a grandchild holds open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final, Literal, TypeAlias

import anyio
import attrs
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from orchestra.skills._result import OUTPUT_LIMIT, HookResult, HookRunError, parse_result

__all__ = ["PlainText", "run_command"]

PlainText: TypeAlias = Literal["context", "ignore", "error"]
"""What plain text on a command hook's stdout (exit 0) is: context, nothing, or an error."""

# How long a process group gets between SIGTERM and SIGKILL, and how long the pipes are
# read after the direct child exited.
_GRACE: Final = 0.5
_CHUNK: Final = 65536
_PIPE: Final = subprocess.PIPE
# What sh means by these codes (POSIX); the hook's stderr says which command.
_SHELL_CODES: Final = {126: "not executable", 127: "command not found"}


def _kill_group(pgid: int, sig: signal.Signals) -> None:
    # ProcessLookupError: the group is gone; PermissionError: macOS says so of zombies.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@attrs.define
class _Output:
    """What one pipe gave, up to the limit."""

    name: str
    data: bytearray = attrs.field(factory=bytearray)
    over: bool = False


async def _read(stream: ByteReceiveStream, out: _Output, pgid: int) -> None:
    data = out.data
    try:
        while True:
            data += await stream.receive(_CHUNK)
            if len(data) > OUTPUT_LIMIT:
                del data[OUTPUT_LIMIT:]
                out.over = True
                _kill_group(pgid, signal.SIGKILL)
                return
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


async def _feed(stream: ByteSendStream, data: bytes, scope: anyio.CancelScope) -> None:
    """Write the whole event on the hook's stdin, then close it."""
    with scope:
        try:
            if data:
                await stream.send(data)
            await stream.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            # The hook exited, or closed its stdin, without reading all of it.
            pass


async def _wait(process: Process, seconds: float) -> bool:
    """Wait for the child to exit, stopping it on timeout; answer whether it timed out."""
    with anyio.move_on_after(seconds):
        await process.wait()
        return False
    _kill_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(_GRACE):
        await process.wait()
        return True
    _kill_group(process.pid, signal.SIGKILL)
    await process.wait()
    return True


async def _dispose(process: Process) -> None:
    """Kill what is left of the group, reap the child, close the pipes; never cancelled."""
    with anyio.CancelScope(shield=True):
        # While a grandchild lives, the group keeps its id, so no other group can have
        # it. Once empty, the call finds no group; only a new process given the same pid
        # that made itself a group leader in between could be hit, a negligible race.
        _kill_group(process.pid, signal.SIGKILL)
        # Also closes the pipe transports (asyncio) of a pipe that was not read to its end.
        await process.aclose()


def _describe(returncode: int, shell: bool) -> str:
    if shell and returncode in _SHELL_CODES:
        return f"exited {returncode} ({_SHELL_CODES[returncode]})"
    if returncode >= 0:
        return f"exited {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"


async def run_command(
    *,
    command: str | None,
    args: Sequence[str] | None,
    stdin: bytes,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,  # noqa: ASYNC109 -- the hook's limit: then SIGTERM, SIGKILL, an error
    strict_output: bool = False,
    plain_text: PlainText = "error",
) -> HookResult:
    """Run one command hook and read its answer.

    Args:
        command: a shell command, run as ``sh -c command``; exactly one of ``command``
            and ``args`` is given.
        args: a program and its arguments, run without a shell.
        stdin: the event JSON; it is written on the hook's stdin and nowhere else.
        env: the whole environment of the hook (``os.environ`` is not added).
        cwd: the working directory, None for the current one.
        timeout: seconds the hook may run before its process group is killed.
        strict_output: refuse result fields that are not known (see ``parse_result``).
        plain_text: what plain text on stdout after exit 0 is: ``"context"`` (a message,
            as Claude Code reads it on SessionStart and UserPromptSubmit), ``"ignore"``
            (no opinion, as Claude Code does elsewhere) or ``"error"`` (invalid output).

    Returns:
        The hook's result, with ``exit_code`` and ``stderr`` filled in.

    Raises:
        HookRunError: the hook could not start, failed, timed out or printed garbage.
        ValueError: both or neither of ``command`` and ``args``, or an empty ``args``,
            or a timeout that is not positive.
    """
    if (command is None) == (args is None):
        raise ValueError("give exactly one of command and args")
    argv = ["/bin/sh", "-c", command] if command is not None else list(args or ())
    if not argv:
        raise ValueError("args is empty")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0, got {timeout!r}")
    try:
        process = await anyio.open_process(
            argv,
            stdin=_PIPE,
            stdout=_PIPE,
            stderr=_PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise HookRunError(f"could not start: {exc}") from exc

    out, err = _Output("stdout"), _Output("stderr")
    try:
        feeding = anyio.CancelScope()
        async with anyio.create_task_group() as tasks:
            # All three are pipes.
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            tasks.start_soon(_feed, process.stdin, stdin, feeding)
            tasks.start_soon(_read, process.stdout, out, process.pid)
            tasks.start_soon(_read, process.stderr, err, process.pid)
            timed_out = await _wait(process, timeout)
            # The child is gone: stop writing (a grandchild may hold stdin unread), and
            # read what is left for a short grace (a grandchild may hold the pipes open).
            feeding.cancel()
            tasks.cancel_scope.deadline = anyio.current_time() + _GRACE
    finally:
        await _dispose(process)

    returncode = process.returncode
    assert returncode is not None  # _wait and _dispose reaped it
    stderr = err.data.decode("utf-8", "replace")
    for pipe in (out, err):
        if pipe.over:
            raise HookRunError(
                f"output over 1 MiB on {pipe.name}", exit_code=returncode, stderr=stderr
            )
    if timed_out:
        raise HookRunError(f"timed out after {timeout:g} s", exit_code=returncode, stderr=stderr)
    if returncode == 0:
        text = out.data.decode("utf-8", "replace").strip()
        if plain_text != "error" and text and text[0] not in "{[":
            messages = (text,) if plain_text == "context" else ()
            return HookResult(messages=messages, exit_code=0, stderr=stderr)
        try:
            result = parse_result(bytes(out.data), strict=strict_output)
        except HookRunError as exc:
            raise HookRunError(str(exc), exit_code=0, stderr=stderr) from None
        return attrs.evolve(result, exit_code=0, stderr=stderr)
    if returncode == 2:
        return HookResult(
            decision="block", reason=stderr.strip() or None, exit_code=2, stderr=stderr
        )
    raise HookRunError(
        _describe(returncode, command is not None), exit_code=returncode, stderr=stderr
    )
