"""Downloads against a local HTTP server on loopback (this machine has no network)."""

from __future__ import annotations

import hashlib
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlab.traces.catalog import DATASETS, TraceFile
from schedlab.traces.fetch import FetchError, fetch, fetch_file

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at any path, honouring ``Range: bytes=N-``; records the bytes it serves
    *before* sending them, so the record is complete once the client has the body (recording
    after the write raced with the test's assertion under load)."""

    served: list[int] = []  # noqa: RUF012 (shared by the test)

    def do_GET(self) -> None:
        start = 0
        if rng := self.headers.get("Range"):
            start = int(rng.removeprefix("bytes=").rstrip("-"))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        else:
            self.send_response(200)
        body = PAYLOAD[start:]
        self.served.append(len(body))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Silence the server."""


@pytest.fixture
def server() -> Iterator[str]:
    RangeHandler.served = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


GOOD = TraceFile(name="batch_task.tar.gz", sha256=hashlib.sha256(PAYLOAD).hexdigest())


def test_download_is_verified(server: str, tmp_path: Path) -> None:
    path = fetch_file(GOOD, tmp_path, [server], progress=False)
    assert path.read_bytes() == PAYLOAD
    assert not (tmp_path / "batch_task.tar.gz.part").exists()
    assert fetch_file(GOOD, tmp_path, [server], progress=False) == path  # verified, not refetched
    assert RangeHandler.served == [len(PAYLOAD)]


def test_interrupted_download_resumes(server: str, tmp_path: Path) -> None:
    (tmp_path / "batch_task.tar.gz.part").write_bytes(PAYLOAD[:300_000])
    path = fetch_file(GOOD, tmp_path, [server], progress=False)
    assert path.read_bytes() == PAYLOAD
    assert RangeHandler.served == [len(PAYLOAD) - 300_000]


def test_checksum_mismatch_is_an_error_and_deletes(server: str, tmp_path: Path) -> None:
    bad = TraceFile(name="batch_task.tar.gz", sha256="0" * 64)
    with pytest.raises(FetchError, match="checksum mismatch"):
        fetch_file(bad, tmp_path, [server], progress=False)
    assert list(tmp_path.iterdir()) == []


def test_unreachable_host_says_so(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match=r"could not download batch_task\.tar\.gz"):
        fetch_file(GOOD, tmp_path, ["http://127.0.0.1:9"], progress=False, timeout=2)


def test_unresolvable_host_hints_no_network(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="no network"):
        fetch_file(GOOD, tmp_path, ["http://schedlab-test.invalid"], progress=False, timeout=2)


def test_fetch_by_dataset_name(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DATASETS["alibaba2018"]
    monkeypatch.setitem(ds.files, "batch_task", GOOD)
    [path] = fetch("alibaba2018", ["batch_task"], dest=tmp_path, base_url=server, progress=False)
    assert path.name == "batch_task.tar.gz"
    with pytest.raises(FetchError, match="no file"):
        fetch("alibaba2018", ["nope"], dest=tmp_path, base_url=server)


def test_catalog_has_published_checksums() -> None:
    files = DATASETS["alibaba2018"].files
    assert files["batch_task"].sha256.startswith("7c4b3236")
    assert all(len(f.sha256) == 64 for f in files.values())
