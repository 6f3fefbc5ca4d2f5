"""The tests every journal store passes (``SQLiteJournal``, ``PostgresJournal``, yours).

Subclass ``JournalConformance`` in a test module and give it a ``journal_spec`` fixture
that makes a fresh, empty store for each test::

    import pytest
    from orchestra.journal.conformance import JournalConformance, JournalSpec


    class TestMyJournal(JournalConformance):
        @pytest.fixture
        def journal_spec(self, tmp_path):
            return JournalSpec("my_package.journal:MyJournal", (str(tmp_path / "store"),))

A ``JournalSpec`` names the store's factory by import path, so the suite can open the
same store in child processes: it kills one with SIGKILL in the middle of a run and
resumes in another, has two processes journal into one store at once, and two resume one
crashed run at once (one is refused, or waits), and pauses a resume (SIGSTOP) until
another takes its run, which it must then leave (fencing). It also plants payloads in the store
(they must never be deserialized) and checks the store's leases (``hold``, ``release``). The suite
needs pytest, the anyio pytest plugin and trio (both anyio backends are tested):
``pip install orchestra-hooks[conformance]``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestra.journal._records import Journal
from orchestra.journal.conformance._fencing import FencingTests
from orchestra.journal.conformance._leases import LeaseTests
from orchestra.journal.conformance._processes import ProcessTests
from orchestra.journal.conformance._runs import RunTests
from orchestra.journal.conformance._spec import JournalSpec
from orchestra.journal.conformance._store import StoreTests
from orchestra.journal.conformance._trust import TrustTests

__all__ = ["JournalConformance", "JournalSpec"]


class JournalConformance(StoreTests, RunTests, ProcessTests, TrustTests, LeaseTests, FencingTests):
    """The conformance suite: subclass it and define a ``journal_spec`` fixture."""

    @pytest.fixture
    def journal_spec(self) -> JournalSpec:
        """A fresh, empty store (override this fixture)."""
        raise NotImplementedError("define a journal_spec fixture that makes a fresh store")

    @pytest.fixture
    def journal(self, journal_spec: JournalSpec) -> Iterator[Journal]:
        """The store, opened for the test and closed after it."""
        journal = journal_spec.open()
        try:
            yield journal
        finally:
            journal.close()

    @pytest.fixture(params=["asyncio", "trio"])
    def anyio_backend(self, request: pytest.FixtureRequest) -> str:
        """Both anyio backends."""
        return str(request.param)
