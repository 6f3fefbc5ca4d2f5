"""The hook types: one frozen class each, built in Python as from YAML, identity from fields."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import attrs
import pytest

from orchestra.skills import (
    HOOK_TYPES,
    AgentHook,
    CommandHook,
    HookRegistry,
    HookRunError,
    HookSpec,
    HookType,
    HttpHook,
    McpServerSpec,
    McpToolHook,
    PermissionHook,
    PromptHook,
    PythonHook,
    Sandbox,
    load,
)
from orchestra.skills._hooks.table import HOOK_CLASSES
from orchestra.skills._protocol.call import HookCall

pytestmark = pytest.mark.anyio

# One sample of each type, with every own field set to a non-default value.
SAMPLES: dict[str, HookSpec] = {
    "command": CommandHook(
        event="PreToolUse", command="true", strict_output=True, persistent=True, max_in_flight=2
    ),
    "prompt": PromptHook(event="PreToolUse", prompt="hello", model="judge-1", judge=True),
    "permission": PermissionHook(event="PreToolUse", decision="deny", reason="no"),
    "http": HttpHook(
        event="PreToolUse",
        on_error="block",  # (its default is continue, which a guard refuses)
        url="https://hooks.example/h",
        headers=(("X-A", "1"),),
        allowed_env_vars=("TOKEN",),
        tls="no_verify",
        strict_output=True,
        body={"team": "core"},
    ),
    "mcp_tool": McpToolHook(
        event="PreToolUse",
        server=McpServerSpec("server", ("--flag",)),
        tool="guard",
        arguments={"a": 1},
        strict_output=True,
    ),
    "agent": AgentHook(event="PreToolUse", prompt="are the tests green?", model="judge-2"),
    "python": PythonHook(event="PreToolUse", callable="json:dumps"),
}
# Fields that do not make a hook different: where it was written, the compiled matcher.
WHERE = {"file", "line", "position", "pattern", "condition"}  # where, and what is compiled


def test_every_type_is_one_frozen_class_in_the_table() -> None:
    assert set(typing.get_args(HookType)) == set(HOOK_CLASSES) == set(HOOK_TYPES)
    assert set(SAMPLES) == set(HOOK_CLASSES)
    for name, cls in HOOK_CLASSES.items():
        assert cls.type == name
        assert issubclass(cls, HookSpec)
        assert type(SAMPLES[name]) is cls
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            SAMPLES[name].timeout = 1  # type: ignore[misc]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_field_but_where_makes_a_hook_different(name: str) -> None:
    hook = SAMPLES[name]
    assert hook.key() == attrs.evolve(hook, file="other.yaml", line=99).key()
    for field in attrs.fields(type(hook)):
        if field.name in WHERE:
            continue
        value = getattr(hook, field.name)
        changed = {
            "event": "PermissionRequest",
            "matcher": "Other",
            "timeout": 7.0,
            "phase": "guard",
            "on_error": "continue" if hook.on_error == "block" else "block",
            "skill_dir": "/skills/x",
            "command": "false",
            "prompt": "bye",
            "decision": "ask",
            "reason": "why",
            "url": "https://hooks.example/other",
            "headers": (("X-B", "2"),),
            "allowed_env_vars": ("OTHER",),
            "tls": "verify",
            "strict_output": not value,
            "server": McpServerSpec("other"),
            "tool": "other",
            "arguments": {"a": 2},
            "model": "other-model",
            "judge": not value,
            "status_message": "Checking...",
            "background": not value,
            "once": not value,
            "plugin_root": "/plugins/p",
            "claude_code": not value,
            "env": (("A", "b"),),
            "pass_env": ("HOME",),
            "allow_private_network": True,
            "allow_loopback": True,
            "sandbox": Sandbox(),
            "max_in_flight": 3,
            "callable": "json:loads",
            "if_rule": "Bash(rm *)",
            "enforce": not value,
            "shell": "bash",
            "rewake": not value,
            "rewake_message": "woken",
            "rewake_summary": "found",
            "server_name": "other",
            "input_template": {"a": "${tool_input.x}"},
            "id": "other-id",
            "body": {"team": "other"},
        }
        if field.name == "args":  # command and args go together
            other = attrs.evolve(hook, command=None, args=("true",))
        elif field.name == "persistent":  # more than one in flight needs a persistent process
            other = attrs.evolve(hook, persistent=False, max_in_flight=1)
        elif field.name == "function":  # imported from callable: not a field of its own
            continue
        else:
            assert field.name in changed, f"{type(hook).__name__}.{field.name}: add a change"
            other = attrs.evolve(hook, **{field.name: changed[field.name]})
        assert other.key() != hook.key(), field.name


def test_identity_ignores_order_where_order_means_nothing() -> None:
    hook = SAMPLES["http"]
    assert isinstance(hook, HttpHook)
    shuffled = attrs.evolve(
        hook,
        headers=(("X-B", "2"), ("X-A", "1")),
        allowed_env_vars=("TOKEN", "B", "TOKEN"),
    )
    both = attrs.evolve(hook, headers=(("X-A", "1"), ("X-B", "2")), allowed_env_vars=("B", "TOKEN"))
    assert shuffled.key() == both.key()
    assert SAMPLES["command"].key() != PromptHook(event="PreToolUse", prompt="true").key()


def test_construction_refuses_what_could_not_run() -> None:
    with pytest.raises(ValueError, match=r"unknown event 'PreToolUs' \(did you mean 'PreToolUse'"):
        PromptHook(event="PreToolUs", prompt="x")
    with pytest.raises(ValueError, match="matcher: not a valid RE2 regular expression"):
        PromptHook(event="PreToolUse", matcher="(", prompt="x")
    with pytest.raises(ValueError, match=r"timeout: must be in \(0, 300\]"):
        PromptHook(event="PreToolUse", prompt="x", timeout=0)
    with pytest.raises(ValueError, match="exactly one"):
        CommandHook(event="PreToolUse", command="true", args=("true",))
    with pytest.raises(ValueError, match="exactly one"):
        CommandHook(event="PreToolUse")
    with pytest.raises(ValueError, match="phase: PostToolUse has no phases"):
        CommandHook(event="PostToolUse", phase="guard", command="true")
    with pytest.raises(ValueError, match="a permission hook cannot rewrite the input"):
        PermissionHook(event="PreToolUse", phase="transform", decision="allow")
    with pytest.raises(ValueError, match="a guard fails closed"):
        CommandHook(event="PreToolUse", phase="guard", on_error="continue", command="true")
    assert CommandHook(event="PreToolUse", phase="guard", command="true").on_error == "block"
    with pytest.raises(ValueError, match="'decision' must be in"):
        PermissionHook(event="PreToolUse", decision="maybe")  # type: ignore[arg-type]


def test_defaults_follow_the_event() -> None:
    assert CommandHook(event="PreToolUse", command="true").on_error == "block"
    assert CommandHook(event="Stop", command="true").on_error == "continue"
    # an http hook fails open, as lobehub's webhooks, but as a guard
    assert HttpHook(event="PreToolUse", url="https://hooks.example/h").on_error == "continue"
    guard = HttpHook(event="PreToolUse", url="https://hooks.example/h", phase="guard")
    assert guard.on_error == "block"
    hook = CommandHook(event="PreToolUse", matcher="Bash|Edit", command="true")
    assert (hook.matches("Edit"), hook.matches("BashOutput"), hook.matches(None)) == (
        True,
        False,
        False,
    )
    assert repr(hook) == "<CommandHook PreToolUse 'Bash|Edit' at <python>:0>"


async def test_hooks_built_in_python_fire_like_loaded_ones(tmp_path: Path) -> None:
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        "        - {type: command, command: 'exit 2'}\n"
    )
    (loaded,) = load(config).hooks
    built = CommandHook(event="PreToolUse", matcher="Bash", command="exit 2")
    assert built.key() == loaded.key()
    outcome = await HookRegistry([built], project_dir=tmp_path).fire(
        "PreToolUse", {"tool_name": "Bash"}
    )
    assert (outcome.blocked, outcome.decided_by) == (True, "<python>:0")


def test_describe_says_what_each_type_does() -> None:
    assert [SAMPLES[name].describe() for name in HOOK_TYPES] == [
        "true (persistent, 2 in flight)",
        "ask judge-1: hello",
        "deny: no",
        "POST https://hooks.example/h (tls: no_verify)",
        "guard on server --flag",
        "agent judge-2: are the tests green?",
        "json:dumps",
    ]


def _hook_classes(cls: type[HookSpec]) -> list[type[HookSpec]]:
    return [cls, *(c for sub in cls.__subclasses__() for c in _hook_classes(sub))]


def test_every_hook_type_runs_by_one_async_def_contract() -> None:
    # The seeds' types (Arc's, the graph executor's) are HookSpec subclasses too.
    from orchestra.skills._sources import read  # noqa: F401  # loads every source format

    classes = _hook_classes(HookSpec)
    names = {cls.__name__ for cls in classes}
    assert {c.__name__ for c in HOOK_CLASSES.values()} <= names
    assert {"ArcHook", "GraphHook"} <= names
    for cls in classes:
        assert inspect.iscoroutinefunction(cls.run), cls.__name__


async def test_a_command_hook_that_cannot_run_says_so_when_awaited(tmp_path: Path) -> None:
    # CommandHook.run was a plain def returning a coroutine and raised at the call;
    # like every type it is an async def now: the error comes when it is awaited.
    hook = CommandHook(event="PreToolUse", command="true", persistent=True)
    call = HookCall("PreToolUse", {"hook_event_name": "PreToolUse"}, str(tmp_path))
    running = hook.run(call)
    with pytest.raises(HookRunError, match="persistent hook runs in a HookRegistry"):
        await running
