"""``schedlab show`` (schedules of one jobset as a figure file) and ``schedlab export``."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import polars as pl
import pytest

from schedlab.errors import ResultsError
from schedlab.jobset import JobSet
from schedlab.policies.heuristics import SJF, TetrisStar
from schedlab.registry import make_policy
from schedlab.reports.export import export_results, export_table
from schedlab.reports.output import render
from schedlab.reports.show import resolve_policy, schedule_plot, write_schedule_figure
from schedlab.results import RESULT_COLUMNS, Results
from schedlab.simulator.run import simulate
from tests.report_helpers import check_files, check_pdf, check_svg, png_size, svg_texts


@pytest.fixture(scope="module")
def named(jobs: JobSet) -> Results:
    """Results whose policies were named by spec (``schedlab simulate --policy tetris:knob=0.3``)
    and by an experiment (``tetris-03`` with parameters knob=0.3)."""
    variant = TetrisStar(knob=0.3)
    variant.name = "tetris-03"
    return simulate(jobs, [SJF(), make_policy("tetris:knob=0.7"), variant])


def test_resolve_policy_by_name_spec_or_parameters(named: Results) -> None:
    assert resolve_policy(named, "sjf") == "sjf"
    assert resolve_policy(named, "tetris:knob=0.7") == "tetris:knob=0.7"  # a name
    assert resolve_policy(named, "tetris:knob=0.3") == "tetris-03"  # by its parameters
    with pytest.raises(ResultsError, match=r"no policy of the results matches 'tetris:knob=0\.5'"):
        resolve_policy(named, "tetris:knob=0.5")
    with pytest.raises(ResultsError, match="several policies"):
        resolve_policy(named, "tetris")
    with pytest.raises(ResultsError, match="no policy of the results matches 'hrrn'"):
        resolve_policy(named, "hrrn")


def test_show_writes_the_format_of_the_suffix(
    results: Results, jobs: JobSet, tmp_path: Path
) -> None:
    k = int(results.table.filter(pl.col("load") == 1.5)["jobset"][0])
    pdf = write_schedule_figure(
        results, tmp_path / "fig.pdf", jobset=k, policies=["sjf", "fcfs"], jobs=jobs
    )
    assert check_pdf(pdf.read_bytes())["pages"] == 1
    svg = write_schedule_figure(
        results, tmp_path / "fig.svg", jobset=k, policies=["sjf"], jobs=jobs, style="paper"
    )
    texts = svg_texts(check_svg(svg.read_bytes()))
    assert f"Jobset {k}" in texts
    assert "Waiting jobs" in texts
    png = write_schedule_figure(results, tmp_path / "fig.png", policies=["packer"], dpi=50)
    assert png_size(png.read_bytes())[0] > 0
    check_files({"pdf": pdf, "svg": svg, "png": png})
    with pytest.raises(ValueError, match="must end in one of"):
        write_schedule_figure(results, tmp_path / "fig.gif", jobset=k)
    with pytest.raises(ResultsError, match="jobset 9999 is not in the results"):
        write_schedule_figure(results, tmp_path / "fig.png", jobset=9999)


def test_show_lays_out_gantt_charts_and_timelines(results: Results, jobs: JobSet) -> None:
    from matplotlib.figure import Figure

    k = int(results.table["jobset"][0])
    for names, gantts, timelines in (
        (["sjf", "fcfs"], 3, 5),
        (["sjf", "fcfs", "packer"], 3, 5),
        (["sjf"], 1, 5),
    ):
        plot = schedule_plot(results, jobset=k, policies=names, jobs=jobs)
        fig = Figure()
        plot.draw(fig)
        top, bottom = fig.subfigs
        assert len(top.axes) == gantts
        assert len(bottom.axes) == timelines  # cpu, mem, queue, queued work, fragmentation
        titles = [ax.get_title() for ax in top.axes[: len(names)]]
        assert [t.split(" (")[0] for t in titles] == names
    without = schedule_plot(results, jobset=k, policies=["sjf"])  # no JobSet: Gantt only
    fig = Figure()
    without.draw(fig)
    assert len(fig.axes) == 1
    assert render(without, ("png",), dpi=30)["png"][:4] == b"\x89PNG"


def test_export_csv_has_one_row_per_job_with_demands(
    results: Results, jobs: JobSet, tmp_path: Path
) -> None:
    paths = export_results(results, tmp_path / "jobs.csv", jobs=jobs)
    df = pl.read_csv(paths["data"])
    assert df.columns == [*RESULT_COLUMNS, "killed", "cpu", "mem"]  # the cluster kind adds killed
    assert df.height == results.table.height
    back = df.join(jobs.jobs.select("jobset", "job_id", "cpu"), on=["jobset", "job_id"])
    assert (back["cpu"] == back["cpu_right"]).all()
    meta = json.loads(paths["meta"].read_text())
    assert paths["meta"].name == "jobs.meta.json"
    assert meta["columns"] == df.columns
    assert list(meta["policies"]) == ["sjf", "fcfs", "packer"]
    plain = export_results(results, tmp_path / "plain.ndjson", format="ndjson")
    lines = plain["data"].read_text().splitlines()
    assert len(lines) == results.table.height
    assert set(json.loads(lines[0])) == {*RESULT_COLUMNS, "killed"}
    with pytest.raises(ValueError, match="format must be one of"):
        export_results(results, tmp_path / "x.xlsx", format="xlsx")


def test_export_adds_seconds_when_a_step_has_a_length(results: Results) -> None:
    meta = {**results.meta, "jobset": {**results.meta["jobset"], "time_step_seconds": 10.0}}
    table = export_table(Results(results.table, meta))
    assert (table["wait_s"] == table["wait"] * 10.0).all()
    assert "finish_s" in table.columns
    assert "cpu" not in table.columns  # no JobSet given: the results columns alone


def test_show_window_reads_times_with_units() -> None:
    from schedlab.reports.show import parse_window

    assert parse_window("36h:48h", 1.0) == (129_600.0, 172_800.0)
    assert parse_window("1d:2d", 10.0) == (8_640.0, 17_280.0)  # 10 s steps
    assert parse_window("5:20", None) == (5.0, 20.0)  # steps
    with pytest.raises(ValueError, match="give FROM:TO"):
        parse_window("36h", 1.0)
    with pytest.raises(ValueError, match="'x' is not a time"):
        parse_window("x:2h", 1.0)
    with pytest.raises(ValueError, match="defined in steps"):
        parse_window("1h:2h", None)
    with pytest.raises(ValueError, match="FROM must come before TO"):
        parse_window("2h:1h", 1.0)
