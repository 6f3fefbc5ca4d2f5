"""``CommandHook``: a shell command (or a program without a shell) run at an event.

And ``not_executable``: a command hook whose program is a script that is there but not
executable. ``command: "./hooks/guard.sh"`` runs the script itself, which needs its
execute bit: without it every event ends in "exited 126 (not executable)", a hook error
(on a guard, a block). ``load`` logs a warning for such a hook (logger
``orchestra.skills``) and ``orchestra hooks validate`` prints it; neither runs anything
(the file's mode is read).

Only the program counts (the first word of ``command``, or ``args[0]``), named by a path:
``sh hooks/guard.sh`` and ``python3 check.py`` need no execute bit, and a bare name is
looked up on ``PATH`` when the hook runs. A path may start with ``$ORCHESTRA_PROJECT_DIR``,
``$CLAUDE_PROJECT_DIR`` or ``${SKILL_DIR}``; a relative one starts at the project folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

import attrs

from orchestra.skills._config.yaml import kind
from orchestra.skills._hooks.claude_output import claude_reader
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall, HookSpec, key_by
from orchestra.skills._persistent.pool import MAX_IN_FLIGHT, run_persistent
from orchestra.skills._processes.claude_env import (
    ENV_FILE_EVENTS,
    env_file,
    expand_placeholders,
    plugin_data,
)
from orchestra.skills._processes.command import PlainText, run_command
from orchestra.skills._processes.environment import hook_environment
from orchestra.skills._processes.sandbox import MISSING, Sandbox, bwrap_command, parse_sandbox
from orchestra.skills._protocol.result import HookRunError
from orchestra.tracing.names import ATTR_PROCESS_EXIT_CODE

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry
    from orchestra.skills._protocol.result import HookResult

__all__ = ["MAX_COMMAND_BYTES", "CommandHook", "not_executable"]

MAX_COMMAND_BYTES: Final = 32 * 1024
"""The longest ``command`` (or all ``args`` together), in UTF-8 bytes (32 KB)."""
#: Events whose command hooks' plain stdout is context for the agent (as in Claude Code).
CONTEXT_EVENTS: Final = frozenset({"SessionStart", "UserPromptSubmit", "Setup"})
_SKILL_DIR_REF: Final = re.compile(r"\$(?:\{SKILL_DIR\}|SKILL_DIR\b)")
_SHELL_SAFE_PATH: Final = re.compile(r"[A-Za-z0-9_./+@%:,=-]+")
_VARIABLE: Final = re.compile(r"^\$(?:\{(\w+)\}|(\w+))/")
_PROJECT: Final = frozenset({"ORCHESTRA_PROJECT_DIR", "CLAUDE_PROJECT_DIR"})


def _one_of_command_and_args(
    hook: CommandHook, _field: object, _args: tuple[str, ...] | None
) -> None:
    if (hook.command is None) == (hook.args is None):
        raise ValueError("a command hook needs 'command' or 'args' (exactly one)")


def _in_flight_problem(value: object, persistent: bool) -> str | None:
    """What is wrong with a ``max_in_flight``, or None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"expected a whole number, got {kind(value)}"
    if not 1 <= value <= MAX_IN_FLIGHT:
        return f"must be from 1 to {MAX_IN_FLIGHT}, got {value}"
    if value > 1 and not persistent:
        return "needs persistent: true (a hook run per event has one event in flight)"
    return None


def _valid_in_flight(hook: CommandHook, _field: object, value: int) -> None:
    problem = _in_flight_problem(value, hook.persistent)
    if problem is not None:
        raise ValueError(f"max_in_flight: {problem}")


@final
@attrs.frozen(kw_only=True, repr=False)
class CommandHook(HookSpec):
    """A hook that runs ``sh -c COMMAND`` (or ``args`` without a shell).

    The event JSON goes to its stdin; what it prints and its exit code are its answer
    (see the hook protocol).

    Attributes:
        command: the shell command, ``${SKILL_DIR}`` expanded.
        args: the argv to run without a shell, ``${SKILL_DIR}`` expanded.
        strict_output: unknown fields in the result are errors.
        env: variables set for the process (with the file's own ``env:`` first);
            ``${VAR}`` in a value is the parent's ``VAR``.
        pass_env: names or globs of the parent's variables the process gets beyond the
            minimal ones (with the file's own ``pass_env:``); ``["*"]`` passes all.
        sandbox: run it under bubblewrap (see ``Sandbox``), or None.
        persistent: keep one process for every event, each event one JSON line on its
            stdin, answered by one line on its stdout (see ``orchestra.skills.serve``).
        max_in_flight: how many events a persistent process gets at once (each line
            with an ``id`` the answer echoes); 1 unless ``persistent``.
        shell: Claude Code's ``shell`` (``"bash"``, ``"powershell"``), None for ``sh``.
        rewake: Claude Code's ``asyncRewake``: it runs in the background (``background``)
            and, when it exits 2, its stderr (or stdout) reaches the agent.
        rewake_message: the text put before that stderr (``rewakeMessage``).
        rewake_summary: what the user is shown then (``rewakeSummary``).
    """

    type: ClassVar[str] = "command"
    exit_code_attribute: ClassVar[str | None] = ATTR_PROCESS_EXIT_CODE

    command: str | None = None
    args: tuple[str, ...] | None = attrs.field(default=None, validator=_one_of_command_and_args)
    strict_output: bool = False
    env: tuple[tuple[str, str], ...] = attrs.field(
        default=(), metadata=key_by(lambda pairs: tuple(sorted(dict(pairs).items())))
    )
    pass_env: tuple[str, ...] = attrs.field(
        default=(), metadata=key_by(lambda names: tuple(sorted(set(names))))
    )
    sandbox: Sandbox | None = None
    persistent: bool = False
    max_in_flight: int = attrs.field(default=1, validator=_valid_in_flight)
    shell: str | None = attrs.field(
        default=None,
        validator=attrs.validators.in_((None, "bash", "powershell")),
        metadata=NOT_CONFIG,
    )
    rewake: bool = attrs.field(default=False, metadata=NOT_CONFIG)
    rewake_message: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    rewake_summary: str | None = attrs.field(default=None, metadata=NOT_CONFIG)

    def describe(self) -> str:
        """The command, or the argv as JSON (and whether it is persistent)."""
        what = self.command if self.command is not None else json.dumps(list(self.args or ()))
        if self.persistent:
            what += f" (persistent, {self.max_in_flight} in flight)"
        return what

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``command`` or ``args``, and ``strict_output``."""
        command, args = _command_and_args(entry)
        defaults = entry.defaults
        persistent = entry.flag("persistent")
        max_in_flight = entry.get("max_in_flight", 1)
        problem = _in_flight_problem(max_in_flight, persistent)
        if problem is not None:
            entry.bad("max_in_flight", problem)
        return {
            "command": command,
            "args": args,
            "strict_output": entry.flag("strict_output"),
            "env": tuple({**dict(defaults.env), **dict(entry.variables("env"))}.items()),
            "pass_env": tuple(dict.fromkeys(defaults.pass_env + entry.globs("pass_env"))),
            "sandbox": parse_sandbox(entry),
            "persistent": persistent,
            "max_in_flight": max_in_flight,
        }

    def warnings(self) -> tuple[str, ...]:
        """A sandboxed hook on a machine without ``bwrap``."""
        if self.sandbox is not None and shutil.which("bwrap") is None:
            return (f"{MISSING}; this hook fails until it is",)
        return ()

    def keeps_timeout(self) -> bool:
        """A persistent hook times each event itself (and kills its process on timeout)."""
        return self.persistent

    def environment(self, call: HookCall) -> dict[str, str]:
        """The environment of the hook's process (see ``hook_environment``).

        A persistent process gets the same, taken when it starts.
        """
        project = {"SKILL_DIR": self.skill_dir} if self.skill_dir is not None else {}
        if self.plugin_root is not None:
            project["CLAUDE_PLUGIN_ROOT"] = self.plugin_root
            project["CLAUDE_PLUGIN_DATA"] = plugin_data(self.plugin_root)
        if self.event in ENV_FILE_EVENTS:
            project["CLAUDE_ENV_FILE"] = env_file(str(call.data.get("session_id", "")))
        return hook_environment(
            event=call.event,
            project_dir=call.project_dir,
            env=self.env,
            pass_env=self.pass_env,
            project=project,
        )

    def wrap(self, call: HookCall) -> list[str]:
        """The program and arguments that run the hook's argv (bubblewrap), or nothing.

        Raises:
            HookRunError: the sandbox cannot be set up (no ``bwrap``).
        """
        if self.sandbox is None:
            return []
        try:
            return bwrap_command(
                self.sandbox, project_dir=call.project_dir, skill_dir=self.skill_dir
            )
        except FileNotFoundError as exc:
            raise HookRunError(f"could not start: {exc}") from None

    async def run(self, call: HookCall) -> HookResult:
        """Run the command with the event JSON on stdin (see ``run_command``).

        A persistent hook sends the event to its process instead (see ``HookProcesses``).

        Raises:
            HookRunError: the hook could not give an answer (it cannot start, no sandbox,
                no registry of processes, a timeout, a bad answer).
        """
        if self.persistent:
            return await run_persistent(self, call)
        env = self.environment(call)
        args = self.args
        if self.claude_code and args is not None:  # exec form: placeholders as plain text
            args = tuple(expand_placeholders(args, env))
        return await run_command(
            command=self.command,
            args=args,
            stdin=call.body(),
            env=env,
            cwd=call.project_dir,
            timeout=self.timeout,
            strict_output=self.strict_output,
            plain_text=self.plain_text(),
            wrap=self.wrap(call),
            shell=self.shell,
            read=claude_reader(self.event, self.rewake) if self.claude_code else None,
        )

    def plain_text(self) -> PlainText:
        """What plain text on stdout means (see ``run_command``).

        Context on SessionStart, UserPromptSubmit and Setup; elsewhere nothing, or an
        error for a hook that fails closed.
        """
        if self.event in CONTEXT_EVENTS:
            return "context"
        return "error" if self.on_error != "continue" else "ignore"


def _command_and_args(entry: Entry) -> tuple[str | None, tuple[str, ...] | None]:
    """``command`` or ``args`` (exactly one), checked, ``${SKILL_DIR}`` expanded."""
    if ("command" in entry) == ("args" in entry):
        entry.bad(None, "a command hook needs 'command' or 'args' (exactly one)")
    command = entry.string("command", required="command" in entry)
    args = entry.strings("args") if "args" in entry else None
    if args is not None and not args and entry.get("args") is not None:
        entry.bad("args", "must not be empty")
    key = _checked_size(entry, command, args)
    skill_dir = entry.skill_dir
    if skill_dir is None:
        texts = [command] if command else list(args or ())
        if any(_SKILL_DIR_REF.search(t) for t in texts):
            entry.bad(
                key,
                "${SKILL_DIR} is only set for hooks in a SKILL.md; "
                "use $ORCHESTRA_PROJECT_DIR or an absolute path",
            )
        return command, args
    if command:
        command = _expand_in_shell(command, skill_dir)
    if args:
        args = tuple(_SKILL_DIR_REF.sub(lambda _m: skill_dir, a) for a in args)
    return command, args


def _checked_size(entry: Entry, command: str | None, args: tuple[str, ...] | None) -> str:
    """Report a command (or argv) over 32 KB or with a NUL; answer its field's name."""
    key = "command" if command else "args"
    size = len(command.encode()) if command else sum(len(a.encode()) + 1 for a in args or ())
    if size > MAX_COMMAND_BYTES:
        entry.bad(key, f"is {size} bytes; at most 32 KB")
    elif command and "\0" in command:
        entry.bad("command", "contains a NUL character")
    return key


def _expand_in_shell(command: str, skill_dir: str) -> str:
    """Expand ``${SKILL_DIR}`` in a shell command.

    A folder whose path is plain (letters, digits, ``_./+@%:,=-``) is written in; any
    other is left for the shell to expand from the exported ``SKILL_DIR``, so a folder
    name never becomes shell syntax.
    """
    if not _SHELL_SAFE_PATH.fullmatch(skill_dir):
        return command
    return command.replace("${SKILL_DIR}", skill_dir)


def _program(hook: HookSpec) -> str | None:
    args = getattr(hook, "args", None)
    if args:
        return str(args[0])
    try:
        words = shlex.split(str(getattr(hook, "command", "") or ""), comments=True)
    except ValueError:  # unbalanced quotes: the shell will say so
        return None
    return words[0] if words else None


def _candidates(hook: HookSpec, program: str, project_dir: Path) -> list[Path]:
    """Where the program may be: from the project folder, else the config's folders up."""
    variable = _VARIABLE.match(program)
    if variable is not None:
        name, rest = variable[1] or variable[2], program[variable.end() :]
        if name in _PROJECT:
            return [project_dir / rest]
        if name == "SKILL_DIR" and hook.skill_dir is not None:
            return [Path(hook.skill_dir) / rest]
        return []
    if "/" not in program or "$" in program:
        return []
    path = Path(program).expanduser()
    if path.is_absolute():
        return [path]
    folder = Path(hook.file).resolve().parent
    return [project_dir / path, folder / path, *(parent / path for parent in folder.parents)]


def not_executable(hook: HookSpec, project_dir: str | os.PathLike[str] | None = None) -> str | None:
    """A warning when ``hook`` runs a script that exists but has no execute bit, or None.

    Args:
        hook: any hook; only command hooks can warn.
        project_dir: where the hooks run (default: the current folder).
    """
    if hook.type != "command":
        return None
    program = _program(hook)
    if program is None:
        return None
    project = Path(project_dir if project_dir is not None else os.getcwd())
    for path in _candidates(hook, program, project):
        if path.is_file():
            if os.access(path, os.X_OK):
                return None
            return (
                f"{program} is not executable: chmod +x {path} (until then this hook "
                "fails each time it fires: exited 126)"
            )
    return None
