"""The deployments' new flows on the demo data: the H-RAG pipeline (retriever → g_agent → reasoner as subflows,
a re-run redoing nothing) and the knowledge-network refresh."""

from __future__ import annotations

from pathlib import Path

from test_hrag_flows import GFLOWNET_TINY, TINY

from flows.hrag_pipeline import hrag_pipeline
from flows.kn_refresh import kn_refresh
from flows.prepare_data import prepare_data
from kgrag.hrag.g_agent import GAgentSplit


def test_hrag_pipeline_chains_its_steps_and_a_rerun_reuses_them(prefect_harness, work_settings):
    prepare_data(dataset="demo")
    result = hrag_pipeline(dataset="demo", retriever_config=TINY, gflownet_config=GFLOWNET_TINY,
                           train_split="test", validation_split="test")
    assert Path(result["retriever"]["checkpoint"]).is_file()
    g_agent = GAgentSplit.load(result["g_agent"]["test"])
    assert len(g_agent) == 18 and g_agent.meta["checkpoint"] == result["retriever"]["checkpoint"]
    assert Path(result["reasoner"]["checkpoint"]).is_file() and result["reasoner"]["report"]["all"]["n"] == 18
    mtime = Path(result["g_agent"]["test"]).stat().st_mtime_ns
    again = hrag_pipeline(dataset="demo", retriever_config=TINY, gflownet_config=GFLOWNET_TINY,
                          train_split="test", validation_split="test")
    assert again["reasoner"]["report"] == result["reasoner"]["report"]  # the finished run and its calibration
    assert again["reasoner"]["resumed_from"] == GFLOWNET_TINY["steps"] and again["retriever"]["resumed_from"] == 3
    assert Path(again["g_agent"]["test"]).stat().st_mtime_ns == mtime  # g_agent not rewritten


def test_kn_refresh_loads_a_missing_network_once(prefect_harness, work_settings):
    first = kn_refresh(kn_id="demo")
    assert first["network"]["loaded_now"] and first["network"]["instances"] > 0 and first["intent"] is None
    second = kn_refresh(kn_id="demo")
    assert not second["network"]["loaded_now"] and second["network"]["instances"] == first["network"]["instances"]


def test_a_pipeline_killed_mid_run_completes_from_its_checkpoints(work_settings, tmp_path):
    """Killed (SIGKILL) once the reasoner has written a checkpoint, the pipeline started again trains no retriever
    epoch and resumes the reasoner after its last checkpoint."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)  # each process its own ephemeral API
    slow = {**GFLOWNET_TINY, "steps": 400, "checkpoint_every": 20}
    command = [sys.executable, "-m", "flows.hrag_pipeline", "--dataset", "demo", "--retriever-config",
               json.dumps(TINY), "--gflownet-config", json.dumps(slow)]
    subprocess.run([sys.executable, "-m", "flows.prepare_data", "--dataset", "demo"], env=env, check=True,
                   capture_output=True, timeout=300)
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    runs = work_settings.checkpoint_dir / "gflownet"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not list(runs.glob("demo-*/last.pt")):
        assert proc.poll() is None, "the pipeline ended before it could be killed"
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["retriever"]["resumed_from"] == 3  # every retriever epoch was done before the kill
    assert 0 < result["reasoner"]["resumed_from"] < slow["steps"]  # resumed after a checkpoint, not from 0
    assert result["reasoner"]["report"]["all"]["n"] == 18
