"""``export()``: every public name shows its public path, whatever module defines it."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["export", "lazy"]


def export(namespace: dict[str, Any], names: Iterable[str] | None = None) -> None:
    """Set ``__module__`` of a package's public classes and functions to the package.

    Called at the end of each public package's ``__init__`` with ``globals()``. A class
    or function defined in a private module (``orchestra._hooks``,
    ``orchestra.dag._model``) then reprs, pickles and documents under the path users
    import it from (``orchestra.TaskHooks``), as anyio and httpx do. A name already
    carrying a public path (exported first by a subpackage) keeps it.

    Args:
        namespace: the package's ``globals()``: its ``__name__`` and ``__all__``.
        names: the names to fix (default: the package's ``__all__``).
    """
    package = namespace["__name__"]
    for name in namespace["__all__"] if names is None else names:
        obj = namespace.get(name)
        if not isinstance(obj, type | types.FunctionType):
            continue  # constants, type aliases and lazily loaded names
        if is_private(getattr(obj, "__module__", "")):
            obj.__module__ = package


def is_private(module: str) -> bool:
    """Whether an orchestra module path has a private part (``orchestra.dag._model``)."""
    parts = module.split(".")
    return parts[0] == "orchestra" and any(p.startswith("_") for p in parts)


def lazy(namespace: dict[str, Any], names: Mapping[str, str]) -> Callable[[str], Any]:
    """A package ``__getattr__`` (PEP 562) that imports each of ``names`` when first used.

    For public names whose modules cost start-up time most programs need not pay
    (sqlite3, the OpenTelemetry SDK): ``import orchestra`` stays light, and
    ``orchestra.Journal`` still works. The value is then kept in the package and shows
    its public path, as ``export`` does.

    Args:
        namespace: the package's ``globals()``.
        names: each lazy name and the module that defines it.
    """
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib  # here: ``import orchestra`` itself imports next to nothing

        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        export(namespace, [name])
        return value

    return __getattr__
