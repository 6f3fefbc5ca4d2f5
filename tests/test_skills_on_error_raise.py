"""``on_error: raise``: a critical hook's error is raised from ``fire``, after its siblings ran.

As the lobehub runtime's ``fallback: 'none'`` deliveries. A real HTTP server on 127.0.0.1
(a subprocess) answers 500; the sibling command hooks prove they ran by the files they
write. Both anyio backends.
"""

from __future__ import annotations

import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import http_server
from helpers.procs import zombies

import orchestra
from orchestra import ConfigError, HookError
from orchestra.skills import CommandHook, CriticalHookError, HookRegistry, load

pytestmark = pytest.mark.anyio

TOOL = {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "ok"}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def registry(folder: Path, yaml: str) -> HookRegistry:
    path = folder / "orchestra.yaml"
    path.write_text(textwrap.dedent(yaml).lstrip("\n"))
    return load(path, project_dir=folder)


def http(url: str, on_error: str = "raise") -> str:
    return (
        f'{{type: http, url: "{url}", tls: off, allow_private_network: true, on_error: {on_error}}}'
    )


def writes(name: str, delay: float = 0) -> str:
    """A command hook that writes ``name`` in the project folder (after ``delay`` s)."""
    return f'{{type: command, command: "sleep {delay}; echo ran > {name}"}}'


async def test_the_error_is_raised_after_a_slower_sibling_ran(tmp_path: Path, server: str) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PostToolUse:
            - hooks:
                - {http(f"{server}/500")}
                - {writes("sibling.txt", 0.3)}
                - {{type: prompt, prompt: "kept on the outcome"}}
        """,
    )
    with pytest.raises(CriticalHookError) as info:
        await reg.fire("PostToolUse", TOOL)
    error = info.value
    assert (tmp_path / "sibling.txt").read_text() == "ran\n"  # it ran to its end
    assert isinstance(error, HookError)
    assert error.event == error.moment == "PostToolUse"
    assert error.hook == f"{tmp_path / 'orchestra.yaml'}:4"
    assert error.hook_id == "orchestra.yaml#PostToolUse/0/0".replace(
        "orchestra.yaml", str(tmp_path / "orchestra.yaml")
    )
    assert "http 500" in error.error
    assert str(error).startswith(f"{error.hook}: PostToolUse http hook failed (on_error: raise):")
    assert error.others == ()
    # what the other hooks gave is on the error, as if the failed hook had answered nothing
    assert error.outcome.messages == ("kept on the outcome",)
    assert error.outcome.records[0].note == "error raised after the other hooks (on_error: raise)"


async def test_siblings_before_and_after_it_run_on_an_event_that_runs_hooks_in_order(
    tmp_path: Path, closed_port: int
) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - {writes("before.txt")}
                - {http(f"http://127.0.0.1:{closed_port}/hook")}
                - {writes("after.txt")}
        """,
    )
    with pytest.raises(CriticalHookError) as info:
        await reg.fire("PreToolUse", TOOL)
    assert (tmp_path / "before.txt").exists()
    assert (tmp_path / "after.txt").exists()
    assert "connect" in info.value.error.lower()


async def test_several_failures_raise_the_first_with_the_others_attached(
    tmp_path: Path, server: str, closed_port: int
) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          Stop:
            - hooks:
                - {http(f"{server}/500")}
                - {writes("sibling.txt")}
                - {{type: command, command: "exit 1", on_error: raise}}
                - {http(f"http://127.0.0.1:{closed_port}/hook", "continue")}
        """,
    )
    with pytest.raises(CriticalHookError) as info:
        await reg.fire("Stop", {})
    first = info.value
    assert (tmp_path / "sibling.txt").exists()
    assert "http 500" in first.error
    (second,) = first.others
    assert isinstance(second, CriticalHookError)
    assert (second.error, second.hook) == ("exited 1", f"{tmp_path / 'orchestra.yaml'}:6")
    assert second.outcome is first.outcome
    assert first.__notes__ == [f"also failed: {second}"]
    # an error under on_error: continue is not raised: it is on the outcome's records
    assert len(first.outcome.errors) == 3


async def test_a_timeout_a_crash_and_bad_output_are_raised(tmp_path: Path) -> None:
    for command, error in [
        ("sleep 5", "timed out after 0.5 s"),
        ("kill -9 $$", "killed by SIGKILL"),
        ("echo not json", "invalid JSON output"),
    ]:
        hook = CommandHook(event="PreToolUse", command=command, timeout=0.5, on_error="raise")
        with pytest.raises(CriticalHookError) as info:
            await HookRegistry([hook], project_dir=tmp_path).fire("PreToolUse", TOOL)
        assert error in info.value.error, (command, info.value.error)
    assert zombies() == []


async def test_a_critical_hook_that_answers_raises_nothing(tmp_path: Path, server: str) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - {http(f"{server}/allow")}
        """,
    )
    outcome = await reg.fire("PreToolUse", TOOL)
    assert (outcome.decision, outcome.errors) == ("allow", ())


async def test_a_critical_hook_in_audit_mode_raises_nothing(tmp_path: Path, server: str) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PostToolUse:
            - hooks:
                - {http(f"{server}/500")[:-1]}, enforce: false}}
        """,
    )
    outcome = await reg.fire("PostToolUse", TOOL)
    assert outcome.audited[0].error is not None


async def test_a_guarded_tool_is_not_called_when_a_critical_hook_fails(
    tmp_path: Path, server: str
) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          PreToolUse:
            - hooks:
                - {http(f"{server}/500")}
        """,
    )
    calls: list[str] = []

    @reg.guard("Bash")
    async def bash(command: str) -> str:
        calls.append(command)
        return command

    with pytest.raises(CriticalHookError):
        await bash("ls")
    assert calls == []


def test_on_error_raise_loads_and_a_misspelling_is_refused(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          SessionStart:
            - hooks:
                - {type: command, command: "true", on_error: raise}
        """,
    )
    assert reg.hooks[0].on_error == "raise"
    with pytest.raises(
        ConfigError, match=r"expected continue, block or raise, got a string \('rais'\)"
    ):
        registry(
            tmp_path,
            """
            hooks:
              SessionStart:
                - hooks:
                    - {type: command, command: "true", on_error: rais}
            """,
        )


def test_claude_code_hooks_have_no_on_error_raise(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", '
        '"onFailure": "raise"}]}]}}'
    )
    with pytest.raises(ConfigError, match="onFailure"):
        load(settings)
    with pytest.raises(ValueError, match="on_error: raise"):
        CommandHook(event="Stop", command="true", on_error="raise", claude_code=True)


async def test_an_event_whose_critical_hook_failed_is_recorded_and_replays(
    tmp_path: Path, server: str
) -> None:
    record = tmp_path / "events.jsonl"
    config = tmp_path / "orchestra.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            hooks:
              PreToolUse:
                - hooks:
                    - {http(f"{server}/500")}
                    - {{type: permission, decision: allow}}
            """
        )
    )
    reg = load(config, project_dir=tmp_path, record=record)
    with pytest.raises(CriticalHookError):
        await reg.fire("PreToolUse", TOOL)
    (line,) = record.read_text().splitlines()
    assert '"decision": "allow"' in line  # the outcome of the hooks that answered
    report = await load(config, project_dir=tmp_path).replay(record)
    assert (report.events, report.changed) == (1, 0)  # replay goes on, as the others


async def test_in_a_dag_run_it_is_a_hook_error_of_the_run(tmp_path: Path, server: str) -> None:
    reg = registry(
        tmp_path,
        f"""
        hooks:
          TaskCreated:
            - hooks:
                - {http(f"{server}/500")}
                - {writes("sibling.txt")}
                - {{type: command, command: "exit 3", on_error: continue}}
        """,
    )
    dag = orchestra.DAG("d")

    @dag.task
    def task() -> int:
        return 1

    result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
    assert (tmp_path / "sibling.txt").exists()
    # a hook error of the run: logged, on the result, and the task goes on
    assert result.states == {"task": orchestra.TaskState.SUCCEEDED}
    ignored, critical = result.hook_errors  # each error of the event, once
    assert "exited 3" in str(ignored)
    assert isinstance(critical, CriticalHookError)
    assert critical.error.startswith("http 500")


@pytest.mark.parametrize("event", ["TaskCreated", "SubagentStart"])
async def test_a_sibling_deny_still_denies_when_a_critical_hook_fails(
    tmp_path: Path, closed_port: int, event: str
) -> None:
    # The critical hook fails at once, the deny comes later: the deny must stand (it was
    # lost when the error went on up to the engine's hook isolation, as no opinion).
    reg = registry(
        tmp_path,
        f"""
        hooks:
          {event}:
            - hooks:
                - {http(f"http://127.0.0.1:{closed_port}/x")}
                - {{type: command, command: "sleep 0.3; echo no >&2; exit 2"}}
        """,
    )
    ran: list[str] = []
    if event == "TaskCreated":
        dag = orchestra.DAG("d")

        @dag.task
        def task() -> int:
            ran.append("task")
            return 1

        result = await orchestra.run(dag, hooks=[reg.as_task_hooks()])
        assert result.states == {"task": orchestra.TaskState.FAILED}
        errors = result.hook_errors
    else:

        class Solo:
            name = "solo"

            async def run(self, task: str, ctx: object) -> str:
                ran.append("agent")
                return "done"

        dispatcher = orchestra.Dispatcher([Solo()], hooks=[reg.as_subagent_hooks()])
        with pytest.raises(orchestra.DispatchError, match="no") as failed:
            await dispatcher.dispatch("solo", "go")
        errors = failed.value.hook_errors
    assert ran == []
    (critical,) = errors
    assert isinstance(critical, CriticalHookError)
    assert "ConnectError" in critical.error


async def test_a_deny_still_ends_the_chain_and_is_on_the_raised_outcome(tmp_path: Path) -> None:
    reg = registry(
        tmp_path,
        """
        hooks:
          PreToolUse:
            - hooks:
                - {type: command, command: "exit 1", on_error: raise}
                - {type: permission, decision: deny, reason: "no"}
                - {type: command, command: "echo ran > late.txt; exit 1", on_error: raise}
        """,
    )
    with pytest.raises(CriticalHookError) as info:
        await reg.fire("PreToolUse", TOOL)
    assert info.value.outcome.blocked  # read by whoever handles the error: it was denied
    assert info.value.others == ()
    assert not (tmp_path / "late.txt").exists()  # after the deny: never ran
