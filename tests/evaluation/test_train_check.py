"""Every registered trainer keeps the trainer contract: alone, resumed, as a resumed 2-seed
sweep (here and on Ray), and from the command line with --seeds, --grid and --resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import ModuleType

import pytest

from schedlab.cli.config_options import option_name
from schedlab.entries import Entry
from schedlab.evaluation.train_check import TrainerCheckError, check_trainer
from schedlab.params import flat
from schedlab.policies import training
from schedlab.registry import trainers
from tests.cli_helpers import run_ok

NAMES = trainers.names()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_trainer_keeps_the_contract(name: str, tmp_path: Path) -> None:
    check_trainer(name, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_trainer_sweeps_on_ray(name: str, ray_instance: ModuleType, tmp_path: Path) -> None:
    check_trainer(name, tmp_path, backend="ray")


def _wrong_best(config, out, **kw) -> training.TrainResult:
    """DeepRM's training, reporting a best value its curve never had."""
    result = trainers.load("deeprm").train(config, out, **kw)
    return dataclasses.replace(result, best_value=-1.0)


BROKEN = dataclasses.replace(trainers.load("deeprm"), train=_wrong_best)


def test_a_trainer_that_breaks_the_contract_is_named(tmp_path: Path, monkeypatch) -> None:
    broken = Entry(name="broken", target=f"{__name__}:BROKEN")
    monkeypatch.setattr(trainers, "_entries", {**trainers._entries, "broken": broken})
    with pytest.raises(TrainerCheckError, match=r"trainer 'broken': best_value -1\.0 is not"):
        check_trainer("broken", tmp_path)


def _options(name: str) -> list[str]:
    """The trainer's smallest run as command-line options."""
    out = []
    for key, value in trainers.load(name).small.items():
        if isinstance(value, dict):
            out += [x for k, v in value.items() for x in ("-p", f"{k}={v}")]
        else:
            out += [option_name(key), str(value)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_schedlab_train_sweeps_every_trainer(name: str, tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    trainer = trainers.load(name)
    lr = flat(trainer.config())["lr"]
    args = ["train", name, *_options(name), "--seeds", "0-1", "--workers", "1",
            "--grid", f"lr={lr},{lr * 2}", "-o", str(out)]  # fmt: skip
    text = run_ok(*args)
    assert "4 runs: 4 trained now, 0 already done, 0 failed" in text
    assert (out / "report.html").is_file()
    assert all((d / "report.md").is_file() for d in out.iterdir() if (d / "best.pt").is_file())
    again = run_ok("train", name, "--resume", "--workers", "1", "-o", str(out))
    assert "4 runs: 0 trained now, 4 already done, 0 failed" in again
