"""The failing frames of an error: the user's own code shown, library frames folded (internal).

One shape for two sources: a live exception (``RunResult.tracebacks``, ``orchestra run``'s
summary) and the ``exception.stacktrace`` text an OpenTelemetry span keeps (``orchestra
trace show --failed``, the HTML report)::

    Traceback (most recent call last; 6 library frames folded):
      File "/home/me/flow.py", line 12, in parse
        return int(text)
    ValueError: invalid literal for int() with base 10: 'x'

A frame is the library's when its file is in the standard library, in site-packages or
in orchestra itself (its integrations included); every other frame is the user's. The
library frames before the first frame of the user's (the engine that called the task)
are counted in the heading; a run of library frames further down (a call into ``json``)
is folded into one line naming the modules.
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Final, final

import attrs

__all__ = [
    "Frame",
    "failing_frame",
    "format_error",
    "format_frames",
    "frames_of",
    "parse_stacktrace",
]

_ORCHESTRA: Final = str(Path(__file__).resolve().parent) + os.sep
_LIBRARY_ROOTS: Final = tuple(
    {
        str(Path(p).resolve()) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if (p := sysconfig.get_paths().get(key))
    }
    | {_ORCHESTRA}
)
_LIBRARY_PARTS: Final = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")
_FILE_LINE: Final = re.compile(r'^  File "(?P<file>.*)", line (?P<line>\d+), in (?P<name>.*)$')
_HEADING: Final = "Traceback (most recent call last):"


@final
@attrs.frozen
class Frame:
    """One frame of a traceback.

    Attributes:
        file: the file's path, as the traceback gives it.
        line: the line number.
        name: the function's name.
        code: the source line, stripped ("" when unknown).
        library: whether the frame is the library's (standard library, site-packages,
            orchestra) rather than the user's.
    """

    file: str
    line: int
    name: str
    code: str
    library: bool

    @property
    def where(self) -> str:
        """``FILE:LINE`` in short: relative to the working folder, else the file's name.

        The full path is in the traceback; this is for a line that names the place.
        """
        try:
            file = str(Path(self.file).relative_to(Path.cwd()))
        except ValueError:
            file = Path(self.file).name
        return f"{file}:{self.line}"


def _is_library(file: str) -> bool:
    if file.startswith("<"):  # <frozen runpy> is Python's; <string>, <stdin> the user's
        return file.startswith("<frozen")
    path = os.path.abspath(file)
    if path.startswith(_LIBRARY_ROOTS) or any(part in path for part in _LIBRARY_PARTS):
        return True
    # an integration installed in place (orchestra_dask/ beside its pyproject.toml)
    return any(part.startswith("orchestra_") for part in Path(path).parts[:-1])


def frames_of(error: BaseException) -> tuple[Frame, ...]:
    """The frames of ``error``'s traceback, outermost first (none when it was never raised)."""
    return tuple(
        Frame(f.filename, f.lineno or 0, f.name, (f.line or "").strip(), _is_library(f.filename))
        for f in traceback.extract_tb(error.__traceback__)
    )


def parse_stacktrace(text: str) -> tuple[tuple[Frame, ...], str]:
    """The frames and the closing ``Type: message`` of a formatted traceback.

    ``text`` is what ``traceback.format_exception`` writes (an OpenTelemetry span's
    ``exception.stacktrace``); of a chain of exceptions, the last one is read. Text in
    another shape gives no frames and its last line.
    """
    lines = text.rstrip().splitlines()
    start = max((i for i, line in enumerate(lines) if line == _HEADING), default=-1) + 1
    frames: list[Frame] = []
    i = start
    while i < len(lines):
        match = _FILE_LINE.match(lines[i]) if start else None
        if match is None:
            break
        code = ""
        if i + 1 < len(lines) and lines[i + 1].startswith("    "):
            code = lines[i + 1].strip()
            i += 1
            while i + 1 < len(lines) and lines[i + 1].startswith("    "):  # carets (3.11+)
                i += 1
        file = match["file"]
        frames.append(Frame(file, int(match["line"]), match["name"], code, _is_library(file)))
        i += 1
    closing = "\n".join(lines[i:]) if frames else (lines[-1] if lines else "")
    return tuple(frames), closing


def failing_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame of the user's code, else the innermost frame; None for none."""
    for frame in reversed(frames):
        if not frame.library:
            return frame
    return frames[-1] if frames else None


def _module(frame: Frame) -> str:
    path = Path(frame.file)
    if frame.file.startswith(_ORCHESTRA) or path.parent.name.startswith("orchestra"):
        return "orchestra"
    for parent in path.parents:
        if parent.name in ("site-packages", "dist-packages"):
            return path.relative_to(parent).parts[0].removesuffix(".py")
    return path.stem if path.parent.name.startswith("python3") else path.parent.name or path.stem


def _folded(frames: Sequence[Frame]) -> str:
    modules = list(dict.fromkeys(_module(f) for f in frames))
    what = "frame" if len(frames) == 1 else "frames"
    return f"  [{len(frames)} library {what}: {', '.join(modules)}]"


def format_frames(frames: Sequence[Frame], closing: str, *, full: bool = False) -> str:
    """A traceback of ``frames`` ending with ``closing``: library frames folded unless ``full``.

    When no frame is the user's, the innermost frame is shown, so a line always says
    where the error was raised.
    """
    shown = list(frames)
    lead = 0
    if not full:
        while lead < len(shown) and shown[lead].library:
            lead += 1
        if lead == len(shown) and shown:
            lead -= 1  # nothing of the user's: show where it was raised
    out = [
        "Traceback (most recent call last"
        + (f"; {lead} library frame{'s' if lead != 1 else ''} folded):" if lead else "):")
    ]
    folded: list[Frame] = []
    for frame in shown[lead:]:
        if frame.library and not full and frame is not shown[-1]:
            folded.append(frame)
            continue
        if folded:
            out.append(_folded(folded))
            folded = []
        out.append(f'  File "{frame.file}", line {frame.line}, in {frame.name}')
        if frame.code:
            out.append(f"    {frame.code}")
    out.append(closing)
    return "\n".join(out)


def format_error(error: BaseException, *, full: bool = False) -> str | None:
    """``error``'s traceback, library frames folded; None when it was never raised."""
    frames = frames_of(error)
    if not frames:
        return None
    closing = "".join(traceback.format_exception_only(error)).rstrip()
    return format_frames(frames, closing, full=full)
