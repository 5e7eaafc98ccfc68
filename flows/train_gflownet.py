"""GFlowNet training flow (spec h-rag.md, the H-RAG specification of a triple retriever and a GFlowNet path
reasoner, §4.2–4.3, §5: ``experiment=train_gflownet data.cache_paths.*``).

Reads the ``<split>_g_agent.pt`` files written by the retriever-eval flow (``cache_paths`` overrides them), trains
the path policy with checkpoints every ``checkpoint_every`` steps (a killed run resumes from the last one with the
same result), then calibrates the answer threshold on the validation split (best mean F1), writes the validation
answers report and publishes artifacts: per-checkpoint table, learning curve PNG, validation metrics table.
Run: ``python -m flows.train_gflownet --dataset metaqa`` or ``kgrag train-gflownet``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import torch
from prefect import flow, task
from prefect.artifacts import create_image_artifact, create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from kgrag.config import get_settings
from kgrag.data.registry import spec_of
from kgrag.data.spec import DatasetSpec
from kgrag.fileio import png_data_url
from kgrag.hrag.gflownet import pipeline
from kgrag.hrag.gflownet.answers import answer_metrics, choose_threshold, summarise
from kgrag.hrag.gflownet.config import GFlowNetConfig
from kgrag.hrag.gflownet.evaluate import answer_data, load_trained_policy, metrics_table, write_answers_report
from kgrag.hrag.gflownet.plots import plot_learning_curve
from kgrag.hrag.gflownet.train import finished_run
from kgrag.hrag.gflownet.train import train_gflownet as run_training
from kgrag.hrag.retrieval import pipeline as retrieval
from kgrag.hrag.retrieval.evaluate import png_markdown
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.hrag.retrieval.train import save_checkpoint
from kgrag.rank.sentence_embedder import Embedder


def _paths(dataset: str, splits: tuple[str, str], cache_paths: dict[str, str] | None) -> dict[str, Path]:
    settings = get_settings()
    given = cache_paths or {}
    return {s: Path(given[s]) if given.get(s) else retrieval.g_agent_file(settings, dataset, s) for s in splits}


@task(name="train-gflownet", cache_policy=NO_CACHE)
def train(dataset: str, config_json: str, train_split: str, validation_split: str, cache_paths: dict) -> dict:
    settings = get_settings()
    cfg = GFlowNetConfig.model_validate_json(config_json)
    files = _paths(dataset, (train_split, validation_split), cache_paths)
    run_dir = pipeline.run_dir(settings, dataset, cfg)
    done = finished_run(run_dir, cfg)
    if done is not None:  # a re-run: nothing to load
        pipeline.record_latest(settings, dataset, run_dir)
        return {"checkpoint": str(done.checkpoint), "best_step": done.best_step, "best_hits1": done.best_hits1,
                "history": done.history, "resumed_from": done.resumed_from, "train_seconds": done.train_seconds,
                "validation_file": str(files[validation_split])}
    train_file = retrieval.g_agent_input(settings, dataset, train_split, files[train_split])
    validation_file = retrieval.g_agent_input(settings, dataset, validation_split, files[validation_split])
    graph = load_graph(settings, dataset)
    text = TextEmbeddings.for_graph(graph, retrieval.hrag_dir(settings, dataset), Embedder.from_settings(settings))
    train_data = pipeline.agent_data(GAgentSplit.load(train_file), text,
                                     pipeline.split_gold(settings, dataset, train_split), cfg.max_pool_edges,
                                     cfg.gt_walks, cfg.seed)
    validation = pipeline.agent_data(GAgentSplit.load(validation_file), text,
                                     pipeline.split_gold(settings, dataset, validation_split))
    plan = pipeline.plan_data(settings, dataset, train_split, graph, text, cfg.max_steps, cfg.max_plan_questions)
    result = run_training(cfg, train_data, validation, text.entities, text.relations, run_dir,
                          log=lambda line: sys.stderr.write(line + "\n"),
                          meta={"dataset": dataset, "g_agent": {k: str(v) for k, v in files.items()}}, plan=plan)
    pipeline.record_latest(settings, dataset, run_dir)
    return {"checkpoint": str(result.checkpoint), "best_step": result.best_step, "best_hits1": result.best_hits1,
            "history": result.history, "resumed_from": result.resumed_from, "train_seconds": result.train_seconds,
            "train_questions": len(train_data), "plan_questions": len(plan), "validation_file": str(files[validation_split])}


@task(name="calibrate-and-validate", cache_policy=NO_CACHE)
def calibrate(dataset: str, checkpoint: str, validation_split: str, validation_file: str) -> dict:
    """Answer the whole validation split with the best policy, choose the F1 threshold there, save it in
    ``best.pt`` and report Hits@1 / Hit / F1 per hop with that threshold."""
    settings = get_settings()
    trained = load_trained_policy(settings, dataset, Path(checkpoint))
    report_file = retrieval.hrag_dir(settings, dataset) / "eval" / f"answers_{validation_split}.json"
    key = _calibration_key(Path(checkpoint), Path(validation_file), trained.config)
    if report_file.is_file():  # a re-run with the same policy, g_agent and answering settings: the saved report
        saved = json.loads(report_file.read_text())
        if saved.get("key") == key and saved.get("checkpoint") == checkpoint:
            return {"threshold": saved["threshold"], "report": saved["report"], "file": str(report_file)}
    graph = load_graph(settings, dataset)
    text = TextEmbeddings.for_graph(graph, retrieval.hrag_dir(settings, dataset), Embedder.from_settings(settings))
    data = pipeline.agent_data(GAgentSplit.load(retrieval.g_agent_input(settings, dataset, validation_split,
                                                                          validation_file)), text,
                               pipeline.split_gold(settings, dataset, validation_split))
    answers = answer_data(trained, data, text.entities)  # beam search once; the threshold only cuts the lists
    trained.threshold = choose_threshold(answers.ranked, data.gold)
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    state["threshold"] = trained.threshold
    save_checkpoint(state, Path(checkpoint))
    answers.metrics = answer_metrics(answers.ranked, data.gold, trained.threshold)
    answers.report = summarise(answers.metrics, data.hops)
    path = write_answers_report(retrieval.hrag_dir(settings, dataset) / "eval", validation_split, answers.report,
                                {"threshold": trained.threshold, "checkpoint": checkpoint,
                                 "key": _calibration_key(Path(checkpoint), Path(validation_file), trained.config)})
    return {"threshold": trained.threshold, "report": answers.report, "file": str(path)}


def _calibration_key(checkpoint: Path, validation_file: Path, cfg: GFlowNetConfig) -> str:
    """What a calibration depends on: the policy's weights (its step and fingerprint), the validation g_agent file
    and the answering settings."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=True)
    stat = validation_file.stat()
    raw = json.dumps([state["step"], state["fingerprint"], str(validation_file), stat.st_mtime_ns, stat.st_size,
                      cfg.model_dump(include={"beam_width", "beam_lookahead", "exclude_topics", "chain_completion",
                                              "reasoner"})])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


@flow(name="train-gflownet", log_prints=True)
def train_gflownet(dataset: str | DatasetSpec = "metaqa", config: dict | None = None,
                   cache_paths: dict[str, str] | None = None, train_split: str = "train",
                   validation_split: str = "validation") -> dict:
    """Train the GFlowNet path policy on g_agent files; ``cache_paths`` = ``{"train": …, "validation": …}``."""
    dataset = spec_of(dataset, get_settings()).name  # a spec from the CLI; a deployment's name resolved here
    cfg = GFlowNetConfig(**(config or {}))
    result = train(dataset, cfg.model_dump_json(), train_split, validation_split, cache_paths or {})
    validation = calibrate(dataset, result["checkpoint"], validation_split, result["validation_file"])
    run_dir = Path(result["checkpoint"]).parent
    curve = plot_learning_curve(result["history"], run_dir / "learning_curve.png", f"GFlowNet training ({dataset})")
    title = f"GFlowNet answers, {dataset} {validation_split} (threshold {validation['threshold']})"
    table = metrics_table(validation["report"])
    create_table_artifact(table=result["history"], key=artifact_key("gflownet-training", dataset),
                          description=f"GFlowNet training per checkpoint on {dataset}")
    create_image_artifact(image_url=png_data_url(curve), key=artifact_key("gflownet-training", dataset, "chart"),
                          description=f"GFlowNet training on {dataset}: loss, correct paths, validation Hits@1")
    create_markdown_artifact(key=artifact_key("gflownet-validation", dataset), description=title,
                             markdown=f"# {title}\n\n{table}\n\n{png_markdown(curve)}\n")
    return {**result, "validation": validation, "learning_curve": str(curve), "config": cfg.model_dump()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the H-RAG GFlowNet path reasoner on g_agent files.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--config", default=None, help="JSON object of GFlowNetConfig fields")
    parser.add_argument("--train-g-agent", default=None, help="data.cache_paths.train")
    parser.add_argument("--validation-g-agent", default=None, help="data.cache_paths.validation")
    args = parser.parse_args(argv)
    paths = {k: v for k, v in (("train", args.train_g_agent), ("validation", args.validation_g_agent)) if v}
    result = train_gflownet(dataset=args.dataset, config=json.loads(args.config) if args.config else None,
                            cache_paths=paths)
    print(metrics_table(result["validation"]["report"]))
    print(json.dumps({k: v for k, v in result.items() if k not in ("history", "validation")}, default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
