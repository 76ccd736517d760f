"""What a loader did to the rows it read: drops by reason, fixes by kind, notes (style.md §1).

A loader never drops a row silently: every row read is either kept or counted under a reason,
with a sample of dropped rows (1-based line number, raw text, reason, message; long texts are
clipped). Normalisations that keep a row but change it (e.g. ``1.0`` read as integer 1) are
counted as *fixes*; facts about the file as a whole (a header line skipped, a header value that
disagrees with the file) are *notes*.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from schedlab.errors import TraceFormatError
from schedlab.jobset import JobSet, offered_load
from schedlab.overlap import window_overlap

SAMPLE_SCHEMA = {"line": pl.Int64, "reason": pl.Utf8, "message": pl.Utf8, "raw": pl.Utf8}
SAMPLE_CHARS = 300
"""Characters of a sample's text and message kept in a report (the rest is counted)."""


def clip_text(text: pl.Expr, limit: int = SAMPLE_CHARS) -> pl.Expr:
    """``text`` cut to ``limit`` characters, saying how many were cut."""
    extra = text.str.len_chars().cast(pl.Int64) - limit
    cut = pl.format("{}… ({} more characters)", text.str.slice(0, limit), extra)
    return pl.when(extra > 0).then(cut).otherwise(text)


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
    """A few dropped rows per reason: line (1-based), reason, message, raw text (clipped)."""
    notes: tuple[str, ...] = ()
    """Facts about the file as a whole, in words (header lines, header mismatches, ...)."""

    def __post_init__(self) -> None:
        if self.rows_read != self.rows_kept + sum(self.dropped.values()):
            msg = (
                f"{self.source}: drop report does not account for every row: read "
                f"{self.rows_read}, kept {self.rows_kept}, dropped {dict(self.dropped)}"
            )
            raise AssertionError(msg)

    def to_json(self) -> dict[str, Any]:
        """Counts and notes (for JobSet provenance)."""
        return {
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "dropped": dict(self.dropped),
            "fixed": dict(self.fixed),
            "notes": list(self.notes),
        }

    def sample_lines(self, reason: str) -> list[int]:
        """Line numbers of the sampled rows dropped for ``reason``, in file order."""
        lines = self.samples.filter(pl.col("reason") == reason).get_column("line")
        return sorted(lines.to_list())

    def summary(self) -> str:
        """Human-readable lines for the CLI: drops per reason with sample line numbers and the
        first sample's message, fixes, notes."""
        lines = [f"{self.source}: read {self.rows_read:,} rows, kept {self.rows_kept:,}"]
        for reason, n in sorted(self.dropped.items()):
            lines.append(f"  dropped {n:,}: {reason}{self._where(reason, n)}")
            if example := self._example(reason):
                lines.append(f"      e.g. {example}")
        lines += [f"  fixed   {n:,}: {kind}" for kind, n in sorted(self.fixed.items())]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _example(self, reason: str) -> str:
        """``line N: message`` of the first sampled row dropped for ``reason`` (or "")."""
        first = self.samples.filter(pl.col("reason") == reason).sort("line").head(1)
        if not first.height:
            return ""
        line, message = first.select("line", "message").row(0)
        return f"line {line}: {message}"

    def _where(self, reason: str, n: int) -> str:
        seen = self.sample_lines(reason)
        if not seen:
            return ""
        more = ", ..." if n > len(seen) else ""
        word = "line" if len(seen) == 1 else "lines"
        return f" ({word} {', '.join(map(str, seen))}{more})"

    def nothing_kept(self) -> str:
        """One line saying that no row was kept, and why (for the error of an empty load)."""
        parts = []
        for reason, n in sorted(self.dropped.items(), key=lambda kv: -kv[1]):
            example = self._example(reason)
            parts.append(f"{n:,} {reason}" + (f" (e.g. {example})" if example else ""))
        quotes = pl.col("raw").str.contains('"') | pl.col("message").str.contains('"')
        quoted = bool(self.samples.select(quotes.any()).item())
        hint = "; the fields are quoted: give the trace's own unquoted CSV" if quoted else ""
        return (
            f"{self.source}: no job kept: all {self.rows_read:,} rows read were dropped: "
            f"{'; '.join(parts)}{hint}"
        )


@dataclass(frozen=True, slots=True)
class LoadResult:
    """A loader's output: the validated JobSet and what happened to every row."""

    jobs: JobSet
    report: DropReport

    def summary(self) -> str:
        """What ``schedlab load`` prints: the drop report's summary, then jobs, jobsets, span
        (steps and seconds per step) and the offered load on the cluster it refers to (how
        many machines of what size, and whether that is the trace's own cluster)."""
        js = self.jobs
        spans = js.jobs.group_by("jobset").agg(
            pl.col("arrival").max() - pl.col("arrival").min() + 1
        )
        span = int(spans.get_column("arrival").sum()) if len(js) else 0
        load = offered_load(js)["load"].item() if len(js) else 0.0
        step = js.meta.time_step_seconds
        units = js.meta.units or ("",) * len(js.resources)
        machine = ", ".join(
            _quantity(c, u) if u else f"{r} {c:g}"
            for r, c, u in zip(js.resources, js.machine_capacity, units, strict=True)
        )
        chosen = (js.meta.provenance.get("options") or {}).get("machines")
        whose = "the trace's own cluster" if chosen is None else "--machines"
        m = js.meta.machines
        overlap = window_overlap(js)
        shared = (
            ""
            if overlap is None
            else f"\nthe windows share jobs: a job is in {overlap.mean_jobsets:.1f} of them on "
            f"average ({overlap.shared:.0%} of the jobs in two or more), so they are not "
            "independent units"
        )
        return (
            f"{self.report.summary()}\n{len(js):,} jobs in {len(js.jobset_ids)} jobsets, span "
            f"{span:,} steps of {step:g} s, offered load {load:.3f} on {m:,} "
            f"machine{'s' if m > 1 else ''} of {machine} ({whose}){shared}"
        )


def _quantity(value: float, unit: str) -> str:
    """``64 cores``, ``1 core``, ``0.5 normalized memory``: a one-word unit in the plural
    unless the value is 1."""
    plural = "s" if value != 1 and " " not in unit and not unit.endswith("s") else ""
    return f"{value:g} {unit}{plural}"


def raise_first(samples: pl.DataFrame, source: str) -> None:
    """For ``strict=True`` loaders: raise on the first dropped row, naming file and line."""
    if samples.height:
        first = samples.sort("line").row(0, named=True)
        msg = f"line {first['line']} of {source}: {first['message']} ({first['reason']})"
        raise TraceFormatError(msg)
