"""The per-question / per-shard stages on the default task runner (one process) and on a local Dask cluster
(prefect-dask, ``KGRAG_DASK_WORKERS`` single-threaded worker processes), in the same run, on one split:

1. ``text-embeddings``: the graph's relation vectors, and its entity-name vectors when the graph is small enough
   to fill them at once (blocks of names; a larger graph's are computed as questions touch them);
2. ``retrieval-samples``: G_retrieval (PPR shards of whole topic-set batches);
3. ``retriever-eval``: retriever scoring + g_agent materialisation (contiguous question ranges);
4. ``evaluate``: the GFlowNet policy's answers (contiguous question ranges).

Per stage: seconds on each runner, the ratio, and whether the outputs agree (files identical, or the g_agent's
integer tensors identical with the largest score difference, and the metrics). Also the local cluster's start
time and per-question costs for a Freebase-scale estimate.

    python -m bench.dask_scale [--dataset metaqa] [--split validation] [--workers 2]

The files the stages write are set aside for the run and put back after it (the work dir is left as found).
Writes bench/results/dask_scale.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

STAGES = ("text-embeddings", "retrieval-samples", "retriever-eval", "evaluate")


def _set_aside(paths: list[Path]) -> list[tuple[Path, Path]]:
    kept = []
    for path in paths:
        if path.exists():
            shutil.move(path, path.with_name(path.name + ".kept"))
            kept.append((path.with_name(path.name + ".kept"), path))
    return kept


def _compare_g_agent(a, b) -> dict:
    import torch

    same_ints = all(torch.equal(a.tensors[k], b.tensors[k]) for k in a.tensors if k != "edge_scores")
    differing = 0 if same_ints else sum(
        1 for i in range(len(a))
        if any(not torch.equal(a.sample(i)[k], b.sample(i)[k]) for k in ("edge_head", "edge_relation", "edge_tail")))
    return {"questions": len(a), "same_qids": a.qids == b.qids, "integer_tensors_identical": same_ints,
            "questions_with_other_edges": differing,
            "max_score_difference": float((a.tensors["edge_scores"] - b.tensors["edge_scores"]).abs().max())
            if same_ints and len(a.tensors["edge_scores"]) else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline", choices=["default", "one-worker"], default="default",
                        help="what the Dask run is compared with: the default runner (one process) or a Dask "
                             "cluster of one worker")
    parser.add_argument("--out", default="dask_scale", help="results name (bench/results/<out>.json)")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    from prefect.testing.utilities import prefect_test_harness

    from bench.common import write_result
    from kgrag.config import get_settings
    from kgrag.hrag.retrieval import pipeline
    from kgrag.hrag.retrieval.evaluate import load_trained
    from kgrag.hrag.retrieval.g_agent import GAgentSplit
    from kgrag.hrag.retrieval.text import text_file
    from kgrag.rank.sentence_embedder import Embedder

    settings = get_settings()
    trained = load_trained(settings, args.dataset)
    cfg, graph = trained.config, trained.graph
    questions = pipeline.split_questions(settings, args.dataset, args.split, cfg)
    text_path = text_file(graph, pipeline.hrag_dir(settings, args.dataset), Embedder.from_settings(settings).model_name)
    samples_path = pipeline.samples_path(settings, args.dataset, args.split, cfg, questions, graph,
                                         trained.focus([q.text for q in questions]))
    g_path = pipeline.g_agent_file(settings, args.dataset, args.split)
    eval_dir = pipeline.hrag_dir(settings, args.dataset) / "eval"
    reports = [eval_dir / f"{args.split}.{k}" for k in ("json", "md", "png")] + [eval_dir / f"answers_{args.split}.json"]
    seconds: dict[str, dict[str, float]] = {stage: {} for stage in STAGES}
    outputs: dict[str, dict] = {}
    kept = _set_aside([text_path, samples_path, g_path, *reports])
    try:
        with prefect_test_harness(server_startup_timeout=120):
            from flows.evaluate import evaluate, loaded_policy
            from flows.retrieval_samples import run as samples
            from flows.retriever_eval import loaded_retriever, retriever_eval
            from flows.text_embeddings import run as text_embeddings
            from kgrag.ops.task_runner import on_task_runner, task_runner

            started = time.perf_counter()
            os.environ["KGRAG_TASK_RUNNER"], os.environ["KGRAG_DASK_WORKERS"] = "dask", str(args.workers)
            get_settings.cache_clear()
            with task_runner(get_settings()):
                cluster_start = time.perf_counter() - started
            for kind in ("default", "dask"):
                one_worker = kind == "default" and args.baseline == "one-worker"
                os.environ["KGRAG_TASK_RUNNER"] = "dask" if one_worker else kind
                os.environ["KGRAG_DASK_WORKERS"] = "1" if one_worker else str(args.workers)
                loaded_retriever.cache_clear()  # each runner loads its models itself, in the timed stage
                loaded_policy.cache_clear()
                get_settings.cache_clear()
                out: dict = {}
                steps = {
                    "text-embeddings": lambda: text_embeddings(args.dataset),
                    "retrieval-samples": lambda: samples(args.dataset, args.split, cfg.model_dump_json()),
                    "retriever-eval": lambda: on_task_runner(retriever_eval)(
                        dataset=args.dataset, run_all_splits=False, split=args.split)[args.split],
                    "evaluate": lambda: on_task_runner(evaluate)(dataset=args.dataset, split=args.split),
                }
                for stage, step in steps.items():
                    began = time.perf_counter()
                    result = step()
                    seconds[stage][kind] = time.perf_counter() - began
                    out[stage] = result
                    print(f"[bench.dask_scale] {kind} {stage}: {seconds[stage][kind]:.1f} s", flush=True)
                with np.load(text_path) as data:
                    out["relations"] = data["relations"].astype(np.float32)  # entity vectors: the shared map
                with np.load(samples_path) as data:
                    out["samples"] = {name: data[name] for name in data.files}
                out["g_agent"] = GAgentSplit.load(g_path)
                outputs[kind] = out
                for path in (text_path, samples_path, g_path, *reports):
                    path.unlink(missing_ok=True)
    finally:
        for path in (text_path, samples_path, g_path, *reports):
            path.unlink(missing_ok=True)
        for source, target in kept:
            shutil.move(source, target)
    d, k = outputs["default"], outputs["dask"]
    agree = {
        "text-embeddings": {"max_relation_vector_difference": float(np.abs(d["relations"] - k["relations"]).max()),
                            "identical": bool(np.array_equal(d["relations"], k["relations"]))},
        "retrieval-samples": {"identical": d["samples"].keys() == k["samples"].keys() and all(
            np.array_equal(d["samples"][n], k["samples"][n]) for n in d["samples"])},
        "retriever-eval": {**_compare_g_agent(d["g_agent"], k["g_agent"]),
                           "recall_report_equal": d["retriever-eval"]["report"] == k["retriever-eval"]["report"],
                           "shards": [d["retriever-eval"]["shards"], k["retriever-eval"]["shards"]]},
        "evaluate": {"report_equal": d["evaluate"]["report"] == k["evaluate"]["report"],
                     "hits@1": [d["evaluate"]["report"]["all"]["hits@1"], k["evaluate"]["report"]["all"]["hits@1"]]},
    }
    n = len(questions)
    figures = {
        "questions": n, "graph_entities": graph.num_entities, "graph_triples": graph.num_triples,
        "cores": os.cpu_count(), "workers": args.workers, "local_cluster_start_s": round(cluster_start, 1),
        "stages": {stage: {"default_s": round(seconds[stage]["default"], 1), "dask_s": round(seconds[stage]["dask"], 1),
                           "ratio": round(seconds[stage]["default"] / seconds[stage]["dask"], 3), **agree[stage]}
                   for stage in STAGES},
        "per_question_ms_one_process": {stage: round(1000 * seconds[stage]["default"] / n, 2)
                                        for stage in STAGES if stage != "text-embeddings"},
        "per_entity_ms_one_process": round(1000 * seconds["text-embeddings"]["default"] / graph.num_entities, 4),
        "checkpoint": str(trained.checkpoint),
    }
    total = {kind: sum(seconds[s][kind] for s in STAGES) for kind in ("default", "dask")}
    print(f"\n{'stage':<18} {'default s':>10} {'dask s':>8} {'ratio':>6}")
    for stage in STAGES:
        row = figures["stages"][stage]
        print(f"{stage:<18} {row['default_s']:>10} {row['dask_s']:>8} {row['ratio']:>6}")
    figures["baseline"] = "a Dask cluster of 1 worker" if args.baseline == "one-worker" else "the default runner"
    write_result(args.out, figures, {"default_s": round(total["default"], 1)},
                 round(total["default"] / total["dask"], 3), f"{args.dataset} {args.split} (every question)", n)


if __name__ == "__main__":
    main()
