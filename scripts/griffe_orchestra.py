"""Griffe extensions for orchestra's API reference (configured in ``mkdocs.yml``).

- ``AttrsSignatures``: an ``attrs`` class has no ``__init__`` in its source, so the
  reference would show ``Retry`` without its constructor. This gives every attrs class
  the ``__init__`` that attrs generates (read from the class at runtime), so the page
  shows ``Retry(delay: float = 0.0)``; griffe-fieldz lists the fields.
- ``ConstantsTable``: ``orchestra.tracing`` exports some fifty name constants
  (``SPAN_RUN``, ``ATTR_TASK_ID``, ...). One heading each, they bury the module's
  functions. This moves the upper-case public names of the configured modules into one
  "Constants" table (name, value, first paragraph of the docstring) and drops them from
  the rendered members::

      extensions:
        - scripts/griffe_orchestra.py:AttrsSignatures
        - scripts/griffe_orchestra.py:ConstantsTable:
            modules: [orchestra.tracing]
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs
import griffe

_MAX_VALUE = 60  # a longer constant value (a catalog) is left to its own docs


class AttrsSignatures(griffe.Extension):
    """Give each attrs class the signature of the ``__init__`` attrs generates."""

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        """Add ``__init__`` to an attrs class that does not define one."""
        if "__init__" in cls.members:
            return
        try:
            runtime = griffe.dynamic_import(cls.path)
        except ImportError:
            return
        if not (isinstance(runtime, type) and attrs.has(runtime)):
            return
        context = griffe.Docstring("", parent=cls)
        params = [griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)]
        for param in inspect.signature(runtime).parameters.values():
            annotation = param.annotation
            if annotation is inspect.Parameter.empty:
                annotation = None
            elif not isinstance(annotation, str):
                annotation = inspect.formatannotation(annotation)
            default = param.default
            params.append(
                griffe.Parameter(
                    param.name,
                    annotation=(
                        griffe.parse_docstring_annotation(annotation, context)
                        if annotation
                        else None
                    ),
                    kind=griffe.ParameterKind(param.kind.description),
                    default=_default(default),
                )
            )
        init = griffe.Function(
            "__init__", parameters=griffe.Parameters(*params), returns="None", parent=cls
        )
        cls.set_member("__init__", init)


def _default(value: object) -> str | None:
    if value is inspect.Parameter.empty:
        return None
    if value is attrs.NOTHING or isinstance(value, attrs.Factory):  # type: ignore[arg-type]
        return "..."
    return repr(value)


class ConstantsTable(griffe.Extension):
    """Render the upper-case constants of some modules as one table."""

    def __init__(self, modules: list[str], collapse_over: int = 12) -> None:
        self.modules = set(modules)
        self.collapse_over = collapse_over

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite each configured module of the package once it is loaded."""
        for path in sorted(self.modules):
            top, _, rest = path.partition(".")
            if top == pkg.name:
                self._table(pkg[rest] if rest else pkg)

    def _table(self, module: griffe.Module) -> None:
        exported = module.exports if module.exports is not None else list(module.members)
        names = [str(n) for n in exported if str(n).isupper() and str(n) in module.members]
        if not names:
            return
        rows = ["| constant | value | meaning |", "| --- | --- | --- |"]
        for name in names:
            member = module.members[name]
            target = member.final_target if isinstance(member, griffe.Alias) else member
            doc = target.docstring.value.split("\n\n")[0] if target.docstring else ""
            value = str(getattr(target, "value", "") or "")
            shown = f"`{value}`" if value and len(value) <= _MAX_VALUE else "…"
            rows.append(f"| `{name}` | {shown} | {_cell(doc)} |")
        table = "\n".join(rows)
        if len(names) > self.collapse_over:
            title = f"The {len(names)} constants of {module.path}"
            text = f'??? abstract "{title}"\n\n' + "\n".join(f"    {row}" for row in rows)
        else:
            text = f"**Constants**\n\n{table}"
        if module.docstring is None:
            module.docstring = griffe.Docstring("", parent=module)
        module.docstring.parsed.append(griffe.DocstringSectionText(text))
        for name in names:
            del module.members[name]


def _cell(text: str) -> str:
    """Text for one table cell: one line, no cell separator outside code."""
    return " ".join(text.split()).replace(" | ", " or ")
