"""Which study a report folder holds, so that a report never silently replaces another one.

``schedlab report`` and ``schedlab demo`` write, beside the report, ``report-source.json``
(:data:`MARKER`): the results file or experiment directory the report was drawn from, as a path
relative to the folder (moving the two together keeps it valid) and as an absolute path (for
messages). Before writing a report into a folder, :func:`check_report_folder` refuses, unless
``force``, a folder that holds another study's output:

* a report drawn from another source (its marker names another path);
* an experiment directory (``spec.json``) other than the one being reported: its report would
  be replaced by a report of something else;
* a report with no marker (written by the Python API or an older schedlab): whose it is cannot
  be known.

Re-drawing the report of the same source (another ``--style``, new runs of the same experiment)
is always allowed; so is writing into a new or empty folder, or one holding neither a report
nor an experiment. The refusal names the study found and the two ways on: another ``-o``, or
``--force``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from schedlab.errors import OutputError
from schedlab.io import write_text_atomic

MARKER = "report-source.json"
"""The file naming the source of the report in its folder."""

REPORT_FILES = ("report.html", "report.md")
"""Files whose presence means that a folder holds a report."""


def check_report_folder(
    out_dir: str | os.PathLike[str],
    source: str | os.PathLike[str],
    *,
    force: bool = False,
    what: str | None = None,
) -> None:
    """Refuse (:class:`~schedlab.errors.OutputError`) to write the report of ``source`` (a
    results file or an experiment directory) into ``out_dir`` when that folder holds another
    study's output, unless ``force`` (see the module's docstring for the rule). ``what`` names
    what would be written, for the message (default: a report of ``source``).

    Raises
    ------
    OutputError
        Naming the folder, the study it holds and how to go on (another ``-o``, ``--force``).
    """
    if force:
        return
    out, src = Path(out_dir), Path(source)
    held = _held(out, src)
    if held is None:
        return
    msg = (
        f"{out} holds {held}; {what or f'a report of {src}'} would replace it: choose another "
        "-o, or pass "
        "--force to replace it"
    )
    raise OutputError(msg)


def record_report_source(out_dir: str | os.PathLike[str], source: str | os.PathLike[str]) -> Path:
    """Write :data:`MARKER` into ``out_dir`` (created if missing), naming ``source``."""
    out, src = Path(out_dir), Path(source)
    out.mkdir(parents=True, exist_ok=True)
    marker = {
        "source": os.path.relpath(src.resolve(), out.resolve()),
        "absolute": str(src.resolve()),
        "kind": "experiment" if src.is_dir() else "results",
    }
    path = out / MARKER
    write_text_atomic(path, json.dumps(marker, indent=2) + "\n")
    return path


def recorded_source(out_dir: str | os.PathLike[str]) -> Path | None:
    """The source the report in ``out_dir`` was drawn from (resolved), or None when the folder
    has no readable :data:`MARKER`."""
    out = Path(out_dir)
    try:
        marker = json.loads((out / MARKER).read_text(encoding="utf-8"))
        return (out / str(marker["source"])).resolve()
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _held(out: Path, src: Path) -> str | None:
    """What in ``out`` a report of ``src`` would replace, said for a message; None if nothing
    of another study."""
    if not out.is_dir():
        return None
    same = src.resolve()
    recorded = recorded_source(out)
    if recorded is not None:
        return None if recorded == same else f"the report of {recorded} ({MARKER})"
    if (out / MARKER).exists():
        return f"a report whose {MARKER} cannot be read"
    if out.resolve() == same:  # an experiment directory reported into itself (schedlab demo)
        return None
    if (out / "spec.json").is_file():
        return f"experiment {_experiment_name(out)!r} (its spec.json, runs and report)"
    if any((out / name).is_file() for name in REPORT_FILES):
        return f"a report whose source is not recorded (no {MARKER})"
    return None


def _experiment_name(out: Path) -> str:
    """The name of the experiment in ``out`` (its spec.json), or its folder's name."""
    try:
        spec = json.loads((out / "spec.json").read_text(encoding="utf-8"))
        return str(spec["name"])
    except (OSError, ValueError, KeyError, TypeError):
        return out.name
