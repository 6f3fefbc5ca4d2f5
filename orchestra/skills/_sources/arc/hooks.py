"""Arc's ``[[hooks]]`` (fabro, seed 001) from ``run.toml``/``server.toml``, with Arc's protocol.

========================  ===========================================================
Arc                       orchestra
========================  ===========================================================
``run_start``             ``RunStart`` (blocking by default)
``run_complete``,         ``RunEnd`` with ``state`` ``succeeded``, ``failed``
``run_failed``
``stage_start``           ``AttemptStart`` (blocking by default)
``stage_complete``,       ``AttemptEnd`` with ``state`` ``succeeded``, ``failed``
``stage_failed``
``stage_retrying``        ``AttemptRetry``
``edge_selected``         ``EdgeSelected`` (blocking by default)
``pre_tool_use``, ...     ``PreToolUse`` (blocking by default), ``PostToolUse``,
                          ``PostToolUseFailure``
========================  ===========================================================

A hook runs ``sh -c COMMAND`` with the event context as JSON on stdin and in a file
(``ARC_HOOK_CONTEXT``), and ``ARC_EVENT``, ``ARC_RUN_ID``, ``ARC_WORKFLOW``,
``ARC_NODE_ID`` set (and their ``FABRO_*`` twins). Its answer, as Arc documents it:
exit 0 proceeds, exit 2 blocks, any other exit blocks with ``hook exited with code N``;
a JSON ``{"decision": "proceed" | "skip" | "block" | "override", "reason": ...,
"edge_to": ...}`` on stdout (after exit 0 or 2) says more: ``skip`` skips that stage
only (``StageSkipped``: it ends SUCCEEDED with no output, its dependents run),
``override`` with ``edge_to`` redirects a branch's choice. A hook that is not
``blocking`` runs for its side effects: its decision changes nothing, its failure is a
hook error only. A ``matcher`` is a regular expression searched in the stage's id or
its handler type (``metadata["type"]``); on ``edge_selected`` in the edge's ends.
A later file's hook of the same ``name`` replaces an earlier one (``_sources.read``).
A ``blocking`` ``stage_complete`` hook is a verify gate: its block (exit 2, another exit,
or ``decision: block``) is a ``GateBlocked`` output that fails the stage; at
``run_complete`` it fails the run's last task (``_engines.run_gate``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Mapping
from typing import Any, ClassVar, Final, TypeAlias, final

import anyio
import attrs

from orchestra.skills._config.matchers import Matcher, compile_matcher
from orchestra.skills._hooks.spec import NOT_CONFIG, HookCall, HookSpec
from orchestra.skills._processes.command import Completed, command_argv, run_process
from orchestra.skills._processes.environment import hook_environment
from orchestra.skills._processes.sandbox import Sandbox, bwrap_command
from orchestra.skills._protocol.result import NO_OPINION, HookResult, HookRunError
from orchestra.tracing.names import ATTR_PROCESS_EXIT_CODE

__all__ = [
    "ARC_EVENTS",
    "UNWIRED_EVENTS",
    "ArcCommandHook",
    "ArcHook",
    "ArcReply",
    "GateBlocked",
    "StageSkipped",
    "arc_decision",
]

ARC_EVENTS: Final[Mapping[str, tuple[str, str | None, bool]]] = {
    "run_start": ("RunStart", None, True),
    "run_complete": ("RunEnd", "succeeded", False),
    "run_failed": ("RunEnd", "failed", False),
    "stage_start": ("AttemptStart", None, True),
    "stage_complete": ("AttemptEnd", "succeeded", False),
    "stage_failed": ("AttemptEnd", "failed", False),
    "stage_retrying": ("AttemptRetry", None, False),
    "edge_selected": ("EdgeSelected", None, True),
    "pre_tool_use": ("PreToolUse", None, True),
    "post_tool_use": ("PostToolUse", None, False),
    "post_tool_use_failure": ("PostToolUseFailure", None, False),
}
"""Arc's events: (orchestra's event, the state it stands for, blocking by default)."""
UNWIRED_EVENTS: Final = frozenset(
    {"parallel_start", "parallel_complete", "sandbox_ready", "sandbox_cleanup", "checkpoint_saved"}
)
"""Arc's events orchestra has no moment for: their hooks are noted, not loaded."""
_DECISIONS: Final = ("proceed", "skip", "block", "override")
_GATES: Final = frozenset({"AttemptEnd", "RunEnd"})  # a blocking hook there is a gate
# The payload fields a matcher is searched in, by orchestra's event.
_SUBJECTS: Final[Mapping[str, tuple[str, ...]]] = {
    "AttemptStart": ("task_id", "type"),
    "AttemptEnd": ("task_id", "type"),
    "AttemptRetry": ("task_id", "type"),
    "EdgeSelected": ("edge_from", "selected"),
    "PreToolUse": ("tool_name",),
    "PostToolUse": ("tool_name",),
    "PostToolUseFailure": ("tool_name",),
}


def _compiled_search(hook: ArcHook) -> Matcher | None:
    if hook.regex is None:
        return None
    pattern, error = compile_matcher(hook.regex)
    if error is not None:
        raise ValueError(f"matcher: {error}")
    return pattern


@attrs.frozen(kw_only=True, repr=False)
class ArcHook(HookSpec):
    """What every Arc hook shares: its event, name, matcher, ``blocking`` and context.

    Each hook type (``ArcCommandHook``; ``http``, ``prompt`` and ``agent`` in
    ``_arc_remote``) reads its own answer into an Arc decision, then ``decide`` says
    what that decision means here.

    Attributes:
        arc_event: Arc's event name (``stage_start``, ...).
        state: the ``state`` of the event it stands for (``run_failed``: ``failed``),
            or None for every state.
        name: its name: a later file's hook of the same name replaces it.
        regex: the ``matcher``, searched in the stage's id or type; None for all.
        blocking: its decision counts (default: Arc's for the event).
        search: the compiled ``regex``.
    """

    type: ClassVar[str] = "arc"
    filters: ClassVar[bool] = True

    arc_event: str = attrs.field(metadata=NOT_CONFIG)
    state: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    name: str | None = None
    regex: str | None = None
    blocking: bool = False
    search: Matcher | None = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(_compiled_search, takes_self=True),
        metadata={"config": False, "key": None},
    )

    def named(self, text: str) -> str:
        """Arc's event, ``text``, the name and the matcher: one line for ``hooks list``."""
        named = f" ({self.name})" if self.name else ""
        matcher = f" (matcher {self.regex})" if self.regex is not None else ""
        return f"{self.arc_event}: {text}{named}{matcher}"

    def selects(self, payload: Mapping[str, Any]) -> bool:
        """The event's state, then the matcher searched in the node's id or type."""
        if self.state is not None and payload.get("state") != self.state:
            return False
        search = self.search
        if search is None:
            return True
        for field in _SUBJECTS.get(self.event, ()):
            value = payload.get(field)
            values = value if isinstance(value, list) else [value]
            if any(isinstance(v, str) and search.search(v) for v in values):
                return True
        return False

    def context(self, data: Mapping[str, Any], project_dir: str) -> dict[str, Any]:
        """Arc's event context: ``event``, ``run_id``, ``workflow_name``, ``node_id``, ..."""
        failed = data.get("state") == "failed"
        context = {
            "event": self.arc_event,
            "run_id": data.get("run_id"),
            "workflow_name": data.get("dag"),
            "cwd": project_dir,
            "node_id": data.get("task_id"),
            "handler_type": data.get("type"),
            "status": data.get("state"),
            "edge_from": data.get("edge_from"),
            "edge_to": data.get("edge_to"),
            "failure_reason": data.get("error") if failed or self.event == "AttemptRetry" else None,
            "attempt": data.get("attempt"),
            "max_attempts": data.get("max_attempts"),
            "tool_name": data.get("tool_name"),
            "tool_input": data.get("tool_input") if self.event == "PreToolUse" else None,
            "tool_call_id": data.get("tool_use_id"),
            "tool_output": _text(data.get("tool_response"))
            if self.event == "PostToolUse"
            else None,
            "error_message": data.get("error") if self.event == "PostToolUseFailure" else None,
        }
        return {key: value for key, value in context.items() if value is not None}

    def context_json(self, call: HookCall) -> bytes:
        """The event context as JSON: the body of a file, stdin, a POST, a prompt."""
        return json.dumps(self.context(call.data, call.project_dir), default=str).encode()

    @property
    def gate(self) -> bool:
        """A ``blocking`` ``stage_complete``/``run_complete`` hook: its block fails them."""
        return self.blocking and self.state == "succeeded" and self.event in _GATES

    def decide(
        self, reply: ArcReply, *, exit_code: int | None = None, stderr: str = ""
    ) -> HookResult:
        """What an Arc decision means at this hook's event (a gate's block: ``GateBlocked``)."""
        decision, said, edge_to = reply
        if not self.blocking or decision == "proceed":
            return NO_OPINION
        if decision == "override":
            if self.event != "EdgeSelected":
                return NO_OPINION  # only a branch's choice can be redirected
            return HookResult(output=edge_to, reason=said, exit_code=exit_code)
        if decision == "skip" and self.event == "AttemptStart":  # that stage only
            skipped = StageSkipped(said or f"skipped by {self.source}")
            return HookResult(output=skipped, reason=said, exit_code=exit_code, stderr=stderr)
        if decision == "block" and self.gate:
            why = said or f"hook exited with code {exit_code}"
            blocked = GateBlocked(
                f"{self.arc_event} hook {self.name or self.source} blocked: {why}"
            )
            return HookResult(output=blocked, reason=why, exit_code=exit_code, stderr=stderr)
        verdict: Any = decision  # "skip" or "block"
        return HookResult(decision=verdict, reason=said, exit_code=exit_code, stderr=stderr)


ArcReply: TypeAlias = tuple[str, str | None, Any]
"""An Arc decision: (``proceed`` | ``skip`` | ``block`` | ``override``, reason, ``edge_to``)."""


@final
@attrs.frozen(kw_only=True, repr=False)
class ArcCommandHook(ArcHook):
    """An Arc command hook (see the module doc).

    Attributes:
        command: the shell command.
        sandbox: run it under bubblewrap (``sandbox = true``), or None: on the host.
        pass_env: the parent's variables (names or globs) it gets beyond the minimal
            environment: ``("*",)`` for ``sandbox = false`` (Arc runs those on the host,
            with the host's environment), else what ``load(..., pass_env=...)`` names.
    """

    exit_code_attribute: ClassVar[str | None] = ATTR_PROCESS_EXIT_CODE

    command: str
    sandbox: Sandbox | None = None
    pass_env: tuple[str, ...] = attrs.field(default=(), metadata=NOT_CONFIG)

    def describe(self) -> str:
        """Arc's event, the command, and its name."""
        return self.named(self.command)

    def environment(self, data: Mapping[str, Any], project_dir: str, path: str) -> dict[str, str]:
        """The minimal environment, with ``ARC_*`` (and ``FABRO_*``) set."""
        env = hook_environment(event=self.event, project_dir=project_dir, pass_env=self.pass_env)
        arc = {
            "EVENT": self.arc_event,
            "RUN_ID": str(data.get("run_id") or ""),
            "WORKFLOW": str(data.get("dag") or ""),
            "NODE_ID": str(data.get("task_id") or ""),
            "HOOK_CONTEXT": path,
        }
        for prefix in ("ARC_", "FABRO_"):
            env.update((prefix + key, value) for key, value in arc.items())
        return env

    async def run(self, call: HookCall) -> HookResult:
        """Write the context file, run the command, read Arc's answer."""
        body = self.context_json(call)
        fd, path = tempfile.mkstemp(prefix="arc-hook-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(body)
            wrap: list[str] = []
            if self.sandbox is not None:
                try:
                    wrap = bwrap_command(self.sandbox, project_dir=call.project_dir, skill_dir=None)
                except FileNotFoundError as exc:
                    raise HookRunError(f"could not start: {exc}") from None
                wrap[-1:] = ["--ro-bind", path, path, "--"]  # the context file, in its /tmp
            done = await run_process(
                [*wrap, *command_argv(self.command, None)],
                stdin=body,
                env=self.environment(call.data, call.project_dir, path),
                cwd=call.project_dir,
                timeout=self.timeout,
            )
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_remove, path)
        return self.answer(done)

    def answer(self, done: Completed) -> HookResult:
        """Arc's reading of an exit code and stdout.

        Raises:
            HookRunError: a non-blocking hook failed, or the decision JSON is wrong.
        """
        code = done.returncode
        if code not in (0, 2):
            reason = f"hook exited with code {code}"
            if not self.blocking:
                raise HookRunError(reason, exit_code=code, stderr=done.stderr)
            return self.decide(("block", reason, None), exit_code=code, stderr=done.stderr)
        reply = arc_decision(done.stdout)
        if reply is None:  # no JSON decision: the exit code says
            if code == 0 or not self.blocking:
                return NO_OPINION
            why = done.stderr.strip() or "hook exited with code 2"
            return self.decide(("block", why, None), exit_code=2, stderr=done.stderr)
        return self.decide(reply, exit_code=code, stderr=done.stderr)


@final
@attrs.frozen
class StageSkipped:
    """An Arc hook's ``skip`` at ``stage_start``: that stage only, as Arc skips it.

    The stage does not run and ends SUCCEEDED with no output (None), its reason among
    the task's messages; its dependents run (orchestra's ``Skip`` would skip them too).

    Attributes:
        reason: why, as the hook said it (else which hook skipped it).
    """

    reason: str


@final
@attrs.frozen
class GateBlocked:
    """A ``blocking`` ``stage_complete`` (or ``run_complete``) Arc hook blocked.

    ``stage_complete``: the stage ends FAILED with ``message`` as its error (a verify
    gate); ``run_complete``: the run's last task does (see ``_engines.run_gate``), or, when
    that task never ran its body, ``message`` is on the run's ``hook_errors``.

    Attributes:
        message: ``"stage_complete hook NAME blocked: REASON"``.
    """

    message: str


def _text(value: Any) -> str | None:
    """A tool's output as Arc gives it: a string (other values as JSON)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, default=str)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def arc_decision(stdout: bytes) -> ArcReply | None:
    """The JSON decision in ``stdout`` (or an http body), or None when there is none.

    Raises:
        HookRunError: a JSON object whose decision, reason or ``edge_to`` is wrong.
    """
    try:
        reply = json.loads(stdout) if stdout.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # plain text: no decision
    if not isinstance(reply, dict) or "decision" not in reply:
        return None
    decision, reason, edge_to = reply["decision"], reply.get("reason"), reply.get("edge_to")
    if decision not in _DECISIONS:
        raise HookRunError(f"invalid decision {decision!r}; one of {', '.join(_DECISIONS)}")
    if reason is not None and not isinstance(reason, str):
        raise HookRunError("invalid output: reason must be a string")
    if decision == "override":
        ids = edge_to if isinstance(edge_to, list) else [edge_to]
        if not ids or not all(isinstance(i, str) and i for i in ids):
            raise HookRunError("invalid output: override needs edge_to, a task id or a list")
    return decision, reason, edge_to
