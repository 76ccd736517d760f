"""Experiment specs for tests: the small TOML every experiment test starts from."""

from __future__ import annotations

from pathlib import Path


def spec_toml(
    policies: str,
    *,
    name: str,
    reference: str,
    loads: str,
    jobsets: int | str,
    seed: int | None = None,
    workload: str = "deeprm",
    workload_seed: int | None = None,
) -> str:
    """A spec of one DeepRM workload: ``policies`` is the TOML list's inside, ``loads`` a TOML
    list, ``jobsets`` a count (or a ``{placeholder}``); seeds are written only when given."""
    lines = [
        f"policies = [{policies}]",
        "[experiment]",
        f'name = "{name}"',
        *([f"seed = {seed}"] if seed is not None else []),
        f'reference = "{reference}"',
        "[[workloads]]",
        f'name = "{workload}"',
        'generator = "deeprm"',
        f"loads = {loads}",
        f"jobsets = {jobsets}",
        *([f"seed = {workload_seed}"] if workload_seed is not None else []),
    ]
    return "\n" + "\n".join(lines) + "\n"


def write_spec(tmp_path: Path, text: str) -> Path:
    """``text`` written as ``tmp_path/spec.toml``."""
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path
