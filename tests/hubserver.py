"""A small Hugging Face Hub on loopback, for testing downloads through huggingface_hub's real client.

It answers the few endpoints the client calls (``/api/models/<repo>[/revision/<rev>]``, ``POST
/api/models/<repo>/paths-info/<rev>``, ``HEAD``/``GET /<repo>/resolve/<rev>/<path>``) with the hub's headers
(``X-Repo-Commit``, ``ETag``, ``X-Linked-Etag``/``X-Linked-Size`` and an ``lfs`` block with the sha256 for
weight files, ``X-Error-Code`` on errors) and honours ``Range`` requests. A repo can be gated (401 without a
token, 403 with one), refuse a wrong token, drop the connection after N bytes of a file once, or pause a
file after N bytes until released. Every request is logged so tests can see the Range that resumed a file.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".model")
BAD_TOKEN = "hf_wrong"


@dataclass
class Repo:
    files: dict[str, bytes]
    license: str = "openrail"
    gated: bool = False
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    drop_after: dict[str, int] = field(default_factory=dict)  # path -> bytes sent before the connection drops (once)
    pause_after: dict[str, int] = field(default_factory=dict)  # path -> bytes sent before waiting for `release`
    release: threading.Event = field(default_factory=threading.Event)


def git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HubServer:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.log: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server._handle(self, "GET")

            def do_HEAD(self):
                server._handle(self, "HEAD")

            def do_POST(self):
                server._handle(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        for repo in self.repos.values():
            repo.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def ranges(self, name: str) -> list[str | None]:
        """The Range headers of the GETs of ``name`` (None: the whole file)."""
        return [r for m, p, r in self.log if m == "GET" and p.endswith("/" + name) and "/resolve/" in p]

    # --- request handling --------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        url = urlparse(h.path)
        path = unquote(url.path)
        self.log.append((method, path, h.headers.get("Range")))
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0)) if method == "POST" else b""
        if path.startswith("/api/models/"):
            return self._api(h, path[len("/api/models/"):], body)
        if "/resolve/" in path:
            repo_id, rest = path.lstrip("/").split("/resolve/", 1)
            revision, name = rest.split("/", 1)
            return self._resolve(h, method, repo_id, revision, name)
        self._send(h, 404, b"not found", {"X-Error-Code": "RepoNotFound"})

    def _auth_error(self, h, repo: Repo, method: str) -> bool:
        auth = h.headers.get("Authorization") or ""
        if auth == f"Bearer {BAD_TOKEN}":
            self._send(h, 401, b"bad token", {"X-Error-Message": "Invalid credentials in Authorization header"}, method)
            return True
        if repo.gated:
            code = 403 if auth else 401
            self._send(h, code, b"gated", {"X-Error-Code": "GatedRepo",
                                           "X-Error-Message": "Access to this model is restricted."}, method)
            return True
        return False

    def _api(self, h, rest: str, body: bytes) -> None:
        repo_id, tail = self._split_repo(rest)
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._send(h, 404, b"{}", {"X-Error-Code": "RepoNotFound"})
        if tail.startswith("paths-info/"):
            wanted = parse_qs(body.decode()).get("paths", [])
            out = []
            for p in wanted:
                if p in repo.files:
                    data = repo.files[p]
                    entry = {"type": "file", "path": p, "size": len(data), "oid": git_oid(data)}
                    if p.endswith(LFS_SUFFIXES):
                        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
                    out.append(entry)
            return self._send(h, 200, json.dumps(out).encode(), {"Content-Type": "application/json"})
        info = {"id": repo_id, "modelId": repo_id, "sha": repo.sha, "private": False,
                "gated": "manual" if repo.gated else False, "cardData": {"license": repo.license},
                "siblings": [{"rfilename": p} for p in repo.files]}
        self._send(h, 200, json.dumps(info).encode(), {"Content-Type": "application/json"})

    def _split_repo(self, rest: str) -> tuple[str, str]:
        """``org/name[/revision/<rev> | /paths-info/<rev>]`` → (repo id, the rest)."""
        parts = rest.split("/")
        return "/".join(parts[:2]), "/".join(parts[2:])

    def _resolve(self, h, method: str, repo_id: str, revision: str, name: str) -> None:
        repo = self.repos.get(repo_id)
        if repo is None:
            return self._send(h, 404, b"", {"X-Error-Code": "RepoNotFound"}, method)
        if self._auth_error(h, repo, method):
            return
        if name not in repo.files:
            return self._send(h, 404, b"", {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": repo.sha}, method)
        data = repo.files[name]
        etag = hashlib.sha256(data).hexdigest() if name.endswith(LFS_SUFFIXES) else git_oid(data)
        headers = {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        if name.endswith(LFS_SUFFIXES):
            headers.update({"X-Linked-Etag": f'"{etag}"', "X-Linked-Size": str(len(data))})
        start = 0
        rng = h.headers.get("Range")
        if method == "GET" and rng and rng.startswith("bytes="):
            start = int(rng[6:].split("-")[0])
        if method == "HEAD":
            headers["Content-Length"] = str(len(data))
            return self._send(h, 200, b"", headers, "HEAD")
        status = 206 if start else 200
        if start:
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        chunk = data[start:]
        h.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(chunk))}.items():
            h.send_header(k, v)
        h.end_headers()
        cut = repo.drop_after.pop(name, None)
        if cut is not None:  # send part of the body, then drop the connection (once)
            h.wfile.write(chunk[:cut])
            h.wfile.flush()
            h.close_connection = True
            return
        pause = repo.pause_after.pop(name, None)
        if pause is not None:
            h.wfile.write(chunk[:pause])
            h.wfile.flush()
            repo.release.wait(10)
            try:
                h.wfile.write(chunk[pause:])
            except OSError:
                pass
            return
        h.wfile.write(chunk)

    def _send(self, h, status: int, body: bytes, headers: dict, method: str = "GET") -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        if "Content-Length" not in headers:
            h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if method != "HEAD":
            h.wfile.write(body)


def published(spec, weight_bytes=150_000) -> Repo:
    """A repo in the published layout of a registry spec (every file of ``files`` and ``fp16_files``): weights as
    deterministic bytes of about ``weight_bytes``, the rest small JSON."""
    files = {}
    for i, name in enumerate(dict.fromkeys(spec.files + spec.fp16_files)):
        if name.endswith((".safetensors", ".bin", ".model")):
            files[name] = hashlib.sha256(name.encode()).digest() * (weight_bytes // 32 + i)
        else:
            files[name] = f'{{"_name": "{name}"}}'.encode()
    return Repo(files=files)
