"""The command runner: one hook process, supervised from spawn to reaping.

``run_command`` starts ``sh -c COMMAND`` (or ``args`` without a shell) in a process
group of its own (``_process.spawn``: no thread involved), writes the event JSON on its
stdin while reading stdout and stderr, and always leaves nothing behind: the group is
killed once the hook is over (a grandchild the hook put in the background goes with it;
one that escapes with ``setsid`` does not, unless the hook is sandboxed), the child is
reaped and every pipe is closed, also when the caller is cancelled.

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

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal, TypeAlias

import anyio
import attrs

from orchestra.skills._processes.spawn import Child, kill_group, spawn
from orchestra.skills._protocol.result import OUTPUT_LIMIT, HookResult, HookRunError, parse_result

__all__ = [
    "Completed",
    "ExitReader",
    "PlainText",
    "command_argv",
    "describe_exit",
    "run_command",
    "run_process",
]

PlainText: TypeAlias = Literal["context", "ignore", "error"]
"""What plain text on a command hook's stdout (exit 0) is: context, nothing, or an error."""
ExitReader: TypeAlias = Callable[[int, bytes, str], HookResult]
"""Reads a hook that exited by itself: (exit code, stdout, stderr) -> its result; raises
``HookRunError`` for a hook error (Claude Code sources read exits so: see
``_hooks.claude_output``)."""
_SHELLS: Final = {
    None: ("/bin/sh", "-c"),
    "bash": ("bash", "-c"),
    "powershell": ("pwsh", "-Command"),
}

# How long a process group gets between SIGTERM and SIGKILL, and how long the pipes are
# read after the direct child exited.
_GRACE: Final = 0.5
_CHUNK: Final = 65536
# What sh means by these codes (POSIX); the hook's stderr says which command.
_SHELL_CODES: Final = {126: "not executable", 127: "command not found"}


@attrs.define
class _Output:
    """What one pipe gave, up to the limit."""

    name: str
    data: bytearray = attrs.field(factory=bytearray)
    over: bool = False


async def _read(fd: int, out: _Output, pgid: int) -> None:
    data = out.data
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            await anyio.wait_readable(fd)
            continue
        except OSError:
            return
        if not chunk:
            return
        data += chunk
        if len(data) > OUTPUT_LIMIT:
            del data[OUTPUT_LIMIT:]
            out.over = True
            kill_group(pgid, signal.SIGKILL)
            return


async def _feed(child: Child, data: bytes, scope: anyio.CancelScope) -> None:
    """Write the whole event on the hook's stdin, then close it."""
    view = memoryview(data)
    with scope:
        try:
            while view:
                try:
                    view = view[os.write(child.stdin, view) :]
                except BlockingIOError:
                    await anyio.wait_writable(child.stdin)
        except OSError:
            pass  # the hook exited, or closed its stdin, without reading all of it
    child.close_stdin()


async def _wait(child: Child, seconds: float) -> bool:
    """Wait for the child to exit, stopping it on timeout; answer whether it timed out."""
    with anyio.move_on_after(seconds):
        await child.wait()
        return False
    kill_group(child.pid, signal.SIGTERM)
    with anyio.move_on_after(_GRACE):
        await child.wait()
        return True
    kill_group(child.pid, signal.SIGKILL)
    await child.wait()
    return True


async def _dispose(child: Child) -> None:
    """Kill what is left of the group, reap the child, close the fds; never cancelled."""
    with anyio.CancelScope(shield=True):
        # While a grandchild lives, the group keeps its id, so no other group can have
        # it. Once empty, the call finds no group; only a new process given the same pid
        # that made itself a group leader in between could be hit, a negligible race.
        kill_group(child.pid, signal.SIGKILL)
        await child.wait()
        child.close()


def describe_exit(returncode: int, shell: bool) -> str:
    """How a hook process ended, in words: ``exited 1``, ``killed by SIGKILL``, ..."""
    if shell and returncode in _SHELL_CODES:
        return f"exited {returncode} ({_SHELL_CODES[returncode]})"
    if returncode >= 0:
        return f"exited {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"killed by {name}"


def command_argv(
    command: str | None, args: Sequence[str] | None, shell: str | None = None
) -> list[str]:
    """The argv of a command hook: ``sh -c COMMAND``, or ``args`` run without a shell.

    Args:
        command: the shell command.
        args: the program and its arguments, run without a shell.
        shell: Claude Code's ``shell`` for ``command``: ``"bash"`` (``bash -c``) or
            ``"powershell"`` (``pwsh -Command``); None for ``/bin/sh -c``.

    Raises:
        ValueError: both or neither of ``command`` and ``args``, or an empty ``args``.
    """
    if (command is None) == (args is None):
        raise ValueError("give exactly one of command and args")
    argv = [*_SHELLS[shell], command] if command is not None else list(args or ())
    if not argv:
        raise ValueError("args is empty")
    return argv


@attrs.frozen
class Completed:
    """How a hook process ended: its exit status and what it wrote.

    Attributes:
        returncode: the exit status (negative: the signal that killed it).
        stdout: what it wrote on stdout (at most 1 MiB).
        stderr: what it wrote on stderr, decoded.
    """

    returncode: int
    stdout: bytes
    stderr: str


async def run_process(
    argv: Sequence[str],
    *,
    stdin: bytes,
    env: Mapping[str, str],
    cwd: str | None,
    timeout: float,  # noqa: ASYNC109 -- the hook's limit: then SIGTERM, SIGKILL, an error
) -> Completed:
    """Run one hook process to its end and return what it did (no reading of its answer).

    The seeds' own protocols (a graph executor's ``action``, Arc's exit codes) read the
    ``Completed`` their own way; ``run_command`` reads it as the hook protocol says.

    Raises:
        HookRunError: it could not start, timed out, or wrote over 1 MiB.
        ValueError: a timeout that is not positive.
    """
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0, got {timeout!r}")
    child = spawn(list(argv), env=env, cwd=cwd)

    out, err = _Output("stdout"), _Output("stderr")
    try:
        feeding = anyio.CancelScope()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_feed, child, stdin, feeding)
            tasks.start_soon(_read, child.stdout, out, child.pid)
            tasks.start_soon(_read, child.stderr, err, child.pid)
            timed_out = await _wait(child, timeout)
            # The child is gone: stop writing (a grandchild may hold stdin unread), and
            # read what is left for a short grace (a grandchild may hold the pipes open).
            feeding.cancel()
            tasks.cancel_scope.deadline = anyio.current_time() + _GRACE
    finally:
        await _dispose(child)

    returncode = child.returncode
    assert returncode is not None  # _wait and _dispose reaped it
    stderr = err.data.decode("utf-8", "replace")
    for pipe in (out, err):
        if pipe.over:
            raise HookRunError(
                f"output over 1 MiB on {pipe.name}", exit_code=returncode, stderr=stderr
            )
    if timed_out:
        raise HookRunError(f"timed out after {timeout:g} s", exit_code=returncode, stderr=stderr)
    return Completed(returncode, bytes(out.data), stderr)


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
    wrap: Sequence[str] = (),
    shell: str | None = None,
    read: ExitReader | None = None,
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
        wrap: a program and arguments that run the hook (e.g. the sandbox's ``bwrap``
            command line, ending in ``--``).
        shell: the shell of ``command`` (see ``command_argv``).
        read: how to read a hook that exited by itself (exit code, stdout, stderr),
            instead of the rules above (``strict_output`` and ``plain_text`` unused).

    Returns:
        The hook's result, with ``exit_code`` and ``stderr`` filled in.

    Raises:
        HookRunError: the hook could not start, failed, timed out or printed garbage.
        ValueError: both or neither of ``command`` and ``args``, or an empty ``args``,
            or a timeout that is not positive.
    """
    argv = command_argv(command, args, shell)
    done = await run_process([*wrap, *argv], stdin=stdin, env=env, cwd=cwd, timeout=timeout)
    returncode, stderr = done.returncode, done.stderr
    if read is not None and returncode >= 0:
        return read(returncode, done.stdout, stderr)
    if returncode == 0:
        text = done.stdout.decode("utf-8", "replace").strip()
        if plain_text != "error" and text and text[0] not in "{[":
            messages = (text,) if plain_text == "context" else ()
            return HookResult(messages=messages, exit_code=0, stderr=stderr)
        try:
            result = parse_result(done.stdout, strict=strict_output)
        except HookRunError as exc:
            raise exc.again(exit_code=0, stderr=stderr) from None
        return attrs.evolve(result, exit_code=0, stderr=stderr)
    if returncode == 2:
        return HookResult(
            decision="block", reason=stderr.strip() or None, exit_code=2, stderr=stderr
        )
    raise HookRunError(
        describe_exit(returncode, command is not None), exit_code=returncode, stderr=stderr
    )
