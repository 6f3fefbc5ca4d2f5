"""Test servers and leak checks for the skills-hook runner tests."""
