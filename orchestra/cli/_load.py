"""Load what ``orchestra run FILE.py[:NAME]`` runs: the DAG and what goes with it.

The file is imported as a module. What runs is, in this order:

- ``FILE.py:NAME`` where ``NAME`` is a DAG: that DAG;
- ``FILE.py:NAME`` where ``NAME`` is a function: a factory, called to build the run (see
  below);
- ``FILE.py`` alone: the file's only module-level DAG, else its factory named ``build``.

Beside the DAG, the module may define ``hooks`` (``TaskHooks`` objects), ``agents``
(subagents, from which the command builds a ``Dispatcher``), ``agent_hooks``
(``SubagentHooks`` for that dispatcher), ``dispatcher`` (a ready ``Dispatcher`` instead)
and ``tools`` (a dict of tool functions that ``--hooks`` guards in place).

A factory takes no argument, or a ``dispatcher`` argument (it gets the ``Dispatcher`` the
command built from ``agents``, for DAGs whose tasks dispatch work themselves). It returns
a DAG, a ``(dag, hooks)`` pair, or a mapping with a ``dag`` key and any of ``hooks``,
``tools``; what it returns replaces the module's own ``hooks`` and ``tools``.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Final, final

import attrs
import click

from orchestra import DAG
from orchestra._errors import did_you_mean

__all__ = ["RunTarget", "Spec", "build_spec", "find_target", "load_module"]

#: The factory ``orchestra run FILE.py`` calls when the file defines no DAG of its own.
DEFAULT_FACTORY: Final = "build"

_SPEC_KEYS: Final = frozenset({"dag", "hooks", "tools"})


def load_module(path: Path) -> ModuleType:
    """Import ``path`` as a module (its folder first on ``sys.path``, for its imports).

    Raises:
        click.ClickException: the file cannot be imported; the message names the file,
            the line in it and the error, without a traceback of orchestra's own frames.
    """
    path = path.resolve()
    name = f"_orchestra_run_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise click.BadParameter(f"{path} is not a Python file", param_hint="FILE")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise click.ClickException(f"could not load {path}: {_describe(exc, path)}") from exc
    return module


@final
@attrs.frozen(kw_only=True)
class RunTarget:
    """What ``FILE.py[:NAME]`` names: a DAG, or a factory that builds the run.

    Attributes:
        dag: the DAG, when the target is one.
        factory: the factory, when the target is a function.
        label: ``FILE.py:NAME`` as the user would write it, for messages.
    """

    dag: DAG | None = None
    factory: Callable[..., Any] | None = None
    label: str

    @property
    def wants_dispatcher(self) -> bool:
        """Whether the factory takes the ``dispatcher`` the command builds."""
        if self.factory is None:
            return False
        return "dispatcher" in inspect.signature(self.factory).parameters


@final
@attrs.frozen(kw_only=True)
class Spec:
    """A run ready to start: the DAG, its hooks and the tools to guard.

    Attributes:
        dag: the DAG to run.
        hooks: ``TaskHooks`` objects for the run (before the YAML hooks).
        tools: tool functions by name, guarded in place by ``--hooks``; or None.
    """

    dag: DAG
    hooks: tuple[object, ...] = ()
    tools: Any = None


def _definitions(module: ModuleType) -> tuple[list[str], list[str]]:
    """The module's DAG names and the names of the functions it defines itself."""
    dags = sorted(k for k, v in vars(module).items() if isinstance(v, DAG))
    functions = sorted(
        k
        for k, v in vars(module).items()
        if inspect.isfunction(v) and v.__module__ == module.__name__ and not k.startswith("_")
    )
    return dags, functions


def _what_it_defines(module: ModuleType) -> str:
    dags, functions = _definitions(module)
    plural = "s" if len(dags) != 1 else ""
    text = f"{len(dags)} DAG{plural} ({', '.join(dags)})" if dags else "no DAG"
    if functions:
        text += f" and the functions {', '.join(functions)}"
    return text


def find_target(module: ModuleType, name: str | None, where: str) -> RunTarget:
    """What ``where[:name]`` names in ``module``; a clear ``click.BadParameter`` otherwise."""
    if name is None:
        dags = {id(v): (k, v) for k, v in vars(module).items() if isinstance(v, DAG)}
        if len(dags) == 1:
            key, dag = next(iter(dags.values()))
            return RunTarget(dag=dag, label=f"{where}:{key}")
        if not dags and callable(getattr(module, DEFAULT_FACTORY, None)):
            return find_target(module, DEFAULT_FACTORY, where)
        hint = (
            f"pick one with {where}:NAME"
            if dags
            else f"define a DAG at module level or a factory {DEFAULT_FACTORY}() that "
            f"returns one, or name a factory with {where}:NAME"
        )
        raise click.BadParameter(
            f"{where} defines {_what_it_defines(module)}: {hint}", param_hint="FILE"
        )
    label = f"{where}:{name}"
    if not hasattr(module, name):
        dag_names, functions = _definitions(module)
        raise click.BadParameter(
            f"{where} has no {name!r}{did_you_mean(name, [*dag_names, *functions])}; "
            f"it defines {_what_it_defines(module)}",
            param_hint="FILE",
        )
    target = getattr(module, name)
    if isinstance(target, DAG):
        return RunTarget(dag=target, label=label)
    if callable(target):
        return RunTarget(factory=target, label=label)
    raise click.BadParameter(
        f"{label} is a {type(target).__name__}, not a DAG or a function returning one; "
        f"{where} defines {_what_it_defines(module)}",
        param_hint="FILE",
    )


def build_spec(target: RunTarget, module: ModuleType, dispatcher: object | None) -> Spec:
    """Call the target's factory if it has one, and gather the run's hooks and tools.

    Raises:
        click.ClickException: the factory raised, takes arguments the command cannot give,
            or returned something else than a DAG, a ``(dag, hooks)`` pair or a mapping
            with a ``dag`` key.
    """
    hooks = tuple(getattr(module, "hooks", ()) or ())
    tools = getattr(module, "tools", None)
    if target.dag is not None:
        return Spec(dag=target.dag, hooks=hooks, tools=tools)
    assert target.factory is not None
    kwargs = _factory_arguments(target, dispatcher)
    try:
        made = target.factory(**kwargs)
    except Exception as exc:
        raise click.ClickException(f"{target.label}() raised {_describe(exc)}") from exc
    if isinstance(made, DAG):
        return Spec(dag=made, hooks=hooks, tools=tools)
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], DAG):
        return Spec(dag=made[0], hooks=tuple(made[1]), tools=tools)
    if isinstance(made, Mapping) and isinstance(made.get("dag"), DAG):
        unknown = sorted(set(made) - _SPEC_KEYS)
        if unknown:
            raise click.ClickException(
                f"{target.label}() returned unknown keys {unknown}; "
                f"expected {sorted(_SPEC_KEYS)}{did_you_mean(str(unknown[0]), _SPEC_KEYS)}"
            )
        return Spec(
            dag=made["dag"],
            hooks=tuple(made.get("hooks", hooks) or ()),
            tools=made.get("tools", tools),
        )
    raise click.ClickException(
        f"{target.label}() returned {type(made).__name__}; expected a DAG, a (dag, hooks) "
        "pair or a mapping with a 'dag' key"
    )


def _factory_arguments(target: RunTarget, dispatcher: object | None) -> dict[str, Any]:
    assert target.factory is not None
    try:
        parameters = inspect.signature(target.factory).parameters
    except (TypeError, ValueError):
        return {}
    kwargs: dict[str, Any] = {}
    for param in parameters.values():
        if param.name == "dispatcher":
            if dispatcher is None:
                raise click.ClickException(
                    f"{target.label}() takes a dispatcher, but the file defines no 'agents' "
                    "(or 'dispatcher') to build one from"
                )
            kwargs["dispatcher"] = dispatcher
        elif param.default is inspect.Parameter.empty and param.kind not in (
            inspect.Parameter.VAR_POSITIONAL,
            inspect.Parameter.VAR_KEYWORD,
        ):
            raise click.ClickException(
                f"{target.label}() needs an argument {param.name!r}; a factory takes no "
                "argument, or only 'dispatcher'"
            )
    return kwargs


def _describe(exc: BaseException, in_file: Path | None = None) -> str:
    """``Type: message (at FILE:LINE)``: the deepest frame (in ``in_file``, if given)."""
    where = ""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        code = f": {exc.text.strip()}" if exc.text and exc.text.strip() else ""
        return f"{type(exc).__name__}: {exc.msg} (at {exc.filename}:{exc.lineno}{code})"
    else:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if in_file is None or f.filename == str(in_file)
        ]
        if frames:
            where = f" (at {frames[-1].filename}:{frames[-1].lineno})"
    return f"{type(exc).__name__}: {exc}{where}"
