"""The trust store: the hook files the user trusted, by content (as ``direnv allow``).

A hook file from a cloned repository or a downloaded skill runs commands on the user's
machine. ``orchestra hooks trust PATH...`` records each file's SHA-256, a one-line
summary of each of its hooks, and the SHA-256 of each file those hooks run (its scripts,
a skill's folder: see ``_sources.covered``) in ``$XDG_CONFIG_HOME/orchestra/trust.json`` (default
``~/.config/orchestra/trust.json``); ``load(..., require_trust=True)`` then refuses a file
that is not in the store, or whose content or scripts changed since (the message says
which hooks were added or removed, or which script changed, and the command that trusts
it again). Files in the user's own
configuration folder (``$XDG_CONFIG_HOME/orchestra/``) are the user's: always trusted.

Writes hold an exclusive lock (``trust.json.lock``) around read-modify-write and
replace the file atomically, so concurrent ``trust`` commands never lose an entry and a
reader never sees half a file.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, final

import attrs

from orchestra._errors import ConfigError

__all__ = ["TrustStore", "Trusted", "changed_files", "config_dir", "digest", "summary"]

_VERSION: Final = 1


def config_dir() -> Path:
    """The user's orchestra configuration folder (``$XDG_CONFIG_HOME/orchestra``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "orchestra"


def digest(data: bytes) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    return hashlib.sha256(data).hexdigest()


def summary(hooks: Iterable[Any]) -> tuple[str, ...]:
    """One line per hook, as the store keeps them: ``Event 'matcher' type: what it does``.

    A hook's phase and audit mode are on its line when set (``[phase: guard]``,
    ``[enforce: false]``), so a diff names a guard that lost its phase or stopped
    enforcing.
    """
    lines = []
    for hook in hooks:
        matcher = f" {hook.matcher!r}" if hook.matcher is not None else ""
        marks = [f"phase: {hook.phase}"] if getattr(hook, "phase", None) else []
        if getattr(hook, "enforce", True) is False:
            marks.append("enforce: false")
        tail = f" [{', '.join(marks)}]" if marks else ""
        lines.append(f"{hook.event}{matcher} {hook.type}{tail}: {hook.describe()}")
    return tuple(lines)


@final
@attrs.frozen
class Trusted:
    """One trusted file.

    Attributes:
        path: the file, absolute.
        sha256: its content's SHA-256 when it was trusted.
        hooks: a summary line per hook it had then.
        trusted_at: when, as an ISO 8601 UTC time.
        files: the files its hooks run (its scripts, a skill's folder), each
            ``(absolute path, SHA-256)``, as they were then (see ``_sources.covered``).
        grants: the network grants it made then, one line each (see ``_sources.claude.grants``).
    """

    path: str
    sha256: str
    hooks: tuple[str, ...] = ()
    trusted_at: str = ""
    files: tuple[tuple[str, str], ...] = ()
    grants: tuple[str, ...] = ()


@final
class TrustStore:
    """The trust store file.

    Args:
        path: the store (default: ``config_dir() / "trust.json"``).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else config_dir() / "trust.json"

    def __repr__(self) -> str:
        return f"<TrustStore {self.path}>"

    def read(self) -> dict[str, Trusted]:
        """Every trusted file, by absolute path (empty when there is no store yet).

        Raises:
            ConfigError: the store is not a trust store (it names the file).
        """
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise ConfigError(
                f"{self.path}: cannot read the trust store: {self._why(exc)}"
            ) from None
        try:
            data = json.loads(text)
            entries = data["trusted"]
            return {
                path: Trusted(
                    path=path,
                    sha256=str(entry["sha256"]),
                    hooks=tuple(map(str, entry.get("hooks", ()))),
                    trusted_at=str(entry.get("trusted_at", "")),
                    files=tuple((str(p), str(h)) for p, h in entry.get("files", {}).items()),
                    grants=tuple(map(str, entry.get("grants", ()))),
                )
                for path, entry in entries.items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"{self.path}: not a valid trust store ({type(exc).__name__}: {exc}); "
                "fix it or delete it and trust your hook files again"
            ) from None

    def trust(self, entries: Iterable[Trusted]) -> None:
        """Record ``entries`` (replacing what was recorded for the same paths).

        Raises:
            ConfigError: the store is broken, or cannot be written.
        """
        now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        with self._changing() as trusted:
            for entry in entries:
                trusted[entry.path] = attrs.evolve(entry, trusted_at=entry.trusted_at or now)

    def untrust(self, paths: Iterable[str]) -> list[str]:
        """Forget ``paths``; answer those that were trusted.

        Raises:
            ConfigError: the store is broken, or cannot be written.
        """
        removed: list[str] = []
        with self._changing() as trusted:
            for path in paths:
                if trusted.pop(path, None) is not None:
                    removed.append(path)
        return removed

    @contextlib.contextmanager
    def _changing(self) -> Iterator[dict[str, Trusted]]:
        """Read, let the caller change, and write back, under the store's lock.

        Raises:
            ConfigError: the store cannot be read, or its folder cannot be written (it
                names the store and why).
        """
        lock = self.path.with_name(self.path.name + ".lock")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            held = open(lock, "a")  # noqa: SIM115 -- closed below, after the write
        except OSError as exc:
            raise self._unwritable(exc) from None
        with held:
            fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
            trusted = self.read()
            yield trusted
            try:
                self._write(trusted)
            except OSError as exc:
                raise self._unwritable(exc) from None

    def _unwritable(self, exc: OSError) -> ConfigError:
        return ConfigError(f"{self.path}: cannot write the trust store: {self._why(exc)}")

    def _why(self, exc: OSError) -> str:
        """What went wrong, in words: a folder on the way that is a file, or the OS's."""
        for folder in self.path.parents:
            if folder.exists():
                if not folder.is_dir():
                    return f"{folder} is a file, not a folder"
                break
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror or exc}{where}"

    def _write(self, trusted: Mapping[str, Trusted]) -> None:
        data = {
            "version": _VERSION,
            "trusted": {
                path: {
                    "sha256": entry.sha256,
                    "hooks": list(entry.hooks),
                    "trusted_at": entry.trusted_at,
                    "files": dict(entry.files),
                    "grants": list(entry.grants),
                }
                for path, entry in sorted(trusted.items())
            },
        }
        fd, temporary = tempfile.mkstemp(prefix=".trust-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                json.dump(data, stream, indent=2)
                stream.write("\n")
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def refusal(
        self,
        path: Path,
        sha256: str,
        hooks: Callable[[], Sequence[Any]],
        files: Callable[[Sequence[Any]], Mapping[str, str]],
    ) -> str | None:
        """Why ``path`` (with this content) is not trusted, or None.

        ``hooks`` reads its hooks, without importing anything; ``files`` answers the
        files those hooks run (``{path: sha256}``), which must be as they were trusted.
        """
        resolved = path.resolve()
        if resolved.is_relative_to(config_dir().resolve()):
            return None  # the user's own configuration
        known = self.read().get(str(resolved))
        command = f"orchestra hooks trust {path}"
        if known is None:
            return f"not trusted: review its hooks, then run `{command}`"
        if known.sha256 == sha256:
            try:
                changed = changed_files(known, files(hooks()))
            except ValueError as exc:
                return f"{exc}; it cannot be trusted"
            if not changed:
                return None
            return (
                f"a file it runs changed since you trusted it ({known.trusted_at}): "
                f"{'; '.join(changed)}; review it, then run `{command}`"
            )
        now = summary(hooks())
        changes = [f"+ {line}" for line in now if line not in known.hooks]
        changes += [f"- {line}" for line in known.hooks if line not in now]
        what = "; ".join(changes) if changes else "its hooks are the same, its text is not"
        return (
            f"changed since you trusted it ({known.trusted_at}): {what}; "
            f"review it, then run `{command}`"
        )


def changed_files(known: Trusted, now: Mapping[str, str]) -> list[str]:
    """How the files a trusted source runs differ from when it was trusted (one per file)."""
    then = dict(known.files)
    changes = []
    for path in sorted(then.keys() | now.keys()):
        if path not in then:
            changes.append(f"+ {path} (new)")
        elif path not in now:
            changes.append(f"- {path} (gone)")
        elif then[path] != now[path]:
            changes.append(f"~ {path} (edited)")
    return changes
