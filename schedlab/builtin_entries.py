"""The built-in entries of every registry (generators, policies, loaders, trainers, model
kinds), in registration order (the report order of the heuristics): a new built-in is its module
plus one row here."""

from __future__ import annotations

from schedlab.registry_machinery import GROUPS, Registry

generators = Registry("generator", group=GROUPS["generators"], requires=("generate_sweep",))
policies = Registry(
    "policy", group=GROUPS["policies"],
    requires=("name", "models", "view", "reset", "act_batch", "get_params"),
)  # fmt: skip
loaders = Registry("loader", group=GROUPS["loaders"], reserved=("options",))
trainers = Registry("trainer", group=GROUPS["trainers"])

for _name, _target, _summary in [
    ("deeprm", "deeprm_workload:DeepRMGenerator",
     "DeepRM (Mao et al. 2016): Bernoulli/binomial arrivals, bimodal durations, dominant demands"),
    ("poisson", "poisson:PoissonGenerator",
     "DeepRM_Plus: Poisson(λ) arrivals per step, DeepRM's job model (load = 1.845·λ)"),
    ("liu-uniform", "liu:LiuUniformGenerator",
     "Liu et al.: intervals uniform on a..b steps (1..33), scaled to the load; DeepRM jobs"),
    ("liu-bernoulli", "liu:LiuBernoulliGenerator",
     "Liu et al.: intervals b with probability p else a (33/1, p=0.5), scaled; DeepRM jobs"),
    ("liu-beta", "liu:LiuBetaGenerator",
     "Liu et al.: intervals a + (b−a)·Beta(alpha, beta) (2, 2), scaled; DeepRM jobs"),
    ("dag", "dag_jobs:DagGenerator",
     "DAG jobs (chain, fork-join, or shapes fitted by `schedlab fit`) of DeepRM tasks, Poisson"),
    ("lublin", "lublin:LublinGenerator",
     "Lublin & Feitelson 2003: rigid HPC jobs on P processors, daily arrival cycle, seconds"),
]:  # fmt: skip
    generators.register(
        _name, f"schedlab.loaders.generators.{_target}", _summary, tags=("synthetic",)
    )
generators.register(
    "liu-multicluster",
    "schedlab.loaders.generators.liu_multicluster:LiuMultiClusterGenerator",
    "Liu et al. (ICPP'20): streaming/time-critical/general jobs for 5 heterogeneous clusters",
    tags=("synthetic", "model:multicluster"),
)
generators.register(
    "fitted",
    "schedlab.loaders.generators.fitted:FittedGenerator",
    "a workload model fitted to a trace by `schedlab fit` (--model fit/model.json)",
    tags=("fitted",),
)
for _name, _cls, _summary, _tags in [
    ("random", "RandomPolicy", "uniformly random job among those that fit now", ()),
    ("fcfs", "FCFS", "first come, first served among jobs that fit now", ()),
    ("sjf", "SJF", "shortest job first (score 1/duration)", ("baseline",)),
    ("packer", "Packer", "alignment of demand with free resources (Tetris packing score)",
     ("baseline",)),
    ("tetris", "TetrisStar", "Tetris*: knob-weighted packing + shortest-job score", ("baseline",)),
    ("hrrn", "HRRN", "highest response ratio next ((wait + duration) / duration)", ()),
    ("wfp3", "WFP3", "HPC: (wait / estimate)^3 * processors (Tang et al. 2009)", ("hpc",)),
    ("unicep", "UNICEP", "HPC: wait / (log2(processors) * estimate) (Tang et al. 2009)", ("hpc",)),
    ("f1", "F1", "HPC: lowest log10(estimate) * processors + 870 log10(submit) first "
     "(Carastan-Santos & de Camargo 2017)", ("hpc",)),
    ("cpf", "CPF", "DAG: critical path first (longest remaining path to the job's end)", ("dag",)),
    ("srjf", "SRJF", "DAG: shortest remaining job first, by remaining critical path", ("dag",)),
]:  # fmt: skip
    policies.register(
        _name, f"schedlab.policies.heuristics:{_cls}", _summary,
        tags=("heuristic", "model:cluster", *_tags),
    )  # fmt: skip
for _name, _cls, _summary in [
    ("liu-ran", "RAN", "Liu et al.: a random cluster for the job of least executor request"),
    ("liu-rr", "RR", "Liu et al.: round-robin clusters for the job of least executor request"),
    ("liu-maf", "MAF", "Liu et al.: most available capacity (1 − RO)·CAP/ER over a past window"),
]:
    policies.register(
        _name, f"schedlab.policies.liu_baselines:{_cls}", _summary,
        tags=("model:multicluster", "baseline:multicluster"),
    )  # fmt: skip
for _name, _target, _model, _summary in [
    ("deeprm", "deeprm:DeepRMPolicy", "cluster",
     "DeepRM policy network trained by `schedlab train` (deeprm:PATH.pt or a shipped name)"),
    ("deeprm-plus", "deeprm:DeepRMPlusPolicy", "cluster",
     "DeepRM_Plus CNN (Guo et al. 2021) trained by `schedlab train deeprm-plus` "
     "(deeprm-plus:PATH.pt)"),
    ("liu-rl", "liu_networks:LiuValuePolicy", "multicluster",
     "Liu et al.'s value model (RL-LSFC/RL-FC) trained by `schedlab train liu` "
     "(liu-rl:PATH.pt or a shipped name: liu-lsfc, liu-lsfcb, liu-fc)"),
    ("jobscore", "jobscore:JobScorePolicy", "cluster",
     "a learned priority function over the waiting jobs (per-job scores, RLScheduler-style) "
     "trained by `schedlab train jobscore` (jobscore:PATH.pt or a shipped name; +easy, +strict)"),
    ("sb3", "external:SB3Policy", "cluster",
     "an agent saved by Stable-Baselines3/sb3-contrib after training on a schedlab env "
     "(sb3:PATH.zip; needs the rl extra)"),
    ("sb3-pick", "pick_sb3:SB3PickPolicy", "cluster",
     "a Stable-Baselines3/sb3-contrib agent trained on schedlab/Pick-v0, picking from the queue "
     "(sb3-pick:PATH.zip, +easy, +strict; needs the rl extra)"),
]:  # fmt: skip
    policies.register(
        _name, f"schedlab.policies.{_target}", _summary, positional="checkpoint",
        tags=("learned", f"model:{_model}"), extra="rl" if _name.startswith("sb3") else "learned",
    )  # fmt: skip
policies.register(
    "callable", "schedlab.policies.image_agent:CallablePolicy",
    "any function (obs, mask) -> action of a schedlab env's observation "
    "(callable:package.module:function)",
    positional="fn", tags=("learned", "model:cluster"),
)  # fmt: skip
for _name, _target, _summary in [
    ("alibaba2018", "alibaba2018:read_alibaba2018", "Alibaba cluster-trace-v2018 batch_task"),
    ("alibaba2017", "alibaba2017:read_alibaba2017", "Alibaba cluster-trace-v2017 batch_task"),
    ("swf", "swf:read_swf", "Standard Workload Format (Parallel Workloads Archive)"),
]:
    loaders.register(_name, f"schedlab.loaders.traces.{_target}", _summary, tags=("trace",))
for _name, _module, _report, _tags, _summary in [
    (
        "deeprm",
        "reinforce",
        "learning",
        ("model:cluster", "policy:deeprm"),
        "DeepRM (Mao et al. 2016): REINFORCE with a per-step baseline; writes a `deeprm:` "
        "checkpoint",
    ),
    (
        "deeprm-plus",
        "deeprm_plus",
        "learning",
        ("model:cluster", "policy:deeprm-plus"),
        "DeepRM_Plus (Guo et al. 2021): CNN cloned from an expert (SJF), then REINFORCE; "
        "`deeprm-plus:`",
    ),
    (
        "jobscore",
        "jobscore_ppo",
        "jobscore",
        ("model:cluster", "policy:jobscore"),
        "A per-job scoring network (RLScheduler's setting: picks from the whole queue of a log's "
        "windows, under greedy/strict/EASY) trained by PPO; writes a `jobscore:` checkpoint",
    ),
    (
        "liu",
        "liu_value",
        "liu",
        ("model:multicluster", "policy:liu-rl"),
        "Liu et al. (ICPP'20): RL-LSFC/RL-FC value learning with MAF-guided ε-greedy; writes a "
        "`liu-rl:` checkpoint",
    ),
]:
    trainers.register(
        _name, f"schedlab.policies.{_module}:TRAINER", _summary,
        report=f"schedlab.reports.{_report}:report_training", tags=_tags, extra="learned",
    )  # fmt: skip

models = Registry("model kind", group=GROUPS["models"])
"""Simulator model kinds: each target is a :class:`~schedlab.simulator.model.ModelKind` (its
config class, constructor, results, schedule and policy checks); ``config`` names the config
class so that it loads without the simulator (spec validation). Policies and generators for a
kind carry the tag ``model:<name>``; the first registered kind is the default."""
for _name, _target, _config, _summary in [
    ("cluster", "run:CLUSTER", "config:ClusterConfig",
     "m identical machines, d resources, a queue of M visible slots (DeepRM, Chen et al., "
     "DeepRM_Plus)"),
    ("multicluster", "multicluster.run:MULTICLUSTER", "multicluster.config:MultiClusterConfig",
     "Liu et al. (ICPP'20): heterogeneous, elastic clusters with deadlines"),
]:  # fmt: skip
    models.register(
        _name, f"schedlab.simulator.{_target}", _summary,
        config=f"schedlab.simulator.{_config}", tags=(f"model:{_name}",),
    )  # fmt: skip
