"""Leases: which process holds a journaled run, so no two run the same tasks at once.

Every journaled run holds a lease on its own id while it goes (so ``resume="last"`` can
tell a run still going from one that ended or crashed), and a resume also holds the run
it resumes. A lease names its holder (run, process, host) and is renewed by the run's
journal writer every ``RENEW_EVERY`` seconds; it is released when the run ends, however
it ends. A holder that died without releasing it (``kill -9``, a lost machine) is found
out two ways: on the same machine (same boot and PID namespace) at once, as its process
is gone; elsewhere once its lease has gone ``LEASE_TTL`` seconds without renewal. Either
way its lease is free to take.

A lease fences its holder: a run re-checks its leases before it settles a task
(``Holding.lost``), and one that lost a lease stops. A lease is lost when another holder
took it, or when its holder went ``LEASE_TTL`` seconds without renewing it (paused,
starved): another may have taken and even released it meanwhile.

Stores keep leases with two atomic operations of the ``Journal`` protocol: ``hold`` (a
compare-and-set on the run's lease) and ``release``; whether a holder is alive is decided
here, by the process asking (``claim``).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

if TYPE_CHECKING:
    from orchestra.journal._records import Journal

__all__ = ["LEASE_TTL", "RENEW_EVERY", "Holding", "Lease", "claim", "is_live", "new_lease"]

logger: Final = logging.getLogger("orchestra.journal")

LEASE_TTL: Final = 30.0
"""Seconds without renewal after which a lease is free (its holder is taken for dead)."""
RENEW_EVERY: Final = 5.0
"""Seconds between renewals of a run's leases."""
_CLAIM_TRIES: Final = 8


def _machine() -> str:
    """What says that a PID is one of this machine's, in this PID namespace ("" unknown)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace}"


MACHINE: Final = _machine()


@functools.cache
def _host() -> str:
    """This machine's name (socket is imported here: ``import orchestra`` stays light)."""
    import socket

    return socket.gethostname()


@final
@attrs.frozen(kw_only=True)
class Lease:
    """A journaled run held by a process: the run itself while it goes, or a resume of it.

    Attributes:
        run_id: the run held.
        by_run: the run holding it: ``run_id`` itself while that run goes on, or the id
            of the run resuming it.
        token: the holder's own id (one per holding run): what ``release`` names.
        host: the holder's host name.
        pid: the holder's process id.
        machine: what says whether ``pid`` can be checked from here (this machine's boot
            and PID namespace); empty when unknown.
        since: when the lease was taken, in seconds since the epoch.
        heartbeat: when its holder last renewed it, in seconds since the epoch.
    """

    run_id: str
    by_run: str
    token: str
    host: str
    pid: int
    machine: str
    since: float
    heartbeat: float

    @property
    def going(self) -> bool:
        """Whether this is a run's own lease (the run is going on), not a resume's."""
        return self.by_run == self.run_id

    def renewed(self, at: float | None = None) -> Lease:
        """The same lease, renewed now (or ``at``)."""
        return attrs.evolve(self, heartbeat=time.time() if at is None else at)

    def holding(self, run_id: str) -> Lease:
        """A lease of the same holder on another run (the one it resumes)."""
        return attrs.evolve(self, run_id=run_id)

    def describe(self) -> str:
        """Who holds it, for messages: run, process, host, since when."""
        since = datetime.fromtimestamp(self.since, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        ago = max(0.0, time.time() - self.heartbeat)
        return (
            f"run {self.by_run}, pid {self.pid} on host {self.host}, since {since}, "
            f"renewed {ago:.0f} s ago"
        )


def new_lease(run_id: str) -> Lease:
    """A lease for run ``run_id`` held by this process, as of now."""
    now = time.time()
    return Lease(
        run_id=run_id,
        by_run=run_id,
        token=uuid.uuid4().hex,
        host=_host(),
        pid=os.getpid(),
        machine=MACHINE,
        since=now,
        heartbeat=now,
    )


def is_live(lease: Lease, now: float | None = None) -> bool:
    """Whether the holder of ``lease`` may still be at work (else the lease is free)."""
    if (time.time() if now is None else now) - lease.heartbeat > LEASE_TTL:
        return False
    if lease.machine and lease.machine == MACHINE:
        return _process_alive(lease.pid)
    return True


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    try:  # a zombie (killed, not yet reaped) is dead to us
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def claim(journal: Journal, lease: Lease) -> Lease | None:
    """Hold ``lease.run_id`` for ``lease``'s holder; None when held, else the live holder's.

    A lease whose holder is dead (``is_live``) is replaced, atomically: if another
    process took the run meanwhile, its lease is the answer.
    """
    current = journal.hold(lease)
    for _ in range(_CLAIM_TRIES):
        if current is None or is_live(current):
            return current
        current = journal.hold(lease, replacing=current.token)
    return current


@final
class Holding:
    """The leases one run holds: renewed from its writer thread, and the run's fence.

    Args:
        journal: the store.
        leases: the run's leases (its own, and the resumed run's).
        run_id: the holding run, for messages.
    """

    def __init__(self, journal: Journal, leases: list[Lease], run_id: str) -> None:
        self._journal = journal
        self.leases = leases
        self._run_id = run_id
        self._lock = threading.Lock()  # the writer thread renews; the event loop may too
        self._confirmed = time.monotonic()
        self._lost: str | None = None

    def renew(self) -> None:
        """Renew every lease (each ``RENEW_EVERY`` s); one taken or expired is lost for good."""
        with self._lock:
            for k, lease in enumerate(self.leases):
                if self._lost is not None:
                    return
                late = time.time() - lease.heartbeat
                holder = None if late > LEASE_TTL else self._journal.hold(lease.renewed())
                if late <= LEASE_TTL and holder is None:
                    self.leases[k] = lease.renewed()
                    continue
                by = f"taken by {holder.describe()}" if holder else "free for others to take"
                self._lost = (
                    f"run {self._run_id} lost its lease on run {lease.run_id} (it went "
                    f"{late:.0f} s without renewing it; it is {by}): it stops, so that no "
                    "task runs twice"
                )
                logger.error("journal: %s", self._lost)
            self._confirmed = time.monotonic()

    def lost(self) -> str | None:
        """Why the run may settle no more tasks (a lease lost), or None; checked per task.

        Free while renewals come; when none confirmed the leases for ``2 * RENEW_EVERY``
        seconds (the process was paused), the store is asked now.
        """
        if self._lost is None and time.monotonic() - self._confirmed > 2 * RENEW_EVERY:
            try:
                self.renew()
            except Exception:  # the store is unreachable: the writer's next tick retries
                logger.exception("journal: the run's leases could not be checked")
        return self._lost
