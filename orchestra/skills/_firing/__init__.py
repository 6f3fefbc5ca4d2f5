"""Firing an event: the registry, which hooks run and in what order, the outcome, records."""
