"""A fake chat completions endpoint on 127.0.0.1, for the judges' tests.

``serving(answer)`` runs it for a ``with`` block and yields its base URL (``.../v1``)
and the list of requests it got (each ``{"body": ..., "auth": ...}``); ``answer(prompt)``
gives the model's text for the last message's content (``SLOW`` in a prompt waits 2 s
first, as a model past the hook's timeout).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextlib.contextmanager
def serving(
    answer: Callable[[str], str], seen: list[dict[str, Any]] | None = None
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The endpoint, started for a ``with`` block: (base URL, requests seen).

    ``seen``: the list the requests are appended to (default: a new one).
    """
    if seen is None:
        seen = []

    class Model(BaseHTTPRequestHandler):
        def log_message(self, *_args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"body": body, "auth": self.headers.get("Authorization")})
            prompt = body["messages"][-1]["content"]
            if "SLOW" in prompt:
                threading.Event().wait(2)
            message = {"role": "assistant", "content": answer(prompt)}
            data = json.dumps({"choices": [{"message": message}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError):  # the judge gave up: its timeout
                self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Model)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    finally:
        server.shutdown()
        server.server_close()
