"""The hook types: the one table from a config's ``type:`` to the class that runs it.

Adding a hook type is one class (its fields, ``parse_fields``, ``run``, ``describe``)
and one entry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from orchestra.skills._hooks.command import CommandHook
from orchestra.skills._hooks.fixed import AgentHook, PermissionHook, PromptHook
from orchestra.skills._hooks.http import HttpHook
from orchestra.skills._hooks.mcp import McpToolHook
from orchestra.skills._hooks.python import PythonHook
from orchestra.skills._hooks.spec import HookSpec

__all__ = ["HOOK_CLASSES", "HOOK_TYPES", "HookType"]

HOOK_CLASSES: Final[Mapping[str, type[HookSpec]]] = MappingProxyType(
    {
        cls.type: cls
        for cls in (
            CommandHook,
            PromptHook,
            PermissionHook,
            HttpHook,
            McpToolHook,
            AgentHook,
            PythonHook,
        )
    }
)
"""The class of each hook type, by its name in a config."""

HookType: TypeAlias = Literal[
    "command", "prompt", "permission", "http", "mcp_tool", "agent", "python"
]
"""The names of the hook types (the keys of ``HOOK_CLASSES``)."""
HOOK_TYPES: Final[tuple[str, ...]] = tuple(HOOK_CLASSES)
"""The names of the hook types, in documentation order."""
