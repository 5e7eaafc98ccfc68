"""The H-RAG training pipeline as one flow: train the retriever → evaluate it and write g_agent → train the GFlowNet
reasoner on that g_agent (subflows, so the reasoner always waits on the retriever it reads, and the Prefect UI
shows the three runs under one parent). Each step resumes from its checkpoints and caches.

Run: ``python -m flows.hrag_pipeline --dataset metaqa [--retriever-config JSON] [--gflownet-config JSON]``.
"""

from __future__ import annotations

import argparse
import json

from prefect import flow

from flows.retriever_eval import retriever_eval
from flows.train_gflownet import train_gflownet
from flows.train_retriever import train_retriever
from kgrag.hrag.retrieval.pipeline import retriever_splits
from kgrag.ops.task_runner import on_task_runner


@flow(name="hrag-pipeline", log_prints=True)
def hrag_pipeline(dataset: str = "metaqa", retriever_config: dict | None = None,
                  gflownet_config: dict | None = None, train_split: str | None = None,
                  validation_split: str | None = None) -> dict:
    """Retriever, g_agent of the budget's train and validation questions, then the reasoner; returns each step's
    summary. The splits default to the dataset's (train / validation; the demo KG's one ``test`` split for both)."""
    default_train, default_validation = retriever_splits(dataset)
    train_split, validation_split = train_split or default_train, validation_split or default_validation
    retriever = train_retriever(dataset=dataset, config=retriever_config, train_split=train_split,
                                validation_split=validation_split)
    evaluated = on_task_runner(retriever_eval)(dataset=dataset, run_all_splits=True)
    reasoner = train_gflownet(dataset=dataset, config=gflownet_config, train_split=train_split,
                              validation_split=validation_split)
    return {"retriever": {k: retriever[k] for k in ("checkpoint", "best_epoch", "best_metric", "resumed_from")},
            "g_agent": {split: part["g_agent"] for split, part in evaluated.items()},
            "reasoner": {"checkpoint": reasoner["checkpoint"], "threshold": reasoner["validation"]["threshold"],
                         "report": reasoner["validation"]["report"], "resumed_from": reasoner["resumed_from"]}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Train the H-RAG retriever, write g_agent, train the reasoner.")
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--retriever-config", default=None, help="JSON object of RetrieverConfig fields")
    parser.add_argument("--gflownet-config", default=None, help="JSON object of GFlowNetConfig fields")
    args = parser.parse_args(argv)
    result = hrag_pipeline(dataset=args.dataset,
                           retriever_config=json.loads(args.retriever_config) if args.retriever_config else None,
                           gflownet_config=json.loads(args.gflownet_config) if args.gflownet_config else None)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
