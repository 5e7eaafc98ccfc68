"""Personalized PageRank on the MetaQA graph: kgrag (scipy.sparse, batched) vs ``networkx.pagerank``.

Same graph (undirected, edge multiplicities as weights), same seeds (each question's topic entities), same restart
(0.15, i.e. networkx alpha 0.85) and dangling handling; figures in one run:
- seconds per question: networkx, kgrag one question at a time, kgrag batched (``--batch`` questions per call);
- ratios networkx / kgrag;
- agreement: max |Δ score|, the mean overlap of the two top-100 node sets, and the share of questions whose
  top-100 lists are identical in order (near-ties may swap: kgrag iterates in float32 to tol 1e-6 L1).
Also coverage of the retrieval subgraph vs ``top_n`` on the validation split: the share of questions with an answer
among the kept nodes, the mean share of shortest-path triples kept, the median number of triples. Needs ``kgrag prepare --dataset metaqa`` first.
Run: ``python -m bench.ppr [--questions 20] [--batch 64]``.
"""

from __future__ import annotations

import argparse
import random
import time

import networkx as nx
import numpy as np

from bench.common import write_result
from kgrag.config import get_settings
from kgrag.graph.csr import CSRGraph
from kgrag.hrag.labels import shortest_path_labels
from kgrag.hrag.ppr import PersonalizedPageRank
from kgrag.prep.steps import read_prepared_questions


def to_networkx(graph: CSRGraph) -> nx.Graph:
    coo = graph.adjacency(undirected=True).tocoo()
    g = nx.Graph()
    g.add_nodes_from(range(graph.num_entities))
    g.add_weighted_edges_from(
        (int(u), int(v), float(w) * (0.5 if u == v else 1.0))
        for u, v, w in zip(coo.row, coo.col, coo.data, strict=True) if u <= v
    )
    return g


def networkx_ppr(nxg: nx.Graph, seeds: list[int], n: int) -> np.ndarray:
    """``networkx.pagerank`` with the same restart (alpha 0.85), seeds and dangling handling, converged tightly."""
    personal = {int(x): 1.0 / len(set(seeds)) for x in set(seeds)}
    r = nx.pagerank(nxg, alpha=0.85, personalization=personal, dangling=personal, tol=1e-10, max_iter=300)
    return np.array([r[i] for i in range(n)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=20, help="questions timed against networkx")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--coverage-questions", type=int, default=1000)
    args = parser.parse_args(argv)
    out = get_settings().dataset_dir("metaqa")
    graph = CSRGraph.load(out / "graph.npz")
    questions = [q for q in read_prepared_questions(out) if q.get("topic_index")]
    rng = random.Random(0)
    sample = rng.sample(questions, min(args.questions, len(questions)))
    seeds = [q["topic_index"] for q in sample]
    t = time.perf_counter()
    ppr = PersonalizedPageRank(graph)
    setup = time.perf_counter() - t
    nxg = to_networkx(graph)

    t = time.perf_counter()
    single = [ppr.scores([s])[0] for s in seeds]
    ours_single = (time.perf_counter() - t) / len(seeds)
    t = time.perf_counter()
    batched = np.concatenate([ppr.scores(seeds[i : i + args.batch]) for i in range(0, len(seeds), args.batch)])
    ours_batched = (time.perf_counter() - t) / len(seeds)
    t = time.perf_counter()
    theirs = [networkx_ppr(nxg, s, graph.num_entities) for s in seeds]
    networkx_s = (time.perf_counter() - t) / len(seeds)
    max_diff = max(float(np.abs(a - b).max()) for a, b in zip(single, theirs, strict=True))
    same_top = np.mean([np.array_equal(np.argsort(-a, kind="stable")[:100], np.argsort(-b, kind="stable")[:100])
                        for a, b in zip(single, theirs, strict=True)])
    overlap = np.mean([len(set(np.argsort(-a)[:100].tolist()) & set(np.argsort(-b)[:100].tolist())) / 100
                       for a, b in zip(single, theirs, strict=True)])
    batch_equal = float(np.abs(np.stack(single) - batched).max())

    validation = [q for q in questions if q.get("split") == "validation" and q.get("answer_index")]
    validation = rng.sample(validation, min(args.coverage_questions, len(validation)))
    coverage: dict[str, dict] = {}
    labels = [shortest_path_labels(graph, q["topic_index"], q["answer_index"]) for q in validation]
    for top_n in (100, 500, 1000, 2000):
        rows: dict[int, list[tuple[int, float, int]]] = {}
        for start in range(0, len(validation), args.batch):
            chunk = validation[start : start + args.batch]
            subs = ppr.retrieval_subgraphs([q["topic_index"] for q in chunk], top_n, max_triples=10**9)
            for q, sub, lab in zip(chunk, subs, labels[start : start + args.batch], strict=True):
                kept = set(sub.nodes.tolist())
                pos = lab.positive_triples
                path = float(np.isin(pos, sub.triples).mean()) if pos.size else 0.0
                rows.setdefault(int(q["hop"]), []).append((int(any(a in kept for a in q["answer_index"])), path,
                                                           sub.triples.size))
        coverage[str(top_n)] = {f"{hop}-hop": {"answer_rate": round(float(np.mean([r[0] for r in v])), 4),
                                               "path_triple_rate": round(float(np.mean([r[1] for r in v])), 4),
                                               "median_triples": float(np.median([r[2] for r in v])), "n": len(v)}
                                for hop, v in sorted(rows.items())}
    figures = {
        "graph": {"entities": graph.num_entities, "triples": graph.num_triples},
        "setup_seconds": round(setup, 3),
        "seconds_per_question": {"networkx": round(networkx_s, 4), "kgrag_single": round(ours_single, 5),
                                 "kgrag_batched": round(ours_batched, 5)},
        "agreement": {"max_abs_score_diff": max_diff, "top100_identical_share": float(same_top),
                      "top100_set_overlap_mean": float(overlap),
                      "batched_vs_single_max_diff": batch_equal},
        "coverage_by_top_n": coverage,
    }
    write_result("ppr", figures, baseline={"networkx_seconds_per_question": round(networkx_s, 4)},
                 ratio={"networkx_over_kgrag_single": round(networkx_s / ours_single, 1),
                        "networkx_over_kgrag_batched": round(networkx_s / ours_batched, 1)},
                 split=f"MetaQA dev questions: {len(sample)} sampled for timing (any split); "
                       f"{len(validation)} validation questions for G_retrieval coverage (answers, shortest-path triples)",
                 n=len(sample))


if __name__ == "__main__":
    main()
