"""One error hierarchy for schedlab; every error is also the matching built-in."""

from __future__ import annotations


class SchedlabError(Exception):
    """Base class of every error schedlab raises on purpose."""


class JobSetError(SchedlabError, ValueError):
    """A JobSet violates the schema (design.md §2); the message names column, value and row."""


class InfeasibleJobError(JobSetError):
    """A job demands more of a resource than the whole cluster has: it could never run."""


class TraceFormatError(SchedlabError, ValueError):
    """A trace or file is malformed; the message names the file and, where known, the line."""


class UnknownNameError(SchedlabError, KeyError):
    """A registry lookup failed; the message lists the closest known names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SimulationError(SchedlabError, RuntimeError):
    """The simulator reached a state it must never reach (e.g. jobs that can make no progress)."""


class SpecError(SchedlabError, ValueError):
    """An experiment spec is invalid; the message names the file and the offending key."""


class WorkloadModelError(SchedlabError, ValueError):
    """A fitted workload model file is invalid; the message names the file and the key."""


class ResultsError(SchedlabError, ValueError):
    """Results lack what was asked of them (a jobset, a policy, the jobs' demands) or do not match
    a JobSet; the message says what was expected and what the results hold."""
