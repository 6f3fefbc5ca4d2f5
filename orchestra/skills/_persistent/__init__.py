"""Persistent command hooks: one long-lived process per hook, one JSON line per event."""
