"""Per-shard work on a Dask cluster (prefect-dask): G_retrieval samples cut into shards of whole PPR batches,
built as separate tasks and merged, equal to the one-process build; the flow on a real 2-worker LocalCluster
writes the same file as the default runner."""

from __future__ import annotations

import numpy as np

from kgrag.config import get_settings
from kgrag.hrag import pipeline
from kgrag.hrag.config import RetrieverConfig
from kgrag.hrag.samples import RetrievalSamples, build_samples
from kgrag.hrag.sharding import merge_samples, shard_questions, topic_groups


def _same(a: RetrievalSamples, b: RetrievalSamples) -> bool:
    return (a.qids == b.qids and a.texts == b.texts and a.meta == b.meta
            and all(np.array_equal(getattr(a, n), getattr(b, n)) for n in RetrievalSamples._ARRAYS))


def test_shards_hold_whole_batches_and_merge_to_the_one_process_build(prefect_harness, work_settings) -> None:
    from flows.prepare_data import prepare_data

    prepare_data(dataset="demo")
    cfg = RetrieverConfig(top_n=100, max_triples=600)
    graph = pipeline.load_graph(work_settings, "demo")
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
