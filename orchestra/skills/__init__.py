"""Skills hooks: YAML and SKILL.md hooks run at agent events.

Load hooks written the way Claude Code hooks are written, from ``orchestra.yaml`` files,
the front matter of ``SKILL.md`` files, folders of skills, or Claude Code's own files
(``.claude/settings.json``, a plugin's ``hooks/hooks.json``), and fire them at the
events of the catalog (``EVENTS``)::

    registry = orchestra.skills.load("orchestra.yaml", "skills/")
    outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {...}})
    if outcome.blocked:
        ...

Adapters plug a registry into orchestra's engines: ``registry.as_task_hooks()``,
``registry.as_subagent_hooks()`` and ``@registry.guard("Tool")``.
"""

from orchestra._errors import ConfigError as ConfigError
from orchestra._errors import ToolDenied as ToolDenied
from orchestra._exports import export as _export
from orchestra._tool_flow import post_tool_use_payload as post_tool_use_payload
from orchestra.skills._config.yaml import MAX_FILE_BYTES as MAX_FILE_BYTES
from orchestra.skills._engines.adapters import RegistryTaskHooks as RegistryTaskHooks
from orchestra.skills._engines.guard import AskCallback as AskCallback
from orchestra.skills._engines.guard import Guard as Guard
from orchestra.skills._engines.guard import OutcomeCallback as OutcomeCallback
from orchestra.skills._engines.steps import Step as Step
from orchestra.skills._engines.steps import StepEvents as StepEvents
from orchestra.skills._engines.subagent_adapter import (
    RegistrySubagentHooks as RegistrySubagentHooks,
)
from orchestra.skills._firing.outcome import AuditedDecision as AuditedDecision
from orchestra.skills._firing.outcome import CriticalHookError as CriticalHookError
from orchestra.skills._firing.outcome import HookDecision as HookDecision
from orchestra.skills._firing.outcome import HookOutcome as HookOutcome
from orchestra.skills._firing.outcome import HookRecord as HookRecord
from orchestra.skills._firing.registry import HookRegistry as HookRegistry
from orchestra.skills._firing.replay import ReplayChange as ReplayChange
from orchestra.skills._firing.replay import ReplayReport as ReplayReport
from orchestra.skills._hooks.command import MAX_COMMAND_BYTES as MAX_COMMAND_BYTES
from orchestra.skills._hooks.command import CommandHook as CommandHook
from orchestra.skills._hooks.fixed import AgentHook as AgentHook
from orchestra.skills._hooks.fixed import PermissionHook as PermissionHook
from orchestra.skills._hooks.fixed import PromptHook as PromptHook
from orchestra.skills._hooks.http import HttpHook as HttpHook
from orchestra.skills._hooks.http_post import TlsMode as TlsMode
from orchestra.skills._hooks.judge import Judge as Judge
from orchestra.skills._hooks.judge import JudgeRequest as JudgeRequest
from orchestra.skills._hooks.judge import OpenAICompatibleJudge as OpenAICompatibleJudge
from orchestra.skills._hooks.mcp import McpServerSpec as McpServerSpec
from orchestra.skills._hooks.mcp import McpToolHook as McpToolHook
from orchestra.skills._hooks.python import PythonHook as PythonHook
from orchestra.skills._hooks.spec import DEFAULT_TIMEOUT as DEFAULT_TIMEOUT
from orchestra.skills._hooks.spec import MAX_TIMEOUT as MAX_TIMEOUT
from orchestra.skills._hooks.spec import HookSpec as HookSpec
from orchestra.skills._hooks.table import HOOK_TYPES as HOOK_TYPES
from orchestra.skills._hooks.table import HookType as HookType
from orchestra.skills._open import load as load
from orchestra.skills._persistent.serve import serve as serve
from orchestra.skills._processes.sandbox import Sandbox as Sandbox
from orchestra.skills._protocol.catalog import EVENTS as EVENTS
from orchestra.skills._protocol.catalog import EventSpec as EventSpec
from orchestra.skills._protocol.catalog import OnError as OnError
from orchestra.skills._protocol.result import HookResult as HookResult
from orchestra.skills._protocol.result import HookRunError as HookRunError

__all__ = [
    "DEFAULT_TIMEOUT",
    "EVENTS",
    "HOOK_TYPES",
    "MAX_COMMAND_BYTES",
    "MAX_FILE_BYTES",
    "MAX_TIMEOUT",
    "AgentHook",
    "AskCallback",
    "AuditedDecision",
    "CommandHook",
    "ConfigError",
    "CriticalHookError",
    "EventSpec",
    "Guard",
    "HookDecision",
    "HookOutcome",
    "HookRecord",
    "HookRegistry",
    "HookResult",
    "HookRunError",
    "HookSpec",
    "HookType",
    "HttpHook",
    "Judge",
    "JudgeRequest",
    "McpServerSpec",
    "McpToolHook",
    "OnError",
    "OpenAICompatibleJudge",
    "OutcomeCallback",
    "PermissionHook",
    "PromptHook",
    "PythonHook",
    "RegistrySubagentHooks",
    "RegistryTaskHooks",
    "ReplayChange",
    "ReplayReport",
    "Sandbox",
    "Step",
    "StepEvents",
    "TlsMode",
    "ToolDenied",
    "load",
    "post_tool_use_payload",
    "serve",
]

_export(globals())
