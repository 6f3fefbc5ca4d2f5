"""What one hook run gets: the event JSON (its fields and its bytes) and ``HookCall``.

The fields (``event_data``) are the payload's own plus the common ones (``session_id``,
``cwd``, ``timestamp``, ``hook_event_name``, and ``event``, the echo-agent seed's
spelling): the payload's own fields are never overwritten, but for ``hook_event_name``,
which is the event fired. ``event_json`` encodes them the way every hook type sends them;
a ``HookCall`` carries them to one hook run with the project folder, the registry's judge
and its persistent processes.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

if TYPE_CHECKING:
    from orchestra.skills._hooks.judge import Judge
    from orchestra.skills._persistent.pool import HookProcesses

__all__ = ["HookCall", "event_data", "event_json", "utc_timestamp"]


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, Mapping):
        return dict(value)
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    return str(value)


_ENCODER: Final = json.JSONEncoder(default=_json_default, ensure_ascii=True)


def event_json(data: Mapping[str, Any]) -> bytes:
    """The event as JSON bytes, the way hooks get it (ASCII-only, any value stringified)."""
    return _ENCODER.encode(data).encode("ascii")


# The start of the second of the last timestamp (microseconds since the epoch), and its
# ISO text without the fraction and the offset (none yet: a start no time is in); the
# digits of 0 to 999, three each.
_second: tuple[int, str] = (1 << 62, "")
_DIGITS: Final = tuple(f"{i:03d}" for i in range(1000))


def utc_timestamp() -> str:
    """Now, as ``datetime.datetime.now(datetime.UTC).isoformat()`` writes it.

    The date and time of day are formatted once per second; within it, only the
    microseconds are written.
    """
    global _second  # a one-entry cache, replaced whole (safe across threads)
    micros = time.time_ns() // 1000
    start, text = _second
    fraction = micros - start
    if not 0 <= fraction < 1_000_000:
        fraction = micros % 1_000_000
        start = micros - fraction
        moment = datetime.datetime.fromtimestamp(start // 1_000_000, datetime.UTC)
        text = moment.replace(tzinfo=None).isoformat()
        _second = (start, text)
    if not fraction:
        return f"{text}+00:00"
    return f"{text}.{_DIGITS[fraction // 1000]}{_DIGITS[fraction % 1000]}+00:00"


def event_data(
    event: str, payload: Mapping[str, Any], session_id: str, project_dir: str
) -> dict[str, Any]:
    """The event JSON's fields: the payload plus the common ones (``hook_event_name``...).

    A payload's ``event`` (FileChanged's ``change``, ``add``, ``unlink``) is kept.
    """
    data = {
        "session_id": session_id,
        "cwd": project_dir,
        "timestamp": utc_timestamp(),
        **payload,
        "hook_event_name": event,
    }
    data.setdefault("event", event)  # the echo-agent seed's spelling; FileChanged has its own
    return data


class HookCall:
    """What one hook run gets: the event's fields, its JSON, the project folder.

    Args:
        event: the event's name.
        data: the event JSON's fields (payload plus common fields).
        project_dir: the hooks' working directory.
        body: the event JSON already encoded, if the caller has it.
        judge: the registry's judge, for hooks that ask a model.
        processes: the registry's persistent hook processes (None: none to use).
    """

    __slots__ = ("_body", "data", "event", "judge", "processes", "project_dir")

    def __init__(
        self,
        event: str,
        data: Mapping[str, Any],
        project_dir: str,
        body: bytes | None = None,
        judge: Judge | None = None,
        processes: HookProcesses | None = None,
    ) -> None:
        self.event = event
        self.data = data
        self.project_dir = project_dir
        self._body = body
        self.judge = judge
        self.processes = processes

    def body(self) -> bytes:
        """The event JSON, encoded once.

        Raises:
            TypeError, ValueError: the payload cannot be encoded as JSON.
        """
        if self._body is None:
            self._body = event_json(self.data)
        return self._body
