"""The trace file's writer process, both ends: ``python -m orchestra.tracing._writer PATH``.

Encoding a span to OTLP JSON costs about as much as the run's own work for it (the OTLP
exporter's encoder, then protobuf's JSON mapping, both pure Python), so
``configure(jsonl=...)`` splits it: the thread that ends the spans encodes each full line
with the OTLP exporter's encoder and hands the protobuf bytes to this process, which
does the JSON half on another core and appends the line to the file. A run that makes
spans faster than they are written waits on the pipe (back-pressure): no span is
dropped.

On stdin, frames, each a 4-byte big-endian length then that many bytes:

| frame                              | the writer                                     |
| ---------------------------------- | ---------------------------------------------- |
| a serialized ``ExportTraceServiceRequest`` | appends it to the file as one OTLP JSON line |
| an empty one (length 0)            | prints the spans written so far (one line)     |
| none: end of input                 | exits                                          |

A line it cannot write is reported on stderr and its spans are not counted, so the
parent, comparing what it sent with what was written, logs how many were lost. The
writer ignores SIGINT and runs in its own session: a Ctrl-C meant for the run does not
cut the file short; it stops when its input ends, so it never outlives its parent. It
gets the minimal environment (no secret of the agent's) and is non-dumpable (the spans
it holds are closed to other processes of the user, hooks included).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import IO, Final, final

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from orchestra._children import minimal_environment, refuse_dumps
from orchestra.tracing._otlp_json import request_json

__all__ = ["WriterProcess", "main"]

_HEAD: Final = 4  # bytes of a frame's length
_ASK: Final = bytes(_HEAD)  # the empty frame: how many spans were written?


def _span_count(request: ExportTraceServiceRequest) -> int:
    return sum(len(scope.spans) for res in request.resource_spans for scope in res.scope_spans)


def _read(stream: IO[bytes], size: int) -> bytes | None:
    """Exactly ``size`` bytes, or None at the end of input."""
    data = stream.read(size)
    return data if len(data) == size else None


def main(path: str) -> int:
    """The writer's loop: frames in on stdin, OTLP JSON lines out to ``path``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends it by closing stdin
    refuse_dumps()  # it holds the run's spans: closed to the hooks, as the agent is
    written = 0
    with open(path, "a", encoding="utf-8", buffering=1) as file:  # a line is one write
        while (head := _read(sys.stdin.buffer, _HEAD)) is not None:
            size = int.from_bytes(head, "big")
            if size == 0:
                print(written, flush=True)
                continue
            data = _read(sys.stdin.buffer, size)
            if data is None:
                break
            request = ExportTraceServiceRequest.FromString(data)
            try:
                file.write(json.dumps(request_json(request), separators=(",", ":")) + "\n")
            except (OSError, ValueError) as exc:
                print(f"orchestra: could not write spans to {path}: {exc}", file=sys.stderr)
                continue
            written += _span_count(request)
    return 0


@final
class WriterProcess:
    """The parent's end: starts the writer, sends it encoded lines, asks what it wrote.

    Every method raises ``OSError`` when the writer is gone (it could not start, or it
    died); the exporter then writes in its own thread and logs what was lost.

    Args:
        path: the trace file (already created or truncated by the exporter).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "orchestra.tracing._writer", os.fspath(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,
            # no secret of the agent's: the minimal environment, and this orchestra's path
            env={**minimal_environment(), "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert self._proc.stdin is not None
        assert self._proc.stdout is not None
        self._stdin = self._proc.stdin
        self._stdout = self._proc.stdout
        self.pid = self._proc.pid
        self.sent = 0  # spans handed over
        self.written_before = 0  # what it said it had written, the last time it was asked

    def send(self, request: bytes, spans: int) -> None:
        """Hand over one serialized ``ExportTraceServiceRequest`` of ``spans`` spans."""
        self._stdin.write(len(request).to_bytes(_HEAD, "big") + request)
        self._stdin.flush()  # on its way now: the parent holds no line back
        self.sent += spans

    def written(self) -> int:
        """Wait until the writer has written what it was sent; how many spans it wrote."""
        self._stdin.write(_ASK)
        self._stdin.flush()
        answer = self._stdout.readline()
        if not answer:
            raise OSError(f"the trace writer exited (code {self._proc.wait()})")
        self.written_before = int(answer)
        return self.written_before

    def close(self, timeout: float = 30.0) -> None:
        """End its input and wait for it to exit (killed after ``timeout`` seconds)."""
        with contextlib.suppress(OSError):  # it is gone already: a broken pipe
            self._stdin.close()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stdout.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
