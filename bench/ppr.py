"""Local (push) PPR against the global power iteration on MetaQA, through the trained H-RAG chain, in one run.

The same trained retriever and reasoner answer MetaQA's validation split twice: with the global PPR (baseline:
:class:`kgrag.hrag.retrieval.ppr.PersonalizedPageRank`, tolerance 1e-3 as the online path used) and with the local PPR
(:class:`kgrag.hrag.retrieval.local_ppr.LocalPPR`, the configured epsilon). Figures:
- Hits@1 / Hit / F1 per hop for both and their difference in points (the bar: within 0.1);
- G_retrieval agreement: mean share of the global subgraph's nodes and triples the local one has, and the share of
  questions with an answer inside each;
- PPR alone per question (G_retrieval included: top-N, triples, topic distances), p50 / p95, one question at a
  time, and the edges the push visited;
- ``answer_question`` p50 / p95 warm (one question at a time, topics given) with each PPR, and its stage split.
Needs ``kgrag prepare --dataset metaqa`` and trained checkpoints (``make run``).

Run: ``python -m bench.ppr [--questions 3913] [--timed 300]``; writes bench/results/ppr.json.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.common import ms_percentiles, write_result
from kgrag.config import get_settings
from kgrag.hrag.gflownet.answers import answer_metrics, summarise
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.ppr import PersonalizedPageRank
from kgrag.hrag.retrieval.questions import HragQuestion, prepared_questions

console = Console()
BASELINE_TOL = 1e-3  # the global PPR's online tolerance before the local PPR replaced it


def answer_report(reasoner: HRAGReasoner, questions: list[HragQuestion], batch: int = 512) -> tuple[dict, dict]:
    """Per-hop Hits@1 / Hit / F1 (percent) of ``questions`` through ``reasoner.rank`` and the stage seconds."""
    ranked, ms = [], {}
    for start in range(0, len(questions), batch):
        ranking = reasoner.rank(questions[start : start + batch])
        ranked += ranking.ranked
        for k, v in ranking.ms.items():
            ms[k] = ms.get(k, 0.0) + v
    metrics = answer_metrics(ranked, [set(q.answers) for q in questions], reasoner.policy.threshold)
    report = summarise(metrics, [q.hop for q in questions])
    rows = {hop: {"n": int(r["n"]), **{k: round(100 * float(r[k]), 2) for k in ("hits@1", "hit", "f1")}}
            for hop, r in report.items()}
    return rows, {k: round(v / 1000, 2) for k, v in ms.items()}


def subgraph_agreement(local: LocalPPR, glob: PersonalizedPageRank, questions: list[HragQuestion], top_n: int,
                       max_triples: int) -> dict:
    nodes, triples, ans_g, ans_l, ms_l, ms_g, work = [], [], [], [], [], [], []
    for q in questions:
        t = time.perf_counter()
        g = glob.retrieval_subgraph(q.topics, top_n, max_triples)
        ms_g.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        sub = local.retrieval_subgraph(q.topics, top_n, max_triples)
        ms_l.append(1000 * (time.perf_counter() - t))
        work.append(local.last_work)
        nodes.append(np.intersect1d(g.nodes, sub.nodes).size / max(g.nodes.size, 1))
        triples.append(np.intersect1d(g.triples, sub.triples).size / max(g.triples.size, 1))
        ans_g.append(bool(np.isin(q.answers, g.nodes).any()))
        ans_l.append(bool(np.isin(q.answers, sub.nodes).any()))
    return {"node_overlap": round(float(np.mean(nodes)), 4), "triple_overlap": round(float(np.mean(triples)), 4),
            "answer_in_g_retrieval": {"global": round(float(np.mean(ans_g)), 4),
                                      "local": round(float(np.mean(ans_l)), 4)},
            "ppr_ms": {"global": ms_percentiles(ms_g, 3), "local": ms_percentiles(ms_l, 3)},
            "push_edges_visited": ms_percentiles([float(w) for w in work], 3)}


def answer_latency(reasoner: HRAGReasoner, questions: list[HragQuestion]) -> dict:
    """Warm ``answer`` latency, one question at a time (a first pass warms vectors and caches)."""
    for q in questions[:20]:
        reasoner.answer(q.text, q.topics)
    totals, stages = [], {}
    for q in questions:
        answer = reasoner.answer(q.text, q.topics)
        totals.append(answer.ms["total"])
        for k, v in answer.ms.items():
            stages.setdefault(k, []).append(v)
    return {**ms_percentiles(totals, 3), "stages_p50": {k: round(float(np.median(v)), 2) for k, v in stages.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--questions", type=int, default=0, help="validation questions answered (0 = all)")
    parser.add_argument("--timed", type=int, default=300, help="questions timed one at a time")
    parser.add_argument("--epsilon", type=float, default=None, help="the local PPR's (default: the config's)")
    args = parser.parse_args(argv)
    settings = get_settings()
    reasoner = HRAGReasoner.load(settings, args.dataset)
    cfg = reasoner.retriever.config
    questions = prepared_questions(settings.dataset_dir(args.dataset), ["validation"])
    rng = np.random.default_rng(0)
    if args.questions and args.questions < len(questions):
        questions = [questions[i] for i in np.sort(rng.choice(len(questions), args.questions, replace=False))]
    timed = [questions[i] for i in np.sort(rng.choice(len(questions), min(args.timed, len(questions)),
                                                      replace=False))]
    local = LocalPPR(reasoner.graph, epsilon=args.epsilon) if args.epsilon else reasoner.ppr
    glob = PersonalizedPageRank(reasoner.graph, tol=BASELINE_TOL)
    console.print(f"{args.dataset} validation: {len(questions)} questions; local PPR epsilon {local.epsilon:g}, "
                  f"global tol {BASELINE_TOL:g}")
    figures: dict = {"agreement": subgraph_agreement(local, glob, timed, cfg.top_n, cfg.max_triples)}
    figures["answers"], figures["stage_seconds"] = {}, {}
    figures["answer_question_ms"] = {}
    for name, ppr in (("global", glob), ("local", local)):
        reasoner.ppr = ppr
        figures["answers"][name], figures["stage_seconds"][name] = answer_report(reasoner, questions)
        figures["answer_question_ms"][name] = answer_latency(reasoner, timed)
    reasoner.ppr = local
    diff = {hop: {k: round(figures["answers"]["local"][hop][k] - figures["answers"]["global"][hop][k], 2)
                  for k in ("hits@1", "hit", "f1")} for hop in figures["answers"]["local"]}
    figures["local_minus_global_points"] = diff
    table = Table(title=f"MetaQA validation (n={len(questions)}): global vs local PPR, same checkpoints")
    for col in ("hop", "n", "Hits@1 global", "Hits@1 local", "F1 global", "F1 local"):
        table.add_column(col, justify="right")
    for hop, row in figures["answers"]["local"].items():
        g = figures["answers"]["global"][hop]
        table.add_row(str(hop), str(row["n"]), f"{g['hits@1']:.2f}", f"{row['hits@1']:.2f}", f"{g['f1']:.2f}",
                      f"{row['f1']:.2f}")
    console.print(table)
    console.print({k: figures[k] for k in ("agreement", "answer_question_ms", "local_minus_global_points")})
    ratio = (figures["answer_question_ms"]["global"]["p50"] / figures["answer_question_ms"]["local"]["p50"])
    write_result("ppr", figures, baseline={"ppr": "global power iteration", "tol": BASELINE_TOL},
                 ratio=round(ratio, 3), split="validation", n=len(questions),
                 module="ppr")


if __name__ == "__main__":
    main()
