"""Public traces schedlab knows how to fetch: official locations and published checksums."""

from __future__ import annotations

from dataclasses import dataclass, field

from schedlab.errors import UnknownNameError


@dataclass(frozen=True, kw_only=True, slots=True)
class TraceFile:
    """One downloadable file of a dataset."""

    name: str
    """File name on the server and on disk."""
    sha256: str
    """Published SHA-256 checksum."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Dataset:
    """A public trace: where it lives and what its files must hash to."""

    name: str
    """Name used by ``schedlab traces fetch``."""
    base_urls: tuple[str, ...]
    """Official download locations, tried in order."""
    files: dict[str, TraceFile] = field(default_factory=dict)
    """Short name (e.g. ``batch_task``) -> file."""
    source: str = ""
    """Where the locations and checksums are published."""


# Published in alibaba/clusterdata, cluster-trace-v2018/trace_2018.md ("sha256sum *").
_ALIBABA2018_SHA256 = {
    "batch_task": "7c4b32361bd1ec2083647a8f52a6854a03bc125ca5c202652316c499fbf978c6",
    "batch_instance": "e73e5a9326669aa079ba20048ddd759383cabe1fe3e58620aa75bd034e2450c6",
    "container_meta": "febd75e693d1f208a8941395e7faa7e466e50d21c256eff12a815b7e2fa2053f",
    "container_usage": "b4bd3b1b82f5407c1b0dd47fe736ff5152c4b016a9c30cb26f988e2d1c5e5031",
    "machine_meta": "b5b1b786b22cd413a3674b8f2ebfb2f02fac991c95df537f363ef2797c8f6d55",
    "machine_usage": "3e6ee87fd204bb85b9e234c5c75a5096580fdabc8f085b224033080090753a7a",
}

DATASETS: dict[str, Dataset] = {
    "alibaba2018": Dataset(
        name="alibaba2018",
        base_urls=(
            "http://aliopentrace.oss-cn-beijing.aliyuncs.com/v2018Traces",
            "http://clusterdata2018pubcn.oss-cn-beijing.aliyuncs.com",
        ),
        files={
            short: TraceFile(name=f"{short}.tar.gz", sha256=digest)
            for short, digest in _ALIBABA2018_SHA256.items()
        },
        source="alibaba/clusterdata, cluster-trace-v2018/trace_2018.md and fetchData.sh",
    ),
}


def dataset(name: str) -> Dataset:
    """The dataset called ``name``."""
    if name not in DATASETS:
        msg = f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}"
        raise UnknownNameError(msg)
    return DATASETS[name]
