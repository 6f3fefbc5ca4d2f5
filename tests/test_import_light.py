"""``import orchestra`` stays light: the heavy parts load when they are used, not before."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# What a plain ``import orchestra`` must not load (each costs milliseconds at start-up and
# is needed only by some runs: a journal, an http hook, a trace file, a RetryPolicy).
HEAVY = (
    "tornado",
    "sqlite3",
    "ssl",
    "socket",
    "curses",
    "ctypes",
    "tenacity",
    "asyncio",
    "opentelemetry.sdk",
    "opentelemetry.propagate",
    "google.protobuf",
)


def loaded_after(statement: str) -> list[str]:
    script = f"import sys\n{statement}\nprint(__import__('json').dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True, timeout=120
    )
    return list(json.loads(out.stdout))


def test_import_orchestra_loads_none_of_the_heavy_modules() -> None:
    modules = set(loaded_after("import orchestra"))
    assert "orchestra" in modules
    assert [m for m in HEAVY if m in modules] == []


def test_public_names_still_work_and_load_their_parts_when_used() -> None:
    modules = set(
        loaded_after(
            "import orchestra, orchestra.journal\n"
            "assert orchestra.journal.SQLiteJournal.__module__ == 'orchestra.journal'\n"
            "assert orchestra.journal.SCHEMA_VERSION >= 1\n"
            "assert orchestra.RetryPolicy().on_failure is not None\n"
            "from orchestra.journal import *\n"
            "assert 'SQLiteJournal' in dir() and 'SCHEMA_VERSION' in dir()"
        )
    )
    assert {"sqlite3", "tenacity"} <= modules


def test_an_unknown_name_of_the_journal_package_is_an_attribute_error() -> None:
    import orchestra.journal

    with pytest.raises(AttributeError, match="has no attribute 'SQLiteJournl'"):
        orchestra.journal.SQLiteJournl  # noqa: B018 - the lookup is the test


def test_import_orchestra_skills_loads_no_tls_nor_tenacity() -> None:
    # ssl and socket load with an http hook's first request, tenacity with a persistent
    # hook's first failure.
    modules = set(loaded_after("import orchestra.skills"))
    assert [m for m in ("ssl", "socket", "tenacity", "tornado", "sqlite3") if m in modules] == []
