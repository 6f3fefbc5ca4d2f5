"""Network grants in Claude Code files, honoured only where the user gave them.

``allowedHttpHookUrls`` and ``httpHookAllowedEnvVars`` open doors: an entry naming a
host lets an http hook reach it even when it is private or link-local (a cloud metadata
address), and each entry widens what the user's own lists allow. A grant is honoured
only from the user's or managed settings (``~/.claude/settings.json``,
``managed-settings.json``), a file in the user's orchestra folder, or a file whose trust
record (``orchestra hooks trust PATH``) names every grant it makes, as it is now. A
repository's own file is none of these until trusted: its lists can only narrow which
http hooks run and which variables their headers use, never widen them, and never let a
hook reach an internal address.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from orchestra.skills._sources.trust import TrustStore, config_dir, digest

__all__ = ["GRANT_FIELDS", "file_grants", "grant_lines", "trusted_grants"]

GRANT_FIELDS: Final = ("allowedHttpHookUrls", "httpHookAllowedEnvVars")
"""The Claude Code settings that grant network access to http hooks."""


def grant_lines(urls: Sequence[str] | None, names: Sequence[str] | None) -> tuple[str, ...]:
    """The grants of a file, one line each (``allowedHttpHookUrls: URL``...)."""
    lines = [f"{GRANT_FIELDS[0]}: {url}" for url in urls or ()]
    lines += [f"{GRANT_FIELDS[1]}: {name}" for name in names or ()]
    return tuple(lines)


def file_grants(raw: bytes) -> tuple[str, ...]:
    """The grants of a Claude Code file's bytes (none for any other file)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return ()
    if not isinstance(data, dict):
        return ()
    found = [data.get(field) for field in GRANT_FIELDS]
    urls, names = ([str(v) for v in value] if isinstance(value, list) else None for value in found)
    return grant_lines(urls, names)


def trusted_grants(path: Path, lines: tuple[str, ...], store: TrustStore | None = None) -> bool:
    """Whether the trust store (or the user's own folder) grants ``lines`` to ``path``.

    The file's trust record must be of its content now and name every one of them.
    """
    resolved = path.resolve()
    if resolved.is_relative_to(config_dir().resolve()):
        return True
    known = (store or TrustStore()).read().get(str(resolved))
    if known is None or not set(lines) <= set(known.grants):
        return False
    try:
        return known.sha256 == digest(resolved.read_bytes())
    except OSError:
        return False
