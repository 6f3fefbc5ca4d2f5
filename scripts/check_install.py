"""Install each wheel alone into a bare venv, as a user would, and check that it works.

For the core distribution (``orchestra-hooks``) and each ``integrations/*`` one:

1. build its wheel (``pip wheel --no-deps``, the build backend from the package index);
2. make a new venv with nothing in it, and ``pip install`` that wheel alone (an
   integration's wheel beside the core wheel it depends on, which is not on the index);
3. in that venv, import every module of the package, check that the wheel carries its
   ``LICENSE`` and ``py.typed``, and, for the core, run the README's quickstart (its first
   ``python`` block) and ``orchestra --help`` from an empty folder.

It prints, for the core, how many packages a plain install brings and their size on
disk. Run by ``.ci/run`` before ``make test``; exits non-zero at the first failure.

Run: ``python3 scripts/check_install.py [--keep DIR]``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: Modules that need an extra, each with it: importing them without it is expected to fail.
EXTRA_GATED = {"orchestra.journal.conformance": "conformance"}

IMPORT_ALL = """
import importlib, pkgutil, sys
name, gated = sys.argv[1], set(sys.argv[2:])
package = importlib.import_module(name)
count = 1
for info in pkgutil.walk_packages(package.__path__, name + "."):
    if info.name.endswith(".__main__") or any(
        info.name == g or info.name.startswith(g + ".") for g in gated
    ):
        continue
    importlib.import_module(info.name)
    count += 1
print(f"{name}: imported {count} modules")
"""

SIZE = """
import importlib.metadata as md, pathlib
total = 0
dists = list(md.distributions())
for dist in dists:
    for f in dist.files or ():
        p = pathlib.Path(dist.locate_file(f))
        if p.is_file():
            total += p.stat().st_size
names = sorted(d.metadata["Name"] for d in dists if d.metadata["Name"] not in ("pip", "setuptools"))
print(f"{len(names)} packages, {total / 1e6:.1f} MB: {', '.join(names)}")
"""


def run(*args: str | Path, cwd: Path | None = None) -> str:
    """Run a command, echo it, and return its stdout; exit with its output if it fails."""
    shown = ("<script>" if "\n" in str(a) else str(a) for a in args)
    print("+", " ".join(shown), flush=True)
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def quickstart() -> str:
    """The README's first ``python`` block, as written."""
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    if match is None:
        sys.exit("README.md has no ```python block")
    return match.group(1)


def check_wheel(wheel: Path, package: str) -> None:
    """The wheel carries the license and the typing marker."""
    names = zipfile.ZipFile(wheel).namelist()
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        sys.exit(f"{wheel.name} has no LICENSE")
    if f"{package}/py.typed" not in names:
        sys.exit(f"{wheel.name} has no {package}/py.typed")


def main() -> None:
    """Build every wheel, install each alone, and check it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="orchestra-install-"))
    dist = work / "dist"
    python = sys.executable

    projects = [(ROOT, "orchestra")] + [
        (p.parent, next(p.parent.glob("orchestra_*")).name)
        for p in sorted(ROOT.glob("integrations/*/pyproject.toml"))
    ]
    wheels = {}
    for project, package in projects:
        out = dist / package
        run(python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", out, project)
        (wheel,) = out.glob("*.whl")
        check_wheel(wheel, package)
        wheels[package] = wheel

    for _, package in projects:
        started = time.monotonic()
        venv = work / f"venv-{package}"
        run(python, "-m", "venv", "--clear", venv)
        bin_ = venv / "bin"
        install = {wheels["orchestra"], wheels[package]}
        run(bin_ / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", *install)
        print(run(bin_ / "python", "-c", IMPORT_ALL, package, *EXTRA_GATED), end="")
        if package == "orchestra":
            empty = work / "empty"
            empty.mkdir(exist_ok=True)
            print(run(bin_ / "python", "-c", quickstart(), cwd=empty), end="")
            run(bin_ / "orchestra", "--help", cwd=empty)
            print("plain install:", run(bin_ / "python", "-c", SIZE), end="")
        print(f"ok: {package} alone in a bare venv ({time.monotonic() - started:.0f} s)\n")


if __name__ == "__main__":
    main()
