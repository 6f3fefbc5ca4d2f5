"""``make bench BASE=<rev>`` (scripts/bench_base.py): each side runs on its own orchestra.

A probe bench prints, as figures, which orchestra it imported and which one a
``python -c`` it starts imports: at base, the git worktree's; here, this checkout's. A
bench that fails on one side is named, and the status is 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import subprocess, sys
from pathlib import Path

import orchestra

here = Path({root!r})
child = subprocess.run(
    [sys.executable, "-c", "import orchestra; print(orchestra.__file__)"],
    capture_output=True, text=True, check=True,
).stdout.strip()
for name, path in (("bench", orchestra.__file__), ("child", child)):
    print(f"FIGURE probe/{{name}} {{1 if Path(path).is_relative_to(here) else 2}} x")
print("FIGURE probe/quick", 1 if "--quick" in sys.argv else 0, "x")
"""


def _compare(tmp_path: Path, *benches: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_base.py"), "HEAD", "--rounds", "2"]
        + [str(b) for b in benches],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # where the base's worktree goes
    )


def _row(out: str, figure: str) -> list[str]:
    rows = [line.split() for line in out.splitlines() if line.split()[:1] == [figure]]
    assert len(rows) == 1, out
    return rows[0]


def test_each_side_imports_its_own_orchestra_and_the_ratio_says_so(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(root=str(ROOT)))
    done = _compare(tmp_path, probe)
    assert done.returncode == 0, done.stderr
    for figure in ("probe/bench", "probe/child"):
        # base 2 (the worktree's orchestra), here 1 (this checkout's): here/base 0.5x
        assert _row(done.stdout, figure)[1:] == ["2", "x", "1", "x", "0.50x", "(0.50-0.50)"]
    assert _row(done.stdout, "probe/quick")[1:4:2] == ["1", "1"]  # the benches run --quick


def test_a_bench_that_fails_on_a_side_is_named_and_the_others_go_on(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise SystemExit('this orchestra lacks what the bench needs')\n")
    fine = tmp_path / "fine.py"
    fine.write_text("print('FIGURE fine/one 3 us')\n")
    done = _compare(tmp_path, broken, fine)
    assert done.returncode == 1
    assert f"== {broken}\n  failed at base: no FIGURE line (exit status 1):" in done.stdout
    assert "this orchestra lacks what the bench needs" in done.stdout
    assert _row(done.stdout, "fine/one")[1:] == ["3", "us", "3", "us", "1.00x", "(1.00-1.00)"]
    listed = subprocess.run(
        ["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert str(tmp_path) not in listed  # the base's worktree is removed
    assert not list(tmp_path.glob("orchestra-base-*"))
