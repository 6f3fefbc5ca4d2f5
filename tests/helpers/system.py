"""The system programs some tests need, and a failure that says what to install."""

from __future__ import annotations

import shutil

import pytest

#: Each program the tests run, with the Debian package that brings it.
PACKAGES = {
    "dot": "graphviz",
    "chromium": "chromium",
    "bwrap": "bubblewrap",
    "initdb": "postgresql",
}


def require(program: str) -> str:
    """The program's path; fails the test, naming the package to install, when it is missing.

    A failure, not a skip: CI installs every one of them (``.ci/run``), so a missing
    program there is a broken setup, never a passing run.
    """
    path = shutil.which(program)
    if path is None:
        package = PACKAGES[program]
        pytest.fail(
            f"{program} is not installed, and this test needs it: apt-get install -y "
            f"{package} (.ci/run installs it; the README lists what `make test` needs)",
            pytrace=False,
        )
    return path
