"""Download public traces: resumable, with a progress bar, verified against published checksums.

A partial download is kept as ``<name>.part`` and resumed with an HTTP ``Range`` request; the
file is renamed into place only once its SHA-256 matches the published one. With no network the
error says so in one line.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from schedlab.errors import SchedlabError
from schedlab.io import sha256
from schedlab.traces.catalog import TraceFile, dataset

CHUNK = 1 << 20


class FetchError(SchedlabError, OSError):
    """A download failed: no network, server error, or checksum mismatch."""


def _download(url: str, part: Path, *, timeout: float, progress: bool) -> None:
    """Append the rest of ``url`` to ``part`` (resuming from its current size)."""
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # already complete
            return
        raise
    with response:
        resumed = response.status == 206
        if have and not resumed:  # server ignored Range: start over
            have = 0
        total = response.headers.get("Content-Length")
        size = int(total) + have if total is not None else None
        with (
            part.open("ab" if resumed else "wb") as out,
            tqdm(
                total=size,
                initial=have,
                unit="B",
                unit_scale=True,
                desc=part.stem,
                disable=not progress,
            ) as bar,
        ):
            while block := response.read(CHUNK):
                out.write(block)
                bar.update(len(block))


def fetch_file(
    file: TraceFile,
    dest: Path,
    base_urls: Sequence[str],
    *,
    timeout: float = 30.0,
    progress: bool = True,
) -> Path:
    """Fetch one file into ``dest`` (resuming a ``.part``), verify it, and return its path.

    Raises
    ------
    FetchError
        If no location can be reached (with a no-network hint) or the checksum does not match.
    """
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / file.name
    if target.is_file() and sha256(target) == file.sha256:
        return target
    part = dest / f"{file.name}.part"
    errors = []
    for base in base_urls:
        url = f"{base.rstrip('/')}/{file.name}"
        try:
            _download(url, part, timeout=timeout, progress=progress)
        except (TimeoutError, urllib.error.URLError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            errors.append(f"{url}: {reason}")
            continue
        digest = sha256(part)
        if digest != file.sha256:
            part.unlink()
            msg = f"{url}: checksum mismatch (got {digest}, published {file.sha256}); deleted"
            raise FetchError(msg)
        os.replace(part, target)
        return target
    hint = "" if not _dns_errors(errors) else " (no network? the hosts could not be resolved)"
    msg = f"could not download {file.name}{hint}: " + "; ".join(errors)
    raise FetchError(msg)


def _dns_errors(errors: list[str]) -> bool:
    words = ("Name or service not known", "Temporary failure in name resolution", "nodename")
    return any(w in e for e in errors for w in words)


def fetch(
    name: str,
    files: Sequence[str] = ("batch_task",),
    *,
    dest: str | os.PathLike[str] = "traces-data",
    base_url: str | None = None,
    timeout: float = 30.0,
    progress: bool = True,
) -> list[Path]:
    """Fetch ``files`` (short names) of dataset ``name`` into ``dest``; ``base_url`` overrides."""
    ds = dataset(name)
    unknown = [f for f in files if f not in ds.files]
    if unknown:
        msg = f"{name} has no file(s) {unknown}; known: {', '.join(ds.files)}"
        raise FetchError(msg)
    urls = (base_url,) if base_url else ds.base_urls
    return [
        fetch_file(ds.files[f], Path(dest), urls, timeout=timeout, progress=progress) for f in files
    ]
