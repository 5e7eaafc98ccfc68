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
    assert again["reasoner"] == result["reasoner"]  # the finished run and its calibration, reused
    assert Path(again["g_agent"]["test"]).stat().st_mtime_ns == mtime  # g_agent not rewritten


def test_kn_refresh_loads_a_missing_network_once(prefect_harness, work_settings):
    first = kn_refresh(kn_id="demo")
    assert first["network"]["loaded_now"] and first["network"]["instances"] > 0 and first["intent"] is None
    second = kn_refresh(kn_id="demo")
    assert not second["network"]["loaded_now"] and second["network"]["instances"] == first["network"]["instances"]
