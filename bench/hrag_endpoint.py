"""H-RAG with each question's neighbourhood fetched from a SPARQL server vs the local mapped graph, on MetaQA.

The trained MetaQA chain (``make run``'s checkpoints) answers a seeded sample of validation questions (topics
given) three ways in one run: on the local graph (baseline), and through
:class:`~kgrag.hrag.online.endpoint_reasoner.EndpointReasoner` over MetaQA's ``triples.nt`` served by ``oxigraph serve``
and bulk-loaded into Virtuoso 7. Figures per backend: Hits@1 and F1 per hop (the answer set by name against the
gold names), the difference to local in points (the bar: within 0.5 Hits@1), per-question latency p50 / p95 and
the expansion's share, neighbourhood size (triples, queries) and how often a cap truncated it. The local pass is
timed after a warm pass (name vectors computed once); the endpoint passes are cold (their name cache fills as
they go), as a server-only deployment would be.

Run: ``python -m bench.hrag_endpoint [--n 300] [--per-hop 20000] [--per-node 2000]`` (needs ``kgrag prepare
--dataset metaqa``, trained checkpoints, ``virtuoso-t``/``isql-vt`` and the ``oxigraph`` CLI); writes
bench/results/hrag_endpoint.json.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from bench.common import ms_percentiles, write_result
from harness.servers.oxigraph_server import serve_read_only
from harness.servers.virtuoso import bulk_load, start_virtuoso
from kgrag.config import get_settings
from kgrag.graph.remote_store import RemoteStore
from kgrag.hrag.online.endpoint_reasoner import EndpointReasoner
from kgrag.hrag.online.reasoner import HRAGReasoner
from kgrag.hrag.online.sparql_neighbourhood import ExpansionLimits
from kgrag.hrag.retrieval.questions import prepared_questions

console = Console()
GRAPH = "http://kgrag.bench/graph/metaqa"


def _f1(predicted: set[str], gold: set[str]) -> float:
    hit = len(predicted & gold)
    return 0.0 if not hit else 2 * hit / (len(predicted) + len(gold))


def score(answers: list, golds: list[tuple[set[str], set[str]]], hops: list[int]) -> dict:
    """Per hop (and all): n, Hits@1 (the top answer's id among the gold ids) and F1 of the answer set by name."""
    rows: dict[str, list[tuple[float, float]]] = {}
    for answer, (gold_ids, gold_names), hop in zip(answers, golds, hops, strict=True):
        top = answer.answers[0].entity_id if answer.answers else None
        value = (float(top in gold_ids), _f1(set(answer.predicted), gold_names))
        for key in (f"{hop}-hop", "all"):
            rows.setdefault(key, []).append(value)
    return {k: {"n": len(v), "hits@1": round(100 * float(np.mean([a for a, _ in v])), 2),
                "f1": round(100 * float(np.mean([b for _, b in v])), 2)} for k, v in rows.items()}


def run_backend(answer_one, questions) -> tuple[list, dict]:
    answers, totals, expand, notes = [], [], [], 0
    for q in questions:
        started = time.perf_counter()
        answer = answer_one(q)
        totals.append(1000 * (time.perf_counter() - started))
        expand.append(answer.ms.get("expand", 0.0))
        notes += bool(answer.note)
        answers.append(answer)
    return answers, {"latency_ms": ms_percentiles(totals, 1), "expand_ms": ms_percentiles(expand, 1), "notes": notes}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", default="metaqa")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hops", type=int, default=3)
    parser.add_argument("--per-hop", type=int, default=20_000)
    parser.add_argument("--per-node", type=int, default=2_000)
    args = parser.parse_args(argv)
    settings = get_settings()
    out = settings.dataset_dir(args.dataset)
    reasoner = HRAGReasoner.load(settings, args.dataset)
    graph = reasoner.graph
    questions = prepared_questions(out, ["validation"])
    pick = np.sort(np.random.default_rng(args.seed).choice(len(questions), min(args.n, len(questions)), replace=False))
    questions = [questions[i] for i in pick]
    golds = [({graph.entity_ids[a] for a in q.answers}, {graph.entity_names[a] or graph.entity_ids[a] for a in q.answers})
             for q in questions]
    hops = [q.hop for q in questions]
    limits = ExpansionLimits(hops=args.hops, per_hop=args.per_hop, per_node=args.per_node)
    results: dict[str, dict] = {}
    run_backend(lambda q: reasoner.answer(q.text, q.topics), questions)  # warm: the map's name vectors
    answers, timing = run_backend(lambda q: reasoner.answer(q.text, q.topics), questions)
    results["local"] = {"answers": score(answers, golds, hops), **timing}
    console.print(f"local: {results['local']['answers']['all']} {timing['latency_ms']}")
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-endpoint-") as tmp:
        virtuoso = start_virtuoso(Path(tmp) / "db", dirs_allowed=[out])
        served = serve_read_only(out / "oxigraph")
        try:
            bulk_load(virtuoso, out, graph=GRAPH, pattern="triples.nt")
            virtuoso.restart()
            stores = {"oxigraph_serve": RemoteStore(served.url, timeout=60),
                      "virtuoso": RemoteStore(virtuoso.url, timeout=60, graph=GRAPH)}
            for name, store in stores.items():
                remote = EndpointReasoner(reasoner, store, graph.iri_base, limits, lang="en")
                stats: list[dict] = []

                def one(q, remote=remote, stats=stats):
                    answer = remote.answer(q.text, [graph.entity_ids[t] for t in q.topics])
                    stats.append(remote.last_stats)
                    return answer

                answers, timing = run_backend(one, questions)
                timing["neighbourhood"] = {
                    "triples_p50": float(np.median([s.get("triples", 0) for s in stats])),
                    "queries_p50": float(np.median([s.get("queries", 0) for s in stats])),
                    "truncated_share": round(float(np.mean([bool(s.get("truncated")) for s in stats])), 3)}
                results[name] = {"answers": score(answers, golds, hops), **timing}
                console.print(f"{name}: {results[name]['answers']['all']} {timing['latency_ms']}")
        finally:
            served.stop()
            virtuoso.stop()
    base = results["local"]["answers"]
    diff = {name: {hop: round(r["answers"][hop]["hits@1"] - base[hop]["hits@1"], 2) for hop in base}
            for name, r in results.items() if name != "local"}
    table = Table(title=f"MetaQA validation sample (n={len(questions)}): local graph vs neighbourhoods by SPARQL")
    for col in ("backend", "hop", "n", "Hits@1", "F1", "p50 ms", "p95 ms", "expand p50 ms"):
        table.add_column(col, justify="right")
    for name, r in results.items():
        for hop, row in r["answers"].items():
            table.add_row(name, hop, str(row["n"]), f"{row['hits@1']:.2f}", f"{row['f1']:.2f}",
                          str(r["latency_ms"]["p50"]), str(r["latency_ms"]["p95"]), str(r["expand_ms"]["p50"]))
    console.print(table)
    write_result("hrag_endpoint", {**results, "limits": limits.model_dump()}, {"local": results["local"]}, diff,
                 split="validation (seeded sample)", n=len(questions))


if __name__ == "__main__":
    main()
