"""What a loader did to the rows it read: drops by reason, fixes by kind (style.md §1).

A loader never drops a row silently: every row read is either kept or counted under a reason,
with a sample of dropped rows (1-based line number, raw text, reason, message). Normalisations
that keep a row but change it (e.g. ``1.0`` read as integer 1) are counted as *fixes*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.jobset import JobSet

SAMPLE_SCHEMA = {"line": pl.Int64, "reason": pl.Utf8, "message": pl.Utf8, "raw": pl.Utf8}


@dataclass(frozen=True, slots=True)
class DropReport:
    """Accounting of one load: ``rows_read == rows_kept + sum(dropped.values())``."""

    source: str
    """Path (or name) of what was read."""
    rows_read: int
    """Data rows read (header and comment lines excluded)."""
    rows_kept: int
    """Rows that became (part of) a job."""
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Reason code -> rows dropped for it."""
    fixed: Mapping[str, int] = field(default_factory=dict)
    """Normalisation -> rows changed by it (kept)."""
    samples: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=SAMPLE_SCHEMA))
    """A few dropped rows per reason: line (1-based), reason, message, raw text."""

    def __post_init__(self) -> None:
        if self.rows_read != self.rows_kept + sum(self.dropped.values()):
            msg = (
                f"{self.source}: drop report does not account for every row: read "
                f"{self.rows_read}, kept {self.rows_kept}, dropped {dict(self.dropped)}"
            )
            raise AssertionError(msg)

    def to_json(self) -> dict[str, Any]:
        """Counts only (for JobSet provenance)."""
        return {
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "dropped": dict(self.dropped),
            "fixed": dict(self.fixed),
        }

    def summary(self) -> str:
        """Human-readable lines for the CLI."""
        lines = [f"{self.source}: read {self.rows_read:,} rows, kept {self.rows_kept:,}"]
        lines += [f"  dropped {n:,}: {reason}" for reason, n in sorted(self.dropped.items())]
        lines += [f"  fixed   {n:,}: {kind}" for kind, n in sorted(self.fixed.items())]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class LoadResult:
    """A loader's output: the validated JobSet and what happened to every row."""

    jobs: JobSet
    report: DropReport


def raise_first(samples: pl.DataFrame, source: str) -> None:
    """For ``strict=True`` loaders: raise on the first dropped row, naming file and line."""
    if samples.height:
        first = samples.sort("line").row(0, named=True)
        msg = f"line {first['line']} of {source}: {first['message']} ({first['reason']})"
        raise TraceFormatError(msg)
