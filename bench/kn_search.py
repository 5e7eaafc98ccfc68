"""kn_search on the medical network and the 5,000+-relation synthetic network.

Figures, per network, in one run:
- p50/p95 of ``kn_search`` in-process with and without instance recall (``only_schema``), over a fixed query set;
- the same in-process figure on 50 queries never seen before (no warm embedding cache for them);
- throughput over HTTP on loopback: ``kgrag serve --workers W`` in its own processes, ``--clients`` concurrent
  keep-alive asyncio clients, (a) every request a different query (thousands built from the network's names:
  the response cache never hits) and (b) the fixed 10-query set over and over (the response cache answers);
- a naive baseline: no indexes — the same queries answered by scanning every relation type and every instance of
  the selected object types in Python (calculateRelevanceScore for relations, substring scoring for instances),
  which is what kn_search would cost without FTS5/vector indexes. Ratios kgrag/naive.
Targets (issue 4): p50 ≤ 30 ms with instance recall on the medical network; ≥ 200 requests/s over HTTP.
Every agent-facing route under HTTP load, with the issue-21 targets, is :mod:`bench.http_serving`.
Run: ``python -m bench.kn_search [--clients 8] [--seconds 10] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from bench.common import percentiles, write_result
from bench.http_load import http_load as load
from bench.http_load import start_server, stop_server
from kgrag.network.loaders.registry import load_named
from kgrag.network.store import NetworkStore
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import kn_search
from kgrag.search.relevance import calculate_relevance_score

URL = "/api/agent-retrieval/in/v1/kn/kn_search"
QUERIES = {
    "medical": ["上气道梗阻 常用药物", "百日咳的症状", "糖尿病 饮食 忌口", "高血压 需要做什么检查", "肺炎 治疗",
                "头痛 发热", "哮喘 儿科", "胃炎 常用药", "感冒", "冠心病 并发症"],
    "synthetic": ["customer order shipment", "invoice payment", "employee department manager", "product supplier",
                  "warehouse inventory", "contract clause", "patient diagnosis", "flight booking", "sensor reading",
                  "course enrollment"],
}


def progress(message: str) -> None:
    print(f"[bench.kn_search] {message}", file=sys.stderr, flush=True)


def timed(fn, items) -> list[float]:
    out = []
    for item in items:
        t = time.perf_counter()
        fn(item)
        out.append(time.perf_counter() - t)
    return out


def naive(store: NetworkStore, kn_id: str, query: str, top_k: int = 10, per_type: int = 5) -> int:
    """No indexes: score every relation type and scan every instance of the selected types in Python."""
    network = store.get_network(kn_id)
    scored = sorted(network.relation_types, key=lambda r: -calculate_relevance_score(query, r.name, r.comment))[:top_k]
    types = {r.source_object_type_id for r in scored} | {r.target_object_type_id for r in scored}
    found = 0
    for type_id in types:
        hits = store.query_instances(kn_id, type_id, None, limit=1_000_000, sort_by_score=False)
        ranked = sorted(((1.0 if str(h.properties.get("name", "")) == query else 0.5
                          if query in str(h.properties.get("name", "")) else 0.0), h.id) for h in hits)
        found += len([s for s, _ in ranked[-per_type:] if s > 0])
    return found


def distinct_queries(store: NetworkStore, kn_id: str, n: int, seed: int = 0) -> list[str]:
    """Up to ``n`` different user-style queries built from the network's own names (instance names for the medical
    network, object/relation type names for the synthetic one), so no two HTTP requests are the same."""
    rng = random.Random(seed)
    network = store.get_network(kn_id)
    if kn_id == "medical":
        names = [h.properties.get("name", "") for ot in ("Disease", "Symptom", "Drug", "Check")
                 for h in store.query_instances(kn_id, ot, None, limit=100_000)]
        templates = ["{}", "{}的症状", "{}怎么治疗", "{} 常用药", "{}需要做什么检查", "{} 饮食"]
    else:
        names = [rt.name for rt in network.relation_types] + [ot.name for ot in network.object_types]
        templates = ["{}", "{} records", "which {}", "{} details"]
    names = sorted({str(x) for x in names if x})
    combos = sorted({template.format(name) for template in templates for name in names})
    rng.shuffle(combos)
    return combos[:n]


def http_load(base: str, kn_id: str, queries: list[str], clients: int, seconds: float, cycle: bool) -> dict:
    """kn_search over HTTP (:func:`bench.http_load.http_load`); see its docstring for ``cycle``."""
    return load(base, URL, [{"query": q, "kn_id": kn_id} for q in queries], clients, seconds, cycle=cycle)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the query set (after one warm-up)")
    parser.add_argument("--workers", type=int, default=2, help="server processes (kgrag serve --workers)")
    args = parser.parse_args(argv)
    db = Path(tempfile.mkdtemp(prefix="kgrag-bench-kn-")) / "kn.db"
    store = NetworkStore(f"sqlite:///{db}")
    figures: dict = {}
    ratio: dict = {}
    for kn_id in ("medical", "synthetic"):
        progress(f"{kn_id}: loading")
        t = time.perf_counter()
        stats = load_named(kn_id, store)
        load_s = time.perf_counter() - t
        queries = QUERIES[kn_id]
        full = [KnSearchRequest(query=q, kn_id=kn_id) for q in queries]
        schema = [KnSearchRequest(query=q, kn_id=kn_id, only_schema=True) for q in queries]
        for req in full:  # warm-up: embeddings of the relation documents, vector indexes, SQLite pages
            kn_search(req, store)
        with_instances = timed(lambda r: kn_search(r, store), full * args.repeat)
        concepts_only = timed(lambda r: kn_search(r, store), schema * args.repeat)
        naive_s = timed(lambda q, k=kn_id: naive(store, k, q), queries)
        progress(f"{kn_id}: in-process timings done; building distinct queries")
        unique = distinct_queries(store, kn_id, 5000)
        in_process_unique = timed(lambda q, k=kn_id: kn_search(KnSearchRequest(query=q, kn_id=k), store),
                                  unique[-50:])
        progress(f"{kn_id}: starting kgrag serve --workers {args.workers}")
        server, base = start_server(store.db_url, args.workers)
        progress(f"{kn_id}: HTTP warm-up (not measured: each worker loads the embedder and its indexes)")
        try:
            http_load(base, kn_id, unique[-50:], args.clients, max(args.seconds, 10.0), cycle=True)
            progress(f"{kn_id}: HTTP load")
            http_distinct = http_load(base, kn_id, unique[:-50], args.clients, args.seconds, cycle=False)
            http_repeated = http_load(base, kn_id, queries, args.clients, args.seconds, cycle=True)
        finally:
            stop_server(server)
        figures[kn_id] = {
            "load": {"seconds": round(load_s, 1), "object_types": stats.object_types,
                     "relation_types": stats.relation_types, "instances": stats.instances, "links": stats.links},
            "with_instance_recall": percentiles(with_instances),
            "concepts_only": percentiles(concepts_only),
            "with_instance_recall_unseen_queries": percentiles(in_process_unique),
            "naive_scan": percentiles(naive_s),
            "http_distinct_queries": http_distinct,
            "http_repeated_queries": http_repeated,
        }
        ratio[kn_id] = {
            "with_instances_vs_naive_p50": round(figures[kn_id]["with_instance_recall"]["p50_ms"]
                                                 / figures[kn_id]["naive_scan"]["p50_ms"], 3),
            "concepts_only_vs_with_instances_p50": round(figures[kn_id]["concepts_only"]["p50_ms"]
                                                         / figures[kn_id]["with_instance_recall"]["p50_ms"], 3),
        }
    med = figures["medical"]
    figures["targets"] = {
        "medical_p50_with_instances_le_30ms": med["with_instance_recall"]["p50_ms"] <= 30.0,
        "medical_http_ge_200_rps_repeated": med["http_repeated_queries"]["requests_per_s"] >= 200.0,
        "medical_http_ge_200_rps_distinct": med["http_distinct_queries"]["requests_per_s"] >= 200.0,
    }
    write_result("kn_search", figures, baseline={k: figures[k]["naive_scan"] for k in ("medical", "synthetic")},
                 ratio=ratio, split="fixed query sets (10 per network)", n=len(QUERIES["medical"]) * args.repeat)


if __name__ == "__main__":
    main()
