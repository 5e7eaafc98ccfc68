"""Server start to the first completed *scheduled* run: a real ``prefect server start`` (temporary home), the demo
data-prep job registered by ``kgrag deploy serve`` with an every-minute cron, and the time until the first run the
scheduler created (not a manual one) is COMPLETED, with its artifacts.

    python -m bench.ops_schedule

Writes bench/results/ops_schedule.json. The cron's minute boundary and Prefect's scheduler loop bound the wait.
(With SQLAlchemy 2.1 the Prefect 3.8.8 server's scheduler fails on every loop — "Can't evaluate bulk DML
statement" — and no scheduled run is ever created: kgrag pins SQLAlchemy < 2.1.)
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

JOBS = """name: kgrag-bench
prefect-version: 3.8.8
deployments:
  - name: demo-data-every-minute
    entrypoint: flows/prepare_data.py:prepare_data
    parameters: {dataset: demo}
    schedules: [{cron: "* * * * *", timezone: UTC}]
    work_pool: {name: process}
"""


async def _completed_scheduled(url: str) -> tuple[str | None, list[str]]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings({PREFECT_API_URL: url}):
        async with get_client() as client:
            for run in await client.read_flow_runs():
                if run.auto_scheduled and run.state and run.state.type.value == "COMPLETED":
                    found = await client.read_artifacts(
                        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[run.id])))
                    return str(run.id), sorted(f"{a.key} ({a.type})" for a in found)
    return None, []


def main() -> None:
    from bench.common import write_result
    from harness.servers.prefect_server import prefect_server

    tmp = Path(tempfile.mkdtemp(prefix="bench-schedule-"))
    jobs = tmp / "prefect.yaml"
    jobs.write_text(JOBS)
    kgrag = str(Path(sys.executable).with_name("kgrag"))
    started = time.monotonic()
    with prefect_server(tmp / "prefect") as url:
        up = time.monotonic() - started
        env = {**os.environ, "PREFECT_API_URL": url, "KGRAG_WORK_DIR": str(tmp / "work"),
               "KGRAG_DATA_DIR": str(tmp / "no-data"), "PREFECT_HOME": str(tmp / "client")}
        log = (tmp / "serve.log").open("w")
        serve = subprocess.Popen([kgrag, "deploy", "serve", "--file", str(jobs)], env=env,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            run_id, artifacts = None, []
            while run_id is None and time.monotonic() - started < 400:
                time.sleep(2)
                run_id, artifacts = asyncio.run(_completed_scheduled(url))
        finally:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(timeout=30)
    done = time.monotonic() - started
    figures = {"server_up_s": round(up, 1), "first_scheduled_run_completed_s": round(done, 1) if run_id else None,
               "run_id": run_id, "artifacts": artifacts, "schedule": "* * * * * (UTC)"}
    write_result("ops_schedule", figures, {"server_up_s": round(up, 1)},
                 round(done / up, 2) if run_id else 0.0, "demo KG data prep, one scheduled run", 1)


if __name__ == "__main__":
    main()
