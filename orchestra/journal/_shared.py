"""Journals shared within a process: one open ``SQLiteJournal`` per file, borrowed by runs."""

from __future__ import annotations

import atexit
import os
import threading
from typing import Final, final

from orchestra.journal._sqlite import SQLiteJournal

__all__ = ["acquire_shared", "release_shared"]

# -- journals shared within a process -----------------------------------------------------
#
# ``run(journal="runs.db")`` borrows one open journal per file and process instead of
# opening and closing the file for every run: closing the last connection to a WAL file
# checkpoints it and deletes the WAL, and the next run's first commit recreates it, two
# fsyncs that can cost more than a whole run of cheap tasks. A borrowed journal is checked
# again at every borrowing (a file replaced or deleted meanwhile is opened anew); a few
# idle ones stay open, the rest are closed, and all are closed at exit.

_IDLE_KEPT: Final = 4


@final
class _Shared:
    __slots__ = ("inode", "journal", "users")

    def __init__(self, journal: SQLiteJournal, inode: int) -> None:
        self.journal = journal
        self.inode = inode
        self.users = 0


_shared_lock = threading.Lock()
_shared: dict[tuple[int, str], _Shared] = {}  # (pid, absolute path) -> journal; idle last
# (not the real path: resolving symlinks costs a stat per folder of the path at every
# borrowing; two spellings of one file get a connection each, which SQLite allows)


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def acquire_shared(path: str | os.PathLike[str]) -> SQLiteJournal:
    """Borrow this process's open journal on ``path`` (opened, or checked again)."""
    real = os.path.abspath(path)
    key = (os.getpid(), real)
    with _shared_lock:
        entry = _shared.pop(key, None)
        if entry is not None and entry.inode != _inode(real):  # replaced or deleted
            if entry.users == 0:
                entry.journal.close()
            entry = None
        if entry is None:
            journal = SQLiteJournal(path)
            entry = _Shared(journal, _inode(real) or 0)
        else:
            try:
                entry.journal.recheck()
            except BaseException:
                _shared[key] = entry
                raise
        entry.users += 1
        _shared[key] = entry  # most recently used last
        return entry.journal


def release_shared(journal: SQLiteJournal) -> None:
    """Give a borrowed journal back; idle ones beyond a few are closed."""
    with _shared_lock:
        for entry in _shared.values():
            if entry.journal is journal:
                entry.users -= 1
                break
        else:
            journal.close()
            return
        pid = os.getpid()
        idle = [k for k, e in _shared.items() if e.users == 0 and k[0] == pid]
        for key in idle[: max(0, len(idle) - _IDLE_KEPT)]:
            _shared.pop(key).journal.close()


@atexit.register
def _close_shared() -> None:
    pid = os.getpid()
    with _shared_lock:
        for key in [k for k in _shared if k[0] == pid]:
            _shared.pop(key).journal.close()
