"""YAML and SKILL.md hooks run at agent events."""
