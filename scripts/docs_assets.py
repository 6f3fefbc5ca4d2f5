"""Generate the docs' pictures and example outputs: ``make docs`` runs this before mkdocs.

Writes, under ``docs/generated/`` (ignored by git, never edited by hand):

- ``examples/NAME.txt``: what ``python examples/NAME.py`` prints, for every script of
  ``examples/`` that runs on its own (the Examples page includes them);
- ``trace-show.svg``: the terminal picture of ``orchestra trace show`` on the trace the
  main demo wrote, as rich exports it (``Console.export_svg``);
- ``report-demo.html`` and ``report-demo.png``: the main demo's HTML run report
  (``orchestra trace report``), and a screenshot of it with a retried task clicked, taken
  by Debian's headless Chromium driven by Playwright (never a downloaded browser), for
  ``docs/howto/run-report.md``.

Each script runs as a user runs it, from the repository root, offline; one that fails
stops the docs build with its output. Absolute paths of this checkout are written
relative to it, so the pages read the same on every machine. Needs Graphviz's ``dot`` and
``chromium`` (``.ci/run`` installs both).

Run: ``python scripts/docs_assets.py [--out DIR]``.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
#: Where the main demo writes its trace and report (``examples/main_demo.py --out``).
DEMO_OUT = ROOT / "out"
#: The terminal the picture is taken on.
WIDTH = 150


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "NO_COLOR")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra)
    return env


def _run(args: list[str], **env: str) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"docs_assets: {' '.join(args)} exited {done.returncode}:\n{done.stdout}")
    return done.stdout.replace(f"{ROOT}{os.sep}", "")


def scripts() -> list[Path]:
    """The example scripts that run on their own (hook scripts are run by them)."""
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def example_outputs(out: Path) -> None:
    """Write what each example script prints (the main demo also writes its trace)."""
    (out / "examples").mkdir(parents=True, exist_ok=True)
    for script in scripts():
        text = _run([str(script.relative_to(ROOT))])
        (out / "examples" / f"{script.stem}.txt").write_text(text)


def trace_picture(out: Path) -> None:
    """Take the picture of ``orchestra trace show`` on the main demo's trace."""
    shown = (DEMO_OUT / "demo-trace.jsonl").relative_to(ROOT)
    ansi = _run(
        ["-m", "orchestra.cli", "trace", "show", str(shown), "--width", str(WIDTH)],
        FORCE_COLOR="1",
        COLORTERM="truecolor",
        COLUMNS=str(WIDTH),
    )
    console = Console(record=True, width=WIDTH, file=io.StringIO(), color_system="truecolor")
    console.print(Text.from_ansi(ansi), end="", soft_wrap=True)
    svg = console.export_svg(title=f"orchestra trace show {shown}")
    # The picture names its font but never fetches it: the site makes no outside request.
    svg = re.sub(r"@font-face\s*{[^}]*}", "", svg)
    (out / "trace-show.svg").write_text(svg)


def report_picture(out: Path) -> None:
    """Copy the main demo's HTML report and take a screenshot of it, a task clicked."""
    from playwright.sync_api import sync_playwright

    page = out / "report-demo.html"
    shutil.copyfile(DEMO_OUT / "demo-report.html", page)
    chromium = shutil.which("chromium")
    if chromium is None or shutil.which("dot") is None:
        sys.exit("docs_assets: needs chromium and graphviz: apt-get install -y chromium graphviz")
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 860})
            view.on("pageerror", lambda error: errors.append(str(error)))
            view.goto(page.as_uri())
            view.wait_for_selector("body[data-ready]")
            view.click('#graph g.node[data-task="sources"]')  # a task retried twice
            view.screenshot(path=str(out / "report-demo.png"), full_page=True)
        finally:
            browser.close()
    if errors:
        sys.exit(f"docs_assets: the report logged errors: {errors}")


def main() -> None:
    """Generate every asset into ``--out`` (default ``docs/generated``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "generated")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    example_outputs(out)
    trace_picture(out)
    report_picture(out)


if __name__ == "__main__":
    main()
