"""No force pushes: one function, run in-process or as a persistent hook process.

- In-process, no process at all: ``type: python``, ``callable: "hooks.push_policy:check"``.
- As a persistent hook (one process for every event): ``type: command``,
  ``args: [python3, hooks/push_policy.py]``, ``persistent: true``; run as a script, it
  answers each event line on stdin with ``orchestra.skills.serve``.
"""

from __future__ import annotations

from typing import Any

from orchestra.skills import serve


def check(event: dict[str, Any]) -> dict[str, Any] | None:
    """Deny ``git push --force`` (and ``-f``); no opinion on anything else."""
    words = str(event.get("tool_input", {}).get("command", "")).split()
    if words[:2] == ["git", "push"] and ({"--force", "-f"} & set(words)):
        return {"decision": "deny", "reason": "force pushes are not allowed here"}
    return None


if __name__ == "__main__":
    serve(check)
