"""``PythonHook``: a Python function called in-process at an event (``type: python``)."""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.machinery
import inspect
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, final

import anyio
import attrs

from orchestra._errors import did_you_mean
from orchestra.skills._hooks.spec import HookCall, HookSpec
from orchestra.skills._protocol.result import NO_OPINION, HookResult, HookRunError, result_from_json

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry

__all__ = ["PythonHook", "read_callable", "resolve_callable", "without_imports"]

# The imported function: derived from ``callable``, so neither a config key nor identity.
_DERIVED: Final[Mapping[str, Any]] = {"config": False, "key": None}


# Off while a file nobody trusted is read: its hooks are only described, never imported.
_IMPORTS: ContextVar[bool] = ContextVar("orchestra_python_hook_imports", default=True)


@contextlib.contextmanager
def without_imports() -> Iterator[None]:
    """Read ``type: python`` hooks without importing anything (a file not trusted).

    Importing runs the module's code, so a file is trusted before its functions are
    imported. Hooks made meanwhile are checked by reading their module's source
    (``read_callable``), and fail if run.
    """
    token = _IMPORTS.set(False)
    try:
        yield
    finally:
        _IMPORTS.reset(token)


def _reference_problem(reference: str) -> str | None:
    module_name, colon, qualname = reference.partition(":")
    if not colon or not module_name.strip() or not qualname.strip():
        return f'expected "package.module:function", got {reference!r}'
    return None


def _source_of(module_name: str) -> str | None:
    """The path of a module's source file, found without importing anything (or None).

    ``importlib.util.find_spec("a.b")`` would import ``a``; here each package's folder is
    looked up on the path finder alone, which runs no module's code.
    """
    locations: list[str] | None = [path or "." for path in sys.path]
    spec = None
    parts = module_name.split(".")
    for depth in range(1, len(parts) + 1):
        if locations is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(".".join(parts[:depth]), locations)
        if spec is None:
            return None
        locations = list(spec.submodule_search_locations or ()) or None
    origin = spec.origin if spec is not None else None
    return origin if origin and origin.endswith(".py") else None


def _names(body: list[ast.stmt]) -> dict[str, list[ast.stmt]] | None:
    """The names a module or class body binds, each with its class body; None if unsure.

    Names bound inside ``if``, ``try``, ``with`` and loops count too (more names only
    means less reported); a module ``__getattr__`` or an ``import *`` makes any name
    possible.
    """
    names: dict[str, list[ast.stmt]] = {}
    for node in body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = node.body
            continue
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if inner.name == "__getattr__":
                    return None  # names made at run time
                names.setdefault(inner.name, [])
            elif isinstance(inner, (ast.Import, ast.ImportFrom)):
                for alias in inner.names:
                    if alias.name == "*":
                        return None
                    names.setdefault((alias.asname or alias.name).partition(".")[0], [])
            elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                names.setdefault(inner.id, [])
    return names


def read_callable(reference: str) -> str | None:
    """What is wrong with a reference, read from its source without running it (or None).

    Reviewing a config runs nothing (importing a module runs its code): the module's
    source file is found on ``sys.path`` and parsed, and each part of the name after
    the colon looked up among the names it binds. A module or a body that binds names
    at run time (a module ``__getattr__``, ``import *``, an extension module) is taken
    as it is: only a name its source plainly lacks is reported.
    """
    problem = _reference_problem(reference)
    if problem is not None:
        return problem
    module_name, _colon, qualname = reference.partition(":")
    try:
        origin = _source_of(module_name)
    except (ImportError, ValueError):  # an unusual path entry: leave it to the import
        return None
    if origin is None:
        return None  # not on the path now, or not Python source: the import will tell
    try:
        tree = ast.parse(Path(origin).read_bytes(), origin)
    except (OSError, SyntaxError, ValueError):
        return None  # the import will say what is wrong
    body: list[ast.stmt] | None = tree.body
    where = module_name
    for part in qualname.split("."):
        names = _names(body) if body is not None else None
        if names is None:
            return None
        if part not in names:
            public = [name for name in names if not name.startswith("_")]
            return f"{where} has no attribute {part!r}{did_you_mean(part, public)}"
        body = names[part] or None
        where = f"{where}{'.' if ':' in where else ':'}{part}"
    return None


def resolve_callable(reference: str) -> tuple[Callable[..., Any] | None, str | None]:
    """Import ``"package.module:function"``: (the function, None) or (None, why not).

    The part after the colon may be dotted (``"module:Class.method"``). Importing runs
    the module's code; whatever that raises is reported, not raised.
    """
    problem = _reference_problem(reference)
    if problem is not None:
        return None, problem
    module_name, _colon, qualname = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except BaseException as exc:  # an import runs arbitrary code: report what it raises
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
    target: Any = module
    where = module_name
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            names = [name for name in dir(target) if not name.startswith("_")]
            return None, f"{where} has no attribute {part!r}{did_you_mean(part, names)}"
        where = f"{where}{'.' if ':' in where else ':'}{part}"
    if not callable(target):
        return None, f"{reference} is {_a(type(target).__name__)}, not a function"
    try:
        inspect.signature(target).bind({})
    except TypeError:
        return None, f"{reference} must take one argument (the event dict)"
    except ValueError:  # no signature to read (some builtins): it will be tried
        pass
    return target, None


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _not_imported(_event: dict[str, Any]) -> None:
    raise HookRunError("not imported: its file was read without trust")


def _imported(hook: PythonHook) -> Callable[..., Any]:
    if not _IMPORTS.get():
        problem = read_callable(hook.callable)
        if problem is not None:
            raise ValueError(f"callable: {problem}")
        return _not_imported
    function, error = resolve_callable(hook.callable)
    if function is None:
        raise ValueError(f"callable: {error}")
    return function


@final
@attrs.frozen(kw_only=True, repr=False)
class PythonHook(HookSpec):
    """A hook that calls a Python function in-process with the event dict.

    The function (``def`` or ``async def``) is imported when the hook is made (at load,
    so an import error is a ``ConfigError`` naming the file and line). It gets the
    event as a command hook reads it on stdin, as a dict of its own, and returns the
    result as a command hook prints it (a mapping, or a ``HookResult``), or None for no
    opinion. Whatever it raises is a hook error (``SystemExit`` too; only the event
    loop's cancellation and ``KeyboardInterrupt`` go through). An ``async def`` is cancelled at the
    hook's timeout; a ``def`` runs on the event loop and cannot be interrupted: when it
    took longer than the timeout, its answer is dropped and the timeout is a hook error.

    Attributes:
        callable: ``"package.module:function"`` (the part after the colon may be dotted).
        function: the imported function.

    Raises:
        ValueError: the callable cannot be imported, or is not a function of one argument.
    """

    type: ClassVar[str] = "python"
    in_process: ClassVar[bool] = True

    callable: str
    function: Callable[..., Any] = attrs.field(
        init=False,
        eq=False,
        repr=False,
        default=attrs.Factory(_imported, takes_self=True),
        metadata=_DERIVED,
    )

    def describe(self) -> str:
        """The callable's reference."""
        return self.callable

    @classmethod
    def parse_fields(cls, entry: Entry) -> dict[str, Any]:
        """Read ``callable`` and import it now: what goes wrong is a problem at its line."""
        reference = entry.string("callable", required=True)
        if reference is not None:
            if _IMPORTS.get():
                _function, error = resolve_callable(reference)
            else:  # reviewed: its source read, not run
                error = read_callable(reference)
            if error is not None:
                entry.bad("callable", error)
        return {"callable": reference}

    async def run(self, call: HookCall) -> HookResult:
        """Call the function with the event and read what it returns.

        Raises:
            HookRunError: it raised, timed out or returned something else than a result.
        """
        try:
            started = time.perf_counter()
            answer = self.function(dict(call.data))
            if answer is not None and type(answer) is not dict and inspect.isawaitable(answer):
                with anyio.move_on_after(self.timeout) as scope:
                    answer = await answer
                if scope.cancelled_caught:
                    raise HookRunError(f"timed out after {self.timeout:g} s")
            elif (took := time.perf_counter() - started) > self.timeout:
                raise HookRunError(
                    f"timed out after {self.timeout:g} s (it took {took:.3g} s; a def "
                    "cannot be interrupted, its answer was dropped)"
                )
        except HookRunError:
            raise
        except BaseException as exc:  # the function's own error: a hook error, with its traceback
            if _passes_through(exc):
                raise
            raise HookRunError(
                f"{type(exc).__name__}: {exc}", stderr=traceback.format_exc()
            ) from exc
        return NO_OPINION if answer is None else _result(answer, self.callable)


def _passes_through(exc: BaseException) -> bool:
    """Cancellation (of the event loop) and Ctrl-C go on; anything else is the hook's error.

    A ``SystemExit`` (``sys.exit()`` in a hook), a ``GeneratorExit`` or any other
    ``BaseException`` the function raised is its own failure, never the caller's.
    """
    through = (anyio.get_cancelled_exc_class(), KeyboardInterrupt)
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(lambda inner: isinstance(inner, through)) is not None
    return isinstance(exc, through)


def _result(answer: object, reference: str) -> HookResult:
    if isinstance(answer, HookResult):
        return answer
    if isinstance(answer, Mapping):
        return result_from_json(dict(answer))
    raise HookRunError(
        f"invalid output: {reference} returned {_a(type(answer).__name__)}, not a mapping or None"
    )
