"""``HookSpec``: what every hook type shares; ``HookCall`` (``_protocol.call``) re-exported.

Each hook type is one frozen attrs class below ``HookSpec`` (``CommandHook``,
``HttpHook``, ...) with its own fields, the reading of those fields from a config
(``parse_fields``) and its runner (``run``). Adding a type is one new class and one
entry in ``HOOK_CLASSES``; nothing else branches on the type.

The fields of a class are its whole identity: ``key()`` is derived from
``attrs.fields``, so two hooks that differ in any field (a new one included) are never
merged as duplicates. A field's ``metadata`` can say more:

- ``config=False``: not a config key of its own name (``event``, ``matcher``, where the
  hook was written);
- ``key=None``: not part of the identity (where the hook was written, the compiled
  matcher); ``key=f``: compared as ``f(value)`` (e.g. headers in any order).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeAlias

import attrs

from orchestra.skills._config.matchers import (
    ClaudeMatcher,
    Matcher,
    compile_claude_matcher,
    compile_matcher,
)
from orchestra.skills._config.permission_rule import PermissionRule
from orchestra.skills._config.yaml import kind
from orchestra.skills._protocol.call import HookCall, event_data, event_json, utc_timestamp
from orchestra.skills._protocol.catalog import EVENTS, EventSpec, OnError, Phase, unknown_event

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry
    from orchestra.skills._protocol.result import HookResult

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_TIMEOUT",
    "NOT_CONFIG",
    "PHASES",
    "HookCall",
    "HookSpec",
    "check_phase",
    "check_timeout",
    "event_data",
    "event_json",
    "key_by",
    "utc_timestamp",
]

DEFAULT_TIMEOUT: Final = 10.0
"""A hook's timeout when it sets none, in seconds."""
MAX_TIMEOUT: Final = 300.0
"""The longest timeout a hook of an orchestra config may set, in seconds."""
CLAUDE_MAX_TIMEOUT: Final = 3600.0
"""The longest timeout of a hook from a Claude Code file (whose command default is 600 s)."""

NOT_CONFIG: Final[Mapping[str, Any]] = {"config": False}
_WHERE: Final[Mapping[str, Any]] = {"config": False, "key": None}


def key_by(normalize: Callable[[Any], Any]) -> Mapping[str, Any]:
    """Field metadata: compare the field's values as ``normalize(value)`` in ``key()``."""
    return {"key": normalize}


def check_timeout(value: object, limit: float = MAX_TIMEOUT) -> str | None:
    """What is wrong with a timeout (at most ``limit`` seconds), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected seconds, got {kind(value)}"
    if not 0 < value <= limit:
        return f"must be in (0, {limit:g}] seconds, got {value!r}"
    return None


def _known_event(_hook: object, _field: object, event: str) -> None:
    if event not in EVENTS:
        raise unknown_event(event)


def _valid_timeout(hook: HookSpec, _field: object, timeout: float) -> None:
    error = check_timeout(timeout, CLAUDE_MAX_TIMEOUT if hook.claude_code else MAX_TIMEOUT)
    if error is not None:
        raise ValueError(f"timeout: {error}")


def _valid_id(_hook: object, _field: object, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"id: expected a non-empty string, got {value!r}")


def _valid_on_error(hook: HookSpec, _field: object, on_error: OnError) -> None:
    if on_error not in ("continue", "block", "raise"):
        raise ValueError(f"on_error: expected continue, block or raise, got {on_error!r}")
    if on_error == "raise" and hook.claude_code:
        raise ValueError("on_error: raise is orchestra's; a Claude Code hook has none")


PHASES: Final[tuple[Phase, ...]] = ("transform", "guard")


def check_phase(
    cls: type[HookSpec], spec: EventSpec, phase: str | None, on_error: str | None
) -> tuple[str, str] | None:
    """What is wrong with a hook's phase, as (field, message), or None.

    Args:
        cls: the hook's type.
        spec: its event.
        phase: its ``phase`` (None: it has none).
        on_error: the ``on_error`` it sets (None: it sets none).
    """
    if phase is None:
        return None
    if not spec.phases:
        with_phases = " and ".join(name for name, event in EVENTS.items() if event.phases)
        return "phase", f"{spec.name} has no phases (only {with_phases})"
    if phase == "transform" and not cls.can_transform:
        return "phase", f"a {cls.type} hook cannot rewrite the input; it cannot be a transform"
    if phase == "guard" and on_error in ("continue", "raise"):
        return "on_error", f"a guard fails closed: on_error: {on_error} is not allowed"
    return None


def _valid_phase(hook: HookSpec, _field: object, phase: Phase | None) -> None:
    if phase is not None and phase not in PHASES:
        raise ValueError(f"phase: expected transform or guard, got {phase!r}")
    spec = EVENTS.get(hook.event)  # an unknown event is refused by its own validator
    problem = check_phase(type(hook), spec, phase, hook.on_error) if spec else None
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")


def _default_on_error(hook: HookSpec) -> OnError:
    spec = EVENTS.get(hook.event)  # an unknown event is refused by its validator
    return "continue" if spec is None else spec.on_error_for(hook.phase, hook.fails_open)


def _condition(hook: HookSpec) -> PermissionRule | None:
    return None if hook.if_rule is None else PermissionRule(hook.if_rule)


def _compiled(hook: HookSpec) -> Matcher | ClaudeMatcher | None:
    if hook.matcher is None:
        return None
    if hook.claude_code:  # Claude Code's rules: an exact list, or a searched regex
        claude = EVENTS[hook.event].claude
        if claude.matcher_field is None:
            return None  # Claude Code ignores a matcher on an event without matchers
        base_name = hook.event == "FileChanged"
        return compile_claude_matcher(hook.matcher, claude.exact_chars, base_name)
    pattern, error = compile_matcher(hook.matcher)
    if error is not None:
        raise ValueError(f"matcher: {error}")
    return pattern


@attrs.frozen(kw_only=True, repr=False)
class HookSpec:
    """One hook: when it runs (event, matcher), how long it may take, what an error means.

    The base of every hook type (``CommandHook``, ``PromptHook``, ``PermissionHook``,
    ``HttpHook``, ``McpToolHook``); each adds its own fields.

    Attributes:
        type: the type's name in a config (``"command"``, ...), a class attribute.
        event: the event it runs at, e.g. ``"PreToolUse"``.
        matcher: the matcher pattern, or None for every value.
        timeout: seconds the hook may take.
        phase: on events with phases (``PreToolUse``, ``PermissionRequest``):
            ``"transform"`` (runs before every other hook and may only rewrite the
            input), ``"guard"`` (runs after the transforms, judges the final input: it
            runs again when a later hook rewrites it, and fails closed), or None.
        on_error: what a hook error means: ``"continue"``, ``"block"`` or ``"raise"``
            (``fire`` raises a ``CriticalHookError`` once the event's other hooks ran;
            default: ``"block"`` for a guard, else the event's, see
            ``EventSpec.default_on_error``).
        file: the config file it comes from.
        line: the line its entry starts on in that file (1-based).
        skill_dir: the folder of the ``SKILL.md`` it comes from, None for a config file.
        status_message: what to show while it runs (Claude Code's ``statusMessage``).
        background: Claude Code's ``async``: it runs beside the event's other hooks and
            its answer cannot block or modify anything (its messages are kept).
        once: it runs at most once per registry (Claude Code's ``once``).
        plugin_root: the Claude Code plugin it comes from, exported as
            ``CLAUDE_PLUGIN_ROOT``; None otherwise.
        claude_code: it comes from a Claude Code file (whose timeouts may reach
            ``CLAUDE_MAX_TIMEOUT``, whose matcher follows Claude Code's rules).
        if_rule: Claude Code's ``if``: one permission rule (``Bash(rm *)``,
            ``Edit(*.ts)``) the tool call must match for the hook to run.
        enforce: False for a hook in audit mode (``enforce: false``): it runs as usual,
            what it decided is kept on ``HookOutcome.audited`` and on its span, and the
            outcome is as if it had not answered.
        id: the hook's id (``id:``), sent by http hooks as ``hook_id``; None: see
            ``hook_id``.
        position: where an orchestra config file has the hook, as
            ``FILE#Event/GROUP/HOOK`` (``orchestra.yaml#PreToolUse/0/1``: the second hook
            of the first matcher group of ``PreToolUse``), None for other sources.
        pattern: the compiled matcher, None for every value.
        condition: the compiled ``if_rule``, or None.
    """

    type: ClassVar[str] = ""
    can_transform: ClassVar[bool] = True
    """It can answer a ``modified_input``, so it may be a ``phase: transform`` hook."""
    exit_code_attribute: ClassVar[str | None] = None
    """The span attribute a record's ``exit_code`` goes to, if it means one."""
    in_process: ClassVar[bool] = False
    """The hook answers in-process (a function call, a fixed answer)."""
    filters: ClassVar[bool] = False
    """The hook picks its events from the whole payload (``selects``), not only by matcher."""
    fails_open: ClassVar[bool] = False
    """Without an ``on_error``, its errors continue on every event (lobehub's webhooks),
    but as a ``phase: guard`` hook, which fails closed."""
    in_order: ClassVar[bool] = False
    """Its source runs an event's hooks one after the other, in list order (the graph
    executor's): each in its own stage, even on events whose hooks otherwise run at once."""

    event: str = attrs.field(validator=_known_event, metadata=NOT_CONFIG)
    matcher: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    timeout: float = attrs.field(default=DEFAULT_TIMEOUT, validator=_valid_timeout)
    phase: Phase | None = attrs.field(default=None, validator=_valid_phase)
    on_error: OnError = attrs.field(
        default=attrs.Factory(_default_on_error, takes_self=True),
        validator=_valid_on_error,
    )
    file: str = attrs.field(default="<python>", metadata=_WHERE)
    line: int = attrs.field(default=0, metadata=_WHERE)
    skill_dir: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    status_message: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    background: bool = attrs.field(default=False, metadata=NOT_CONFIG)
    once: bool = attrs.field(default=False, metadata=NOT_CONFIG)
    plugin_root: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    claude_code: bool = attrs.field(default=False, metadata=NOT_CONFIG)
    enforce: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))
    if_rule: str | None = attrs.field(default=None, metadata=NOT_CONFIG)
    id: str | None = attrs.field(default=None, validator=_valid_id)
    position: str | None = attrs.field(default=None, metadata=_WHERE)
    pattern: Matcher | ClaudeMatcher | None = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(_compiled, takes_self=True),
        metadata=_WHERE,
    )
    condition: PermissionRule | None = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(_condition, takes_self=True),
        metadata=_WHERE,
    )

    def __repr__(self) -> str:
        matcher = f" {self.matcher!r}" if self.matcher is not None else ""
        return f"<{type(self).__name__} {self.event}{matcher} at {self.source}>"

    @property
    def source(self) -> str:
        """Where the hook was defined, as ``file:line``."""
        return f"{self.file}:{self.line}"

    @property
    def hook_id(self) -> str:
        """The hook's id: its ``id``, else its ``position``, else its ``source``.

        A position stays the same while lines are added above the hook; set ``id:`` for
        an id that survives reordering, or moving the file.
        """
        return self.id or self.position or self.source

    def key(self) -> tuple[Any, ...]:
        """What makes two hooks identical: the type and every field but where it was written."""
        return (type(self), *(f(getattr(self, name)) for name, f in _key_fields(type(self))))

    def matches(self, value: str | None) -> bool:
        """Whether the hook runs for an event whose matcher field is ``value``."""
        pattern = self.pattern
        return pattern is None or (value is not None and pattern.matches(value))

    def admits(self, payload: Mapping[str, Any]) -> bool:
        """Whether the hook's ``if`` rule (Claude Code's) lets it run for ``payload``.

        Only tool events evaluate it; on any other event a hook with an ``if`` never
        runs, as Claude Code documents.
        """
        condition = self.condition
        if condition is None:
            return True
        return EVENTS[self.event].matcher_field == "tool_name" and condition.admits(payload)

    def selects(self, payload: Mapping[str, Any]) -> bool:
        """Whether the hook runs for this payload, beyond its matcher (``filters`` hooks).

        The seeds' formats match on more than one field (a graph node's id or type, an
        Arc stage's id or handler type) or split one event in two (``run_complete`` and
        ``run_failed`` are ``RunEnd``'s two states).
        """
        return True

    @property
    def external(self) -> bool:
        """It runs a process or a request: it takes one of the ``max_parallel_hooks`` slots."""
        return not self.in_process

    def phase_error(self, result: HookResult) -> str | None:
        """Why a result breaks the hook's phase (a hook error), or None."""
        if self.phase == "transform" and result.decision is not None:
            return (
                f"a transform may only rewrite the input; it answered decision: {result.decision}"
            )
        if self.phase == "guard" and result.modified_input is not None:
            return "a guard may not rewrite the input"
        return None

    def warnings(self) -> tuple[str, ...]:
        """What may keep the hook from running on this machine (``hooks validate``)."""
        return ()

    def describe(self) -> str:
        """What the hook does, in one line (``orchestra hooks list``)."""
        raise NotImplementedError

    def keeps_timeout(self) -> bool:
        """Whether ``run`` keeps the hook's timeout itself (then no guard timer is set).

        True for hooks that answer in-process, and for those that time themselves.
        """
        return self.in_process

    @classmethod
    def config_fields(cls) -> tuple[str, ...]:
        """The config keys of this hook type, ``type`` included."""
        return ("type", *(f.name for f in attrs.fields(cls) if f.metadata.get("config", True)))

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read this type's own fields from a config entry, reporting problems on it.

        The common fields (``timeout``, ``on_error``) are read by the caller.

        Args:
            entry: the hook's mapping in the config, with its lines.

        Returns:
            The keyword arguments of the type's own fields (meaningless if a problem
            was reported).
        """
        raise NotImplementedError

    async def run(self, call: HookCall) -> HookResult:
        """Run the hook once for an event and read its answer.

        Raises:
            HookRunError: the hook could not give an answer.
        """
        raise NotImplementedError


def _plain_key(value: Any) -> Any:
    if isinstance(value, Mapping):  # unhashable; compared by content
        return json.dumps(value, sort_keys=True, default=repr)
    return value


_KeyFields: TypeAlias = tuple[tuple[str, Callable[[Any], Any]], ...]
_KEY_FIELDS: Final[dict[type[HookSpec], _KeyFields]] = {}


def _key_fields(cls: type[HookSpec]) -> _KeyFields:
    """The fields of ``key()`` for a hook class, with how each compares (computed once)."""
    found = _KEY_FIELDS.get(cls)
    if found is None:
        found = _KEY_FIELDS[cls] = tuple(
            (field.name, field.metadata.get("key", _plain_key))
            for field in attrs.fields(cls)
            if field.metadata.get("key", _plain_key) is not None
        )
    return found
