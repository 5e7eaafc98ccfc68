"""kn_search on the medical network and the 5,000+-relation synthetic network.

Figures, per network, in one run:
- p50/p95 of ``kn_search`` in-process with and without instance recall (``only_schema``), over a fixed query set;
- throughput over HTTP on loopback: a real uvicorn server, ``--clients`` concurrent httpx clients;
- a naive baseline: no indexes — the same queries answered by scanning every relation type and every instance of
  the selected object types in Python (calculateRelevanceScore for relations, substring scoring for instances),
  which is what kn_search would cost without FTS5/vector indexes. Ratios kgrag/naive.
Targets (issue 4): p50 ≤ 30 ms with instance recall on the medical network; ≥ 200 requests/s over HTTP.
Run: ``python -m bench.kn_search [--clients 8] [--seconds 10]``.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import uvicorn

from bench.common import percentiles, write_result
from kgrag.api.app import create_app
from kgrag.graph.oxigraph_server import free_port
from kgrag.network.loaders.registry import load_named
from kgrag.network.store import NetworkStore
from kgrag.search.config import KnSearchRequest
from kgrag.search.kn_search import kn_search
from kgrag.search.relevance import calculate_relevance_score

URL = "/api/agent-retrieval/in/v1/kn/kn_search"
QUERIES = {
    "medical": ["上气道梗阻 常用药物", "百日咳的症状", "糖尿病 饮食 忌口", "高血压 需要做什么检查", "肺炎 治疗",
                "头痛 发热", "哮喘 儿科", "胃炎 常用药", "感冒", "冠心病 并发症"],
    "synthetic": ["customer order shipment", "invoice payment", "employee department manager", "product supplier",
                  "warehouse inventory", "contract clause", "patient diagnosis", "flight booking", "sensor reading",
                  "course enrollment"],
}


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


def http_throughput(app, kn_id: str, queries: list[str], clients: int, seconds: float) -> dict:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    stop = time.monotonic() + seconds
    counts, errors, latencies = [0] * clients, [0] * clients, []

    def worker(i: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as client:
            n = 0
            while time.monotonic() < stop:
                t = time.perf_counter()
                r = client.post(URL, json={"query": queries[(i + n) % len(queries)], "kn_id": kn_id})
                latencies.append(time.perf_counter() - t)
                counts[i] += 1
                errors[i] += r.status_code != 200
                n += 1

    start = time.monotonic()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(worker, range(clients)))
    elapsed = time.monotonic() - start
    server.should_exit = True
    thread.join(timeout=10)
    return {"requests": sum(counts), "errors": sum(errors), "seconds": round(elapsed, 2),
            "requests_per_s": round(sum(counts) / elapsed, 1), "clients": clients, **percentiles(latencies)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=5, help="passes over the query set (after one warm-up)")
    args = parser.parse_args(argv)
    db = Path(tempfile.mkdtemp(prefix="kgrag-bench-kn-")) / "kn.db"
    store = NetworkStore(f"sqlite:///{db}")
    figures: dict = {}
    ratio: dict = {}
    for kn_id in ("medical", "synthetic"):
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
        app = create_app()
        app.state.network_store = store
        http = http_throughput(app, kn_id, queries, args.clients, args.seconds)
        figures[kn_id] = {
            "load": {"seconds": round(load_s, 1), "object_types": stats.object_types,
                     "relation_types": stats.relation_types, "instances": stats.instances, "links": stats.links},
            "with_instance_recall": percentiles(with_instances),
            "concepts_only": percentiles(concepts_only),
            "naive_scan": percentiles(naive_s),
            "http": http,
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
        "medical_http_ge_200_rps": med["http"]["requests_per_s"] >= 200.0,
    }
    write_result("kn_search", figures, baseline={k: figures[k]["naive_scan"] for k in ("medical", "synthetic")},
                 ratio=ratio, split="fixed query sets (10 per network)", n=len(QUERIES["medical"]) * args.repeat)


if __name__ == "__main__":
    main()
