"""The deployments' new flows on the demo data: the H-RAG pipeline (retriever → g_agent → reasoner as subflows,
a re-run redoing nothing) and the knowledge-network refresh."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_hrag_flows import GFLOWNET_TINY, TINY

from flows.hrag_pipeline import hrag_pipeline
from flows.kn_refresh import kn_refresh
from flows.prepare_data import prepare_data
from kgrag.hrag.retrieval.g_agent import GAgentSplit


def _artifact(key: str):
    """The latest artifact with ``key``, read through the Prefect API."""
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async def read():
        async with get_client() as client:
            return await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
                                               sort=ArtifactSort.CREATED_DESC, limit=1)

    found = asyncio.run(read())
    assert found, f"no artifact {key}"
    return found[0]


def test_hrag_pipeline_chains_its_steps_and_a_rerun_reuses_them(prefect_harness, work_settings):
    prepare_data(dataset="demo")
    result = hrag_pipeline(dataset="demo", retriever_config=TINY, gflownet_config=GFLOWNET_TINY,
                           train_split="test", validation_split="test")
    assert Path(result["retriever"]["checkpoint"]).is_file()
    g_agent = GAgentSplit.load(result["g_agent"]["test"])
    assert len(g_agent) == 18 and g_agent.meta["checkpoint"] == result["retriever"]["checkpoint"]
    assert Path(result["reasoner"]["checkpoint"]).is_file() and result["reasoner"]["report"]["all"]["n"] == 18
    for key in ("retriever-training-demo-chart", "retriever-eval-demo-test-chart", "gflownet-training-demo-chart"):
        image = _artifact(key)  # the curves as image artifacts (stable keys: the Artifacts page keeps history)
        assert image.type == "image" and image.data.startswith("data:image/png;base64,"), key
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
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)  # each process its own ephemeral API
    slow = {**GFLOWNET_TINY, "steps": 120, "checkpoint_every": 20}  # ~15 s of steps left when it is killed
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


def test_nightly_evaluation_reports_both_paths_on_split_and_files(demo_trained_work, tmp_path, monkeypatch,
                                                                  prefect_harness):
    """The nightly job on the trained demo: the policy on the split's g_agent, then the whole chain and the agent
    on the split written per hop and on a configured file; the table artifact holds every row."""
    import shutil

    from flows.evaluation_reports import evaluation_reports
    from kgrag.config import get_settings
    from kgrag.errors import KgragError

    work = tmp_path / "work"  # a copy: the shared demo work dir's reports stay as they are
    shutil.copytree(demo_trained_work, work)
    monkeypatch.setenv("KGRAG_WORK_DIR", str(work))
    get_settings.cache_clear()
    prepared = json.loads((work / "demo" / "questions.jsonl").read_text().splitlines()[0])
    extra = tmp_path / "mine.txt"  # a configured file: one demo question, as a user would write it
    topic = prepared["topic_names"][0]
    extra.write_text(f"{prepared['text'].replace(topic, f'[{topic}]', 1)}\t{'|'.join(prepared['answer_names'])}\n")
    result = evaluation_reports(dataset="demo", split="test", question_files=[str(extra)])
    rows = result["rows"]
    split_files = [Path(f).name for f in result["files"][:-1]]
    assert split_files and all(name.startswith("test_") and name.endswith("hop.txt") for name in split_files)
    held_out = sum(len(Path(f).read_text().splitlines()) for f in result["files"][:-1])
    assert held_out == 18
    by = {(r["source"], r["path"].split(" --")[0].replace("kgrag ", "")): r for r in rows}
    assert by[("test g_agent, all", "eval")]["n"] == 18
    for name in [*split_files, "mine.txt"]:
        chain, agent = by[(name, "eval")], by[(name, "agent-eval")]
        assert chain["n"] == agent["n"] and agent["p50_ms"] > 0
        if name != "mine.txt":  # the agent's answers are the chain's (issue 19): the same Hits@1 per file
            assert agent["hits@1"] == chain["hits@1"]
    assert by[("mine.txt", "agent-eval")]["n"] == 1

    table = _artifact("evaluation-demo")
    assert table.type == "table" and len(json.loads(table.data)) == len(rows)
    assert "| source |" in _artifact("evaluation-demo-summary").data
    with pytest.raises(KgragError, match="absent.txt"):
        evaluation_reports(dataset="demo", split="test", question_files=[str(tmp_path / "absent.txt")])
    get_settings.cache_clear()
