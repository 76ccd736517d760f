"""Model kinds (:data:`schedlab.registry.models`): the two shipped kinds are complete, dispatch
goes through the registry, and a new kind is its own code plus one registration: a one-machine,
single-resource toy defined here is simulated with a policy through ``simulate``, its schedule
checked, its policy check run and its config used by an experiment spec's ``[cluster]``."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
import pytest

from schedlab import registry
from schedlab.errors import SpecError
from schedlab.evaluation.spec import parse_spec_dict
from schedlab.jobset import JobSet
from schedlab.loaders.generators.deeprm_workload import DeepRMGenerator
from schedlab.policies.check import check_actions, check_policy, check_reproducible
from schedlab.policies.heuristics import SJF
from schedlab.policies.liu_baselines import MAF
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.check import InvalidScheduleError, check_results
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.model import Model, ModelKind, Placements, model_kind, rollout
from schedlab.simulator.multicluster.config import MultiClusterConfig
from schedlab.simulator.run import simulate
from tests.policy_helpers import StatelessPolicy

# -- the toy kind: one machine, one resource, the first `slots` waiting jobs visible ----------


@dataclass(frozen=True, kw_only=True, slots=True)
class ToyConfig:
    """The toy's one setting."""

    slots: int = 2
    """Waiting jobs a policy may pick from (in arrival order)."""

    def __post_init__(self) -> None:
        if self.slots < 1:
            msg = f"ToyConfig.slots must be >= 1, got {self.slots}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class ToySnapshot:
    """What the toy's view shows: the visible jobs' durations (-1: empty slot)."""

    envs: np.ndarray
    duration: np.ndarray
    """int64, shape ``(n, slots)``."""


class ToyView:
    name: ClassVar[str] = "toy"

    def observe(self, snapshot: ToySnapshot) -> ToySnapshot:
        return snapshot


class ToyModel:
    """``a = 0`` waits for the next event, ``a = 1 + q`` starts visible job ``q`` now."""

    kind: ClassVar[str] = "toy"

    def __init__(self, jobset: JobSet, config: ToyConfig) -> None:
        jobs = jobset.jobs
        assert len(jobset.resources) == 1, "the toy has one resource"
        self.arrival = jobs.get_column("arrival").to_numpy()
        self.duration = jobs.get_column("duration").to_numpy()
        self.demand = jobset.demands()[:, 0]
        self.capacity = float(jobset.machine_capacity[0])
        ids = jobs.get_column("jobset").to_numpy()
        self.bounds = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True])
        self.config = config
        self.reset()

    @classmethod
    def from_jobset(cls, jobset: JobSet, config: ToyConfig) -> ToyModel:
        return cls(jobset, config)

    @property
    def n_envs(self) -> int:
        return self.bounds.size - 1

    @property
    def n_actions(self) -> int:
        return 1 + self.config.slots

    @property
    def done(self) -> np.ndarray:
        return np.array([(self.start[lo:hi] >= 0).all() for lo, hi in self._ranges()])

    def _ranges(self) -> list[tuple[int, int]]:
        return list(zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist(), strict=True))

    def _envs(self, envs: np.ndarray | None) -> np.ndarray:
        return np.arange(self.n_envs) if envs is None else np.asarray(envs)

    def reset(self, envs: np.ndarray | None = None) -> np.ndarray:
        if envs is None:
            self.start = np.full(self.arrival.size, -1, np.int64)
            self.now = np.zeros(self.n_envs, np.int64)
        for b in self._envs(envs):
            lo, hi = self._ranges()[b]
            self.start[lo:hi], self.now[b] = -1, 0
        return np.zeros(self._envs(envs).size)

    def _visible(self, b: int) -> np.ndarray:
        lo, hi = self._ranges()[b]
        rows = np.arange(lo, hi)
        waiting = rows[(self.start[lo:hi] < 0) & (self.arrival[lo:hi] <= self.now[b])]
        return waiting[: self.config.slots]

    def _free(self, b: int) -> float:
        lo, hi = self._ranges()[b]
        s, t = self.start[lo:hi], self.now[b]
        running = (s >= 0) & (s <= t) & (t < s + self.duration[lo:hi])
        return self.capacity - float(self.demand[lo:hi][running].sum())

    def action_mask(self, envs: np.ndarray | None = None) -> np.ndarray:
        envs = self._envs(envs)
        mask = np.zeros((envs.size, self.n_actions), bool)
        mask[:, 0] = True
        for x, b in enumerate(envs):
            visible = self._visible(int(b))
            mask[x, 1 : 1 + visible.size] = self.demand[visible] <= self._free(int(b)) + 1e-9
        return mask

    def step(self, actions: np.ndarray, envs: np.ndarray | None = None) -> np.ndarray:
        envs = self._envs(envs)
        for a, b in zip(np.asarray(actions).tolist(), envs.tolist(), strict=True):
            if a > 0 and self.action_mask(np.array([b]))[0, a]:
                self.start[self._visible(b)[a - 1]] = self.now[b]
                continue
            lo, hi = self._ranges()[b]
            s, t = self.start[lo:hi], self.now[b]
            events = np.r_[self.arrival[lo:hi][s < 0], (s + self.duration[lo:hi])[s >= 0]]
            later = events[events > t]
            self.now[b] = later.min() if later.size else t + 1
        return np.zeros(envs.size)

    def observe(self, view: Any, envs: np.ndarray | None = None) -> Any:
        envs = self._envs(envs)
        duration = np.full((envs.size, self.config.slots), -1, np.int64)
        for x, b in enumerate(envs):
            visible = self._visible(int(b))
            duration[x, : visible.size] = self.duration[visible]
        return view.observe(ToySnapshot(envs, duration))

    def placements(self) -> Placements:
        return Placements(
            start=self.start, finish=self.start + self.duration, target=np.zeros_like(self.start)
        )


class ToySJF(StatelessPolicy):
    """Shortest visible job that fits, else wait."""

    name = "toy-sjf"
    models = frozenset({"toy"})
    view = ToyView()

    def act_batch(self, obs: ToySnapshot, *, mask: np.ndarray) -> np.ndarray:
        duration = np.where(mask[:, 1:], obs.duration, np.iinfo(np.int64).max)
        return np.where(mask[:, 1:].any(axis=1), 1 + duration.argmin(axis=1), 0).astype(np.int64)


def simulate_toy(jobset: JobSet, policies: list[Any], config: ToyConfig) -> Results:
    model, tables = ToyModel.from_jobset(jobset, config), []
    for policy in policies:
        model.reset()
        policy.reset(seed=None)
        p = rollout(model, policy).placements()
        tables.append(
            jobset.jobs.with_columns(
                policy=pl.lit(policy.name), load=pl.lit(None, pl.Float64),
                seed=pl.lit(None, pl.Int64), start=p.start, finish=p.finish, machine=p.target,
            ).with_columns(
                completion=pl.col("finish") - pl.col("arrival"),
                wait=pl.col("start") - pl.col("arrival"),
                slowdown=(pl.col("finish") - pl.col("arrival")) / pl.col("duration"),
            ).select(RESULT_COLUMNS)
        )  # fmt: skip
    return Results(pl.concat(tables), {"config": dataclasses.asdict(config), "model": "toy"})


def check_toy_schedule(jobset: JobSet, model: ToyModel) -> None:
    from schedlab.simulator.check import check_schedule

    p = model.placements()
    check_schedule(jobset, p.start, p.target, machines=1, finish=p.finish)


def check_toy_policy(policy: Any, *, seed: int = 0) -> None:
    jobset = _jobsets(seed)
    check_actions(copy.deepcopy(policy), ToyModel.from_jobset(jobset, ToyConfig()))

    def run(p: Any) -> tuple[np.ndarray, ...]:
        model = ToyModel.from_jobset(jobset, ToyConfig())
        rollout(model, p)
        check_toy_schedule(jobset, model)
        return model.placements().start, model.placements().target

    check_reproducible(policy, run)


TOY = ModelKind(
    name="toy",
    config=ToyConfig,
    from_jobset=ToyModel.from_jobset,
    simulate=simulate_toy,
    check_schedule=check_toy_schedule,
    check_policy=f"{__name__}:check_toy_policy",
)


def _jobsets(seed: int = 0) -> JobSet:
    return DeepRMGenerator(n_resources=1).generate(0.9, n_jobsets=3, seed=seed)


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> ModelKind:
    """The toy kind registered (its one registration) with its policy; undone after."""
    for reg in (registry.models, registry.policies):
        monkeypatch.setattr(reg, "_entries", dict(reg._entries))
    registry.models.register(
        "toy", f"{__name__}:TOY", "one machine, one resource", config=f"{__name__}:ToyConfig",
        tags=("model:toy",),
    )  # fmt: skip
    registry.policies.register("toy-sjf", f"{__name__}:ToySJF", tags=("model:toy",))
    return TOY


# -- tests -------------------------------------------------------------------------------------


def test_a_new_model_kind_is_its_own_code_plus_one_registration(toy: ModelKind) -> None:
    js = _jobsets()
    policy = registry.make_policy("toy-sjf")
    assert model_kind([policy]) is toy
    res = simulate(js, [policy], {"slots": 3})  # through the one entry point
    assert res.meta["config"] == {"slots": 3}
    assert res.table.height == len(js)
    check_results(js, res.table, machines=1)  # its schedule, from the results
    model = toy.from_jobset(js, ToyConfig(slots=3))
    assert isinstance(model, Model)
    toy.check_schedule(js, rollout(model, policy))  # its schedule, from the model
    np.testing.assert_array_equal(model.placements().start, res.table["start"].to_numpy())
    check_policy(policy)  # its policy check, found through the registry
    model.start[0] = model.start[1]  # two jobs on the one machine at once break it
    with pytest.raises(InvalidScheduleError):
        toy.check_schedule(js, model)


def test_a_spec_cluster_table_is_the_kind_config(toy: ModelKind, tmp_path: Path) -> None:
    def spec(cluster: dict[str, Any]) -> Any:
        data = {
            "experiment": {"name": "toy", "reference": "toy-sjf"},
            "policies": ["toy-sjf"],
            "cluster": cluster,
            "workloads": [
                {"name": "w", "generator": "deeprm", "params": {"n_resources": 1},
                 "loads": [0.5], "jobsets": 2},
            ],
        }  # fmt: skip
        return parse_spec_dict(data, base_dir=tmp_path, source="toy.toml")

    assert spec({"slots": 3}).cluster == ToyConfig(slots=3)
    with pytest.raises(SpecError, match=r"\[cluster\]\.horizon: unknown key"):
        spec({"horizon": 20})  # a cluster model's field, not the toy's
    with pytest.raises(SpecError, match=r"\[cluster\]\.slots: must be >= 1, got 0"):
        spec({"slots": 0})


@pytest.mark.parametrize(("name", "config"), [("cluster", ClusterConfig), ("multicluster",
                         MultiClusterConfig)])  # fmt: skip
def test_shipped_kinds_are_registered_whole(name: str, config: type) -> None:
    kind = registry.models.load(name)
    assert kind.name == name
    assert kind.config is config is registry.models.load_config(name)
    assert kind.tag == f"model:{name}"
    assert callable(kind.load_policy_check())
    assert set(registry.policies.names(tag=kind.tag))


def test_dispatch_is_by_the_kinds_policies_act_on() -> None:
    assert model_kind([SJF()]).name == "cluster"
    assert model_kind([MAF()]).name == "multicluster"
    assert model_kind([]).name == "cluster"  # the first registered kind
    with pytest.raises(ValueError, match="no common model kind"):
        model_kind([SJF(), MAF()])
    with pytest.raises(TypeError, match="takes a MultiClusterConfig, not a ClusterConfig"):
        model_kind([MAF()]).make_config(ClusterConfig())
    assert model_kind([MAF()]).make_config({"capacities": [5, 5], "hetero": [1, 1],
                                            "elastic": []}).capacities == (5, 5)  # fmt: skip


def test_a_multicluster_spec_takes_multicluster_settings(tmp_path: Path) -> None:
    import json

    from schedlab.evaluation.spec import ExperimentSpec

    data = {
        "experiment": {"name": "liu", "reference": "liu-maf"},
        "policies": ["liu-maf"],
        "cluster": {"capacities": [10, 20], "hetero": [50, 100], "elastic": [1], "slots": 4},
        "workloads": [
            {"name": "w", "generator": "liu-multicluster", "params": {"n_jobs": 20},
             "rates": [0.05], "jobsets": 2, "cluster": {"elastic_limit": 50}},
        ],
    }  # fmt: skip
    spec = parse_spec_dict(data, base_dir=tmp_path, source="liu.toml")
    assert spec.cluster == MultiClusterConfig(
        capacities=(10, 20), hetero=(50, 100), elastic=(1,), slots=4
    )
    assert spec.workloads[0].cluster == {"elastic_limit": 50}
    assert ExperimentSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    with pytest.raises(SpecError, match=r"\[cluster\]\.horizon: unknown key"):
        parse_spec_dict({**data, "cluster": {"horizon": 20}}, base_dir=tmp_path, source="liu")
    with pytest.raises(SpecError, match=r"\[cluster\]\.hetero: .*one heterogeneity factor"):
        parse_spec_dict({**data, "cluster": {"hetero": [1, 2, 3]}}, base_dir=tmp_path, source="x")
