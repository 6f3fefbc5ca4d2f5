"""orchestra.journal's public names, and its place below the engines."""

from __future__ import annotations

from pathlib import Path

import orchestra
import orchestra.journal as journal


def test_public_names_and_paths() -> None:
    assert journal.__all__ == [
        "DEFAULT_MAX_BYTES",
        "SCHEMA_VERSION",
        "Journal",
        "JournaledRun",
        "Lease",
        "PickleSerializer",
        "RunInfo",
        "SQLiteJournal",
        "Serializer",
        "TaskRecord",
    ]
    assert orchestra.Journal is journal.Journal
    assert orchestra.Journal.__module__ == "orchestra"
    assert orchestra.JournalError.__module__ == "orchestra"
    for name in (
        "JournaledRun",
        "Lease",
        "PickleSerializer",
        "RunInfo",
        "SQLiteJournal",
        "TaskRecord",
    ):
        assert getattr(journal, name).__module__ == "orchestra.journal", name
    assert isinstance(journal.SCHEMA_VERSION, int)


def test_stores_know_nothing_of_the_engines() -> None:
    # the journal sits below dag/: its stores import neither dag, agents nor skills
    package = Path(journal.__file__).parent
    for module in package.glob("_*.py"):
        for line in module.read_text().splitlines():
            if line.lstrip().startswith(("import ", "from ")):
                for engine in ("orchestra.dag", "orchestra.agents", "orchestra.skills"):
                    assert engine not in line, (module.name, line)
