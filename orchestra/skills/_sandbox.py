"""``sandbox: true``: a command hook run under bubblewrap (``bwrap``).

The hook sees the whole filesystem read-only but the project folder (writable), a
private ``/tmp``, no network (``sandbox: {network: true}`` shares the host's), and its
own PID namespace: when the hook is over its namespace is torn down, so nothing it
started outlives it, not even a ``setsid`` grandchild that left its process group.
``bwrap`` comes from the Debian/Ubuntu package ``bubblewrap`` (``bubblewrap`` on Fedora
and Arch too); without it a sandboxed hook is a hook error that says so.
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, Any, Final, final

import attrs

if TYPE_CHECKING:
    from orchestra.skills._fields import Entry

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
    command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if skill_dir is not None:  # may be below /tmp, which the tmpfs hides
        command += ["--ro-bind", skill_dir, skill_dir]
    command += ["--bind", project_dir, project_dir, "--chdir", project_dir]
    return [*command, "--setenv", "TMPDIR", "/tmp", "--"]


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
