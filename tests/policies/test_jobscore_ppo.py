"""PPO for the per-job scoring network (issue 37): advantages, reward scaling, sampling among
the candidates, the time split of a trace, the heuristics' values, and training on a
generator's jobsets (the trainer contract itself is checked over the registry in
tests/evaluation/test_train_check.py)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import polars as pl
import pytest
import torch

from schedlab.errors import SchedlabError
from schedlab.loaders.traces.load import load_trace
from schedlab.loaders.traces.options import TraceOptions
from schedlab.policies.jobscore_config import (
    JobScoreConfig,
    WindowBaseline,
    heuristic_values,
    make_data,
    window_metric,
)
from schedlab.policies.jobscore_ppo import RewardScale, gae, sample, train
from schedlab.registry import make_policy
from schedlab.simulator.config import ClusterConfig
from schedlab.simulator.pick.engine import PickConfig, PickEngine
from schedlab.simulator.run import run_policy, simulate
from schedlab.traces import DAY, bundled
from tests.simulator.pick_helpers import kth_windows, order_picks, run_picks


def test_gae_cuts_at_episode_ends() -> None:
    rewards = np.array([[1.0], [2.0], [3.0]])
    values = np.array([[0.5], [0.5], [0.5], [10.0]])
    dones = np.array([[False], [True], [False]])
    adv = gae(rewards, values, dones, gamma=1.0, lam=1.0)
    # episode 1: decisions 0, 1 (returns 3 and 2); episode 2 bootstraps from the last value
    np.testing.assert_allclose(adv[:, 0], [3 - 0.5, 2 - 0.5, 3 + 10 - 0.5])
    half = gae(rewards, values, dones, gamma=1.0, lam=0.5)
    assert half[0, 0] == pytest.approx((1 + 0.5 - 0.5) + 0.5 * (2 - 0.5))


def test_reward_scale_tracks_the_discounted_return() -> None:
    scale = RewardScale(4, gamma=1.0)
    rng = np.random.default_rng(0)
    for t in range(200):
        out = scale(rng.normal(-5.0, 1.0, 4), np.full(4, t % 20 == 19))
    assert np.abs(out).max() < 1.0  # returns of 20 steps of about -5 scaled to O(0.1)
    again = RewardScale(4, gamma=1.0, state=scale.state())
    assert again.state() == scale.state()


def test_sampling_picks_only_candidates_in_softmax_proportion() -> None:
    logits = torch.tensor([[0.0, np.log(3.0), -np.inf], [-np.inf, 0.0, -np.inf]])
    picks = np.stack([sample(logits, np.random.default_rng(k)) for k in range(4000)])
    assert set(picks[:, 1]) == {1}
    assert set(picks[:, 0]) == {0, 1}
    assert (picks[:, 0] == 1).mean() == pytest.approx(0.75, abs=0.03)


def test_a_trace_is_split_in_time() -> None:
    config = JobScoreConfig(train_end=100 * DAY, val_end=120 * DAY, val_windows=3, val_size=50)
    train_js, val_js, where = make_data(config)
    assert train_js.jobs.get_column("arrival_s").max() < 100 * DAY
    assert len(val_js.jobset_ids) == 3
    whole, _ = load_trace("swf", bundled("kth-sp2"), options=TraceOptions(time_step=1))
    ids = val_js.jobs.get_column("source_id")
    seen = whole.jobs.jobs.filter(pl.col("source_id").is_in(ids.implode()))
    assert seen.get_column("arrival_s").min() >= 100 * DAY
    assert seen.get_column("arrival_s").max() < 120 * DAY
    assert where["validation"] == [100 * DAY, 120 * DAY]


def test_heuristic_values_measure_the_engine_windows() -> None:
    js = kth_windows(size=120, windows=2, seed=4)
    values = heuristic_values(js, ["easy"])
    engine = PickEngine.for_jobsets(js, PickConfig(visible=200, queue="easy"))
    run_picks(engine, order_picks(engine, make_policy("sjf+easy")))
    assert values["easy"]["sjf"] == pytest.approx(engine.window_means()["bounded_slowdown"].mean())
    start = run_policy(js, make_policy("fcfs"), ClusterConfig(slots=None)).start
    waits = window_metric(js, start, "wait")
    assert waits.shape == (2,)
    assert (waits >= 0).all()


def test_window_baseline_is_the_heuristic_on_the_window() -> None:
    js = kth_windows(size=120, windows=1, seed=5)
    base = WindowBaseline(js, "sjf", "bounded_slowdown")
    lo, hi = np.array([10, 10]), np.array([70, 70])
    got = base(lo, hi, ["greedy", "easy"])
    engine = PickEngine(js, PickConfig(visible=200, queue="easy"), 1)
    engine.assign(np.array([0]), lo[:1], hi[:1])
    run_picks(engine, order_picks(engine, make_policy("sjf+easy")))
    assert got[1] == pytest.approx(engine.window_means()["bounded_slowdown"][0])
    assert got[0] >= 1.0
    assert base(lo[:1], hi[:1], ["greedy"])[0] == got[0]  # cached
    with pytest.raises(ValueError, match="relative_to must be one of"):
        WindowBaseline(js, "random", "bounded_slowdown")
    with pytest.raises(ValueError, match="needs objective 'bounded_slowdown'"):
        WindowBaseline(js, "sjf", "wait")


def test_trains_on_a_generators_jobsets(tmp_path) -> None:
    config = JobScoreConfig(
        workload="deeprm", load=1.1, jobsets=4, val_windows=2, iterations=2,
        envs=2, steps=8, visible=8, eval_every=1, checkpoint_every=1, epochs=1, minibatches=2,
        queues="strict",
    )  # fmt: skip
    result = train(config, tmp_path, progress=False)
    assert result.curve.height == 2
    assert set(result.baselines) >= {"sjf", "fcfs", "initial"}
    policy = make_policy(f"jobscore+strict:{tmp_path},label=agent")
    js = make_data(config)[1]
    assert simulate(js, [policy], ClusterConfig(slots=None)).table.height == len(js)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where no GPU is")
def test_a_device_torch_cannot_use_is_one_line_before_the_run_starts(tmp_path) -> None:
    with pytest.raises(SchedlabError, match="sees no CUDA GPU"):
        train(JobScoreConfig(device="cuda"), tmp_path / "run", progress=False)
    with pytest.raises(SchedlabError, match="device 'gpu'"):
        train(JobScoreConfig(device="gpu"), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"iterations": 0}, "parameter 'iterations' of the JobScoreConfig must be >= 1, got 0"),
        ({"envs": 0}, "parameter 'envs' of the JobScoreConfig must be >= 1"),
        ({"gamma": 1.5}, "parameter 'gamma' of the JobScoreConfig must be >= 0 and <= 1"),
        ({"workload": "kth-sp3"}, "workload 'kth-sp3' is no file.* did you mean 'kth-sp2'"),
    ],
)
def test_a_config_out_of_bounds_is_one_line_before_the_run_starts(tmp_path, change, said) -> None:
    """The bounds the config declares (its fields' types) hold in Python too, not only on the
    command line: checked by the trainer contract's open_run, before any work or folder."""
    with pytest.raises(SchedlabError, match=said):
        train(JobScoreConfig(**change), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_training_run_says_how_to_continue(tmp_path, sig) -> None:
    """Ctrl-C or SIGTERM: one line naming the signal and --resume, the signal's exit status,
    and a checkpoint to continue from."""
    out = tmp_path / "run"
    args = ["train", "jobscore", "--iterations", "500", "--envs", "2", "--steps", "32"]
    args += ["--val-windows", "2", "--val-size", "50", "--epochs", "1", "--checkpoint-every", "1"]
    code = "from schedlab.cli import main; main(prog_name='schedlab')"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args, "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not (out / "last.pt").is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + sig
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"Error: interrupted by {signal.Signals(sig).name}: {out} keeps"), err
    assert last.endswith("continue it with the same command and --resume")
