"""How the conformance suite opens a store, in this process or in another."""

from __future__ import annotations

import importlib
import json

import attrs

from orchestra.journal._records import Journal

__all__ = ["JournalSpec"]


@attrs.frozen
class JournalSpec:
    """How to open a store, in this process or another: a factory's import path and arguments.

    Attributes:
        factory: ``"package.module:callable"``, called with ``args`` to open the store.
        args: string arguments (a path, a DSN).
    """

    factory: str
    args: tuple[str, ...] = ()

    def open(self) -> Journal:
        """Open the store."""
        module, _, name = self.factory.partition(":")
        journal = getattr(importlib.import_module(module), name)(*self.args)
        assert isinstance(journal, Journal), f"{self.factory} did not return a Journal"
        return journal

    def to_json(self) -> str:
        """The spec as JSON, for a child process's environment."""
        return json.dumps([self.factory, list(self.args)])

    @classmethod
    def from_json(cls, text: str) -> JournalSpec:
        """Read a spec written by ``to_json``."""
        factory, args = json.loads(text)
        return cls(factory, tuple(args))
