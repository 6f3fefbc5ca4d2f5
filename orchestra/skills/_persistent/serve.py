"""``serve(handler)``: the whole loop of a persistent hook script, for hook authors."""

from __future__ import annotations

import contextlib
import inspect
import json
import sys
import traceback
from collections.abc import Callable, Mapping
from typing import IO, Any, TypeAlias

__all__ = ["Handler", "serve"]

Handler: TypeAlias = Callable[[dict[str, Any]], "Mapping[str, Any] | None"]
"""What ``serve`` calls per event: the event dict in, a result mapping (or None) out."""


def serve(
    handler: Handler,
    *,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
) -> None:
    """Answer events with ``handler`` until stdin ends: the loop of a persistent hook.

    Each line on stdin is one event: the JSON a command hook reads, plus an ``id``.
    ``handler(event)`` gets it as a dict, without the ``id``, and returns a result as a
    command hook prints it (``{"decision": "deny", "reason": "..."}``), or None for no
    opinion. Its answer goes to stdout as one line, with the event's ``id``.

    While the handler runs, ``print`` writes to stderr, so a stray print cannot break
    the protocol. When the handler raises, the traceback goes to stderr and the answer
    is ``{"id": ..., "error": "..."}``: a hook error for that event, the script goes on.

    Example, a whole hook script (``type: command``, ``persistent: true``)::

        from orchestra.skills import serve

        def check(event):
            if "rm -rf" in event.get("tool_input", {}).get("command", ""):
                return {"decision": "deny", "reason": "no recursive deletes"}
            return None

        serve(check)

    Args:
        handler: a ``def`` function called with each event dict.
        stdin: where events come from (default: ``sys.stdin``).
        stdout: where answers go (default: ``sys.stdout``).

    Raises:
        TypeError: ``handler`` is an ``async def`` function.
    """
    if inspect.iscoroutinefunction(handler):
        raise TypeError("serve() takes a def function; call your async code with asyncio.run")
    source = sys.stdin if stdin is None else stdin
    out = sys.stdout if stdout is None else stdout
    with contextlib.redirect_stdout(sys.stderr):
        for line in source:
            if not line.strip():
                continue
            out.write(_answer(handler, line) + "\n")
            out.flush()


def _answer(handler: Handler, line: str) -> str:
    """The answer line to one event line (without its newline)."""
    event = json.loads(line)  # a line that is not JSON does not come from orchestra
    request_id = event.pop("id", None) if isinstance(event, dict) else None
    try:
        result = handler(event)
        answer = {} if result is None else dict(result)
        if request_id is not None:
            answer["id"] = request_id
        return json.dumps(answer)
    except Exception as exc:  # the handler's error is that event's hook error
        traceback.print_exc()
        failed: dict[str, Any] = {"error": f"{type(exc).__name__}: {exc}"}
        if request_id is not None:
            failed["id"] = request_id
        return json.dumps(failed)
