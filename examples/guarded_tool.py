"""A Python tool guarded by YAML hooks (examples/hooks/orchestra.yaml).

The ``Shell`` tool below only echoes what it would run. Before each call, the
``PreToolUse`` hooks of the config run as real processes: one denies a recursive force
delete (exit code 2, its stderr is the reason), another rewrites ``git push`` into a dry
run (Claude Code's ``updatedInput``). A denied call raises ``ToolDenied``; a rewritten
call gets the new arguments. After a call, a ``PostToolUse`` prompt hook adds a note,
which ``on_outcome`` collects.

Run it with ``python examples/guarded_tool.py``.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from orchestra.skills import HookOutcome, ToolDenied, load

HERE = Path(__file__).resolve().parent
registry = load(HERE / "hooks" / "orchestra.yaml", project_dir=HERE)
notes: list[str] = []


def show(event: str, outcome: HookOutcome) -> None:
    """Keep what the hooks said besides allow/deny (a real agent gives it to the model)."""
    notes.extend(f"{event} says: {message}" for message in outcome.messages)


@registry.guard("Shell", on_outcome=show)
def shell(command: str) -> str:
    """Pretend to run a shell command (a real tool would call subprocess here)."""
    return f"ran: {command}"


async def main() -> None:
    for command in ("ls -la", "git push origin main", "rm -rf build/"):
        try:
            print(f"{command:<22} -> {await shell(command)}")
        except ToolDenied as denied:
            print(f"{command:<22} -> denied: {denied.reason}")
        for note in notes:
            print(f"{'':<22}    {note}")
        notes.clear()


if __name__ == "__main__":
    anyio.run(main)
