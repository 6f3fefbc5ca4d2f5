"""``type: python`` hooks: functions called in-process, imported at load."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from orchestra.skills import (
    ConfigError,
    HookOutcome,
    HookRegistry,
    HookResult,
    PythonHook,
    load,
)

pytestmark = pytest.mark.anyio

MODULE = textwrap.dedent(
    """
    import time

    import anyio

    calls = []

    def deny_rm(event):
        calls.append(event)
        if "rm" in event["tool_input"]["command"]:
            return {"decision": "deny", "reason": "no rm"}
        return None

    async def allow_later(event):
        await anyio.sleep(0)
        return {"decision": "allow", "reason": event["hook_event_name"]}

    def rewrite(event):
        event["tool_input"]["command"] = "changed in place"  # its own copy
        return {"modified_input": {"command": "ls -la"}}

    def as_result(event):
        from orchestra.skills import HookResult
        return HookResult(messages=("from a HookResult",))

    def fails(event):
        raise ValueError("bad event")

    def returns_a_list(event):
        return ["allow"]

    def bad_shape(event):
        return {"decision": "maybe"}

    async def hangs(event):
        await anyio.sleep(60)

    def blocks(event):
        time.sleep(0.3)
        return {"decision": "allow"}

    class Checks:
        @staticmethod
        def nested(event):
            return {"message": "nested"}

    not_callable = 42

    def two_arguments(event, other):
        return None

    def exits(event):
        import sys
        sys.exit(3)

    async def exits_later(event):
        await anyio.sleep(0)
        raise SystemExit("bye")

    class Odd(BaseException):
        pass

    def raises_odd(event):
        raise Odd("not an Exception")

    def raises_a_group(event):
        raise BaseExceptionGroup("several", [SystemExit(1), ValueError("v")])
    """
)


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a fresh module of hook functions, importable for this test."""
    name = f"hookmod_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def hook(module: str, function: str, **fields: object) -> PythonHook:
    return PythonHook(event="PreToolUse", callable=f"{module}:{function}", **fields)  # type: ignore[arg-type]


async def fire(reg: HookRegistry, command: str = "ls") -> HookOutcome:
    return await reg.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": command}})


async def test_a_def_function_decides(module: str) -> None:
    reg = HookRegistry([hook(module, "deny_rm")])
    denied = await fire(reg, "rm -rf /")
    assert (denied.blocked, denied.reason) == (True, "no rm")
    allowed = await fire(reg, "ls")
    assert (allowed.decision, allowed.records[0].error) == (None, None)
    (event, _) = sys.modules[module].calls
    assert event["tool_input"] == {"command": "rm -rf /"}
    assert event["hook_event_name"] == "PreToolUse"
    assert {"session_id", "cwd", "timestamp"} <= set(event)


async def test_an_async_function_is_awaited(module: str) -> None:
    outcome = await fire(HookRegistry([hook(module, "allow_later")]))
    assert (outcome.decision, outcome.reason) == ("allow", "PreToolUse")


async def test_its_input_goes_to_the_next_hook_and_its_event_is_its_own(module: str) -> None:
    reg = HookRegistry([hook(module, "rewrite"), hook(module, "deny_rm")])
    outcome = await fire(reg, "rm -rf /")
    # The second hook saw the modified input, not the first one's in-place change.
    assert outcome.modified_input == {"command": "ls -la"}
    assert sys.modules[module].calls[0]["tool_input"] == {"command": "ls -la"}
    assert not outcome.blocked


async def test_a_hook_result_and_a_nested_name(module: str) -> None:
    reg = HookRegistry([hook(module, "as_result"), hook(module, "Checks.nested")])
    outcome = await fire(reg)
    assert outcome.messages == ("from a HookResult", "nested")


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("fails", "ValueError: bad event"),
        ("returns_a_list", "invalid output: {module}:returns_a_list returned a list, not a"),
        ("bad_shape", "invalid JSON output: decision must be one of"),
    ],
)
async def test_errors_follow_on_error(module: str, function: str, error: str) -> None:
    outcome = await fire(HookRegistry([hook(module, function, on_error="continue")]))
    (record,) = outcome.records
    assert record.error is not None
    assert record.error.startswith(error.format(module=module))
    assert record.note == "error ignored (on_error: continue)"
    blocked = await fire(HookRegistry([hook(module, function)]))  # PreToolUse: block
    assert blocked.blocked
    assert blocked.reason is not None
    assert blocked.reason.startswith("hook error: " + error.format(module=module))


@pytest.mark.parametrize(
    ("function", "error"),
    [
        ("exits", "SystemExit: 3"),
        ("exits_later", "SystemExit: bye"),
        ("raises_odd", "Odd: not an Exception"),
        ("raises_a_group", "BaseExceptionGroup: several (2 sub-exceptions)"),
    ],
)
async def test_a_base_exception_is_a_hook_error_that_never_escapes_fire(
    module: str, function: str, error: str
) -> None:
    # sys.exit() in a hook used to end the caller's program from inside fire().
    continued = await fire(HookRegistry([hook(module, function, on_error="continue")]))
    assert [record.error for record in continued.records] == [error]
    assert not continued.blocked
    blocked = await fire(HookRegistry([hook(module, function)]))  # PreToolUse: block
    assert (blocked.blocked, blocked.reason) == (True, f"hook error: {error}")


async def test_a_skill_s_python_hook_that_exits_is_a_hook_error(
    module: str, tmp_path: Path
) -> None:
    skill = tmp_path / "skills" / "bye" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        "---\nname: bye\ndescription: exits\nhooks:\n  Stop:\n    - hooks:\n"
        f"        - {{type: python, callable: '{module}:exits'}}\n---\n"
    )
    outcome = await load(tmp_path / "skills").fire("Stop", {})
    assert [record.error for record in outcome.records] == ["SystemExit: 3"]


async def test_cancelling_the_caller_still_cancels_a_python_hook(module: str) -> None:
    # Cancellation is not the hook's error: it goes through (and nothing is recorded).
    registry = HookRegistry([hook(module, "hangs", timeout=30)])
    with anyio.move_on_after(0.2) as scope:
        await fire(registry)
    assert scope.cancelled_caught


async def test_the_traceback_is_its_stderr(module: str) -> None:
    (record,) = (await fire(HookRegistry([hook(module, "fails")]))).records
    assert "Traceback" in record.stderr
    assert 'raise ValueError("bad event")' in record.stderr


async def test_an_async_function_is_cancelled_at_its_timeout(module: str) -> None:
    (record,) = (await fire(HookRegistry([hook(module, "hangs", timeout=0.1)]))).records
    assert record.error == "timed out after 0.1 s"


async def test_a_def_function_past_its_timeout_is_an_error(module: str) -> None:
    (record,) = (await fire(HookRegistry([hook(module, "blocks", timeout=0.1)]))).records
    assert record.result is None
    assert record.error is not None
    assert record.error.startswith("timed out after 0.1 s (it took 0.3")
    assert record.error.endswith("a def cannot be interrupted, its answer was dropped)")


# --- imported at load -------------------------------------------------------------------


def config(tmp_path: Path, reference: str) -> Path:
    path = tmp_path / "orchestra.yaml"
    path.write_text(
        "hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
        f"        - type: python\n          callable: {reference!r}\n"
    )
    return path


async def test_loaded_from_yaml(module: str, tmp_path: Path) -> None:
    reg = load(config(tmp_path, f"{module}:deny_rm"))
    (loaded,) = reg.hooks
    assert isinstance(loaded, PythonHook)
    assert loaded.function is sys.modules[module].deny_rm
    assert loaded.describe() == f"{module}:deny_rm"
    assert (await fire(reg, "rm x")).blocked


def broken_module(tmp_path: Path, name: str) -> str:
    (tmp_path / f"{name}.py").write_text("raise RuntimeError('half-written module')\n")
    return name


def test_a_module_that_exits_at_import_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"exits_{uuid.uuid4().hex}"
    (tmp_path / f"{name}.py").write_text("import sys\nsys.exit('not today')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match=f"cannot import '{name}': SystemExit: not today"):
        load(config(tmp_path, f"{name}:f"))


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("no_colon_here", "expected \"package.module:function\", got 'no_colon_here'"),
        (":deny_rm", 'expected "package.module:function"'),
        ("no_such_module_x:f", "cannot import 'no_such_module_x': ModuleNotFoundError: No mod"),
        ("{module}:deny_rn", "{module} has no attribute 'deny_rn' (did you mean 'deny_rm'?)"),
        ("{module}:Checks.nope", "{module}:Checks has no attribute 'nope'"),
        ("{module}:not_callable", "{module}:not_callable is an int, not a function"),
        ("{module}:two_arguments", "{module}:two_arguments must take one argument (the event"),
        ("{broken}:f", "cannot import '{broken}': RuntimeError: half-written module"),
    ],
)
def test_import_problems_are_config_errors_at_their_line(
    module: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reference: str, problem: str
) -> None:
    broken = broken_module(tmp_path, f"broken_{uuid.uuid4().hex}")
    names = {"module": module, "broken": broken}
    path = config(tmp_path, reference.format(**names))
    with pytest.raises(ConfigError) as caught:
        load(path)
    (error,) = caught.value.errors
    assert str(error).startswith(
        f"{path}:6: hooks.PreToolUse[0].hooks[0].callable: {problem.format(**names)}"
    )
    monkeypatch.delitem(sys.modules, broken, raising=False)


def test_a_missing_callable_field(tmp_path: Path) -> None:
    path = tmp_path / "orchestra.yaml"
    path.write_text("hooks:\n  Stop:\n    - hooks:\n        - type: python\n")
    with pytest.raises(ConfigError, match=r"orchestra.yaml:4: hooks.Stop\[0\].hooks\[0\]"):
        load(path)


def test_built_in_python_imports_at_construction(module: str) -> None:
    assert hook(module, "deny_rm").function is sys.modules[module].deny_rm
    with pytest.raises(ValueError, match="callable: cannot import 'no_such_module_y'"):
        PythonHook(event="Stop", callable="no_such_module_y:f")
    # Identity is the reference, not the function object.
    assert hook(module, "deny_rm").key() == hook(module, "deny_rm").key()
    assert hook(module, "deny_rm").key() != hook(module, "fails").key()


def test_a_hook_result_is_what_it_returns(module: str) -> None:
    function: Callable[[dict[str, object]], object] = hook(module, "as_result").function
    assert function({}) == HookResult(messages=("from a HookResult",))
