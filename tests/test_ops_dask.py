"""Per-shard work on a Dask cluster (prefect-dask): G_retrieval samples cut into shards of whole PPR batches,
built as separate tasks and merged, equal to the one-process build; the flows on a real 2-worker LocalCluster
write the same samples file, the same g_agent file and the same recall and answer metrics as the default runner."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from kgrag.config import get_settings
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.samples import RetrievalSamples, build_samples
from kgrag.hrag.retrieval.sharding import contiguous_ranges, merge_samples, shard_questions, topic_groups
from kgrag.hrag.retrieval.stage_inputs import load_graph


def _same(a: RetrievalSamples, b: RetrievalSamples) -> bool:
    return (a.qids == b.qids and a.texts == b.texts and a.meta == b.meta
            and all(np.array_equal(getattr(a, n), getattr(b, n)) for n in RetrievalSamples._ARRAYS))


def test_shards_hold_whole_batches_and_merge_to_the_one_process_build(prefect_harness, work_settings) -> None:
    from flows.prepare_data import prepare_data

    prepare_data(dataset="demo")
    cfg = RetrieverConfig(top_n=100, max_triples=600)
    graph = load_graph(work_settings, "demo")
    questions = pipeline.split_questions(work_settings, "demo", "test", cfg)
    shards = shard_questions(questions, 3, batch=4)
    assert len(shards) == 3 and sorted(i for s in shards for i in s) == list(range(len(questions)))
    groups = topic_groups(questions)
    for s in shards:  # a topic set never spans two shards
        assert all(set(g) <= set(s) or not set(g) & set(s) for g in groups)
    whole = build_samples(graph, questions, cfg.top_n, cfg.max_triples, batch=4)
    parts = [build_samples(graph, [questions[i] for i in s], cfg.top_n, cfg.max_triples, batch=4) for s in shards]
    assert _same(merge_samples(parts, shards), whole)
    assert shard_questions(questions, 8) == [list(range(len(questions)))]  # 18 questions: one PPR batch


def test_the_flow_on_a_local_dask_cluster_writes_the_default_runners_file(prefect_harness, work_settings,
                                                                           monkeypatch) -> None:
    from flows.prepare_data import prepare_data
    from flows.retrieval_samples import run

    prepare_data(dataset="demo")
    config_json = RetrieverConfig(top_n=100, max_triples=600).model_dump_json()
    default = run("demo", "test", config_json)
    assert default["built"] and default["questions"] == 18
    path = default["file"]
    reference = RetrievalSamples.load(path)
    again = run("demo", "test", config_json)
    assert not again["built"]  # the file is read, not rebuilt
    monkeypatch.setenv("KGRAG_TASK_RUNNER", "dask")
    monkeypatch.setenv("KGRAG_DASK_WORKERS", "2")
    get_settings.cache_clear()
    import os

    os.remove(path)
    dask = run("demo", "test", config_json)
    assert dask["built"] and dask["file"] == path and _same(RetrievalSamples.load(path), reference)


def test_contiguous_ranges_cover_in_order_and_balance_cost() -> None:
    assert contiguous_ranges([1] * 10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert contiguous_ranges([100, 1, 1, 1], 2) == [(0, 1), (1, 4)]  # a heavy item is a shard of its own
    assert contiguous_ranges([1, 1], 5) == [(0, 1), (1, 2)] and contiguous_ranges([], 4) == []
    assert contiguous_ranges([0, 0, 0], 1) == [(0, 3)]


def test_g_agent_concat_of_parts_is_the_whole(demo_kg_settings) -> None:
    whole = GAgentSplit.load(pipeline.g_agent_file(demo_kg_settings, "demo", "test"))
    joined = GAgentSplit.concat([whole.subset(range(0, 5)), whole.subset(range(5, 6)), whole.subset(range(6, 18))])
    assert joined.qids == whole.qids and joined.questions == whole.questions and joined.meta == whole.meta
    assert torch.equal(joined.hops, whole.hops) and torch.equal(joined.gt_path_exists, whole.gt_path_exists)
    assert all(torch.equal(joined.tensors[k], whole.tensors[k]) for k in whole.tensors)


def _same_g_agent(a: GAgentSplit, b: GAgentSplit) -> None:
    """Same questions, nodes, edges, labels and GT paths; scores equal but for float rounding (torch's sums
    depend on the thread count: a 1-thread Dask worker and a 2-thread process differ by ~1e-6)."""
    assert a.qids == b.qids and a.questions == b.questions and a.meta == b.meta
    assert torch.equal(a.hops, b.hops) and torch.equal(a.gt_path_exists, b.gt_path_exists)
    for key in a.tensors:
        if key == "edge_scores":
            assert torch.allclose(a.tensors[key], b.tensors[key], atol=1e-4), key
        else:
            assert torch.equal(a.tensors[key], b.tensors[key]), key


def test_retriever_eval_and_answers_on_dask_equal_the_default_runner(demo_trained_work, tmp_path, monkeypatch,
                                                                    prefect_harness) -> None:
    from flows.evaluate import evaluate
    from flows.retriever_eval import retriever_eval
    from kgrag.ops.task_runner import on_task_runner

    work = tmp_path / "work"  # a copy: the shared demo work dir's g_agent stays as it is
    shutil.copytree(demo_trained_work, work)
    monkeypatch.setenv("KGRAG_WORK_DIR", str(work))
    monkeypatch.setenv("KGRAG_HRAG_PART_QUESTIONS", "9")  # the 18 questions in two parts: one task each on Dask
    results = {}
    for kind in ("default", "dask"):
        monkeypatch.setenv("KGRAG_TASK_RUNNER", kind)
        monkeypatch.setenv("KGRAG_DASK_WORKERS", "2")
        get_settings.cache_clear()
        settings = get_settings()
        g_file = pipeline.g_agent_file(settings, "demo", "test")
        g_file.unlink()  # written anew by each runner
        recall = on_task_runner(retriever_eval)(dataset="demo", run_all_splits=False, split="test")["test"]
        answers = on_task_runner(evaluate)(dataset="demo", split="test")
        assert recall.get("reused") is None and recall["shards"] == (1 if kind == "default" else 2)
        assert answers["info"]["shards"] == recall["shards"]
        results[kind] = (GAgentSplit.load(g_file), recall["report"], answers["report"])
    get_settings.cache_clear()
    (g_default, recall_default, answers_default), (g_dask, recall_dask, answers_dask) = results["default"], results["dask"]
    _same_g_agent(g_default, g_dask)
    assert recall_dask.keys() == recall_default.keys() and answers_dask == answers_default
    for row, values in recall_default.items():
        assert recall_dask[row] == pytest.approx(values), row
    assert answers_default["all"]["n"] == 18


def test_entity_vectors_in_blocks_on_dask_equal_the_one_batch_file(prefect_harness, work_settings,
                                                                   monkeypatch) -> None:
    from flows.prepare_data import prepare_data
    from flows.text_embeddings import run

    prepare_data(dataset="demo")
    default = run("demo", block=8)  # the demo's few dozen names: blocks of 8 to have several
    assert default["eager"] and default["tasks"] == 1 and default["encoded_now"] == default["entities"]
    assert default["computed"] == default["entities"]
    shape = (default["entities"], 384)
    reference = np.array(np.memmap(default["file"], dtype=np.float16, mode="r", shape=shape))
    assert np.abs(reference.astype(np.float32)).sum() > 0
    assert run("demo", block=8)["encoded_now"] == 0  # the map is read, not re-encoded
    monkeypatch.setenv("KGRAG_TASK_RUNNER", "dask")
    monkeypatch.setenv("KGRAG_DASK_WORKERS", "2")
    get_settings.cache_clear()
    import os

    os.remove(default["file"])
    os.remove(default["file"].replace(".f16", ".done"))
    dask = run("demo", block=8)
    assert dask["encoded_now"] == default["entities"] and dask["tasks"] == 2 and dask["file"] == default["file"]
    vectors = np.array(np.memmap(dask["file"], dtype=np.float16, mode="r", shape=shape))
    # the same blocks; a 1-thread worker and a 2-thread process may round a sum apart: one float16 step at most
    assert np.allclose(vectors.astype(np.float32), reference.astype(np.float32), atol=2e-3)
