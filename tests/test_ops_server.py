"""The deployments against a real Prefect server (started on a free port, its database in a temp dir, stopped
after): register them, read their schedules and parameters back through the client, run one with `kgrag deploy
serve`, and read its completed state and artifacts through the API."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL, temporary_settings

from harness.servers.prefect_server import prefect_server
from kgrag.ops.deployments import load_specs

KGRAG = str(Path(sys.executable).with_name("kgrag"))
PREFECT = str(Path(sys.executable).with_name("prefect"))
JOBS = """deployments:
  - name: demo-data-daily
    entrypoint: flows/prepare_data.py:prepare_data
    parameters: {dataset: demo}
    schedules: [{cron: "0 2 * * *", timezone: UTC}]
    work_pool: {name: process}
  - name: demo-network-daily
    entrypoint: flows/kn_refresh.py:kn_refresh
    parameters: {kn_id: demo}
    schedules: [{cron: "30 2 * * *", timezone: UTC}]
    work_pool: {name: process}
"""


def _run(env: dict, *args: str) -> str:
    proc = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


async def _deployments(url: str) -> dict:
    with temporary_settings({PREFECT_API_URL: url}):
        async with get_client() as client:
            return {d.name: d for d in await client.read_deployments()}


async def _scheduled_runs(url: str, deployment_id) -> list:
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with temporary_settings({PREFECT_API_URL: url}):
        async with get_client() as client:
            return await client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(
                any_=[deployment_id])))


async def _start_run(url: str, deployment_id) -> str:
    with temporary_settings({PREFECT_API_URL: url}):
        async with get_client() as client:
            return str((await client.create_flow_run_from_deployment(deployment_id)).id)


async def _run_state_and_artifacts(url: str, run_id: str) -> tuple[str, list]:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with temporary_settings({PREFECT_API_URL: url}):
        async with get_client() as client:
            run = await client.read_flow_run(run_id)
            artifacts = await client.read_artifacts(
                artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run_id])))
            return run.state.type.value, artifacts


def test_deployments_registered_served_and_run_on_a_real_server(tmp_path):
    jobs = tmp_path / "prefect.yaml"
    jobs.write_text(JOBS)
    with prefect_server(tmp_path / "prefect") as url:
        env = {**os.environ, "PREFECT_API_URL": url, "KGRAG_WORK_DIR": str(tmp_path / "work"),
               "KGRAG_DATA_DIR": str(tmp_path / "no-data"), "PREFECT_HOME": str(tmp_path / "client")}
        _run(env, PREFECT, "work-pool", "create", "process", "--type", "process")
        out = _run(env, KGRAG, "deploy", "apply", "--file", str(jobs))
        assert "demo-data-daily" in out and "demo-network-daily" in out
        found = asyncio.run(_deployments(url))
        assert set(found) == {"demo-data-daily", "demo-network-daily"}
        data = found["demo-data-daily"]
        assert data.parameters == {"dataset": "demo"} and data.work_pool_name == "process"
        assert [s.schedule.cron for s in data.schedules] == ["0 2 * * *"]
        assert [s.schedule.cron for s in found["demo-network-daily"].schedules] == ["30 2 * * *"]

        # the server's scheduler fills each schedule with upcoming runs (it failed on every loop with SQLAlchemy 2.1)
        deadline, scheduled = time.monotonic() + 90, []
        while not scheduled and time.monotonic() < deadline:
            scheduled = asyncio.run(_scheduled_runs(url, data.id))
            time.sleep(2)
        assert scheduled and all(r.auto_scheduled and r.state.type.value == "SCHEDULED" for r in scheduled)
        assert {r.expected_start_time.strftime("%H:%M") for r in scheduled} == {"02:00"}

        # the repository's own jobs: each registered with the schedule and parameters the file gives
        _run(env, KGRAG, "deploy", "apply")
        registered = asyncio.run(_deployments(url))
        for spec in load_specs():
            job = registered[spec.name]
            assert job.parameters == spec.parameters and job.work_pool_name == "process", spec.name
            assert [(s.schedule.cron, s.schedule.timezone) for s in job.schedules] == \
                [(s.cron, s.timezone) for s in spec.schedules], spec.name

        serve = subprocess.Popen([KGRAG, "deploy", "serve", "--file", str(jobs)], env=env, cwd=Path(KGRAG).parents[2],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(15)  # serve re-registers its deployments, then polls for their runs
            served = asyncio.run(_deployments(url))["demo-data-daily"]
            run_id = asyncio.run(_start_run(url, served.id))
            deadline, state, artifacts = time.monotonic() + 240, "", []
            while time.monotonic() < deadline:
                state, artifacts = asyncio.run(_run_state_and_artifacts(url, run_id))
                if state in ("COMPLETED", "FAILED", "CRASHED"):
                    break
                time.sleep(2)
        finally:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(timeout=30)
        assert state == "COMPLETED", state
        # stable keys: the Artifacts page keeps each one's history across runs
        assert {(a.key, a.type) for a in artifacts} >= {("data-prep-demo", "markdown"),
                                                         ("data-prep-demo-table", "table"),
                                                         ("data-prep-demo-chart", "image")}
        image = next(a for a in artifacts if a.type == "image")
        assert image.data.startswith("data:image/png;base64,iVBORw0KGgo")  # a PNG, shown inline by the UI


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
