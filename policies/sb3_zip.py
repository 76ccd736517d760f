"""Stable-Baselines3 model zips read without unpickling anything (issue 36).

``model.save("model.zip")`` writes a zip whose ``data`` member is JSON in which every value JSON
cannot hold (the policy class, the observation and action spaces, schedules, the last
observation...) is a base64 *pickle* under ``":serialized:"``, and whose ``*.pth`` members are
``torch.save`` files. Stable-Baselines3's own loader unpickles the former, so a stranger's zip
runs code when it is loaded. This module never decodes a ``":serialized:"`` value and reads only
what inference needs:

* ``data`` (JSON): the algorithm (:func:`read_algo`, from the policy class's plain
  ``__module__``), the spaces from their plain parts (the observation space's ``_shape`` and
  ``dtype``, the action space's ``n``; bounds are the schedlab environments' ``[0, 1]``),
  ``use_sde``, and ``policy_kwargs`` from its plain values (``activation_fn`` from a fixed list
  of ``torch.nn`` activations named in its text; the optimizer's settings are not needed);
* ``policy.pth``: the network's parameters, ``torch.load(..., weights_only=True)``, which
  refuses any pickled object but tensors.

The policy is rebuilt from the declared algorithm's policy class and these parameters. Any other
object a model would need (a custom feature extractor, a pickle in ``policy.pth``) is refused
with one line naming the member; members inference does not need (``_last_obs``, the optimizer's
``policy.optimizer.pth``, ``pytorch_variables.pth``, schedules) are never read. A zip whose
members expand to more than :data:`MAX_MODEL_BYTES` is refused before anything is read.

torch and Stable-Baselines3 are imported only when a model is built.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import re
import warnings
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

from schedlab.errors import MissingExtraError, SchedlabError
from schedlab.extras import why_missing
from schedlab.sizes import human

MAX_MODEL_BYTES = 256 * 2**20
"""Most bytes the members of a model zip may expand to (the example's MaskablePPO model:
2.4 MB; networks a hundred times larger still fit)."""
POLICY_CLASSES: dict[str, tuple[str, str]] = {
    "maskable_ppo": ("sb3_contrib.common.maskable.policies", "MaskableActorCriticPolicy"),
    "ppo": ("stable_baselines3.common.policies", "ActorCriticPolicy"),
    "a2c": ("stable_baselines3.common.policies", "ActorCriticPolicy"),
    "dqn": ("stable_baselines3.dqn.policies", "DQNPolicy"),
}
"""Algorithm -> (module, class) of the policy it saves for an ``MlpPolicy`` on a Box space."""
ACTIVATIONS = frozenset(
    {"ReLU", "Tanh", "ELU", "LeakyReLU", "Sigmoid", "GELU", "SiLU", "Softplus", "Mish", "Identity"}
)
"""``torch.nn`` activations ``policy_kwargs.activation_fn`` may name (by its text
``<class 'torch.nn.modules.activation.ReLU'>``)."""
NOT_FOR_INFERENCE = frozenset({"optimizer_class", "optimizer_kwargs"})
"""``policy_kwargs`` entries inference does not need (the optimizer is never stepped)."""
_CLASS_TEXT = re.compile(r"<class 'torch\.nn\.modules\.activation\.([A-Za-z]+)'>")


class ModelMismatchError(SchedlabError, ValueError):
    """A saved model does not fit the cluster, or cannot be read."""


class UnsafeModelError(ModelMismatchError):
    """A model file holds a pickled object that loading it would need: refused, since
    unpickling a stranger's file can run any code."""


def import_sb3(module: str = "stable_baselines3") -> ModuleType:
    """``stable_baselines3`` (or ``sb3_contrib``, or a module of either);
    :class:`MissingExtraError` if its package is missing."""
    try:
        importlib.import_module(module.partition(".")[0])
        return importlib.import_module(module)
    except ImportError as exc:
        why = why_missing("rl", "the sb3 policy") or f"the sb3 policy cannot import {module}"
        raise MissingExtraError(why) from exc


def _zip(path: Path, max_bytes: int) -> zipfile.ZipFile:
    """The open zip, its declared expansion checked against ``max_bytes``."""
    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        msg = f"{path}: not a Stable-Baselines3 model zip ({type(exc).__name__}: {exc})"
        raise ModelMismatchError(msg) from exc
    members = z.infolist()
    total = sum(m.file_size for m in members)
    if total > max_bytes:
        big = max(members, key=lambda m: m.file_size)
        z.close()
        msg = (
            f"{path}: its members expand to {human(total)} ({big.filename}: "
            f"{human(big.file_size)}), more than the {human(max_bytes)} a model file may hold; "
            "not loaded"
        )
        raise ModelMismatchError(msg)
    return z


def _member(z: zipfile.ZipFile, path: Path, name: str) -> bytes:
    try:
        return z.read(name)
    except KeyError as exc:
        msg = f"{path}: not a Stable-Baselines3 model zip (no member {name!r})"
        raise ModelMismatchError(msg) from exc
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:  # corrupt, CRC...
        msg = f"{path}: member {name} cannot be read ({type(exc).__name__}: {exc})"
        raise ModelMismatchError(msg) from exc


def read_data(path: str | os.PathLike[str], *, max_bytes: int = MAX_MODEL_BYTES) -> dict[str, Any]:
    """The zip's ``data`` member as JSON (no ``":serialized:"`` value is decoded).

    Raises
    ------
    ModelMismatchError
        Not a zip, members expanding past ``max_bytes``, no ``data`` or not a JSON object.
    """
    p = Path(path)
    with _zip(p, max_bytes) as z:
        raw = _member(z, p, "data")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        msg = f"{p}: member data is not JSON ({type(exc).__name__}: {str(exc)[:120]})"
        raise ModelMismatchError(msg) from exc
    if not isinstance(data, dict):
        msg = f"{p}: member data is not a JSON object (found {type(data).__name__})"
        raise ModelMismatchError(msg)
    return data


def read_algo(data: dict[str, Any], path: str | os.PathLike[str]) -> str:
    """The algorithm (a key of :data:`POLICY_CLASSES`) that saved ``data``, from its policy
    class's plain ``__module__``: MaskablePPO's policy is sb3-contrib's maskable one, DQN's is in
    ``stable_baselines3.dqn``, PPO's and A2C's is the same ``ActorCriticPolicy`` and only PPO
    saves ``clip_range``.

    Raises
    ------
    ModelMismatchError
        If the policy class is absent or from none of these.
    """
    entry = data.get("policy_class")
    module = entry.get("__module__") if isinstance(entry, dict) else None
    if not isinstance(module, str):
        msg = f"{path}: not a Stable-Baselines3 model zip (data has no policy_class.__module__)"
        raise ModelMismatchError(msg)
    if module.startswith("sb3_contrib.common.maskable"):
        return "maskable_ppo"
    if module.startswith("stable_baselines3.dqn"):
        return "dqn"
    if module == "stable_baselines3.common.policies":
        return "ppo" if "clip_range" in data else "a2c"
    msg = (
        f"{path}: cannot tell which algorithm saved this model (policy class from {module}); "
        f"give algo= one of {', '.join(POLICY_CLASSES)}"
    )
    raise ModelMismatchError(msg)


def _refuse(path: Path, member: str, what: str) -> UnsafeModelError:
    return UnsafeModelError(
        f"{path}: {member} is {what}; refused: schedlab never unpickles a model file (it could "
        "run code), and rebuilds only MLP policies of plain JSON settings"
    )


def _plain(value: Any) -> bool:
    """Whether ``value`` is JSON without text (numbers, booleans, null, lists, dicts of them)."""
    if isinstance(value, dict):
        return ":serialized:" not in value and all(_plain(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, bool | int | float)


def policy_kwargs(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """The policy's constructor settings from ``data["policy_kwargs"]``, plain parts only.

    Raises
    ------
    UnsafeModelError
        For a setting that only its pickle holds (a class other than a known activation).
    """
    raw = data.get("policy_kwargs") or {}
    if not isinstance(raw, dict):
        raise _refuse(path, "data member policy_kwargs", "not a JSON object")
    import torch

    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in (":type:", ":serialized:") or key in NOT_FOR_INFERENCE:
            continue
        where = f"data member policy_kwargs.{key}"
        if key == "activation_fn":
            m = _CLASS_TEXT.fullmatch(value) if isinstance(value, str) else None
            if m is None or m.group(1) not in ACTIVATIONS:
                raise _refuse(path, where, f"{str(value)[:80]!r}, not a torch.nn activation")
            out[key] = getattr(torch.nn, m.group(1))
        elif _plain(value):
            out[key] = value
        else:
            raise _refuse(path, where, f"a pickled object ({str(value)[:80]!r})")
    return out


def spaces(data: dict[str, Any], path: Path) -> tuple[Any, Any]:
    """``(observation_space, action_space)`` from their plain JSON parts: a ``Box`` in
    ``[0, 1]`` of the declared ``_shape`` and ``dtype`` (the schedlab environments'), and
    ``Discrete(n)``."""
    import gymnasium as gym
    import numpy as np

    obs, act = data.get("observation_space"), data.get("action_space")
    shape = obs.get("_shape") if isinstance(obs, dict) else None
    dtype = obs.get("dtype") if isinstance(obs, dict) else None
    if (
        not isinstance(shape, list)
        or not shape
        or not all(isinstance(s, int) and 0 < s < 2**31 for s in shape)
        or dtype not in ("float32", "float64", "uint8")
    ):
        what = "without a plain _shape and dtype (only its pickle describes it)"
        raise _refuse(path, "data member observation_space", what)
    n = act.get("n") if isinstance(act, dict) else None
    if not (isinstance(n, int | str) and str(n).isdigit() and 0 < int(n) < 2**31):
        what = "without a plain n (only its pickle describes it; schedlab's actions are Discrete)"
        raise _refuse(path, "data member action_space", what)
    box = gym.spaces.Box(0.0, 1.0, tuple(shape), dtype=np.dtype(dtype))
    return box, gym.spaces.Discrete(int(n))


def parameters(z: zipfile.ZipFile, path: Path) -> dict[str, Any]:
    """``policy.pth``: a state dict of tensors, read with ``weights_only=True``."""
    import pickle

    import torch

    raw = _member(z, path, "policy.pth")
    try:
        with warnings.catch_warnings():  # torch's note on the pickle protocol: not the user's
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError) as exc:
        raise _refuse(path, "member policy.pth", f"not tensors alone ({_why(exc)})") from exc
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise _refuse(path, "member policy.pth", "not a state dict of tensors")
    return state


def _why(exc: BaseException) -> str:
    """The informative line of torch's refusal (``Trying to load unsupported GLOBAL
    posix.system ...``), not its advice to load the file unsafely."""
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    boiler = ("Weights only load failed", "Please file an issue", "Check the documentation")
    told = [x for x in lines if not x.startswith(boiler)]
    return (told[0] if told else type(exc).__name__)[:160]


def load_policy(
    path: str | os.PathLike[str], algo: str = "auto", *, max_bytes: int = MAX_MODEL_BYTES
) -> tuple[Any, str]:
    """The saved policy network (Stable-Baselines3's policy object, on the CPU, in evaluation
    mode) and its algorithm, rebuilt without unpickling anything.

    Parameters
    ----------
    path
        The ``.zip`` written by ``model.save``.
    algo
        A key of :data:`POLICY_CLASSES`, or ``"auto"`` (:func:`read_algo`).
    max_bytes
        Most bytes the zip's members may expand to.

    Raises
    ------
    UnsafeModelError
        If the model needs a pickled object (named by its member).
    ModelMismatchError
        Not a model zip, too large, or parameters that do not fit the declared network.
    """
    p = Path(path)
    data = read_data(p, max_bytes=max_bytes)
    algo = read_algo(data, p) if algo == "auto" else algo
    module, cls = POLICY_CLASSES[algo]
    policy_cls = getattr(import_sb3(module), cls)
    kwargs = policy_kwargs(data, p)
    if algo in ("ppo", "a2c"):
        kwargs["use_sde"] = bool(data.get("use_sde", False))
    observation_space, action_space = spaces(data, p)
    with _zip(p, max_bytes) as z:
        state = parameters(z, p)
    try:
        policy = policy_cls(observation_space, action_space, _zero, **kwargs)
        policy.load_state_dict(state, strict=True)
    except (TypeError, ValueError, RuntimeError, KeyError) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        msg = (
            f"{p}: member policy.pth does not fit the {cls} its data declares "
            f"({type(exc).__name__}: {first})"
        )
        raise ModelMismatchError(msg) from exc
    policy.set_training_mode(False)
    return policy, algo


def _zero(_: float) -> float:
    return 0.0
