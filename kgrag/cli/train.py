"""The training stages: ``kgrag train-retriever`` and ``kgrag train-gflownet`` (H-RAG on a prepared dataset) and
``kgrag train-intent`` (the agent's question → schema-element ranker) and ``kgrag train-planner`` (the plan scorer over
real human questions, :mod:`kgrag.reading.train`); each runs its Prefect flow and prints
what it returns.

    kgrag train-retriever --dataset demo --epochs 1 && kgrag retriever-eval --dataset demo && kgrag train-gflownet
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from kgrag.cli.above import above
from kgrag.cli.inputs import config_overrides, dataset_of
from kgrag.cli.output import console, friendly_errors
from kgrag.config import get_settings
from kgrag.errors import KgragError
from kgrag.progress import stage
from kgrag.terminal.tables import figures_table

__all__ = ["IntentSource", "train_gflownet_cmd", "train_intent_cmd", "train_planner_cmd", "train_retriever_cmd"]


@friendly_errors
def train_retriever_cmd(
    dataset: Annotated[str, typer.Option(help="Prepared dataset to train on. (kgrag kg list)")] = "metaqa",
    epochs: Annotated[int | None, typer.Option(help="Most epochs (early stopping may end sooner).")] = None,
    max_train_questions: Annotated[int | None, typer.Option(help="Train on this many train questions (0 = all).")] = None,
    config: Annotated[str | None, typer.Option(help="JSON object of RetrieverConfig fields.")] = None,
) -> None:
    """Train the H-RAG dense triple retriever (flow `train-retriever`): PPR G_retrieval, labels, BCE training with
    early stopping on validation recall@K. Checkpoints under <KGRAG_WORK_DIR>/checkpoints/retriever/."""
    train_retriever = above("flows.train_retriever").train_retriever
    from kgrag.hrag.retrieval.config import RetrieverConfig

    overrides = config_overrides(config, RetrieverConfig, epochs=epochs, max_train_questions=max_train_questions)
    with stage(f"kgrag train-retriever --dataset {dataset}"):
        result = train_retriever(dataset=dataset_of(dataset), config=overrides)
    for row in result["history"]:
        console.print(f"epoch {row['epoch']}: loss {row['loss']:.4f}, {row['train_seconds']:.1f}s, "
                      + ", ".join(f"{k} {v:.4f}" for k, v in row.items() if k.startswith("val_") and isinstance(v, float)))
    console.print(f"best epoch {result['best_epoch']}, checkpoint {result['checkpoint']}")


class IntentSource(StrEnum):
    self_supervised = "self"
    labelled = "labelled"


@friendly_errors
def train_intent_cmd(
    kn: Annotated[str, typer.Option(help="The stored network (kgrag kn list).")] = "medical",
    source: Annotated[IntentSource, typer.Option(help="self: questions synthesised from the network (no labels); "
                                                 "labelled: CE-Prompt questions with Cypher (the medical network).")
                      ] = IntentSource.self_supervised,
    questions: Annotated[Path | None, typer.Option(help="With --source labelled: the CE-Prompt JSON file (default: "
                                                   "<data_dir>/medical/questions_cypher_train.json).")] = None,
    per_candidate: Annotated[int, typer.Option(min=1, max=500, help="With --source self: questions per schema "
                                               "element.")] = 48,
    config: Annotated[str | None, typer.Option(help="JSON object of IntentConfig fields.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Retrain even when the same inputs finished.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run's figures as JSON on the last line.")] = False,
) -> None:
    """Train the agent's question → schema-element ranker (flow `train-intent`): from the network itself
    (`--source self`, any network, no labelled question) or from labelled questions (`--source labelled`). The
    agent picks it up with KGRAG_AGENT_INTENT=auto|self|labelled."""
    flow = above("flows.train_intent")
    from kgrag.agent.kn.intent import IntentConfig

    if questions is not None and source != IntentSource.labelled:
        raise KgragError("--questions needs --source labelled (self-supervised training reads no question file)")
    if questions is not None and not questions.is_file():
        raise KgragError(f"question file not found: {questions}")
    overrides = config_overrides(config, IntentConfig)
    if source == IntentSource.self_supervised:
        flow.require_network(kn)  # the flow checks it too; here before Prefect starts
    result = flow.train_intent(config=overrides, force=force, source=source.value, kn_id=kn,
                          questions=str(questions) if questions else None, per_candidate=per_candidate)
    if source == IntentSource.self_supervised:
        console.print(figures_table(
            f"self-supervised intent ranker: {kn}", ("candidates", "questions", "labels", "n-grams", "train s", "total s"),
            (result["candidates"], result["questions"], result["labels"], result["n_features"],
             f"{result['train_seconds']:.2f}", f"{result['seconds']:.1f}")))
        for example in result["examples"][:5]:
            console.print(f"  {escape(example['question'])}  →  {escape(example['label'])}", highlight=False)
        figures = {k: result[k] for k in ("kn_id", "source", "candidates", "questions", "labels", "seconds")}
    else:
        v = result["validation"]
        console.print(f"labelled intent ranker: validation accuracy@1 {v['accuracy@1']:.4f} (n={v['n']}), "
                      f"run {result['run_dir']}")
        figures = {"kn_id": kn, "source": "labelled", "accuracy@1": v["accuracy@1"], "n": v["n"]}
    console.print(f"run dir {result['run_dir']}" + (" (cached)" if result.get("cached") else ""))
    if json_out:
        print(json.dumps(figures))


@friendly_errors
def train_gflownet_cmd(
    dataset: Annotated[str, typer.Option(help="Prepared dataset with g_agent files (run retriever-eval). (kgrag kg list)")] = "metaqa",
    steps: Annotated[int | None, typer.Option(help="Optimiser steps (one batch of trajectories each).")] = None,
    objective: Annotated[str | None, typer.Option(help="tb (trajectory balance) or subtb.")] = None,
    device: Annotated[str | None, typer.Option(help="torch device: auto (the default: the GPU when present), cpu, "
                                               "cuda, mps.")] = None,
    config: Annotated[str | None, typer.Option(help="JSON object of GFlowNetConfig fields.")] = None,
    train_g_agent: Annotated[Path | None, typer.Option(help="data.cache_paths.train (default: the work dir's).")] = None,
    validation_g_agent: Annotated[Path | None, typer.Option(help="data.cache_paths.validation.")] = None,
) -> None:
    """Train the H-RAG GFlowNet path reasoner on <split>_g_agent.pt (flow `train-gflownet`); checkpoints under
    <KGRAG_WORK_DIR>/checkpoints/gflownet/, resumed after a kill; prints the validation answers table."""
    train_gflownet = above("flows.train_gflownet").train_gflownet
    from kgrag.hrag.gflownet.config import GFlowNetConfig
    from kgrag.hrag.gflownet.evaluate import metrics_table

    overrides = config_overrides(config, GFlowNetConfig, steps=steps, objective=objective, device=device)
    paths = {k: str(v) for k, v in (("train", train_g_agent), ("validation", validation_g_agent)) if v}
    with stage(f"kgrag train-gflownet --dataset {dataset}"):
        result = train_gflownet(dataset=dataset_of(dataset), config=overrides, cache_paths=paths)
    for row in result["history"]:
        console.print(f"step {row['step']}: loss {row['loss']:.3f}, correct {row['correct']:.3f}, "
                      f"val hits@1 {row['val_hits@1']:.4f}, {row['train_seconds']:.0f}s")
    console.print(f"best step {result['best_step']}, checkpoint {result['checkpoint']}, "
                  f"threshold {result['validation']['threshold']}")
    print(metrics_table(result["validation"]["report"]))


@friendly_errors
def train_planner_cmd(
    data: Annotated[Path | None, typer.Option(help="Folder of databases as networks with questions.jsonl "
                                              "(default: <data_dir>/spider_train).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the split by database and of the model.")] = 13,
    held_out: Annotated[bool, typer.Option("--held-out", help="Also score the held-out databases (run it once).")
                        ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the run's figures as JSON on the last line.")] = False,
) -> None:
    """Train the plan scorer (flow `train-planner`): real human questions over many databases, split by database,
    a gradient-boosted scorer of (question, candidate plan) and its calibrated confidence; the agent reads it from
    <KGRAG_WORK_DIR>/checkpoints/planner/current (else the model shipped in the package, else the rules)."""
    flow = above("flows.train_planner")
    root = data or get_settings().data_dir / "spider_train"
    flow.require_corpus(root)
    meta = flow.train_planner(data=str(root), seed=seed, held_out=held_out)
    f = meta["figures"]
    rows = [(name, f[name]["n"], f[name]["f1"], f[name]["exact"], f[name]["calibration"]["ece"],
             f[name]["calibration"]["right_at_0.8"])
            for name in ("validation", "validation_rules", "held_out", "held_out_rules") if name in f]
    console.print(figures_table(f"plan scorer {meta['fingerprint']} (seed {seed})",
                                ("set", "questions", "F1", "exact", "ECE", "right at ≥0.8"), *rows))
    console.print(f"default abstention threshold (right ≥ 90 % on validation): {f['min_confidence_for_90']}; "
                  f"run dir {meta['run_dir']} ({meta['seconds']} s)")
    if json_out:
        print(json.dumps({"fingerprint": meta["fingerprint"], "run_dir": meta["run_dir"],
                          **{name: {k: f[name][k] for k in ("n", "f1", "exact")} for name, *_ in rows}}))
