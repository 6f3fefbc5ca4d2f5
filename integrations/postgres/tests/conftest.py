"""A real PostgreSQL server for the tests: Debian's ``postgresql`` binaries, a temp cluster.

``initdb`` makes a cluster in a temporary folder, ``pg_ctl`` starts it on a free local
port (trust authentication, 127.0.0.1 only) and stops it at the end of the session. When
the tests run as root (CI does), the server runs as the ``postgres`` user, as PostgreSQL
refuses to run as root. Without PostgreSQL on the machine the tests fail saying so.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest


@pytest.fixture(autouse=True, scope="session")
def _journal_key_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The user's journal key in a folder of the session's, never the real one (children too)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    yield
    mp.undo()


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _bin_dir() -> Path:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    if not found:
        pytest.fail(
            "PostgreSQL is not installed: these tests start a real server from Debian's "
            "`postgresql` package (apt-get install -y postgresql; .ci/run does it)"
        )
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """A running throwaway cluster; ``new_database()`` gives each test a fresh database."""

    def __init__(self, port: int) -> None:
        self.port = port

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        name = f"journal_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.dsn(name)


def _scratch() -> str | None:
    """/dev/shm when it has room, else the default temporary folder.

    The cluster holds a database per test (about 18,000 files); deleting them took 17 s
    on an ext4 disk mounted with ``discard``, at the end of every session.
    """
    try:
        if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free > 2**31:
            return "/dev/shm"
    except OSError:
        pass
    return None


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    bin_dir = _bin_dir()
    root = Path(tempfile.mkdtemp(prefix="orchestra-pg-", dir=_scratch()))
    data = root / "data"
    user = None
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        user = "postgres"
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            pytest.fail(
                "running as root, the tests start PostgreSQL as the 'postgres' user, which "
                "Debian's postgresql package creates: there is no such user here"
            )
        os.chown(root, entry.pw_uid, entry.pw_gid)
    port = _free_port()

    def pg(*args: str) -> None:
        proc = subprocess.run(
            args, user=user, capture_output=True, text=True, timeout=120, check=False, cwd=root
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")

    pg(
        str(bin_dir / "initdb"),
        "-D",
        str(data),
        "-U",
        "postgres",
        "--auth=trust",
        "--no-sync",
        "-E",
        "UTF8",
    )
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
    pg_ctl = str(bin_dir / "pg_ctl")
    pg(pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
    try:
        yield PostgresServer(port)
    finally:
        pg(pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(root, ignore_errors=True)
