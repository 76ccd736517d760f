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


class ParameterError(SchedlabError, ValueError):
    """A parameter given by name (``-p KEY=VALUE``, a policy spec option, a spec's ``params``)
    is unknown or has a value of the wrong type, outside its choices or outside its range; the
    message names where it was given, the parameter, what was expected and what was given."""


class SimulationError(SchedlabError, RuntimeError):
    """The simulator reached a state it must never reach (e.g. jobs that can make no progress)."""


class SpecError(SchedlabError, ValueError):
    """An experiment spec is invalid; the message names the file and the offending key."""


class WorkloadModelError(SchedlabError, ValueError):
    """A fitted workload model file is invalid; the message names the file and the key."""


class NonFiniteValueError(SchedlabError, ValueError):
    """A value to summarise or test is NaN or infinite; the message names where it is."""


class OutputError(SchedlabError, OSError):
    """An output cannot be written, or would silently replace different results; the message
    names the path and how to proceed (another ``-o``, or ``--force``)."""


class MissingExtraError(SchedlabError, ImportError):
    """An optional part of schedlab is asked for but its dependencies are not installed; the
    message names what needs them and how to install them (:mod:`schedlab.extras`)."""


class SizeError(SchedlabError, MemoryError):
    """A request would need more memory than the machine can give; the message gives the
    estimate, what it was made of, the option or field to change, and how to go ahead anyway
    (``--allow-large``, ``$SCHEDLAB_ALLOW_LARGE=1``)."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a long operation; completed work is kept and it resumes.

    Deliberately not a :class:`SchedlabError`: like :class:`KeyboardInterrupt` it must pass
    through ``except Exception`` so no half-done work is recorded as a failure.
    """

    def __init__(self, message: str, signal: str = "SIGINT") -> None:
        super().__init__(message)
        self.signal = signal
        """Name of the signal that stopped the operation (``"SIGINT"``, ``"SIGTERM"``)."""


class SchedlabWarning(UserWarning):
    """Base class of the warnings schedlab gives users."""


class PluginWarning(SchedlabWarning):
    """An installed plug-in is refused (its name clashes with a built-in or another plug-in)."""


class ImplausibleValueWarning(SchedlabWarning):
    """A value is allowed but far outside its usual range (e.g. ``--load 70`` = 7000%)."""


class ResultsError(SchedlabError, ValueError):
    """Results lack what was asked of them (a jobset, a policy, the jobs' demands) or do not match
    a JobSet; the message says what was expected and what the results hold."""


class BackendError(SchedlabError, RuntimeError):
    """An execution backend (Ray) is not installed, cannot start or cannot be reached; the
    message says which backend, the address, and how to get or reach it."""
