"""A real HTTP server on 127.0.0.1 for the http runner tests.

Run as ``python http_server.py [CERTFILE KEYFILE]``: it serves (https when given a
certificate) on a free port and prints ``PORT`` on its first line. ``start()`` does
that from a test and answers the base URL and the process, which the test stops.

Paths: ``/allow``, ``/echo`` (answers the request body as ``modified_input`` and the
``X-Token`` header as ``message``), ``/claude``, ``/empty``, ``/redirect``, ``/500``,
``/text``, ``/array``, ``/big`` (2 MiB), ``/big-chunked`` (2 MiB, no Content-Length),
``/hang`` (never answers), ``/host`` (answers the ``Host`` header and the TLS server name
the client sent as ``message``). ``GET /hits`` answers how many POSTs it got.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

_STOP = threading.Event()
_HITS = [0]
_SNI: dict[int, str | None] = {}  # by the client's port: the TLS server name it sent


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/hits":
            self._send(200, str(_HITS[0]).encode())
        else:
            self._send(404, b"no such page")

    def do_POST(self) -> None:
        _HITS[0] += 1
        length = int(self.headers.get("Content-Length", "0"))
        request = self.rfile.read(length)
        path = self.path
        if path == "/allow":
            self._send(200, b'{"decision": "allow", "reason": "fine"}')
        elif path == "/echo":
            answer = {"modified_input": json.loads(request), "message": self.headers["X-Token"]}
            self._send(200, json.dumps(answer).encode())
        elif path == "/claude":
            answer = {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": "not on Fridays",
                }
            }
            self._send(200, json.dumps(answer).encode())
        elif path == "/empty":
            self._send(204, b"")
        elif path == "/redirect":
            self._send(302, b"", {"Location": "https://evil.example/steal"})
        elif path == "/500":
            self._send(500, b"internal error: the guard crashed")
        elif path == "/text":
            self._send(200, b"OK, allowed", {"Content-Type": "text/plain"})
        elif path == "/array":
            self._send(200, b'[{"decision": "allow"}]')
        elif path == "/big":
            self._send(200, b" " * (2 << 20))
        elif path == "/big-chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b" " * 65536
            try:
                for _ in range(32):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client hung up at its limit
        elif path == "/host":
            sni = _SNI.get(self.client_address[1])
            answer = {"message": f"{self.headers['Host']} {sni}"}
            self._send(200, json.dumps(answer).encode())
        elif path == "/hang":
            _STOP.wait(120)
        else:
            self._send(404, b"no such hook")


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    if len(sys.argv) == 3:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[1], sys.argv[2])

        def remember_sni(sock: ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext) -> None:
            _SNI[sock.getpeername()[1]] = name

        context.sni_callback = remember_sni
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    finally:
        _STOP.set()


def start(*tls_files: Path) -> tuple[str, subprocess.Popen[bytes]]:
    """Start the server in a subprocess; answer its base URL and the process."""
    process = subprocess.Popen(
        [sys.executable, __file__, *map(str, tls_files)], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    port = int(process.stdout.readline())
    process.stdout.close()
    scheme = "https" if tls_files else "http"
    return f"{scheme}://127.0.0.1:{port}", process


def hits(url: str) -> int:
    """How many POSTs the server at ``url`` got so far."""
    with urllib.request.urlopen(f"{url}/hits", timeout=10) as response:
        return int(response.read())


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server that ``start`` started, and reap it."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def running(*tls_files: Path) -> Iterator[str]:
    """The server, started for a ``with`` block: its base URL; stopped after it."""
    url, process = start(*tls_files)
    try:
        yield url
    finally:
        stop(process)


if __name__ == "__main__":
    main()
