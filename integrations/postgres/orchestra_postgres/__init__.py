"""orchestra-hooks-postgres: the orchestra run journal on PostgreSQL.

For teams whose runs move between machines: every settled task and its output go to one
PostgreSQL database that any machine can resume from. It implements the
``orchestra.Journal`` protocol, so it works wherever a journal path does::

    import orchestra
    from orchestra_postgres import PostgresJournal

    journal = PostgresJournal("postgresql://orchestra@db.internal/runs")
    result = orchestra.run_sync(dag, journal=journal)
    # after a crash, on any machine:
    result = orchestra.run_sync(dag, journal=journal, resume="last")
    journal.close()

What to know:

- The tables (``orchestra_runs``, ``orchestra_tasks``, ``orchestra_outputs`` and
  ``orchestra_journal_meta``, which holds the schema version) are created on first use
  in the connection's current schema (the first of its ``search_path``); a later
  version migrates them in one transaction under an advisory lock, so several processes
  may open the journal at once.
- Outputs are stored once per digest (``bytea``); tasks are one row each, queryable.
- A database whose schema version is newer than this package reads raises
  ``orchestra.JournalError`` naming both versions, and nothing is changed.
"""

from orchestra_postgres._journal import SCHEMA_VERSION as SCHEMA_VERSION
from orchestra_postgres._journal import PostgresJournal as PostgresJournal

__all__ = ["SCHEMA_VERSION", "PostgresJournal"]

PostgresJournal.__module__ = __name__
