"""``sandbox: true``: a command hook under bubblewrap, with nothing outliving it.

These tests need ``bwrap`` (Debian package ``bubblewrap``; ``.ci/run`` installs it). Without
it they fail and say so; they are skipped only when bwrap is there but this machine cannot
create namespaces (bwrap's own smoke run says so), which is reported in the skip reason.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from helpers import http_server
from helpers.procs import MARK_VAR, LeakCheck, marked

from orchestra import ConfigError
from orchestra.cli import main
from orchestra.skills import CommandHook, HookOutcome, HookRegistry, Sandbox, load

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        pytest.fail(
            "bubblewrap is not installed (no bwrap on PATH): apt-get install bubblewrap; "
            ".ci/run installs it"
        )
    smoke = subprocess.run(
        [path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if smoke.returncode != 0:
        if "namespace" in smoke.stderr or "Operation not permitted" in smoke.stderr:
            pytest.skip(f"bwrap cannot create namespaces on this machine: {smoke.stderr.strip()}")
        pytest.fail(f"bwrap's smoke run failed: {smoke.stderr.strip()}")
    return path


@pytest.fixture
async def leaks(bwrap: str) -> LeakCheck:
    check = LeakCheck()
    check.snapshot()
    return check


async def run(tmp_path: Path, command: str, *, mark: str = "", **kw: object) -> HookOutcome:
    hook = CommandHook(
        event="Stop",
        command=command,
        env=((MARK_VAR, mark),) if mark else (),
        **kw,  # type: ignore[arg-type]
    )
    return await HookRegistry([hook], project_dir=tmp_path).fire("Stop", {})


def said(outcome: HookOutcome) -> str:
    assert not outcome.errors, outcome.errors
    return outcome.messages[0].strip()


def message(shell: str) -> str:
    """A command that answers what ``shell`` prints as the hook's message."""
    return f'printf \'{{"message": "%s"}}\' "$( ({shell}) | tr "\\n" " ")"'


async def test_a_setsid_grandchild_dies_with_a_sandboxed_hook(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    command = "setsid sh -c 'sleep 60' & sleep 60"
    outcome = await run(tmp_path, command, mark=leaks.mark, timeout=0.5, sandbox=Sandbox())
    assert outcome.records[0].error == "timed out after 0.5 s"
    await leaks.check()  # its own PID namespace went with it


async def test_without_the_sandbox_a_setsid_grandchild_survives(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    # The documented limit that the sandbox lifts: setsid leaves the hook's process group.
    command = "setsid sh -c 'sleep 60' & sleep 60"
    outcome = await run(tmp_path, command, mark=leaks.mark, timeout=0.5)
    assert outcome.records[0].error == "timed out after 0.5 s"
    survivors = marked(leaks.mark)  # the setsid sh and its sleep
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert survivors
    await leaks.check()


async def test_only_the_project_folder_is_writable(tmp_path: Path, bwrap: str) -> None:
    project, skill = tmp_path / "project", tmp_path / "skill"  # both below /tmp
    project.mkdir()
    skill.mkdir()
    shell = (
        "touch $ORCHESTRA_PROJECT_DIR/made && echo project-ok; "
        "touch /usr/x 2>/dev/null || echo usr-ro; "
        "touch $SKILL_DIR/x 2>/dev/null || echo skill-ro; "
        "touch /tmp/inside && echo tmp-ok"
    )
    hook = CommandHook(
        event="Stop", command=message(shell), sandbox=Sandbox(), skill_dir=str(skill)
    )
    outcome = await HookRegistry([hook], project_dir=project).fire("Stop", {})
    assert said(outcome).split() == ["project-ok", "usr-ro", "skill-ro", "tmp-ok"]
    assert (project / "made").exists()
    assert not await anyio.Path("/tmp/inside").exists()  # a private /tmp


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    url, process = http_server.start()
    yield url
    http_server.stop(process)


async def test_no_network_unless_asked(tmp_path: Path, bwrap: str, server: str) -> None:
    port = server.rsplit(":", 1)[1]
    connect = (
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', "
        f"{port}), timeout=5); print('connected')\" 2>/dev/null || echo refused"
    )
    closed = await run(tmp_path, message(connect), sandbox=Sandbox())
    opened = await run(tmp_path, message(connect), sandbox=Sandbox(network=True))
    assert (said(closed), said(opened)) == ("refused", "connected")


async def test_its_own_pid_namespace(tmp_path: Path, bwrap: str) -> None:
    outcome = await run(tmp_path, message("ls /proc | grep -c '^[0-9]'"), sandbox=Sandbox())
    assert int(said(outcome)) < 10  # bwrap's init, sh and ls; not the machine's processes


async def test_exit_codes_and_stdin_go_through(tmp_path: Path, bwrap: str) -> None:
    outcome = await run(tmp_path, "cat > /dev/null; echo no >&2; exit 2", sandbox=Sandbox())
    assert (outcome.blocked, outcome.reason) == (True, "no")
    assert outcome.records[0].exit_code == 2


async def test_without_bwrap_a_sandboxed_hook_is_an_error_that_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    outcome = await run(tmp_path, "true", sandbox=Sandbox())
    assert outcome.records[0].error == (
        "could not start: sandbox: bwrap (bubblewrap) is not installed"
    )


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def test_sandbox_in_yaml(tmp_path: Path) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        """
        hooks:
          Stop:
            - hooks:
                - {type: command, command: a, sandbox: true}
                - {type: command, command: b, sandbox: {network: true}}
                - {type: command, command: c, sandbox: false}
        """,
    )
    hooks = load(config).hooks
    assert [getattr(h, "sandbox", None) for h in hooks] == [Sandbox(), Sandbox(network=True), None]


def test_validate_warns_when_bwrap_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(
        tmp_path / "orchestra.yaml",
        "hooks:\n  Stop:\n    - hooks: [{type: command, command: a, sandbox: true}]\n",
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["hooks", "validate", str(config)])
    assert result.exit_code == 0
    assert result.output.splitlines() == [
        f"warning: {config}:3: sandbox: bwrap (bubblewrap) is not installed; "
        "this hook fails until it is",
        "ok: 1 hook in 1 path(s)",
    ]


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        (
            "{type: http, url: 'https://h.example', sandbox: true}",
            "sandbox: unknown field for a http hook ('sandbox' is a field of command hooks)",
        ),
        (
            "{type: command, command: x, sandbox: {netwrk: true}}",
            "sandbox.netwrk: unknown field (did you mean 'network'?)",
        ),
        (
            "{type: command, command: x, sandbox: yes please}",
            "sandbox: expected true, false or a mapping, got a string ('yes please')",
        ),
    ],
)
def test_bad_sandbox_settings_are_refused(tmp_path: Path, hook: str, message: str) -> None:
    config = write(tmp_path / "orchestra.yaml", f"hooks:\n  Stop:\n    - hooks:\n      - {hook}\n")
    with pytest.raises(ConfigError) as info:
        load(config)
    assert str(info.value) == f"{config}:4: hooks.Stop[0].hooks[0].{message}"


async def test_a_persistent_hook_runs_in_the_sandbox_and_closes_clean(
    tmp_path: Path, leaks: LeakCheck
) -> None:
    # One sandboxed process answers every event; closing the registry ends the sandbox
    # and everything in it.
    loop = (
        "while IFS= read -r line; do "
        "if touch /usr/x 2>/dev/null; then w=usr-writable; else w=usr-ro; fi; "
        'printf \'{"message": "%s %s"}\\n\' "$$" "$w"; done'
    )
    hook = CommandHook(
        event="Stop",
        command=loop,
        persistent=True,
        sandbox=Sandbox(),
        env=((MARK_VAR, leaks.mark),),
    )
    async with HookRegistry([hook], project_dir=tmp_path) as registry:
        first = said(await registry.fire("Stop", {}))
        second = said(await registry.fire("Stop", {}))
        assert first == second  # the same process: the same pid inside the sandbox
        assert first.split()[1] == "usr-ro"
        assert marked(leaks.mark)  # bwrap and the loop are running
    await leaks.check()
