"""Retriever training flow (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §3, §4.1): text vectors → G_retrieval samples (train, validation) → train.

Run: ``python -m flows.train_retriever --dataset metaqa [--epochs 8] [--max-train-questions 0]`` or
``kgrag train-retriever``. Needs ``kgrag prepare --dataset <dataset>`` first. Samples and text vectors are cached on
disk by content (see :mod:`kgrag.hrag.retrieval.pipeline`) and the tasks cache on their inputs; training resumes from the
run's ``last.pt`` and returns at once when the run already finished. With ``KGRAG_TASK_RUNNER=dask`` the name
vectors and the samples are built in shards on a Dask cluster (:mod:`flows.text_embeddings`,
:mod:`flows.retrieval_samples`): the same files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from datetime import timedelta
from pathlib import Path

from prefect import flow, task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from flows.retrieval_samples import run as sharded_samples
from flows.text_embeddings import run as run_text_embeddings
from kgrag.config import get_settings
from kgrag.data.registry import spec_of
from kgrag.data.spec import DatasetSpec
from kgrag.fileio import png_data_url
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.config import RetrieverConfig
from kgrag.hrag.retrieval.evaluate import png_markdown
from kgrag.hrag.retrieval.metrics import plot_training_curve
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.train import train_retriever as run_training
from kgrag.progress import counter


def _samples_key(context, parameters: dict) -> str:  # noqa: ARG001 - Prefect's cache_key_fn signature
    settings = get_settings()
    questions = settings.dataset_dir(parameters["dataset"]) / "questions.jsonl"
    stamp = questions.stat().st_mtime_ns if questions.is_file() else 0
    raw = f"{parameters['dataset']}:{parameters['split']}:{parameters['config_json']}:{stamp}:{settings.work_dir}"
    return "retrieval-samples-" + hashlib.sha256(raw.encode()).hexdigest()[:32]


@task(name="retrieval-samples", cache_key_fn=_samples_key, cache_expiration=timedelta(days=30), persist_result=True)
def retrieval_samples(dataset: str, split: str, config_json: str) -> dict:
    """G_retrieval + features + labels of one split (PPR batched over topic sets); returns counts."""
    settings = get_settings()
    cfg = RetrieverConfig.model_validate_json(config_json)
    graph = load_graph(settings, dataset)
    text, prior = pipeline.walk_inputs(settings, dataset, graph, cfg)
    with counter(f"G_retrieval ({split}, PPR)", "question") as progress:
        samples = pipeline.split_samples(settings, dataset, graph, split, cfg, progress=progress, prior=prior,
                                         text=text)
    counts = samples.question_triple_counts()
    return {"split": split, "questions": len(samples), "mean_triples": float(counts.mean()),
            "no_path": int((samples.positive_counts() == 0).sum())}


@task(name="chain-prior", cache_policy=NO_CACHE)
def learn_chain_prior(dataset: str, config_json: str) -> dict:
    """The relation-chain prior the run's walks and g_agent read: chain labels of the budget's chain questions
    (resumable parts), then the softmax over their chains (cached by content: a re-run reads it)."""
    settings = get_settings()
    cfg = RetrieverConfig.model_validate_json(config_json)
    _, prior = pipeline.walk_inputs(settings, dataset, load_graph(settings, dataset), cfg)
    return {"chains": 0 if prior is None else int(prior.chains.shape[0])}


@task(name="train-retriever", cache_policy=NO_CACHE)
def train(dataset: str, config_json: str, train_split: str, validation_split: str) -> dict:
    settings = get_settings()
    cfg = RetrieverConfig.model_validate_json(config_json)
    graph = load_graph(settings, dataset)
    text, prior = pipeline.walk_inputs(settings, dataset, graph, cfg)
    train_set = pipeline.split_samples(settings, dataset, graph, train_split, cfg, prior=prior, text=text)
    validation = pipeline.split_samples(settings, dataset, graph, validation_split, cfg, prior=prior, text=text)
    run_dir = pipeline.checkpoint_dir(settings, dataset, cfg)
    (run_dir / "chain_prior.npz").unlink(missing_ok=True)  # learned again from this training's questions on load
    # progress goes straight to stderr: print() inside a task becomes a Prefect INFO log, hidden at WARNING
    result = run_training(graph, text, train_set, validation, cfg, run_dir,
                          log=lambda line: sys.stderr.write(line + "\n"))
    pipeline.record_latest(settings, dataset, run_dir)
    return {"checkpoint": str(result.checkpoint), "best_epoch": result.best_epoch, "best_metric": result.best_metric,
            "history": result.history, "resumed_from": result.resumed_from, "train_questions": len(train_set)}


@flow(name="train-retriever", log_prints=True)
def train_retriever(dataset: str | DatasetSpec = "metaqa", config: dict | None = None, train_split: str = "train",
                    validation_split: str = "validation") -> dict:
    """Train the dense triple retriever on ``dataset``'s train split, early-stopping on the validation split
    (a dataset without them, like the demo KG's single ``test`` split, names the splits to use)."""
    dataset = spec_of(dataset, get_settings()).name  # a spec from the CLI; a deployment's name resolved here
    cfg = RetrieverConfig(**(config or {}))
    config_json = cfg.model_dump_json()
    run_text_embeddings(dataset)
    prior = learn_chain_prior(dataset, config_json)  # before the samples: it steers each question's walk
    splits = list(dict.fromkeys((train_split, validation_split)))
    if get_settings().task_runner == "dask":  # per-shard tasks on the cluster, merged into the same files

        counts = [sharded_samples(dataset, split, config_json) for split in splits]
    else:
        counts = [retrieval_samples(dataset, split, config_json) for split in splits]
    result = train(dataset, config_json, train_split, validation_split)
    create_table_artifact(table=result["history"], key=artifact_key("retriever-training", dataset),
                          description=f"Retriever training per epoch on {dataset}")
    curve = plot_training_curve(result["history"], Path(result["checkpoint"]).parent / "learning_curve.png",
                                f"Retriever training ({dataset})")
    create_image_artifact(image_url=png_data_url(curve), key=artifact_key("retriever-training", dataset, "chart"),
                          description=f"Retriever training on {dataset}: loss and validation recall per epoch")
    create_markdown_artifact(
        key=artifact_key("retriever-training", dataset, "summary"),
        markdown=(f"# Retriever training ({dataset})\n\ncheckpoint `{result['checkpoint']}`, best epoch "
                  f"{result['best_epoch']}\n\n{png_markdown(curve)}\n\n```json\n{json.dumps(counts, indent=1)}\n```\n"),
    )
    return {**result, "samples": counts, "config": cfg.model_dump(), "learning_curve": str(curve),
            "prior_chains": prior["chains"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the H-RAG dense triple retriever.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--config", default=None, help="JSON object of RetrieverConfig fields")
    args = parser.parse_args(argv)
    result = train_retriever(dataset=args.dataset, config=json.loads(args.config) if args.config else None)
    print(json.dumps({k: v for k, v in result.items() if k != "history"}, default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
