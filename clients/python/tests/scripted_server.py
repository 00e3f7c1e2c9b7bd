"""A real HTTP server on loopback that answers each request as a script says, for the client tests
that need answers a healthy gateway does not give on demand: 503s, 429s, dropped connections."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Tuple, Union

#: (status, headers, json body); or "reset" to drop the connection without answering.
Answer = Union[Tuple[int, Dict[str, str], Any], str]


class ScriptedServer:
    def __init__(self, script: Callable[[Dict[str, Any], int], Answer]) -> None:
        self.seen: List[Dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = {
                    "method": self.command,
                    "path": self.path,
                    "headers": {name.lower(): value for name, value in self.headers.items()},
                    "body": self.rfile.read(length).decode("utf-8"),
                }
                server.seen.append(request)
                answer = script(request, len(server.seen) - 1)
                if answer == "reset":
                    self.close_connection = True
                    return
                status, headers, body = answer  # type: ignore[misc]
                payload = b"" if body is None else json.dumps(body).encode("utf-8")
                self.send_response(status)
                if payload:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/api/v1"
        # A short poll interval: shutdown() waits up to one interval, and every test closes its servers.
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
