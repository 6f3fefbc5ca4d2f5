"""``sandbox: true`` reaches no host Unix socket: real servers, real bwrap, real connects.

A host socket is a door out of any sandbox (docker.sock, D-Bus, an SSH agent, a
database): ``--ro-bind / /`` keeps every one connectable. Each test binds a real Unix
socket server on the host (in ``/var/tmp``, ``/run``, the user's runtime folder, a
folder of the home, and abstract), then a sandboxed hook tries to connect to it and
send a line; the server says what it received.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.procs import LeakCheck

from orchestra.skills import CommandHook, HookRegistry, Sandbox
from orchestra.skills._processes.sandbox import _etc_files_in

pytestmark = pytest.mark.anyio

# The interpreter the sandboxed scripts run (the stdlib is all they need): the venv's own
# python may live below /tmp, which the sandbox replaces with a private one.
PYTHON = os.path.realpath(sys.executable)

CONNECT = """\
import json, os, socket
address = os.environ["SOCKET_ADDRESS"]
if address.startswith("@"):
    address = "\\0" + address[1:]
try:
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(5)
    client.connect(address)
    client.sendall(b"from the sandbox\\n")
    client.close()
    said = "connected"
except OSError as exc:
    said = f"refused: {type(exc).__name__}"
print(json.dumps({"message": said}))
"""


@pytest.fixture(scope="module")
def bwrap() -> str:
    path = shutil.which("bwrap")
    if path is None:
        pytest.fail("bubblewrap is not installed (no bwrap on PATH): apt-get install bubblewrap")
    smoke = subprocess.run(
        [path, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if smoke.returncode != 0:
        pytest.skip(f"bwrap cannot create namespaces on this machine: {smoke.stderr.strip()}")
    return path


class UnixServer:
    """A real Unix socket server on a thread: what each connection sent."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.received: list[bytes] = []
        self._socket = socket.socket(socket.AF_UNIX)
        self._socket.bind("\0" + address[1:] if address.startswith("@") else address)
        self._socket.listen()
        self._socket.settimeout(0.1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._socket.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(5)
                self.received.append(connection.recv(1024))

    def got(self, count: int, within: float = 5) -> list[bytes]:
        """What it received, once it holds ``count`` messages (waiting up to ``within`` s)."""
        deadline = time.monotonic() + within
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.received

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close()
        if not self.address.startswith("@"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.address)


@pytest.fixture
def serve() -> Iterator[list[UnixServer]]:
    servers: list[UnixServer] = []
    yield servers
    for server in servers:
        server.close()


def folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


SANDBOXED = Sandbox()


async def connect(
    tmp_path: Path, address: str, sandbox: Sandbox | None = SANDBOXED, **kw: object
) -> str:
    """What a (sandboxed) hook that connects to ``address`` says."""
    script = folder(tmp_path / "project") / "connect.py"  # /tmp is the sandbox's own
    script.write_text(CONNECT)
    hook = CommandHook(
        event="Stop",
        args=(PYTHON, str(script)),
        env=(("SOCKET_ADDRESS", address),),
        sandbox=sandbox,
        **kw,  # type: ignore[arg-type]
    )
    async with HookRegistry([hook], project_dir=tmp_path / "project") as registry:
        outcome = await registry.fire("Stop", {})
    assert (outcome.errors, outcome.blocked) == ((), False), outcome.records
    return outcome.messages[0]


WHERE = ["/var/tmp", "/run", "runtime folder", "home", "/tmp", "abstract"]


def address_in(where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    name = f"orchestra-test-{uuid.uuid4().hex[:12]}"
    if where == "abstract":
        return f"@{name}"
    if where == "/run" and not os.access("/run", os.W_OK):
        pytest.skip("/run is not writable here (root's): the runtime folder case covers it")
    if where == "runtime folder":  # outside /run, so that only its own rule hides it
        runtime = folder(Path.home() / ".cache" / name)
        runtime.chmod(0o700)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        return str(runtime / "agent.sock")
    if where == "home":  # an SSH control master, a gpg agent: anywhere in the home
        return str(folder(Path.home() / ".cache" / name) / "control.sock")
    return f"{where}/{name}.sock"


@pytest.fixture
def cleanup_home() -> Iterator[None]:
    before = set((Path.home() / ".cache").glob("orchestra-test-*"))
    yield
    for made in set((Path.home() / ".cache").glob("orchestra-test-*")) - before:
        shutil.rmtree(made, ignore_errors=True)


@pytest.mark.parametrize("where", WHERE)
async def test_a_sandboxed_hook_reaches_no_host_socket(
    tmp_path: Path,
    bwrap: str,
    cleanup_home: None,
    serve: list[UnixServer],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    folder(tmp_path / "project")
    server = UnixServer(address_in(where, tmp_path, monkeypatch))
    serve.append(server)
    # The attack is real: without the sandbox the same hook connects and sends.
    assert await connect(tmp_path, server.address, sandbox=None) == "connected"
    assert server.got(1) == [b"from the sandbox\n"]
    said = await connect(tmp_path, server.address)
    assert said.startswith("refused: "), said
    assert server.got(2, within=0.5) == [b"from the sandbox\n"]  # nothing more came


async def test_with_network_abstract_sockets_are_reachable_as_documented(
    tmp_path: Path, bwrap: str, serve: list[UnixServer]
) -> None:
    folder(tmp_path / "project")
    server = UnixServer(f"@orchestra-test-{uuid.uuid4().hex[:12]}")
    serve.append(server)
    assert await connect(tmp_path, server.address, Sandbox(network=True)) == "connected"
    assert server.got(1) == [b"from the sandbox\n"]


async def test_a_socket_in_the_project_folder_is_reachable(
    tmp_path: Path, bwrap: str, serve: list[UnixServer]
) -> None:
    server = UnixServer(str(folder(tmp_path / "project") / "project.sock"))
    serve.append(server)
    assert await connect(tmp_path, server.address) == "connected"


async def test_a_skill_s_folder_hides_no_socket(
    tmp_path: Path, bwrap: str, serve: list[UnixServer]
) -> None:
    # The skill's folder is shown read-only, even below /tmp: a socket in it is covered.
    skill = folder(tmp_path / "skill")
    folder(tmp_path / "project")
    server = UnixServer(str(skill / "skill.sock"))
    serve.append(server)
    said = await connect(tmp_path, server.address, skill_dir=str(skill))
    assert said.startswith("refused: ")
    assert server.received == []


async def test_a_persistent_sandboxed_hook_reaches_no_host_socket(
    tmp_path: Path, bwrap: str, serve: list[UnixServer]
) -> None:
    server = UnixServer(f"/var/tmp/orchestra-test-{uuid.uuid4().hex[:12]}.sock")
    serve.append(server)
    script = folder(tmp_path / "project") / "persistent.py"
    script.write_text(
        "import json, socket, sys\n"
        "for line in sys.stdin:\n"
        "    client = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        f"        client.connect({server.address!r}); said = 'connected'\n"
        "    except OSError as exc:\n"
        "        said = 'refused'\n"
        "    print(json.dumps({'id': json.loads(line)['id'], 'message': said}), flush=True)\n"
    )
    leaks = LeakCheck()
    leaks.snapshot()
    hook = CommandHook(event="Stop", args=(PYTHON, str(script)), persistent=True, sandbox=Sandbox())
    async with HookRegistry([hook], project_dir=folder(tmp_path / "project")) as registry:
        outcome = await registry.fire("Stop", {})
    assert outcome.messages == ("refused",)
    assert server.received == []
    await leaks.check()


def test_files_etc_links_to_in_a_hidden_folder_are_shown_again(tmp_path: Path) -> None:
    # /etc/resolv.conf -> /run/systemd/resolve/stub-resolv.conf under systemd-resolved:
    # hiding /run must not break name resolution; a socket linked from /etc stays hidden.
    run, etc = folder(tmp_path / "run"), folder(tmp_path / "etc")
    (folder(run / "resolve") / "stub-resolv.conf").write_text("nameserver 127.0.0.53\n")
    (etc / "resolv.conf").symlink_to(run / "resolve" / "stub-resolv.conf")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(run / "nscd.sock"))
    (etc / "nscd.sock").symlink_to(run / "nscd.sock")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")  # a plain file: not a link
    (etc / "elsewhere").symlink_to(tmp_path)  # a folder outside the hidden ones
    try:
        assert _etc_files_in([str(run)], etc=str(etc)) == [
            str(run / "resolve" / "stub-resolv.conf")
        ]
    finally:
        listening.close()
