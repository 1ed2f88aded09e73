"""A local stand-in for the Hugging Face hub: serves the files of `root/<org>/<name>/` at the
addresses huggingface_hub asks (`HF_ENDPOINT`), with the headers it reads. Not a mock of
huggingface_hub: the real library downloads from it over HTTP, into a real cache.

Endpoints (huggingface_hub 2.4): `HEAD`/`GET /<repo>/resolve/<revision>/<path>` (ETag,
X-Repo-Commit, Content-Length), `GET /api/models/<repo>/revision/<revision>` (commit and file
list) and `GET /api/models/<repo>/tree/<revision>` (paths and sizes).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

COMMIT = "0123456789abcdef0123456789abcdef01234567"
"""The one commit every repo is at."""
SLOW_STEP_SECONDS = 0.1
"""A slow download sends a piece this often."""


class LocalHub:
    """Serves `root` on 127.0.0.1 until `close`; `endpoint` is what HF_ENDPOINT takes."""

    def __init__(self, root: Path, bytes_per_second: float | None = None) -> None:
        self.root = root
        self.bytes_per_second = bytes_per_second
        """Send file bodies at this rate (None: at once): a download that lasts."""
        self.requests: list[str] = []
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                hub.requests.append(f"{self.command} {self.path}")

            def do_HEAD(self) -> None:  # noqa: N802
                self._resolve(send_body=False)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.startswith("/api/models/"):
                    self._api()
                else:
                    self._resolve(send_body=True)

            def _resolve(self, send_body: bool) -> None:
                parts = self.path.split("?")[0].strip("/").split("/")
                path = hub.root / "/".join(parts[:2]) / "/".join(parts[4:])
                if parts[2:3] != ["resolve"] or not path.is_file():
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.end_headers()
                    return
                data = path.read_bytes()
                self.send_response(200)
                self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if send_body:
                    self._send_slowly(data)

            def _send_slowly(self, data: bytes) -> None:
                if hub.bytes_per_second is None:
                    self.wfile.write(data)
                    return
                step = max(1, int(hub.bytes_per_second * SLOW_STEP_SECONDS))
                with contextlib.suppress(OSError):  # the client left mid-download
                    for start in range(0, len(data), step):
                        self.wfile.write(data[start : start + step])
                        time.sleep(SLOW_STEP_SECONDS)

            def _api(self) -> None:
                parts = self.path.split("?")[0].strip("/").split("/")  # api/models/org/name/...
                repo = hub.root / parts[2] / parts[3]
                files = sorted(p for p in repo.rglob("*") if p.is_file())
                if parts[4:5] == ["tree"]:
                    doc: Any = [
                        {"type": "file", "oid": COMMIT, "size": p.stat().st_size,
                         "path": str(p.relative_to(repo))}
                        for p in files
                    ]  # fmt: skip
                else:
                    siblings = [{"rfilename": str(p.relative_to(repo))} for p in files]
                    doc = {"id": f"{parts[2]}/{parts[3]}", "sha": COMMIT, "siblings": siblings}
                body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
