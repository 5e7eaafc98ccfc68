"""The scheduled deployments file: every job validated against its flow, built into Prefect deployments."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.errors import KgragError
from kgrag.ops.deployments import load_specs, runner_deployments

JOBS = {"data-daily": ("prepare-data", "0 2 * * *"), "knowledge-network-daily": ("kn-refresh", "30 2 * * *"),
        "hrag-training-weekly": ("hrag-pipeline", "0 3 * * 0"), "evaluation-nightly": ("evaluation-reports", "0 4 * * *"),
        "planner-weekly": ("train-planner", "0 5 * * 0")}


def test_every_job_has_its_flow_schedule_and_parameters() -> None:
    specs = load_specs()
    assert {s.name for s in specs} == set(JOBS)
    for runner in runner_deployments(specs):
        flow_name, cron = JOBS[runner.name]
        assert runner.flow_name == flow_name
        assert [s.schedule.cron for s in runner.schedules] == [cron]
        assert runner.parameters and runner.description
    assert all(s.work_pool.get("name") == "process" for s in specs)


@pytest.mark.parametrize(("body", "message"), [
    ("deployments:\n  - {name: a, entrypoint: flows/evaluate.py:evaluate, parameters: {datasett: x}}", "datasett"),
    ("deployments:\n  - {name: a, entrypoint: flows/evaluate.py:evaluate, schedules: [{cron: '99 x'}]}", "cron"),
    ("deployments:\n  - {name: a, entrypoint: flows/evaluate.py:main}", "not a Prefect flow"),
    ("deployments:\n  - {name: a, entrypoint: flows/evaluate.py:evaluate}\n"
     "  - {name: a, entrypoint: flows/evaluate.py:evaluate}", "repeat"),
])
def test_a_bad_deployments_file_is_a_clear_error(tmp_path, body: str, message: str) -> None:
    path = tmp_path / "prefect.yaml"
    path.write_text(body)
    with pytest.raises((KgragError, ValueError), match=message):
        load_specs(path)


def test_deploy_list_prints_every_job() -> None:
    res = CliRunner().invoke(app, ["deploy", "list"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert all(name in res.output for name in JOBS) and "0 3 * * 0 UTC" in res.output
    res = CliRunner().invoke(app, ["deploy", "list", "--file", "/nonexistent/prefect.yaml"])
    assert res.exit_code == 1 and "deployments file not found" in res.output
