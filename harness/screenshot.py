"""A screenshot of the Prefect UI's flow-run page with its artifacts, for docs/: a real Prefect server (temporary
home), the prepare-data flow on the demo KG reporting to it, then headless Chromium (Debian's
``chromium-headless-shell``) rendering the run's page (its task graph carries the artifacts) and the chart
artifact's page (``<out stem>-chart.png``). Docs tooling, run from the repository root (not shipped).

    python -m harness.screenshot --out docs/prefect-flow-run-artifacts.png

Prints the seconds from ``prefect server start`` to the completed run, and to the written PNG.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
from prefect.client.schemas.sorting import FlowRunSort
from prefect.settings import PREFECT_API_URL, temporary_settings

from harness.servers.prefect_server import prefect_server
from kgrag.errors import KgragError

__all__ = ["browser", "screenshot"]

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def browser() -> str:
    """The first headless-capable Chromium on PATH (``apt-get install chromium-headless-shell``)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise KgragError("no Chromium found: apt-get install chromium-headless-shell")


async def _latest_run(api_url: str) -> tuple[str, str, str]:
    with temporary_settings({PREFECT_API_URL: api_url}):  # settings are read once: override, not os.environ
        async with get_client() as client:
            runs = await client.read_flow_runs(limit=1, sort=FlowRunSort.START_TIME_DESC)
            charts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(
                any_=["data-prep-demo-chart"])))
    if not runs or not charts:
        raise KgragError("the server holds no flow run with a chart artifact")
    return str(runs[0].id), runs[0].state.type.value, str(charts[-1].id)


def screenshot(out: Path, size: str = "1500,1150", wait_ms: int = 20000) -> dict[str, float]:
    """Write the PNG; returns the timings (seconds since the server was asked to start)."""
    chrome = browser()
    work = Path(tempfile.mkdtemp(prefix="kgrag-shot-"))
    started = time.monotonic()
    with prefect_server(work / "prefect") as api_url:
        up = time.monotonic() - started
        env = {**os.environ, "PREFECT_API_URL": api_url, "KGRAG_WORK_DIR": str(work / "work"),
               "KGRAG_DATA_DIR": str(work / "no-data"), "PREFECT_HOME": str(work / "client")}
        kgrag = Path(sys.executable).with_name("kgrag")
        subprocess.run([str(kgrag), "prepare", "--dataset", "demo"], env=env, check=True, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        run_id, state, chart_id = asyncio.run(_latest_run(api_url))
        completed = time.monotonic() - started
        ui = api_url.removesuffix("/api")
        pages = {out: f"{ui}/runs/flow-run/{run_id}?tab=Artifacts",
                 out.with_name(out.stem + "-chart.png"): f"{ui}/artifacts/artifact/{chart_id}"}
        out.parent.mkdir(parents=True, exist_ok=True)
        for path, page in pages.items():
            subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--window-size={size}", f"--virtual-time-budget={wait_ms}",
                            f"--screenshot={path.resolve()}", page],
                           check=True, timeout=180, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if not path.is_file():
                raise KgragError(f"Chromium wrote no screenshot to {path}")
    return {"server_up_s": round(up, 1), "run_completed_s": round(completed, 1), "state": state,
            "screenshots_s": round(time.monotonic() - started, 1), "pages": list(pages.values())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/prefect-flow-run-artifacts.png"))
    args = parser.parse_args()
    print(screenshot(args.out))


if __name__ == "__main__":
    main()
