"""``HookCall``: what one hook run gets (the event's fields, its JSON, the project folder)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from orchestra.skills._protocol.event_json import event_json

if TYPE_CHECKING:
    from orchestra.skills._hooks.judge import Judge
    from orchestra.skills._persistent.pool import HookProcesses

__all__ = ["HookCall"]


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
