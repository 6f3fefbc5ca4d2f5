"""The rows of docs/howto/one-policy.md's tables, as the matrix tests' own engines render them.

Run as a script in an engine's venv: ``python tests/helpers/matrix_rows.py DIR...`` imports
every test module of each DIR that runs a cell of the conformance matrix (it calls
``check_task_cell``, ``check_tool_cell``, ``check_way_cell`` or ``check_ask_cell``), finds
the engines it defines, and prints one JSON object: each table (``task``, ``tool``,
``way``, ``ask``) -> the rows of those engines, one Markdown line each.

An engine is a class of that module, or an object in one of its module-level lists,
tuples or names, that has a ``name``, a ``cannot`` and the protocol's method with the
protocol's parameters (``TaskEngine.run(hooks, body, tags)``, ``ToolEngine.call(registry,
body)``, ``WayEngine.call(way, registry, body)``, ``AskEngine.pause(registry, body)``).
A module that runs a cell and defines no engine is an error: its engine would have no row.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from orchestra.bridge.testing import (
    ask_matrix_row,
    task_matrix_row,
    tool_matrix_row,
    way_matrix_rows,
)

RUNS_A_CELL = re.compile(r"\bcheck_(task|tool|way|ask)_cell\(")

#: table -> (the method an engine has, its parameters, what renders its rows)
TABLES: dict[str, tuple[str, tuple[str, ...], Callable[[Any], str]]] = {
    "task": ("run", ("hooks", "body", "tags"), task_matrix_row),
    "tool": ("call", ("registry", "body"), tool_matrix_row),
    "way": ("call", ("way", "registry", "body"), way_matrix_rows),
    "ask": ("pause", ("registry", "body"), ask_matrix_row),
}


def matrix_modules(folder: Path) -> list[Path]:
    """The test modules of ``folder`` that run a cell of the matrix."""
    return sorted(p for p in folder.glob("test_*.py") if RUNS_A_CELL.search(p.read_text()))


def _table(candidate: Any) -> str | None:
    """The table whose engine ``candidate`` (a class or an object) is, if any."""
    if not (isinstance(getattr(candidate, "name", None), str) and hasattr(candidate, "cannot")):
        return None
    for table, (method, params, _) in TABLES.items():
        fn = getattr(candidate, method, None)
        if fn is None or not callable(fn):
            continue
        names = [p for p in inspect.signature(fn).parameters if p != "self"]
        if tuple(names) == params:
            return table
    return None


def _candidates(module: Any) -> Iterator[Any]:
    for value in vars(module).values():
        if inspect.isclass(value) and value.__module__ == module.__name__:
            yield value
        elif isinstance(value, list | tuple):
            yield from value
        elif type(value).__module__ == module.__name__:
            yield value


def engines(module: Any) -> dict[str, dict[str, Any]]:
    """The engines ``module`` defines: table -> engine name -> the engine."""
    found: dict[str, dict[str, Any]] = {table: {} for table in TABLES}
    for candidate in _candidates(module):
        table = _table(candidate)
        if table is not None:
            found[table].setdefault(candidate.name, candidate)
    return found


def rows(folders: list[Path]) -> dict[str, list[str]]:
    """Every row the engines of ``folders``' matrix modules render, by table.

    Raises:
        LookupError: a module runs a cell but defines no engine, or two engines of one
            table share a name but not their rows.
    """
    out: dict[str, dict[str, str]] = {table: {} for table in TABLES}
    for folder in folders:
        sys.path.insert(0, str(folder))  # as pytest imports them: by their file's name
        for path in matrix_modules(folder):
            found = engines(importlib.import_module(path.stem))
            if not any(found.values()):
                raise LookupError(f"{path} runs a matrix cell but defines no engine")
            for table, named in found.items():
                for name, engine in named.items():
                    text = TABLES[table][2](engine)
                    if out[table].setdefault(name, text) != text:
                        raise LookupError(f"two {table} engines named {name!r} differ ({path})")
    return {
        table: [r for text in named.values() for r in text.splitlines()]
        for table, named in out.items()
    }


if __name__ == "__main__":
    print(json.dumps(rows([Path(arg).resolve() for arg in sys.argv[1:]])))
