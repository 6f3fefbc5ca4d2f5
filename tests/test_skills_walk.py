"""The walk of one YAML PreToolUse command hook, from ``load()`` to its decision.

``scripts/skills_walk.py`` counts the files of orchestra it visits (issue 48): 28 at
49015db, 32 just before the skills layout, 27 now; the ``fire`` alone 17, 18, 16. A
change that spreads this path over more files fails here: fold it back, or raise the
figure with a reason in the commit.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "scripts" / "skills_walk.py"
_LINE = re.compile(r"decision (\w+): (\d+) functions in (\d+) files of ")


@pytest.mark.parametrize(("args", "most_files"), [((), 27), (("--fire",), 16)])
def test_the_walk_visits_no_more_files(args: tuple[str, ...], most_files: int) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = _LINE.match(done.stdout)
    assert found is not None, done.stdout
    decision, _functions, files = found.group(1), int(found.group(2)), int(found.group(3))
    assert decision == "deny"
    assert files <= most_files, done.stdout
