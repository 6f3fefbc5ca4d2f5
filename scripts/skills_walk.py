"""The walk of one YAML ``PreToolUse`` command hook, from ``load()`` to its decision.

Counts the distinct functions and files of orchestra that one ``load`` of a one-hook
``orchestra.yaml`` and one ``fire("PreToolUse", ...)`` visit (``sys.setprofile``): how
far a reader follows the code to see what happens (docs/architecture.md, "The skills
hooks, by layer"). ``--fire`` counts the ``fire`` alone; ``-v`` lists the files.

Run: ``python scripts/skills_walk.py [--fire] [-v]`` (with ``PYTHONPATH`` set to another
checkout to count there).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

import anyio

import orchestra
import orchestra.skills as skills

ROOT = str(Path(orchestra.__file__).parent) + "/"
YAML = """hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: "echo '{\\"decision\\": \\"deny\\", \\"reason\\": \\"no\\"}'"
"""


def walk(path: Path, *, fire_only: bool) -> tuple[str | None, set[tuple[str, str]]]:
    """The decision, and the (file, function) pairs of orchestra visited on the way."""
    seen: set[tuple[str, str]] = set()

    def profile(frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(ROOT):
            seen.add((frame.f_code.co_filename[len(ROOT) :], frame.f_code.co_qualname))

    async def main() -> str | None:
        sys.setprofile(profile)
        try:
            registry = skills.load(path)
            if fire_only:
                seen.clear()
            outcome = await registry.fire("PreToolUse", {"tool_name": "Bash", "tool_input": {}})
        finally:
            sys.setprofile(None)
        return outcome.decision

    return anyio.run(main), seen


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "orchestra.yaml"
        path.write_text(YAML)
        decision, seen = walk(path, fire_only="--fire" in sys.argv)
    files = sorted({file for file, _ in seen})
    print(f"decision {decision}: {len(seen)} functions in {len(files)} files of {ROOT}")
    if "-v" in sys.argv:
        for file in files:
            print(f"  {file}: {', '.join(sorted(q for f, q in seen if f == file))}")


if __name__ == "__main__":
    main()
