"""Answer evaluation flow: the trained GFlowNet policy on a g_agent split, or the whole chain on a question file.

``evaluate(dataset, split="validation")`` answers ``<split>_g_agent.pt``; ``evaluate(dataset, questions=PATH)`` runs
the online reasoner (PPR → retriever + chain prior → g_agent → policy → answers) on any MetaQA-format file. Both report Hits@1 / Hit /
F1 per hop with denominators (JSON under ``work/<dataset>/hrag/eval/answers_<name>.json`` and a Prefect artifact).
Run: ``python -m flows.evaluate --dataset metaqa [--split validation | --questions PATH --hop N]`` or
``kgrag eval``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact

from kgrag.config import get_settings
from kgrag.hrag import pipeline as retrieval
from kgrag.hrag.file_eval import evaluate_file
from kgrag.hrag.gflownet.evaluate import (
    evaluate_split,
    flat_figures,
    load_trained_policy,
    metrics_table,
    write_answers_report,
)
from kgrag.hrag.reasoner import HRAGReasoner
from kgrag.hrag.text import TextEmbeddings
from kgrag.rank.embedder import Embedder


@flow(name="evaluate", log_prints=True)
def evaluate(dataset: str = "metaqa", split: str = "validation", questions: str | None = None,
             hop: int | None = None, retriever_checkpoint: str | None = None,
             policy_checkpoint: str | None = None, no_brackets: bool = False) -> dict:
    """Hits@1 / Hit / F1 of the latest (or given) checkpoints on ``split`` or on the ``questions`` file (with
    ``no_brackets``: topics linked from the text with its brackets removed)."""
    settings = get_settings()
    if questions:
        reasoner = HRAGReasoner.load(settings, dataset, _path(retriever_checkpoint), _path(policy_checkpoint))
        answers = evaluate_file(reasoner, Path(questions), hop, no_brackets)
        info = answers.info
        name = f"file_{Path(questions).stem}" + ("_no_brackets" if no_brackets else "")
    else:
        trained = load_trained_policy(settings, dataset, policy_checkpoint)
        graph = retrieval.load_graph(settings, dataset)
        text = TextEmbeddings.for_graph(graph, retrieval.hrag_dir(settings, dataset), Embedder.from_settings(settings))
        answers = evaluate_split(settings, dataset, split, trained, text)
        info = {"split": split, "policy": str(trained.checkpoint), "threshold": trained.threshold}
        name = split
    path = write_answers_report(retrieval.hrag_dir(settings, dataset) / "eval", name, answers.report, info)
    title = f"Answers on {dataset} {name}"
    create_markdown_artifact(key=f"answers-{dataset}-{name}".replace("_", "-").lower()[:60], description=title,
                             markdown=f"# {title}\n\n{metrics_table(answers.report)}\n")
    return {"report": answers.report, "info": info, "file": str(path), "figures": flat_figures(answers.report)}


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
    result = evaluate(dataset=args.dataset, split=args.split, questions=args.questions, hop=args.hop,
                      no_brackets=args.no_brackets)
    print(metrics_table(result["report"]))
    print(json.dumps(result["figures"]))


if __name__ == "__main__":
    main()
