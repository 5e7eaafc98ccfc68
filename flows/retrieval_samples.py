"""G_retrieval samples of one split, in shards: one task per shard (named ``g-retrieval-<split>-<i>of<n>``) on the
flow's task runner (Dask with ``KGRAG_TASK_RUNNER=dask``, :mod:`kgrag.ops.task_runner`), merged into the same file
a one-process build writes (:mod:`kgrag.hrag.retrieval.sharding`). A split whose file exists is read, not rebuilt.

Run: ``python -m flows.retrieval_samples --dataset metaqa --split validation`` (also a subflow of
``train-retriever``).
"""

from __future__ import annotations

import argparse
import json
import time

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from kgrag.config import get_settings
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.resumable import Parts
from kgrag.hrag.retrieval.samples import RetrievalSamples, build_samples
from kgrag.hrag.retrieval.sharding import merge_samples, shard_questions
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.ops.task_runner import limit_threads, on_task_runner, shards_for


@task(name="g-retrieval-shard", cache_policy=NO_CACHE)
def samples_shard(dataset: str, split: str, config_json: str, indices: list[int], part: int, parts: int,
                  cap: int | None = None) -> RetrievalSamples:
    """PPR subgraphs, features and labels of the split's questions ``indices`` (on whichever worker runs it),
    kept on disk as part ``part`` of ``parts``: a re-run after a kill reads it instead of building it again."""
    settings = get_settings()
    limit_threads(settings)
    cfg = RetrieverConfig.model_validate_json(config_json)
    graph = load_graph(settings, dataset)
    questions = pipeline.split_questions(settings, dataset, split, cfg, cap)
    text, prior = pipeline.walk_inputs(settings, dataset, graph, cfg)
    focus = pipeline.question_focus(prior, text, questions, cfg)
    path = pipeline.samples_path(settings, dataset, split, cfg, questions, graph, focus)
    saved = Parts(path.with_name(path.stem + ".parts"), parts, RetrievalSamples.save, RetrievalSamples.load)
    return saved.get(part, lambda: build_samples(
        graph, [questions[i] for i in indices], cfg.top_n, cfg.max_triples, ppr=pipeline.ppr_for(graph, cfg),
        focus=[focus[i] for i in indices] if focus is not None else None, floor=cfg.ppr_focus_floor,
        max_off_focus=cfg.max_off_focus_triples))


@flow(name="retrieval-samples", log_prints=True)
def retrieval_samples(dataset: str, split: str, config_json: str, shards: int | None = None,
                      cap: int | None = None) -> dict:
    """The split's samples file (built in ``shards`` tasks when missing; the questions the budget names, or
    ``cap`` of them); returns counts and timing."""
    settings = get_settings()
    cfg = RetrieverConfig.model_validate_json(config_json)
    graph = load_graph(settings, dataset)
    questions = pipeline.split_questions(settings, dataset, split, cfg, cap)
    text, prior = pipeline.walk_inputs(settings, dataset, graph, cfg)  # learned once here, read by the workers
    path = pipeline.samples_path(settings, dataset, split, cfg, questions, graph,
                                 pipeline.question_focus(prior, text, questions, cfg))
    started = time.perf_counter()
    built = not path.is_file()
    if built:
        parts_of = shard_questions(questions, shards or shards_for(settings))
        futures = [samples_shard.with_options(task_run_name=f"g-retrieval-{split}-{k + 1}of{len(parts_of)}")
                   .submit(dataset, split, config_json, indices, k, len(parts_of), cap)
                   for k, indices in enumerate(parts_of)]
        samples = merge_samples([f.result() for f in futures], parts_of)
        samples.save(path)
        Parts(path.with_name(path.stem + ".parts"), len(parts_of), RetrievalSamples.save, RetrievalSamples.load).clear()
    else:
        samples = RetrievalSamples.load(path)
    counts = samples.question_triple_counts()
    return {"split": split, "questions": len(samples), "mean_triples": float(counts.mean()),
            "no_path": int((samples.positive_counts() == 0).sum()), "file": str(path), "built": built,
            "seconds": round(time.perf_counter() - started, 2)}


def run(dataset: str, split: str, config_json: str, shards: int | None = None, cap: int | None = None) -> dict:
    """The flow on the configured task runner (a fresh one per call)."""
    return on_task_runner(retrieval_samples)(dataset, split, config_json, shards, cap)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Build one split's G_retrieval samples in shards.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--config", default=None, help="JSON object of RetrieverConfig fields")
    parser.add_argument("--shards", type=int, default=None)
    args = parser.parse_args(argv)
    config_json = RetrieverConfig(**(json.loads(args.config) if args.config else {})).model_dump_json()
    print(json.dumps(run(args.dataset, args.split, config_json, args.shards)))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
