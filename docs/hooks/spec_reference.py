"""mkdocs hook: the experiment spec reference, generated from the spec's own types.

``docs/spec.md`` holds the marker ``<!-- spec-reference -->``; at build time it is replaced by
the tables of :func:`render`. Every key, type, bound, default and description comes from the code
that validates a spec (``schedlab.evaluation.spec``): the key lists ``parse_spec_dict`` checks
tables against (``TOP``, ``EXPERIMENT_KEYS``, ``WORKLOAD_KEYS``, ``POLICY_KEYS``,
``STATS_FIELDS``), the dataclasses behind them (``ExperimentSpec``, ``WorkloadSpec``,
``PolicySpec``, ``StatsSettings``, ``ReportSpec``, ``TraceOptions``, each simulator model's config
class) read by :func:`schedlab.params.parameters` (the type hints and attribute docstrings the
validation itself uses), and the generator and loader registries for ``params``. The page
therefore cannot drift from the code; ``tests/test_docs_spec.py`` checks that every key
``parse_spec_dict`` accepts is on it.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from markers import fill  # docs/hooks/ is on sys.path while mkdocs loads a hook
from sphinx_roles import rewrite  # docs/hooks/ is on sys.path while mkdocs loads a hook

MARKER = "<!-- spec-reference -->"
"""Replaced in ``spec.md`` by the generated reference."""

PARSER_DEFAULTS = {
    ("policies", "name"): "the `spec` as written",
    ("workloads", "seed"): "child *i* of `SeedSequence(experiment.seed)`",
}
"""Defaults ``parse_spec_dict`` computes, where the dataclass field has none or another
(``tests/test_docs_spec.py`` checks that these keys may be left out)."""


CODE = re.compile(r"(``.+?``|`[^`]+`)")
"""A code span (the table extension does not split cells at a ``|`` inside one)."""


def _markdown(doc: str) -> str:
    """A docstring paragraph as one line of a Markdown table cell (``|`` escaped outside code
    spans)."""
    parts = CODE.split(" ".join(rewrite(doc, lambda name: name).split()))
    return "".join(p if i % 2 else p.replace("|", "\\|") for i, p in enumerate(parts))


def toml_value(value: Any) -> str:
    """``value`` as it is written in TOML (None: not set)."""
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, tuple | list):
        items = ", ".join(toml_value(v).strip("`") for v in value)
        return f"`[{items}]`"
    if isinstance(value, Mapping):
        items = ", ".join(f"{k} = {toml_value(v).strip('`')}" for k, v in value.items())
        return f"`{{{items}}}`" if items else "`{}`"
    return f"`{value!r}`"


def parameter_docs(target: Callable[..., Any]) -> dict[str, str]:
    """The descriptions of the numpydoc ``Parameters`` section of ``target``'s docstring (a
    function's keyword parameters have no attribute docstrings), by name."""
    doc = inspect.getdoc(target) or ""
    section = re.search(r"^Parameters\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, flags=re.S | re.M)
    out: dict[str, str] = {}
    name = None
    for line in (section[1] if section else "").splitlines():
        if line and not line[0].isspace():
            name = line.split(":")[0].strip()
            out[name] = ""
        elif name is not None:
            out[name] += " " + line.strip()
    return {k: v.strip() for k, v in out.items()}


def table(
    target: Callable[..., Any],
    keys: Iterable[str] | None = None,
    *,
    where: str = "",
    null: str | None = None,
) -> str:
    """A Markdown table of the parameters ``keys`` of ``target`` (default: all of them): key,
    type and bounds, default, description. TOML has no null: ``null`` is what stands for None
    in this table (``'"all"'`` in ``[cluster]``), else a None-able key is left out to mean
    None."""
    from schedlab.param_checks import describe
    from schedlab.params import REQUIRED, parameters

    params = parameters(target)
    docs = parameter_docs(target)
    rows = ["| key | type | default | description |", "|---|---|---|---|"]
    for key in params if keys is None else keys:
        p = params[key]
        kind = describe(p.hint)
        kind = kind.replace(" or null", f" or {null}" if null else "").replace("null or ", "")
        kind += "".join(f", {b}" for b in p.bounds)
        if (where, key) in PARSER_DEFAULTS:
            default = PARSER_DEFAULTS[where, key]
        elif p.default is REQUIRED:
            default = "**required**"
        else:
            default = toml_value(p.default)
        doc = _markdown(p.doc or docs.get(key, ""))
        rows.append(f"| `{key}` | {_markdown(kind)} | {default} | {doc} |")
    return "\n".join(rows)


def _schema_example() -> str:
    """The annotated example of ``schedlab.evaluation.spec``'s docstring, as TOML."""
    from schedlab.evaluation import spec

    doc = spec.__doc__ or ""
    block = re.search(r"::\n\n(.*?)\n\n(?=\S)", doc, flags=re.S)
    return "```toml\n" + textwrap.dedent(block[1] if block else "") + "\n```"


def _registry_params(registry: Any, heading: str) -> list[str]:
    """One table per registered entry of its ``params`` (``#### name`` each)."""
    out = []
    for name in registry.names():
        params = registry.parameters(name)
        out += [f"#### `{name}`", "", _markdown(registry.entry(name).summary), ""]
        out += [table(registry.load(name), params) if params else "No parameters.", ""]
    return [heading, "", *out]


def render() -> str:
    """The generated part of ``spec.md``."""
    from schedlab.evaluation import spec
    from schedlab.evaluation.settings import STATS_FIELDS, StatsSettings
    from schedlab.loaders.traces.options import TraceOptions
    from schedlab.registry import generators, loaders, models

    top = {
        "experiment": "[`[experiment]`](#experiment): name, reference policy, master seed",
        "cluster": "[`[cluster]`](#cluster): simulator settings of every run",
        "workloads": "[`[[workloads]]`](#workloads): one table per workload (one or more)",
        "policies": "[`policies`](#policies): the policies, in report order",
        "metrics": "[`[metrics]`](#metrics): metrics and statistics settings",
        "report": "[`[report]`](#report): presentation settings",
    }
    out = ["## Top level", "", "| key | what |", "|---|---|"]
    out += [f"| `{k}` | {top.get(k, '')} |" for k in spec.TOP]
    out += ["", "## Example", "", "From the schema in `evaluation/spec.py`:", ""]
    out += [_schema_example(), ""]
    out += ["## `[experiment]` {#experiment}", "", table(spec.ExperimentSpec, spec.EXPERIMENT_KEYS)]
    out += ["", "## `policies` {#policies}", ""]
    out += [
        "A list whose items are policy spec strings (as for `schedlab simulate --policy`, e.g. "
        '`"tetris:knob=0.3"`) or tables with these keys:',
        "",
        table(spec.PolicySpec, spec.POLICY_KEYS, where="policies"),
        "",
        "## `[cluster]` {#cluster}",
        "",
        "The fields of the config class of the model kind the policies act on (the first kind "
        'every policy is tagged for, `model_of`). TOML has no null: `"all"` stands for an '
        'unset value where a field takes one (`slots = "all"`: the whole queue is visible).',
    ]
    for kind in models.names():
        config = models.load_config(kind)
        out += ["", f"### `{kind}` model: `{config.__name__}` {{#cluster-{kind}}}", ""]
        out += [_markdown(models.entry(kind).summary), "", table(config, null='`"all"`')]
    out += ["", "## `[[workloads]]` {#workloads}", ""]
    out += [
        "One table per workload: a generator at some loads (or rates), or a trace read by a "
        'loader (`"jobset"`: a JobSet Parquet file). Give exactly one of `generator` and '
        "`loader`; a generator takes exactly one of `loads` and `rates`. Paths are relative to "
        "the spec file.",
        "",
        table(spec.WorkloadSpec, spec.WORKLOAD_KEYS, where="workloads"),
        "",
        "### `options` of a trace workload {#workload-options}",
        "",
        f"The fields of `{TraceOptions.__name__}` (the options of `schedlab load`):",
        "",
        table(TraceOptions),
        "",
        "### `cluster` of a workload {#workload-cluster}",
        "",
        "Any fields of [`[cluster]`](#cluster); they replace the spec's for this workload's runs.",
        "",
    ]
    out += _registry_params(generators, "### `params` of a generator workload {#generator-params}")
    out += _registry_params(loaders, "### `params` of a trace workload {#loader-params}")
    keys = [k for k in STATS_FIELDS if k != "seed"]
    out += ["## `[metrics]` {#metrics}", ""]
    out += ["The bootstrap's seed is the experiment's `seed`.", "", table(StatsSettings, keys)]
    out += ["", "## `[report]` {#report}", "", table(spec.ReportSpec), ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, *, page: Any, **kwargs: Any) -> str:
    """Replace the marker of ``spec.md`` by the generated reference."""
    return fill(markdown, page, "spec.md", MARKER, render)
