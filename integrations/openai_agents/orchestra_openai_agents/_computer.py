"""The SDK's ``ComputerTool``, guarded action by action with the model's real input (internal).

``guard_agent`` gives a ``ComputerTool`` a copy whose computer is made per run (the SDK
resolves it per run context) as a ``GuardedComputer`` around the user's (an instance, a
factory or a ``ComputerProvider``, disposed as its provider says). Each action the model
asks (``click``, ``double_click``, ``drag``, ``keypress``, ``move``, ``scroll``, ``type``,
``wait``) first goes through ``PreToolUse`` with ``tool_name`` the tool's name and
``tool_input`` the action as the model sent it (``{"type": "click", "x", "y",
"button"}``, ``{"type": "type", "text"}``, ``{"type": "drag", "path": [{"x", "y"}]}``,
...); the screenshot the SDK takes after the actions is not judged (it reads the screen).

A refused action (a deny, a block, an unsettled ``ask``, a ``modified_input`` the bridge
cannot map back onto a driver call) is not performed and the run goes on: the call's
output is still the screenshot (of a screen the action never touched), and a run of the
bridge (``OrchestraRunHooks.run``/``run_streamed``) tells the model why: its
``call_model_input_filter`` puts the refusal (``Tool call denied: {reason}``) as a
message right after that call's output, in every later model call of the run. Run by
``Runner.run(..., hooks=bridge)`` directly, the action is refused all the same, but no
message tells the model. A mock ``output`` is what that message says instead.
"""

from __future__ import annotations

import contextvars
import dataclasses
import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, final

from agents import AsyncComputer, ComputerProvider, ComputerTool

from orchestra_openai_agents._guard import ToolGuard
from orchestra_openai_agents._local import Gate, Gated

__all__ = [
    "GuardedComputer",
    "guard_computer_tool",
    "guards_a_computer",
    "is_guarded_computer",
    "with_computer_notes",
]

_FIELDS: Final = ("x", "y", "button", "text", "keys", "scroll_x", "scroll_y", "path")


@final
class _Note:
    """A refused action: what the model is told, and the call it was part of (once found)."""

    __slots__ = ("action", "call_id", "text")

    def __init__(self, action: dict[str, Any], text: str) -> None:
        self.action = action
        self.text = text
        self.call_id: str | None = None


_notes: contextvars.ContextVar[list[_Note] | None] = contextvars.ContextVar(
    "orchestra_openai_agents_computer_notes", default=None
)


class GuardedComputer(AsyncComputer):
    """A computer whose every action asks the policy first (``guard_computer_tool``)."""

    def __init__(self, inner: Any, gate: Gate, context: Any) -> None:
        """Guard ``inner`` (a ``Computer`` or ``AsyncComputer``) for one run context."""
        self.inner = inner
        self.gate = gate
        self.context = context

    @property
    def environment(self) -> Any:
        """The inner computer's."""
        return self.inner.environment

    @property
    def dimensions(self) -> Any:
        """The inner computer's."""
        return self.inner.dimensions

    async def screenshot(self) -> str:
        """The inner computer's screenshot (not judged: it reads the screen)."""
        return str(await _call(self.inner.screenshot, (), {}))

    async def _act(self, kind: str, given: dict[str, Any], args: tuple[Any, ...], kw: Any) -> None:
        ran: list[bool] = []

        async def run() -> Any:
            ran.append(True)
            return await _call(getattr(self.inner, kind), args, kw)

        action = {"type": kind, **{k: v for k, v in given.items() if v is not None}}
        answer = await self.gate.call(self.context, None, action, run)
        notes = _notes.get()
        if not ran and notes is not None:
            notes.append(_Note(action, str(answer)))

    async def click(self, x: int, y: int, button: Any, **kw: Any) -> None:
        """Click, if the policy allows it."""
        await self._act("click", {"x": x, "y": y, "button": button, **kw}, (x, y, button), kw)

    async def double_click(self, x: int, y: int, **kw: Any) -> None:
        """Double-click, if the policy allows it."""
        await self._act("double_click", {"x": x, "y": y, **kw}, (x, y), kw)

    async def scroll(self, x: int, y: int, scroll_x: int, scroll_y: int, **kw: Any) -> None:
        """Scroll, if the policy allows it."""
        given = {"x": x, "y": y, "scroll_x": scroll_x, "scroll_y": scroll_y, **kw}
        await self._act("scroll", given, (x, y, scroll_x, scroll_y), kw)

    async def type(self, text: str) -> None:
        """Type ``text``, if the policy allows it."""
        await self._act("type", {"text": text}, (text,), {})

    async def wait(self) -> None:
        """Wait, if the policy allows it."""
        await self._act("wait", {}, (), {})

    async def move(self, x: int, y: int, **kw: Any) -> None:
        """Move the pointer, if the policy allows it."""
        await self._act("move", {"x": x, "y": y, **kw}, (x, y), kw)

    async def keypress(self, keys: list[str]) -> None:
        """Press ``keys``, if the policy allows it."""
        await self._act("keypress", {"keys": list(keys)}, (keys,), {})

    async def drag(self, path: list[tuple[int, int]], **kw: Any) -> None:
        """Drag along ``path``, if the policy allows it."""
        points = [{"x": x, "y": y} for x, y in path]
        await self._act("drag", {"path": points, **kw}, (path,), kw)


async def _call(method: Callable[..., Any], args: tuple[Any, ...], kw: Mapping[str, Any]) -> Any:
    """The inner driver's method, with the keyword arguments it takes (a sync one too)."""
    params = inspect.signature(method).parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        names = {p.name for p in inspect.signature(method).parameters.values()}
        kw = {k: v for k, v in kw.items() if k in names}
    result = method(*args, **kw)
    return await result if inspect.isawaitable(result) else result


@final
class _Make(Gated):
    """The guarded tool's ``create``: the user's computer for this run, guarded.

    ``inner`` is the tool's computer: an instance, a factory or a ``ComputerProvider``.
    """

    __slots__ = ()

    async def __call__(self, *, run_context: Any) -> GuardedComputer:
        config = self.inner
        create = config.create if isinstance(config, ComputerProvider) else config
        inner = create(run_context=run_context) if callable(create) else create
        inner = await inner if inspect.isawaitable(inner) else inner
        return GuardedComputer(inner, self.gate, run_context)


@final
class _Dispose:
    """The user's provider's ``dispose``, given the computer it made."""

    __slots__ = ("inner",)

    def __init__(self, inner: Callable[..., Any]) -> None:
        self.inner = inner

    async def __call__(self, *, run_context: Any, computer: Any) -> None:
        given = computer.inner if isinstance(computer, GuardedComputer) else computer
        result = self.inner(run_context=run_context, computer=given)
        if inspect.isawaitable(result):
            await result


def is_guarded_computer(tool: object) -> bool:
    """Whether ``tool`` is a ``ComputerTool`` guarded here (before or after the SDK made it)."""
    if not isinstance(tool, ComputerTool):
        return False
    config = tool.computer
    return isinstance(config, GuardedComputer) or isinstance(getattr(config, "create", None), _Make)


def guard_computer_tool(tool: ComputerTool[Any], guard: ToolGuard) -> ComputerTool[Any]:
    """A copy of ``tool`` whose computer asks ``guard`` before each action."""
    if is_guarded_computer(tool):
        return tool
    config = tool.computer
    gate = Gate(guard, tool.name, "ComputerTool")
    dispose = config.dispose if isinstance(config, ComputerProvider) else None
    provider = ComputerProvider(
        create=_Make(config, gate), dispose=None if dispose is None else _Dispose(dispose)
    )
    return dataclasses.replace(tool, computer=provider)


def guards_a_computer(agent: Any) -> bool:
    """Whether ``agent`` or an agent it hands off to has a ``ComputerTool``."""
    seen: set[int] = set()
    todo = [agent]
    while todo:
        one = todo.pop()
        if id(one) in seen:
            continue
        seen.add(id(one))
        if any(isinstance(t, ComputerTool) for t in getattr(one, "tools", ())):
            return True
        todo.extend(getattr(h, "agent", h) for h in getattr(one, "handoffs", ()))
    return False


def _matches(note: _Note, action: Any) -> bool:
    if not isinstance(action, Mapping) or action.get("type") != note.action["type"]:
        return False
    for name in _FIELDS:
        mine, theirs = note.action.get(name), action.get(name)
        if mine is not None and theirs is not None and name != "path" and mine != theirs:
            return False
    return True


def _pair(notes: list[_Note], items: list[Any]) -> None:
    """Find, for each refused action not yet placed, the model's call that asked it."""
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "computer_call":
            continue
        actions = item.get("actions") or [item.get("action")]
        taken = {n.call_id for n in notes}
        for note in notes:
            free = note.call_id is None and item.get("call_id") not in taken
            if free and any(_matches(note, a) for a in actions):
                note.call_id = str(item.get("call_id"))


def _told(notes: list[_Note], items: list[Any]) -> list[Any]:
    """The items with each placed refusal as a message after its call's output."""
    _pair(notes, items)
    told: list[Any] = []
    for item in items:
        told.append(item)
        if isinstance(item, Mapping) and item.get("type") == "computer_call_output":
            for note in notes:
                if note.call_id == item.get("call_id"):
                    told.append({"role": "user", "content": _text(note)})
    return told


def _text(note: _Note) -> str:
    return (
        f"[the computer action {note.action['type']} was not performed] {note.text} "
        "(the screenshot shows the screen without it)"
    )


def with_computer_notes(config: Any) -> Any:
    """``run_config`` (a ``RunConfig`` or None) whose model input carries the refusals."""
    from agents import RunConfig
    from agents.run_config import ModelInputData

    config = config if isinstance(config, RunConfig) else RunConfig(**(config or {}))
    notes: list[_Note] = []
    _notes.set(notes)  # the run's computer actions add theirs (a run sets a new list)
    user = config.call_model_input_filter

    async def tell(data: Any) -> Any:
        if user is not None:
            given = user(data)
            data = dataclasses.replace(
                data, model_data=await given if inspect.isawaitable(given) else given
            )
        if not notes:
            return data.model_data
        model = data.model_data
        return ModelInputData(
            input=_told(notes, list(model.input)), instructions=model.instructions
        )

    return dataclasses.replace(config, call_model_input_filter=tell)
