"""The key that authenticates a journal's payloads, and the tags made with it.

Every payload a run journals is stored under its tag, an HMAC-SHA256 (truncated to 128
bits, as hex) of the payload under the journal key; the task's record names it as its
``output_digest``. A resume recomputes the tag of each payload it would reuse and loads
only those whose tag matches: a payload planted in the store by someone without the key
(a journal file from elsewhere, a row written into a shared database) is never handed to
the serializer, so a pickle in it never runs. Its task runs again, and the run says why.

The key is ``run(..., journal_key=...)`` when given, else the user's own key, kept in
``$XDG_STATE_HOME/orchestra/journal.key`` (default ``~/.local/state/orchestra/``),
created on first use with mode 0600 in a folder of mode 0700. A key file that others may
read or write, that is not a regular file (a FIFO, a device), or whose folder others may
write to, is refused, at once: whoever can read it can forge payloads.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import threading
from pathlib import Path
from typing import Final, final

from orchestra._errors import JournalError

__all__ = ["KEY_FILE", "MIN_KEY_BYTES", "PayloadKey", "key_path", "resolve_key"]

KEY_FILE: Final = "journal.key"
MIN_KEY_BYTES: Final = 16
_TAG_BYTES: Final = 16  # 128 bits: RFC 2104 allows truncating an HMAC to half its length

_user_lock = threading.Lock()
_user_keys: dict[Path, PayloadKey] = {}  # read once per process, by file


@final
class PayloadKey:
    """A journal key: tags payloads and checks them (internal).

    Args:
        material: the key's bytes (at least 16).
        source: where it comes from, for messages (``"journal_key="`` or the file).
    """

    __slots__ = ("_base", "source")

    def __init__(self, material: bytes, source: str) -> None:
        self._base = hmac.new(material, digestmod=hashlib.sha256)  # copied per payload
        self.source = source

    def __repr__(self) -> str:
        return f"PayloadKey(from {self.source})"

    def tag(self, payload: bytes) -> str:
        """The payload's tag: what the journal stores it under."""
        h = self._base.copy()
        h.update(payload)
        return h.digest()[:_TAG_BYTES].hex()

    def check(self, payload: bytes, tag: str) -> bool:
        """Whether ``payload`` is the one this key tagged ``tag`` (in constant time)."""
        return hmac.compare_digest(self.tag(payload), tag)


def key_path() -> Path:
    """The user's journal key file: ``$XDG_STATE_HOME/orchestra/journal.key``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "orchestra" / KEY_FILE


def resolve_key(given: bytes | str | None) -> PayloadKey:
    """The key of a run: ``given`` (``journal_key=``), else the user's (made if missing)."""
    if given is not None:
        return PayloadKey(check_key(given), "journal_key=")
    path = key_path()
    with _user_lock:
        found = _user_keys.get(path)
        if found is None:
            found = _user_keys[path] = PayloadKey(_read_or_create(path), str(path))
        return found


def check_key(given: object) -> bytes:
    """``journal_key=`` as bytes, or the error that says what is wrong with it."""
    if isinstance(given, str):
        material = given.strip().encode()
    elif isinstance(given, (bytes, bytearray)):
        material = bytes(given)
    else:
        raise TypeError(f"journal_key must be bytes or str, got {type(given).__name__}")
    if len(material) < MIN_KEY_BYTES:
        raise ValueError(
            f"journal_key must be at least {MIN_KEY_BYTES} bytes, got {len(material)} "
            '(make one with: python -c "import secrets; print(secrets.token_urlsafe(32))")'
        )
    return material


def _error(path: Path, message: str) -> JournalError:
    return JournalError(
        f"journal key {path}: {message}; or pass run(..., journal_key=...)", journal=str(path)
    )


def _read_or_create(path: Path) -> bytes:
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror or exc})") from exc
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # whole or not at all; another process's key wins a race
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError as exc:
        raise _error(path, f"cannot create it ({exc.strerror or exc})") from exc
    try:
        return _read(path)
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror or exc})") from exc


def _check_folder(path: Path) -> None:
    """Refuse a key folder that others may write to (they could put their key in it)."""
    if os.name != "posix":
        return
    folder = path.parent
    info = os.stat(folder)
    if info.st_uid != os.getuid():
        raise _error(path, f"its folder {folder} is owned by another user")
    if info.st_mode & 0o022:
        raise _error(
            path,
            f"its folder {folder} has mode {stat.S_IMODE(info.st_mode):o}: others may "
            f"replace the key (chmod 700 {folder})",
        )


def _read(path: Path) -> bytes:
    # Non-blocking: a FIFO put in the key's place would hang the open until a writer came.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        _check_folder(path)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _error(path, "not a regular file")
        posix = os.name == "posix"  # elsewhere mode bits and owners do not say who reads it
        if posix and info.st_uid != os.getuid():
            raise _error(path, "owned by another user")
        if posix and info.st_mode & 0o077:
            raise _error(
                path,
                f"mode {stat.S_IMODE(info.st_mode):o}: others may read or change it, so they "
                f"could forge journal payloads (chmod 600 {path})",
            )
        material = os.read(fd, 4096).strip()
    finally:
        os.close(fd)
    if len(material) < MIN_KEY_BYTES:
        raise _error(path, f"holds {len(material)} bytes, fewer than {MIN_KEY_BYTES}")
    return material
