"""H-RAG retrieval on MetaQA: retriever recall@K per hop, PPR vs networkx, training and scoring speed.

Figures in one run (needs ``kgrag prepare --dataset metaqa`` and a trained retriever, ``kgrag train-retriever``):
- recall@{50,100,200,500} (answer, answer coverage, shortest-path triple with its ceiling) per hop on the validation
  split held out from the dev questions (the split also used for early stopping), with denominators; the same
  table for two baselines scored on the same G_retrieval: random scores, and "closest first" (triples ranked by
  the distance of their far end from the topic, then PPR order of the triple id);
- personalized PageRank per question: kgrag (torch sparse, batched) vs ``networkx.pagerank`` on the same graph and
  seeds, the ratio, and their agreement (top-100 sets and order);
- retriever training seconds per epoch and train triples/s (from the run's checkpoint history), scoring triples/s.
Run: ``python -m bench.retrieval [--ppr-questions 10]``; writes bench/results/retrieval.json.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
import torch

from bench.common import write_result
from bench.networkx_reference import networkx_ppr, to_networkx
from kgrag.config import get_settings
from kgrag.hrag.retrieval import pipeline
from kgrag.hrag.retrieval.evaluate import evaluate_samples, load_trained
from kgrag.hrag.retrieval.metrics import recall_report, report_table
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank


def ppr_figures(graph, seeds: list[list[int]], tol: float, batch: int) -> dict:
    ppr = PersonalizedPageRank(graph, tol=tol)
    ppr.scores(seeds[:1])  # warm-up
    t = time.perf_counter()
    single = [ppr.scores([s])[0] for s in seeds]
    ours_single = (time.perf_counter() - t) / len(seeds)
    many = (seeds * (batch // len(seeds) + 1))[:batch]
    t = time.perf_counter()
    ppr.scores(many)
    ours_batched = (time.perf_counter() - t) / len(many)
    nxg = to_networkx(graph)
    t = time.perf_counter()
    theirs = [networkx_ppr(nxg, s, graph.num_entities) for s in seeds]
    networkx_s = (time.perf_counter() - t) / len(seeds)
    overlap = [len(set(np.argsort(-a)[:100].tolist()) & set(np.argsort(-b)[:100].tolist())) / 100
               for a, b in zip(single, theirs, strict=True)]
    same = [np.array_equal(np.argsort(-a, kind="stable")[:100], np.argsort(-b, kind="stable")[:100])
            for a, b in zip(single, theirs, strict=True)]
    return {"tol_l1": tol, "networkx_s_per_question": round(networkx_s, 4),
            "kgrag_single_s_per_question": round(ours_single, 5), "kgrag_batched_s_per_question": round(ours_batched, 5),
            "batch": batch, "ratio_single": round(networkx_s / ours_single, 1),
            "ratio_batched": round(networkx_s / ours_batched, 1),
            "top100_set_overlap_mean": round(float(np.mean(overlap)), 4),
            "top100_identical_order_share": round(float(np.mean(same)), 4),
            "max_abs_score_diff": float(max(np.abs(a - b).max() for a, b in zip(single, theirs, strict=True)))}


def closest_first_scores(samples, ptr: np.ndarray) -> np.ndarray:
    scores = np.zeros(int(ptr[-1]), dtype=np.float32)
    for i in range(len(samples)):
        q = samples.question(i)
        far = np.maximum(q.head_dist, q.tail_dist).astype(np.float32)
        near = np.minimum(q.head_dist, q.tail_dist).astype(np.float32)
        scores[ptr[i] : ptr[i + 1]] = -(far * 10 + near)
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ppr-questions", type=int, default=10)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--dataset", default="metaqa")
    args = parser.parse_args(argv)
    settings = get_settings()
    trained = load_trained(settings, args.dataset)
    graph = trained.graph
    validation = pipeline.split_samples(settings, args.dataset, graph, "validation", trained.config)
    evaluation = evaluate_samples(trained, validation)
    rows = {"retriever": evaluation.report}
    rng = np.random.default_rng(0)
    rows["random"] = recall_report(graph, validation, evaluation.ptr, rng.random(evaluation.scores.size)
                                   .astype(np.float32))
    rows["closest_first"] = recall_report(graph, validation, evaluation.ptr,
                                          closest_first_scores(validation, evaluation.ptr))
    for name, report in rows.items():
        print(f"## {name}\n{report_table(report)}\n")

    state = torch.load(trained.checkpoint.with_name("last.pt"), map_location="cpu", weights_only=True)
    history = state["history"]
    questions = [q.topics for q in pipeline.split_questions(settings, args.dataset, "validation", trained.config)]
    seeds = random.Random(0).sample(questions, min(args.ppr_questions, len(questions)))
    ppr = {"online_tol": ppr_figures(graph, seeds, 1e-3, args.batch),
           "strict_tol": ppr_figures(graph, seeds, 1e-6, args.batch)}
    figures = {
        "checkpoint": str(trained.checkpoint), "config": trained.config.model_dump(),
        "recall": rows,
        "g_retrieval": {"mean_triples_per_question": float(validation.question_triple_counts().mean()),
                        "answer_in_g_retrieval": {k: round(v["in_retrieval_answer"], 4) for k, v in evaluation.report.items()},
                        "path_triples_in_g_retrieval": {k: round(v["in_retrieval_path"], 4)
                                                        for k, v in evaluation.report.items()}},
        "ppr": ppr,
        "training": {"epochs": len(history), "train_questions": history[0]["questions"] if history else 0,
                     "seconds_per_epoch": [round(h["train_seconds"], 1) for h in history],
                     "train_triples_per_s": [round(h["train_triples_per_s"]) for h in history]},
        "scoring": {"triples": int(evaluation.scores.size), "seconds": round(evaluation.score_seconds, 2),
                    "triples_per_s": round(evaluation.triples_per_second)},
        "threads": torch.get_num_threads(),
    }
    k = 100
    write_result(
        "retrieval", figures,
        baseline={f"random_answer_recall@{k}": rows["random"]["all"][f"answer_recall@{k}"],
                  f"closest_first_path_triple_recall@{k}": rows["closest_first"]["all"][f"path_triple_recall@{k}"]},
        ratio={"path_triple_recall@100_retriever_over_closest_first": round(
                   rows["retriever"]["all"][f"path_triple_recall@{k}"]
                   / max(rows["closest_first"]["all"][f"path_triple_recall@{k}"], 1e-9), 3),
               "ppr_networkx_over_kgrag_batched": ppr["pipeline_tol"]["ratio_batched"]},
        split=f"MetaQA validation split held out from dev ({len(validation)} questions; also the early-stopping "
              "split); no question excluded", n=len(validation))


if __name__ == "__main__":
    main()
