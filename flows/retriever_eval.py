"""Retriever evaluation + g_agent materialization flow (spec h-rag.md, the H-RAG specification of a triple
retriever and a GFlowNet path reasoner, §4.4, the ``stage=retriever_eval`` stage).

By default the splits the training budget names (``run_all_splits=True``: train and validation, at the trained
run's caps: a bounded job at any graph size); ``run_all_splits=False`` with ``split`` runs one (the test split only
so, on request), ``max_questions`` of it when given. Per split: G_retrieval samples → retriever scores → recall report (JSON, markdown table, PNG; also as
Prefect artifacts) → ``<split>_g_agent.pt`` (oracle mode for ``train``: top-K ∪ GT; pruned for the others).
``retriever_eval_file``: the recall report on a question file instead (``kgrag retriever-eval --questions``).
Scoring and materialisation run as tasks over contiguous question ranges (``score-and-materialise-<split>-<i>of<n>``):
one on the default runner, a few per worker on Dask (``KGRAG_TASK_RUNNER=dask``), concatenated in order; each run
of ``hrag_part_questions`` questions is kept on disk as it finishes, so a killed run continues from its last one.
Run: ``python -m flows.retriever_eval --dataset metaqa [--split validation]`` or ``kgrag retriever-eval``.
"""

from __future__ import annotations

import argparse
import json
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from prefect import flow, task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from flows.retrieval_samples import run as sharded_samples
from kgrag.config import get_settings
from kgrag.data.question_files import require_question_file
from kgrag.data.registry import spec_of
from kgrag.data.spec import DatasetSpec
from kgrag.fileio import png_data_url
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.evaluate import (
    Evaluation,
    TrainedRetriever,
    evaluate_question_file,
    load_trained,
    png_markdown,
    write_report,
)
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.metrics import recall_report, report_table
from kgrag.hrag.retrieval.resumable import Parts
from kgrag.hrag.retrieval.retriever import score_samples
from kgrag.hrag.retrieval.sharding import contiguous_ranges
from kgrag.ops.task_runner import limit_threads, on_task_runner, shards_for


@lru_cache(maxsize=2)
def loaded_retriever(work_dir: str, dataset: str, checkpoint: str | None, stamp: int, anchor_top_k: int | None
             ) -> TrainedRetriever:
    """The retriever with its graph, vectors and chain prior, loaded once per process (a Dask worker keeps it
    for its next shard); ``stamp`` (the checkpoint's mtime) keys out a retrained one."""
    trained = load_trained(get_settings(), dataset, Path(checkpoint) if checkpoint else None)
    if anchor_top_k:
        trained.config = trained.config.model_copy(update={"anchor_top_k": anchor_top_k})
    return trained


def trained_retriever(dataset: str, checkpoint: str | None, anchor_top_k: int | None) -> TrainedRetriever:
    settings = get_settings()
    path = pipeline.checkpoint_input(settings, dataset, checkpoint)
    return loaded_retriever(str(settings.work_dir), dataset, str(path), path.stat().st_mtime_ns, anchor_top_k)


def _save_part(part: dict, path: Path) -> None:
    torch.save({"scores": torch.from_numpy(part["scores"]), "score_seconds": part["score_seconds"],
                "g_agent": part["g_agent"].to_dict()}, path)


def _load_part(path: Path) -> dict:
    data = torch.load(path, weights_only=True)
    return {"scores": data["scores"].numpy(), "score_seconds": float(data["score_seconds"]),
            "g_agent": GAgentSplit.from_dict(data["g_agent"], str(path))}


def g_agent_parts(g_file: Path, key: str, count: int) -> Parts[dict]:
    """The resumable parts of one g_agent build (``<split>_g_agent.parts-<key>/``: scores and g_agent of a run of
    questions each, :func:`part_bounds`)."""
    return Parts(g_file.with_name(f"{g_file.stem}.parts-{key}"), count, _save_part, _load_part, suffix=".pt",
                 label=f"g_agent ({g_file.stem.removesuffix('_g_agent')})")


def part_bounds(n: int) -> list[tuple[int, int]]:
    """The split's questions in fixed runs of the settings' ``hrag_part_questions`` (the same whatever the number
    of workers)."""
    step = get_settings().hrag_part_questions
    return [(a, min(a + step, n)) for a in range(0, n, step)]


@task(name="score-and-materialise", cache_policy=NO_CACHE)
def score_shard(dataset: str, split: str, checkpoint: str | None, anchor_top_k: int | None, cap: int | None,
                parts: list[int], meta: dict) -> list[dict]:
    """Retriever scores and g_agent of the split's question runs ``parts`` (on whichever worker runs it), each
    saved as it finishes: a run killed midway redoes none of them."""
    limit_threads(get_settings())
    trained = trained_retriever(dataset, checkpoint, anchor_top_k)
    settings = get_settings()
    samples = pipeline.split_samples(settings, dataset, trained.graph, split, trained.config, cap=cap,
                                     prior=trained.prior, text=trained.text)
    bounds = part_bounds(len(samples))
    saved = g_agent_parts(pipeline.g_agent_file(settings, dataset, split), meta["key"], len(bounds))

    def build(start: int, stop: int) -> dict:
        chunk = samples.subset(range(start, stop))
        vectors = trained.text.questions(chunk.texts)
        began = time.perf_counter()
        ptr, scores = score_samples(trained.model, trained.graph, trained.text, chunk, vectors)
        seconds = time.perf_counter() - began
        g_agent = trained.g_agent(chunk, Evaluation({}, ptr, scores, seconds), oracle=split == "train", meta=meta,
                                  vectors=vectors)
        return {"scores": scores, "score_seconds": seconds, "g_agent": g_agent}

    return [saved.get(k, lambda k=k: build(*bounds[k])) for k in parts]


def budget_splits(settings, dataset: str) -> list[str]:
    """The splits the budget names: the retriever's train and validation splits (the demo KG: its one split)."""
    available = set(pipeline.available_splits(settings, dataset))
    return [s for s in dict.fromkeys(pipeline.retriever_splits(dataset)) if s in available]


@task(name="evaluate-split", cache_policy=NO_CACHE)
def evaluate_split(dataset: str, split: str, checkpoint: str | None, anchor_top_k: int | None,
                   shards: int | None = None, cap: int | None = None) -> dict:
    """Recall report and g_agent of one split (the questions its budget names, or ``cap`` of them); the scoring
    and materialisation run in ``shards`` tasks (one on the default runner; a few per Dask worker) over fixed
    runs of questions, each run kept on disk as it finishes, concatenated in order."""
    settings = get_settings()
    trained = trained_retriever(dataset, checkpoint, anchor_top_k)
    cfg = trained.config
    key = trained.g_agent_key(settings.dataset_dir(dataset) / "questions.jsonl", f"{split}:{cap}")
    g_file, report_file = pipeline.g_agent_file(settings, dataset, split), pipeline.hrag_dir(settings, dataset) / "eval"
    if g_file.is_file() and (report_file / f"{split}.json").is_file():  # a re-run: what is written is current
        g_agent = GAgentSplit.load(g_file)
        if g_agent.meta.get("key") == key:
            saved = json.loads((report_file / f"{split}.json").read_text())
            return {"split": split, "report": saved["report"], "g_agent": str(g_file),
                    "g_agent_summary": g_agent.summary(), "triples_per_second": saved["triples_per_second"],
                    "files": {k: str(report_file / f"{split}.{k}") for k in ("json", "md", "png")}, "reused": True}
    questions = pipeline.split_questions(settings, dataset, split, cfg, cap=cap)
    focus = trained.focus([q.text for q in questions])
    if settings.task_runner == "dask" and not pipeline.samples_path(settings, dataset, split, cfg, questions,
                                                                     trained.graph, focus).is_file():
        sharded_samples(dataset, split, cfg.model_dump_json(), cap=cap)  # missing samples: in shards on the cluster
    samples = pipeline.split_samples(settings, dataset, trained.graph, split, cfg, cap=cap, prior=trained.prior,
                                     text=trained.text)
    trained.text.questions(samples.texts)  # once, into the embedder's cache, which every shard then reads
    meta = {"split": split, "dataset": dataset, "checkpoint": str(trained.checkpoint), "key": key}
    bounds = part_bounds(len(samples))
    costs = samples.question_triple_counts()
    ranges = contiguous_ranges([int(costs[a:b].sum()) for a, b in bounds], shards or shards_for(settings))
    futures = [score_shard.with_options(task_run_name=f"score-and-materialise-{split}-{k + 1}of{len(ranges)}")
               .submit(dataset, split, str(trained.checkpoint), anchor_top_k, cap, list(range(a, b)), meta)
               for k, (a, b) in enumerate(ranges)]
    parts = [p for f in futures for p in f.result()]
    scores = np.concatenate([p["scores"] for p in parts]) if parts else np.zeros(0, np.float32)
    ptr = np.concatenate([[0], np.cumsum(samples.question_triple_counts())]).astype(np.int64)
    evaluation = Evaluation(recall_report(trained.graph, samples, ptr, scores), ptr, scores,
                            sum(p["score_seconds"] for p in parts))
    title = f"Retriever recall@K, {dataset} {split} (n={len(samples)})"
    paths = write_report(report_file, split, evaluation, title)
    if parts:
        g_agent = GAgentSplit.concat([p["g_agent"] for p in parts])
    else:  # no questions: an empty split
        g_agent = trained.g_agent(samples, evaluation, oracle=split == "train", meta=meta)
    g_path = g_agent.save(g_file)
    g_agent_parts(g_file, key, len(bounds)).clear()
    key = artifact_key("retriever-eval", dataset, split)
    create_table_artifact(table=[{"rows": k, **{m: round(v, 4) if isinstance(v, float) else v for m, v in row.items()}}
                                 for k, row in evaluation.report.items()], key=key, description=title)
    create_image_artifact(image_url=png_data_url(paths["png"]), key=artifact_key(key, "chart"), description=title)
    create_markdown_artifact(key=artifact_key(key, "plot"), description=title,
                             markdown=f"# {title}\n\n{report_table(evaluation.report)}\n\n{png_markdown(paths['png'])}\n")
    return {"split": split, "report": evaluation.report, "g_agent": str(g_path), "g_agent_summary": g_agent.summary(),
            "triples_per_second": evaluation.triples_per_second, "files": {k: str(v) for k, v in paths.items()},
            "shards": len(ranges), "questions": len(samples)}


@flow(name="retriever-eval", log_prints=True)
def retriever_eval(dataset: str | DatasetSpec = "metaqa", run_all_splits: bool = True, split: str = "test",
                   checkpoint: str | None = None, anchor_top_k: int | None = None,
                   max_questions: int | None = None) -> dict:
    """Evaluate the latest (or given) retriever checkpoint and write g_agent: for the splits the training budget
    names (``run_all_splits``: train and validation, at the trained run's caps) or for ``split`` (any split, e.g.
    test, only on request), with ``max_questions`` of it when given (a seeded sample; 0 = all)."""
    settings = get_settings()
    dataset = spec_of(dataset, settings).name  # a spec from the CLI; a deployment's name resolved here
    splits = budget_splits(settings, dataset) if run_all_splits else [split]
    return {s: evaluate_split(dataset, s, checkpoint, anchor_top_k, cap=max_questions) for s in splits}


@flow(name="retriever-eval-file", log_prints=True)
def retriever_eval_file(dataset: str | DatasetSpec = "metaqa", questions: str = "", hop: int | None = None,
                        checkpoint: str | None = None) -> dict:
    """Evaluate the latest (or given) retriever checkpoint on a question file (``kgrag retriever-eval
    --questions``; no g_agent is written): ``{"report": recall report, "info": what was read}``."""
    settings = get_settings()
    dataset = spec_of(dataset, settings).name
    require_question_file(questions)  # named before the checkpoint is looked for
    evaluation, info = evaluate_question_file(settings, dataset, Path(questions), hop,
                                              Path(checkpoint) if checkpoint else None)
    return {"report": evaluation.report, "info": info}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Evaluate the retriever and materialize g_agent.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default=None, help="one split (default: the budget's train and validation)")
    parser.add_argument("--max-questions", type=int, default=None, help="with --split: a seeded sample of N")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--anchor-top-k", type=int, default=None)
    args = parser.parse_args(argv)
    result = on_task_runner(retriever_eval)(dataset=args.dataset, run_all_splits=args.split is None, split=args.split or "test",
                            checkpoint=args.checkpoint, anchor_top_k=args.anchor_top_k,
                            max_questions=args.max_questions)
    for name, part in result.items():
        print(f"## {name}\n{report_table(part['report'])}\n")
    print(json.dumps({k: v["g_agent"] for k, v in result.items()}))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
