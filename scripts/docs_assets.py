"""Make the docs' generated pictures: ``make docs`` runs this before ``mkdocs build``.

It runs the main demo (``examples/main_demo.py``), writes the HTML report of its trace
to ``docs/assets/report-demo.html`` with ``orchestra trace report``, and has Debian's
headless Chromium (driven by Playwright, never a downloaded browser) take a screenshot
of it, ``docs/assets/report-demo.png``, for ``docs/howto/run-report.md``. Both files are
generated, never committed (``.gitignore``).

Needs Graphviz's ``dot`` and ``chromium`` (``.ci/run`` installs both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "docs" / "assets"
CHROMIUM = "/usr/bin/chromium"


def main() -> int:
    for program, package in (("dot", "graphviz"), ("chromium", "chromium")):
        if shutil.which(program) is None:
            print(
                f"docs_assets: {program} is needed: apt-get install -y {package}", file=sys.stderr
            )
            return 1
    ASSETS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, str(ROOT / "examples" / "main_demo.py"), "--out", tmp],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        page = ASSETS / "report-demo.html"
        trace = Path(tmp) / "demo-trace.jsonl"
        report = ["trace", "report", str(trace), "-o", str(page)]
        subprocess.run([sys.executable, "-m", "orchestra.cli", *report], check=True, cwd=ROOT)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            view = browser.new_page(viewport={"width": 1280, "height": 860})
            errors: list[str] = []
            view.on("pageerror", lambda error: errors.append(str(error)))
            view.goto(page.as_uri())
            view.wait_for_selector("body[data-ready]")
            view.click('#graph g.node[data-task="sources"]')  # a task retried twice
            view.screenshot(path=str(ASSETS / "report-demo.png"), full_page=True)
        finally:
            browser.close()
    if errors:
        print(f"docs_assets: the report logged errors: {errors}", file=sys.stderr)
        return 1
    print(
        f"docs_assets: {page.relative_to(ROOT)}, {(ASSETS / 'report-demo.png').relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
