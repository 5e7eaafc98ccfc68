"""Answer evaluation flow: the trained GFlowNet policy on a g_agent split, or the whole chain on a question file.

``evaluate(dataset, split="validation")`` answers ``<split>_g_agent.pt``; ``evaluate(dataset, questions=PATH)`` runs
the online reasoner (PPR → retriever + chain prior → g_agent → policy → answers) on any MetaQA-format file. Both report Hits@1 / Hit /
F1 per hop with denominators (JSON under ``work/<dataset>/hrag/eval/answers_<name>.json`` and a Prefect artifact).
A split is answered in tasks over contiguous question ranges (``answer-<split>-<i>of<n>``): one on the default
runner, a few per worker on Dask (``KGRAG_TASK_RUNNER=dask``); the per-question metrics are joined in order.
Run: ``python -m flows.evaluate --dataset metaqa [--split validation | --questions PATH --hop N]`` or
``kgrag eval``.
"""

from __future__ import annotations

import argparse
import json
from functools import lru_cache
from pathlib import Path

import numpy as np
from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from kgrag.config import get_settings
from kgrag.data.question_files import require_question_file
from kgrag.data.registry import spec_of
from kgrag.data.spec import DatasetSpec
from kgrag.hrag.gflownet import pipeline as policy_data
from kgrag.hrag.gflownet.answers import summarise
from kgrag.hrag.gflownet.evaluate import (
    TrainedPolicy,
    answer_data,
    flat_figures,
    load_trained_policy,
    metrics_table,
    write_answers_report,
)
from kgrag.hrag.online.file_eval import evaluate_file
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.retrieval import pipeline as retrieval
from kgrag.hrag.retrieval.g_agent import GAgentSplit
from kgrag.hrag.retrieval.sharding import contiguous_ranges
from kgrag.hrag.retrieval.stage_inputs import load_graph
from kgrag.hrag.retrieval.text import TextEmbeddings
from kgrag.ops.task_runner import limit_threads, on_task_runner, shards_for
from kgrag.progress import counter
from kgrag.rank.sentence_embedder import Embedder


@lru_cache(maxsize=2)
def loaded_policy(work_dir: str, dataset: str, checkpoint: str, stamp: int) -> tuple[TrainedPolicy, TextEmbeddings]:
    """The policy and the graph's text vectors, loaded once per process (``stamp``: the checkpoint's mtime)."""
    settings = get_settings()
    graph = load_graph(settings, dataset)
    text = TextEmbeddings.for_graph(graph, retrieval.hrag_dir(settings, dataset), Embedder.from_settings(settings))
    return load_trained_policy(settings, dataset, Path(checkpoint)), text


def trained_policy(dataset: str, checkpoint: str | None) -> tuple[TrainedPolicy, TextEmbeddings]:
    settings = get_settings()
    path = retrieval.checkpoint_input(settings, dataset, checkpoint, kind="gflownet")
    return loaded_policy(str(settings.work_dir), dataset, str(path), path.stat().st_mtime_ns)


@task(name="answer-shard", cache_policy=NO_CACHE)
def answer_shard(dataset: str, split: str, checkpoint: str, start: int, stop: int) -> dict:
    """Per-question Hits@1 / Hit / F1 of the split's questions ``start:stop`` (on whichever worker runs it)."""
    settings = get_settings()
    limit_threads(settings)
    trained, text = trained_policy(dataset, checkpoint)
    agent = GAgentSplit.load(retrieval.g_agent_input(settings, dataset, split)).subset(range(start, stop))
    data = policy_data.agent_data(agent, text, policy_data.split_gold(settings, dataset, split))
    return {"metrics": answer_data(trained, data, text.entities).metrics, "hops": data.hops}


def answer_split(dataset: str, split: str, checkpoint: str | None, shards: int | None = None) -> dict:
    """The split's per-hop report, answered in ``shards`` tasks over contiguous question ranges."""
    settings = get_settings()
    trained, _ = trained_policy(dataset, checkpoint)
    agent = GAgentSplit.load(retrieval.g_agent_input(settings, dataset, split))
    ranges = contiguous_ranges(np.diff(agent.tensors["edge_ptr"].numpy()), shards or shards_for(settings))
    futures = [answer_shard.with_options(task_run_name=f"answer-{split}-{k + 1}of{len(ranges)}")
               .submit(dataset, split, str(trained.checkpoint), a, b) for k, (a, b) in enumerate(ranges)]
    parts = [f.result() for f in futures]
    metrics = {k: np.concatenate([p["metrics"][k] for p in parts]) for k in parts[0]["metrics"]} if parts else {}
    report = summarise(metrics, [h for p in parts for h in p["hops"]])
    return {"report": report, "info": {"split": split, "policy": str(trained.checkpoint),
                                       "threshold": trained.threshold, "shards": len(ranges)}}


@flow(name="evaluate", log_prints=True)
def evaluate(dataset: str | DatasetSpec = "metaqa", split: str = "validation", questions: str | None = None,
             hop: int | None = None, retriever_checkpoint: str | None = None,
             policy_checkpoint: str | None = None, no_brackets: bool = False) -> dict:
    """Hits@1 / Hit / F1 of the latest (or given) checkpoints on ``split`` or on the ``questions`` file (with
    ``no_brackets``: topics linked from the text with its brackets removed)."""
    settings = get_settings()
    dataset = spec_of(dataset, settings).name  # a spec from the CLI; a deployment's name resolved here
    require_question_file(questions)  # named before the checkpoints are looked for
    if questions:
        reasoner = HRAGReasoner.load(settings, dataset, _path(retriever_checkpoint), _path(policy_checkpoint))
        with counter(f"answering {Path(questions).name}", "question") as progress:
            answers = evaluate_file(reasoner, Path(questions), hop, no_brackets, progress=progress)
        report, info = answers.report, answers.info
        name = f"file_{Path(questions).stem}" + ("_no_brackets" if no_brackets else "")
    else:
        answered = answer_split(dataset, split, policy_checkpoint)
        report, info = answered["report"], answered["info"]
        name = split
    path = write_answers_report(retrieval.hrag_dir(settings, dataset) / "eval", name, report, info)
    title = f"Answers on {dataset} {name}"
    create_markdown_artifact(key=artifact_key("answers", dataset, name, max_length=60), description=title,
                             markdown=f"# {title}\n\n{metrics_table(report)}\n")
    figures = flat_figures(report)
    if "stage_seconds" in info:  # the time answering took (the reasoner's load left out)
        figures["answer_seconds"] = round(sum(info["stage_seconds"].values()), 3)
    return {"report": report, "info": info, "file": str(path), "figures": figures}


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Evaluate the GFlowNet answers on a split or a question file.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--questions", default=None)
    parser.add_argument("--hop", type=int, default=None)
    parser.add_argument("--no-brackets", action="store_true", help="link topics from the text, brackets removed")
    args = parser.parse_args(argv)
    result = on_task_runner(evaluate)(dataset=args.dataset, split=args.split, questions=args.questions, hop=args.hop,
                      no_brackets=args.no_brackets)
    print(metrics_table(result["report"]))
    print(json.dumps(result["figures"]))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
