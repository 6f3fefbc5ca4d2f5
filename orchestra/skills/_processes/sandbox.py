"""``sandbox: true``: a command hook run under bubblewrap (``bwrap``).

What the hook gets:

- the whole filesystem read-only, but the project folder (writable) and a private
  ``/tmp``;
- no network (``sandbox: {network: true}`` shares the host's), and with it no abstract
  Unix socket (those belong to a network namespace: X11's, D-Bus's, systemd's);
- no host Unix socket: ``/run`` (``/var/run``), ``/var/tmp``, ``/tmp`` and the user's
  runtime folder (``$XDG_RUNTIME_DIR``) are empty folders of its own (but the files of
  theirs that ``/etc`` links to, such as ``resolv.conf``), and every other
  socket bound on the host when the hook starts (listed in ``/proc/net/unix``: an SSH
  control master in ``~/.ssh``, a ``~/.gnupg`` agent, a database socket in ``/var/lib``)
  is covered by ``/dev/null``, so connecting to it is refused. Sockets in the project
  folder stay reachable (they are the project's);
- its own PID namespace: when the hook is over its namespace is torn down, so nothing it
  started outlives it, not even a ``setsid`` grandchild that left its process group.

What it does not cover: a socket bound after the hook started in a folder it can see
(not ``/run``, ``/tmp``, ``/var/tmp``, the runtime folder), and one bound by a process of
another network namespace (a container's) outside those folders: such a socket is
reachable by its path. With ``network: true`` abstract sockets are reachable too.
``bwrap`` comes from the Debian/Ubuntu package ``bubblewrap`` (``bubblewrap`` on Fedora
and Arch too); without it a sandboxed hook is a hook error that says so.
"""

from __future__ import annotations

import os
import shutil
import stat
from typing import TYPE_CHECKING, Any, Final, final

import attrs

if TYPE_CHECKING:
    from orchestra.skills._config.entry import Entry

__all__ = ["MISSING", "Sandbox", "bwrap_command", "parse_sandbox"]

MISSING: Final = "sandbox: bwrap (bubblewrap) is not installed"
"""The start of the error (and of ``validate``'s warning) when ``bwrap`` is missing."""
_FIELDS: Final = ("network",)


@final
@attrs.frozen
class Sandbox:
    """How a command hook is sandboxed (``sandbox: true`` or ``sandbox: {...}``).

    Attributes:
        network: the hook shares the host's network (default: none at all).
    """

    network: bool = False


def bwrap_command(sandbox: Sandbox, *, project_dir: str, skill_dir: str | None) -> list[str]:
    """The ``bwrap`` command line (ending in ``--``) that runs a hook in ``sandbox``.

    Raises:
        FileNotFoundError: ``bwrap`` is not on ``PATH``.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError(MISSING)
    command = [bwrap, "--die-with-parent", "--unshare-all"]
    if sandbox.network:
        command.append("--share-net")
    command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    hidden = _socket_folders()
    for folder in hidden:  # empty folders of its own where the host's sockets were
        command += ["--tmpfs", folder]
    for path in _etc_files_in(hidden):  # /etc/resolv.conf -> /run/systemd/resolve/...
        command += ["--ro-bind", path, path]
    shown = [project_dir] if skill_dir is None else [skill_dir, project_dir]
    if skill_dir is not None:  # may be below /tmp, which the tmpfs hides
        command += ["--ro-bind", skill_dir, skill_dir]
    command += ["--bind", project_dir, project_dir, "--chdir", project_dir]
    for path in _host_sockets():  # what is still visible, outside the project: covered
        if _inside(path, project_dir) or not (
            any(_inside(path, folder) for folder in shown)
            or not any(_inside(path, folder) for folder in hidden)
        ):
            continue
        command += ["--ro-bind", "/dev/null", path]
    return [*command, "--setenv", "TMPDIR", "/tmp", "--"]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _socket_folders() -> list[str]:
    """The folders that hold the host's sockets, to be replaced by empty ones.

    ``/run`` (``/var/run`` is a link to it on current systems), ``/var/tmp``, ``/tmp``
    and the user's runtime folder, each once, outer ones first, if it exists.
    """
    found: list[str] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    for folder in ("/tmp", "/run", "/var/run", "/var/tmp", runtime):
        if not folder or not os.path.isabs(folder) or not os.path.isdir(folder):
            continue
        real = os.path.realpath(folder)
        if real == "/" or any(_inside(real, known) for known in found):
            continue  # a link to a folder already hidden, or below one
        found.append(real)
    return found


def _etc_files_in(hidden: list[str], etc: str = "/etc") -> list[str]:
    """The files ``/etc`` links to in hidden folders, shown again read-only.

    ``/etc/resolv.conf`` is a link to ``/run/systemd/resolve/stub-resolv.conf`` under
    systemd-resolved: without it, names would not resolve with ``network: true``. Only
    regular files: a socket stays hidden.
    """
    found: list[str] = []
    try:
        entries = list(os.scandir(etc))
    except OSError:
        return found
    for entry in entries:
        if not entry.is_symlink():
            continue
        real = os.path.realpath(entry.path)
        shown = any(_inside(real, folder) for folder in hidden) and os.path.isfile(real)
        if shown and real not in found:
            found.append(real)
    return found


def _host_sockets() -> list[str]:
    """The paths of the Unix sockets bound on the host now (``/proc/net/unix``).

    Only those that are sockets on the filesystem now (a socket unlinked since it was
    bound is listed still, and has nothing to cover).
    """
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:  # no /proc (not Linux): bwrap is Linux's
        return []
    paths: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unbound, or abstract ("@name"): the network namespace covers it
        try:
            path = os.path.realpath(fields[7])  # /var/run/x.sock is /run/x.sock
            if path not in paths and stat.S_ISSOCK(os.lstat(path).st_mode):
                paths.append(path)
        except (OSError, ValueError):
            continue
    return paths


def parse_sandbox(entry: Entry) -> Sandbox | None:
    """Read ``sandbox``: true, false, or a mapping of ``network``."""
    value: Any = entry.get("sandbox")
    if value is None or value is False:
        return None
    if value is True:
        return Sandbox()
    options = entry.options("sandbox", _FIELDS, "true, false or a mapping")
    if options is None:
        return None
    return Sandbox(network=options.flag("network"))
