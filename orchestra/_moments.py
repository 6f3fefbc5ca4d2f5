"""The moments of each hook trait, and the checks a hook object passes at registration.

For each moment: the arguments it takes, the answers it may give (those its method's
return annotation on the trait names: the one place that says it, which mypy reads too),
and, for the moments where ``Replace`` chains (``before_*``, ``after_*``), how a
``Replace`` becomes the next hook's arguments. ``check`` refuses, as pluggy does at
registration, a method whose name is close to a moment but is not one, an overridden
moment whose signature cannot take the moment's arguments, and an object that
implements no moment of the trait.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType, SimpleNamespace, UnionType
from typing import Any, Final, TypeAlias, Union, final, get_args, get_origin, get_type_hints

import attrs

from orchestra._decisions import DECISIONS, GiveOutput
from orchestra._errors import did_you_mean
from orchestra._hooks import SubagentHooks, TaskHooks

__all__ = [
    "MOMENTS",
    "BadReplace",
    "Moment",
    "check",
    "declared_answers",
    "hook_objects",
    "overrides",
]

_Args: TypeAlias = tuple[Any, ...]
_TYPO_CUTOFF: Final = 0.8  # on_fail, before_exec, after_execute_ are typos; on_enter is not


class BadReplace(Exception):
    """A ``Replace`` whose value cannot stand where it was given (internal)."""


def _inputs(args: _Args, value: Any) -> _Args:
    if type(value) is GiveOutput:  # the output given: the next hook sees the inputs as they were
        return args
    if not isinstance(value, Mapping):
        raise BadReplace(
            f"Replace({value!r}) of the inputs; a mapping of keyword arguments expected"
        )
    return (attrs.evolve(args[0], inputs=MappingProxyType(dict(value))),)


def _text(args: _Args, value: Any) -> _Args:
    if not isinstance(value, str):
        raise BadReplace(f"Replace({value!r}) of the text dispatched; a str expected")
    return (attrs.evolve(args[0], task=value),)


def _output(args: _Args, value: Any) -> _Args:
    return (args[0], value)


def _agent_output(args: _Args, value: Any) -> _Args:
    return (args[0], attrs.evolve(args[1], output=value))


def declared_answers(method: Callable[..., Any]) -> tuple[type, ...]:
    """The decisions a moment's method says it may give: those its return annotation names.

    Only the return annotation is evaluated (``typing.get_type_hints``, in the method's
    module): some parameters name types imported for type checking only (``TaskState``).
    Raises what evaluating it raises (a name that module cannot resolve: ``NameError``).
    """
    returns = SimpleNamespace(
        __annotations__={"return": method.__annotations__.get("return")},
        __globals__=getattr(method, "__globals__", {}),
    )
    annotation = get_type_hints(returns)["return"]
    named = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
    return tuple(t for t in named if t in DECISIONS.values())


def _answers(trait: type, moment: str) -> tuple[type, ...]:
    """The decisions ``trait.moment`` may give, in its return annotation's order."""
    return declared_answers(getattr(trait, moment))


def _spec(trait: type, name: str, params: tuple[str, ...], chain: Any = None) -> Moment:
    return Moment(params=params, allowed=_answers(trait, name), chain=chain)


@final
@attrs.frozen(kw_only=True)
class Moment:
    """One moment of a trait (internal).

    Attributes:
        params: the names of its arguments, after ``self``.
        allowed: the answers it may give besides None.
        chain: for a moment where ``Replace`` chains, the next hook's arguments from the
            arguments and a ``Replace``'s value (raises ``BadReplace`` for a bad value);
            None where the first ``Replace`` wins.
    """

    params: tuple[str, ...]
    allowed: tuple[type, ...]
    chain: Callable[[_Args, Any], _Args] | None = None


MOMENTS: Final[Mapping[type, Mapping[str, Moment]]] = {
    TaskHooks: {
        "before_run": _spec(TaskHooks, "before_run", ("ctx",)),
        "before_execute": _spec(TaskHooks, "before_execute", ("ctx",), _inputs),
        "after_execute": _spec(TaskHooks, "after_execute", ("ctx", "result"), _output),
        "on_failure": _spec(TaskHooks, "on_failure", ("ctx", "error")),
        "on_end": _spec(TaskHooks, "on_end", ("ctx", "state")),
        "after_run": _spec(TaskHooks, "after_run", ("ctx", "result")),
    },
    SubagentHooks: {
        "before_dispatch": _spec(SubagentHooks, "before_dispatch", ("ctx",), _text),
        "after_dispatch": _spec(SubagentHooks, "after_dispatch", ("ctx", "result"), _agent_output),
        "on_failure": _spec(SubagentHooks, "on_failure", ("ctx", "error")),
    },
}
"""The moments of each trait, in the order they happen."""

# Every trait's do-nothing method, by moment: an object "implements" a moment only with a
# method of its own (TaskHooks.on_failure is no SubagentHooks.on_failure).
_DEFAULTS: Final[dict[str, set[object]]] = {}
for _trait, _moments in MOMENTS.items():
    for _moment in _moments:
        _DEFAULTS.setdefault(_moment, set()).add(getattr(_trait, _moment))
del _trait, _moments, _moment


def overrides(hook: object, moment: str) -> bool:
    """Whether ``hook`` has a ``moment`` method of its own (not a trait's default)."""
    return callable(getattr(hook, moment, None)) and (
        getattr(type(hook), moment, None) not in _DEFAULTS[moment]
    )


def _is_hook(value: object) -> bool:
    """Whether ``value`` is one hook object (or class): any trait's, or with a moment."""
    return any(isinstance(value, t) for t in MOMENTS) or any(
        callable(getattr(value, moment, None)) for moments in MOMENTS.values() for moment in moments
    )


def hook_objects(hooks: Iterable[object]) -> list[object]:
    """``hooks`` as a list, refusing a class or a single hook where the list belongs.

    Raises:
        TypeError: naming the fix: ``hooks=[H]`` (a class) wants ``hooks=[H()]``,
            ``hooks=H()`` (one hook) wants ``hooks=[H()]``.
    """
    if isinstance(hooks, type):
        raise TypeError(
            f"hooks={hooks.__name__} is a class, where a list of hook objects belongs: "
            f"write hooks=[{hooks.__name__}()]"
        )
    if _is_hook(hooks):
        name = type(hooks).__name__
        raise TypeError(
            f"hooks={name}() is one hook, where a list of hook objects belongs: "
            f"write hooks=[{name}()]"
        )
    try:
        found = list(hooks)
    except TypeError:
        raise TypeError(
            f"hooks must be a list of hook objects, got {type(hooks).__name__} {hooks!r}"
        ) from None
    for hook in found:
        if isinstance(hook, type):
            raise TypeError(
                f"hooks=[..., {hook.__name__}, ...] holds the class {hook.__name__}, where a "
                f"hook object belongs: write {hook.__name__}() (an instance)"
            )
    return found


def check(hook: object, trait: type) -> tuple[str, ...]:
    """Check ``hook`` for ``trait``; return the moments it implements.

    Raises:
        TypeError: naming the object, the method and what is wrong: a public method whose
            name is close to a moment (a typo), an overridden moment whose signature
            cannot take the moment's arguments, an object of another trait only, or an
            object that implements no moment of ``trait``.
    """
    moments = MOMENTS[trait]
    name = type(hook).__name__
    for attr in _own_methods(type(hook)):
        hint = did_you_mean(attr, moments, cutoff=_TYPO_CUTOFF)
        if hint:
            raise TypeError(
                f"{name}.{attr} is not a moment of {trait.__name__}{hint}: rename it, or "
                f"make it private (_{attr}) if it is a helper"
            )
    implemented = tuple(m for m in moments if overrides(hook, m))
    for moment in implemented:
        _check_signature(hook, name, trait, moment, moments[moment].params)
    others = [t.__name__ for t in MOMENTS if t is not trait and isinstance(hook, t)]
    if others and not isinstance(hook, trait):
        raise TypeError(
            f"{hook!r} is not a {trait.__name__} but a {others[0]}: this engine would never call it"
        )
    if not implemented and not isinstance(hook, trait):
        raise TypeError(
            f"{hook!r} is not a {trait.__name__}: it implements none of its moments; "
            f"subclass {trait.__name__} and override one of {', '.join(moments)}"
        )
    return implemented


def _own_methods(cls: type) -> list[str]:
    """Public methods a hook class defines (or inherits from non-trait bases)."""
    known = {moment for moments in MOMENTS.values() for moment in moments}
    found: list[str] = []
    for klass in cls.__mro__:
        if klass in MOMENTS or klass is object:
            continue
        for attr, value in vars(klass).items():
            if attr.startswith("_") or attr in known or attr in found:
                continue
            if inspect.isfunction(value) or isinstance(value, staticmethod | classmethod):
                found.append(attr)
    return found


def _check_signature(
    hook: object, name: str, trait: type, moment: str, params: tuple[str, ...]
) -> None:
    method = getattr(hook, moment)
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check
        return
    try:
        signature.bind(*params)
    except TypeError:
        raise TypeError(
            f"{name}.{moment}{signature} cannot take the arguments of "
            f"{trait.__name__}.{moment}(self, {', '.join(params)})"
        ) from None
