"""Retriever evaluation + g_agent materialization flow (spec h-rag.md §4.4, the ``stage=retriever_eval`` stage).

By default every split of the prepared questions (``run_all_splits=True``); ``run_all_splits=False`` with ``split``
runs one. Per split: G_retrieval samples → retriever scores → recall report (JSON, markdown table, PNG; also as
Prefect artifacts) → ``<split>_g_agent.pt`` (oracle mode for ``train``: top-K ∪ GT; pruned for the others).
Run: ``python -m flows.retriever_eval --dataset metaqa [--split validation]`` or ``kgrag retriever-eval``.
"""

from __future__ import annotations

import argparse
import json

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact
from prefect.cache_policies import NO_CACHE

from kgrag.config import get_settings
from kgrag.hrag import pipeline
from kgrag.hrag.evaluate import evaluate_samples, load_trained, png_markdown, write_report
from kgrag.hrag.g_agent import GAgentSplit
from kgrag.hrag.metrics import report_table


@task(name="evaluate-split", cache_policy=NO_CACHE)
def evaluate_split(dataset: str, split: str, checkpoint: str | None, anchor_top_k: int | None) -> dict:
    settings = get_settings()
    trained = load_trained(settings, dataset, checkpoint)
    if anchor_top_k:
        trained.config = trained.config.model_copy(update={"anchor_top_k": anchor_top_k})
    cfg = trained.config
    key = trained.g_agent_key(settings.dataset_dir(dataset) / "questions.jsonl", split)
    g_file, report_file = pipeline.g_agent_file(settings, dataset, split), pipeline.hrag_dir(settings, dataset) / "eval"
    if g_file.is_file() and (report_file / f"{split}.json").is_file():  # a re-run: what is written is current
        g_agent = GAgentSplit.load(g_file)
        if g_agent.meta.get("key") == key:
            saved = json.loads((report_file / f"{split}.json").read_text())
            return {"split": split, "report": saved["report"], "g_agent": str(g_file),
                    "g_agent_summary": g_agent.summary(), "triples_per_second": saved["triples_per_second"],
                    "files": {k: str(report_file / f"{split}.{k}") for k in ("json", "md", "png")}, "reused": True}
    samples = pipeline.split_samples(settings, dataset, trained.graph, split, cfg)
    evaluation = evaluate_samples(trained, samples)
    title = f"Retriever recall@K, {dataset} {split} (n={len(samples)})"
    paths = write_report(pipeline.hrag_dir(settings, dataset) / "eval", split, evaluation, title)
    g_agent = trained.g_agent(samples, evaluation, oracle=split == "train",
                              meta={"split": split, "dataset": dataset, "checkpoint": str(trained.checkpoint),
                                    "key": key})
    g_path = g_agent.save(pipeline.g_agent_file(settings, dataset, split))
    key = f"retriever-eval-{dataset}-{split}"
    create_table_artifact(table=[{"rows": k, **{m: round(v, 4) if isinstance(v, float) else v for m, v in row.items()}}
                                 for k, row in evaluation.report.items()], key=key, description=title)
    create_markdown_artifact(key=f"{key}-plot", description=title,
                             markdown=f"# {title}\n\n{report_table(evaluation.report)}\n\n{png_markdown(paths['png'])}\n")
    return {"split": split, "report": evaluation.report, "g_agent": str(g_path), "g_agent_summary": g_agent.summary(),
            "triples_per_second": evaluation.triples_per_second, "files": {k: str(v) for k, v in paths.items()}}


@flow(name="retriever-eval", log_prints=True)
def retriever_eval(dataset: str = "metaqa", run_all_splits: bool = True, split: str = "test",
                   checkpoint: str | None = None, anchor_top_k: int | None = None) -> dict:
    """Evaluate the latest (or given) retriever checkpoint and write g_agent, for all splits or ``split``."""
    settings = get_settings()
    splits = pipeline.available_splits(settings, dataset) if run_all_splits else [split]
    return {s: evaluate_split(dataset, s, checkpoint, anchor_top_k) for s in splits}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Evaluate the retriever and materialize g_agent.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default=None, help="one split (default: all splits)")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--anchor-top-k", type=int, default=None)
    args = parser.parse_args(argv)
    result = retriever_eval(dataset=args.dataset, run_all_splits=args.split is None, split=args.split or "test",
                            checkpoint=args.checkpoint, anchor_top_k=args.anchor_top_k)
    for name, part in result.items():
        print(f"## {name}\n{report_table(part['report'])}\n")
    print(json.dumps({k: v["g_agent"] for k, v in result.items()}))


if __name__ == "__main__":
    main()
