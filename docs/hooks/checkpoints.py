"""mkdocs hook: the table of shipped checkpoints in ``training.md``, read from their READMEs.

Every shipped policy lives in ``policies/checkpoints/<name>/`` with a ``README.md`` that says
what it is (its title), how to use it (the first ``--policy`` spec it gives) and how it was
trained (its first ``schedlab train`` command block). The marker ``<!-- shipped-checkpoints -->``
of ``training.md`` is replaced by a table of them at build time, so a checkpoint added or removed
shows up without editing the page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from markers import fill  # docs/hooks/ is on sys.path while mkdocs loads a hook

ROOT = Path(__file__).resolve().parents[2]
CHECKPOINTS = ROOT / "policies" / "checkpoints"
MARKER = "<!-- shipped-checkpoints -->"
"""Replaced in ``training.md`` by :func:`render`."""


def _policy(name: str, readme: str) -> str:
    """The first policy spec the README gives (``--policy deeprm:deeprm-0.7``), else the policy
    it names with this checkpoint (``deeprm-plus:NAME/imitation.pt`` -> ``deeprm-plus:NAME``)."""
    found = re.search(r"`--policy ([^`]+)`", readme)
    if found:
        return f"`{found[1]}`"
    found = re.search(rf"`([a-z][a-z-]*):{re.escape(name)}(?=[/,`])", readme)
    return f"`{found[1]}:{name}`" if found else ""


def _train_command(readme: str) -> str:
    """The first fenced ``bash`` block of the README that runs ``schedlab train``."""
    for block in re.findall(r"^```bash\n(.*?)^```", readme, flags=re.S | re.M):
        if "schedlab train" in block:
            return block.rstrip("\n")
    return ""


def render() -> str:
    """A table of every shipped checkpoint, then each one's training command."""
    rows = ["| checkpoint | what | use as |", "|---|---|---|"]
    commands = []
    for folder in sorted(p for p in CHECKPOINTS.iterdir() if (p / "README.md").is_file()):
        readme = (folder / "README.md").read_text(encoding="utf-8")
        title = readme.splitlines()[0].lstrip("# ").partition(": ")[2]
        rows.append(f"| `{folder.name}` | {title} | {_policy(folder.name, readme)} |")
        if command := _train_command(readme):
            body = "\n".join(f"    {line}" for line in ["```bash", *command.splitlines(), "```"])
            commands.append(f'??? example "`{folder.name}`: how it was trained"\n\n{body}\n')
    return "\n".join([*rows, "", *commands])


def on_page_markdown(markdown: str, *, page: Any, **kwargs: Any) -> str:
    """Replace the marker of ``training.md`` by the table."""
    return fill(markdown, page, "training.md", MARKER, render)
