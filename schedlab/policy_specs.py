"""Policy specs: ``"name:key=value"``, ``order+discipline+placement`` and references
``package.module:attr``, parsed (:func:`parse_spec`, :func:`parse_policy`) and made
(:func:`make_policy`)."""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn, get_args

from schedlab.builtin_entries import policies
from schedlab.errors import ParameterError
from schedlab.param_checks import did_you_mean
from schedlab.registry_machinery import Registry


def parse_spec(
    spec: str, *, positional: str | None = None, registry: Registry | None = None
) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and keyword arguments.

    Values are read as JSON where they parse (numbers, booleans), else kept as strings, e.g.
    ``"tetris:knob=0.3"`` -> ``("tetris", {"knob": 0.3})``. When ``positional`` names a keyword,
    a first option without ``=`` is its value: ``"deeprm:runs/a/best.pt"`` with
    ``positional="checkpoint"`` -> ``("deeprm", {"checkpoint": "runs/a/best.pt"})``. A
    reference keeps its attribute: ``"my_pkg.sched:Lwf:alpha=2"`` -> ``("my_pkg.sched:Lwf",
    {"alpha": 2})`` (:func:`split_name`, which ``registry`` helps).

    Raises
    ------
    ParameterError
        An option that is not ``key=value``, or a key given twice.
    """
    name, rest = split_name(spec, registry)
    kwargs: dict[str, Any] = {}
    for i, item in enumerate(filter(None, rest.split(","))):
        key, eq, raw = item.partition("=")
        if not eq and i == 0 and positional is not None:
            key, value = positional, item.strip()
        elif not eq or not key.strip():
            msg = f"bad option {item!r} in {spec!r}: expected key=value"
            raise ParameterError(msg)
        else:
            key = key.strip()
            try:
                value = json.loads(raw)
            except (json.JSONDecodeError, RecursionError):
                value = raw
        if key in kwargs:
            msg = f"{spec!r}: option {key!r} is given twice"
            raise ParameterError(msg)
        kwargs[key] = value
    return name.strip(), kwargs


def split_name(spec: str, registry: Registry | None = None) -> tuple[str, str]:
    """``(name, options)`` of a spec: the name ends at the first ``:``, except in a reference
    ``package.module:attr`` (a dotted module path; with ``registry``, also ``module:attr`` when
    ``module`` is not one of its names), where it ends at the second. ``"sjf+easy:x=1"`` ->
    ``("sjf+easy", "x=1")``; ``"my_pkg.sched:Lwf+easy:x=1"`` -> ``("my_pkg.sched:Lwf+easy",
    "x=1")``."""
    head, colon, rest = spec.partition(":")
    attr, _, options = rest.partition(":")
    named = head.strip().partition("+")[0]
    dotted = "." in head or (registry is not None and named not in registry)
    if colon and dotted and _ATTRIBUTE.fullmatch(attr.strip()):
        return f"{head.strip()}:{attr.strip()}", options
    return head.strip(), rest


_ATTRIBUTE = re.compile(r"[A-Za-z_][\w.]*(\+[\w-]+)*")
"""The ``attr`` of a reference ``module:attr``, with ``+word`` suffixes (``Lwf+easy``)."""


def policy_name(spec: str) -> str:
    """The name a policy spec starts with: ``"tetris+align:knob=0.3"`` -> ``tetris``,
    ``"my_pkg.sched:Lwf+easy"`` -> ``my_pkg.sched:Lwf``."""
    return split_name(spec, policies)[0].partition("+")[0].strip()


KEYS = ("queue", "placement")
"""The parameters a ``+word`` of a policy spec sets."""


def _unknown_word(
    spec: str, word: str, queues: tuple[str, ...], rules: tuple[str, ...]
) -> NoReturn:
    """Raise: ``word`` after a ``+`` names neither a queue discipline nor a placement rule of
    the policy (the closest one suggested)."""
    hint = did_you_mean(word, [*queues, *rules])
    lists = [
        f"{what}: {', '.join(words)}"
        for what, words in (("queue disciplines", queues), ("placement rules", rules))
        if words
    ]
    msg = (
        f"{spec!r}: {word!r} is neither a queue discipline nor a placement rule of this policy"
        f"{hint} ({'; '.join(lists) or 'it takes neither'})"
    )
    raise ParameterError(msg)


def parse_policy(spec: str) -> tuple[str, dict[str, Any]]:
    """``(name, parameters)`` of a policy spec, its positional option filled (see
    :func:`parse_spec`); the name must be registered. ``order+word+word`` names a heuristic with
    a queue discipline and/or a placement rule, in any order: ``sjf+bestfit`` is
    ``sjf:placement=bestfit``, ``fcfs+easy`` is ``fcfs:queue=easy``, ``sjf+easy+bestfit`` both
    (a word is a queue discipline if the policy's ``queue`` parameter lists it, else a rule).

    Raises
    ------
    ParameterError
        A discipline or rule given twice (``+`` and ``queue=``/``placement=`` included), or
        a ``+word`` that is neither (the closest one suggested).
    """
    head, rest = split_name(spec, policies)
    name, *words = (w.strip() for w in head.split("+"))
    words = [w.lower() for w in words]
    positional = policies.entry(name).positional
    base, kwargs = parse_spec(
        f"{name}:{rest}" if rest else name, positional=positional, registry=policies
    )
    declared = policies.parameters(name) if words else {}
    queues, rules = (get_args(p.hint) if (p := declared.get(k)) else () for k in KEYS)
    extra = dict[str, str]()
    for word in words:
        key = "queue" if word in queues else "placement"
        if word not in (*queues, *rules) and (rules or "placement" not in declared):
            _unknown_word(spec, word, queues, rules)
        if (first := extra.get(key, kwargs.get(key))) is not None:
            kind = "queue discipline" if key == "queue" else "placement rule"
            same, two = f"{kind} {word!r} is repeated", f"two {kind}s, {first!r} and {word!r}"
            raise ParameterError(f"{spec!r}: {same if first == word else two}; name one")
        extra[key] = word
    return base, {**extra, **kwargs}


def make_policy(spec: str, *, where: str | None = None) -> Any:
    """A policy from a spec such as ``"sjf"`` or ``"tetris:knob=0.3"``, parameters checked.

    A policy made with parameters is named by its spec, so variants stay apart in results;
    ``label=NAME`` names it explicitly (``deeprm:runs/a/best.pt,label=deeprm-0.7``). ``where``
    says where the spec was given, for messages (default: the spec itself).
    """
    name, kwargs = parse_policy(spec)
    label = kwargs.pop("label", None)
    policy = policies.create(name, kwargs, where=spec if where is None else where)
    if label is not None:
        policy.name = str(label)
    elif not set(kwargs) <= {"placement", "queue"} or policies.entry(name).origin != "schedlab":
        # (a built-in's placement and discipline name themselves: sjf+easy+bestfit; a plug-in
        # or reference is named as typed, never by its class's key, which may be anything)
        policy.name = spec
    return policy


def policy_key(policy: Any) -> str:
    """What makes two policies the same: class and every parameter (equal keys, equal
    schedules), e.g. ``tetris`` and ``tetris:knob=0.5``."""
    params = json.dumps(policy.get_params(), sort_keys=True, default=str)
    return f"{type(policy).__module__}.{type(policy).__qualname__}:{params}"
