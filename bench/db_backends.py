"""SQLite vs PostgreSQL for the knowledge-network store: kn_search latency and the load's write transaction.

Per network (medical, then the 6,000-relation synthetic one), in one run:
- the load: one load into SQLite first warms the embedding cache (``prepare_seconds_once``), then each backend
  loads the network in full with the cache warm (validation, derived rows, the one write transaction with its
  index upkeep; on PostgreSQL also the term statistics and ANALYZE) — ``load_write_seconds`` is what the backend
  costs;
- kn_search in-process on each backend over distinct queries built from the network's names (bench.kn_search's
  ``distinct_queries``) and over its fixed 10-query set: one unmeasured warm-up pass on both backends (query
  embeddings, vector indexes, page caches), then p50/p95 of a measured pass; every response is compared across
  the backends (``identical_responses``).
Baseline: SQLite (a file in a temp dir); ratio: PostgreSQL / SQLite. PostgreSQL is a throwaway local cluster
(harness.servers.postgres: fsync off, 32 MB shared_buffers) reached over loopback TCP with psycopg 3.

    .venv/bin/python -m bench.db_backends [--distinct 100] [--networks medical synthetic]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.common import percentiles, write_result
from bench.kn_search import QUERIES, distinct_queries
from harness.servers.postgres import throwaway_postgres
from kgrag.config import get_settings
from kgrag.network.loaders.registry import build_named
from kgrag.network.store import NetworkStore
from kgrag.network.text.embedding import network_embedder
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import kn_search


def progress(message: str) -> None:
    print(f"[bench.db_backends] {message}", file=sys.stderr, flush=True)


def run_queries(store: NetworkStore, kn_id: str, queries: list[str]) -> tuple[list[float], list[dict]]:
    seconds, answers = [], []
    for q in queries:
        t = time.perf_counter()
        resp = kn_search(KnSearchRequest(query=q, kn_id=kn_id), store, reranker=None)
        seconds.append(time.perf_counter() - t)
        answers.append(resp.model_dump())
    return seconds, answers


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--distinct", type=int, default=100, help="distinct queries per network")
    parser.add_argument("--networks", nargs="+", default=["medical", "synthetic"])
    args = parser.parse_args(argv)
    figures: dict = {}
    baseline: dict = {}
    ratio: dict = {}
    with throwaway_postgres() as cluster:
        sqlite_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='kgrag-bench-db-')) / 'kn.db'}"
        stores = {"sqlite": NetworkStore(sqlite_url), "postgresql": NetworkStore(cluster.create_database("bench"))}
        for kn_id in args.networks:
            progress(f"{kn_id}: building and preparing")
            network, instances, links = build_named(kn_id)
            embedder = network_embedder(network, instances, get_settings()) or stores["sqlite"].embedder
            t = time.perf_counter()
            stores["sqlite"].load(network, instances, links, embedder)  # the embeddings, once, into the cache
            prepare_s = time.perf_counter() - t
            loads = {}
            for name, store in stores.items():
                progress(f"{kn_id}: loading into {name}")
                loaded = store.load(network, instances, links, embedder)
                loads[name] = round(loaded.seconds, 2)
            queries = distinct_queries(stores["sqlite"], kn_id, args.distinct)
            fixed = QUERIES.get(kn_id, [])
            progress(f"{kn_id}: warm-up ({len(queries) + len(fixed)} queries per backend)")
            for store in stores.values():
                run_queries(store, kn_id, queries + fixed)
            timings: dict[str, dict] = {}
            answers: dict[str, list[dict]] = {}
            for name, store in stores.items():
                progress(f"{kn_id}: measuring {name}")
                distinct_s, distinct_a = run_queries(store, kn_id, queries)
                fixed_s, fixed_a = run_queries(store, kn_id, fixed)
                timings[name] = {"distinct": percentiles(distinct_s), "fixed": percentiles(fixed_s) if fixed else {}}
                answers[name] = distinct_a + fixed_a
            same = sum(a == b for a, b in zip(answers["sqlite"], answers["postgresql"], strict=True))
            counts = {"instances": loaded.instances, "links": loaded.links, "text_rows": loaded.text_rows,
                      "vectors": loaded.vectors, "chunks": loaded.chunks, "relation_types": len(network.relation_types)}
            figures[kn_id] = {
                "rows": counts,
                "prepare_seconds_once": round(prepare_s, 1),
                "load_write_seconds": loads,
                "kn_search": timings,
                "identical_responses": f"{same}/{len(answers['sqlite'])}",
            }
            baseline[kn_id] = {"kn_search_distinct": timings["sqlite"]["distinct"],
                               "load_write_seconds": loads["sqlite"]}
            ratio[kn_id] = {
                "kn_search_distinct_p50": round(timings["postgresql"]["distinct"]["p50_ms"]
                                                / timings["sqlite"]["distinct"]["p50_ms"], 3),
                "kn_search_distinct_p95": round(timings["postgresql"]["distinct"]["p95_ms"]
                                                / timings["sqlite"]["distinct"]["p95_ms"], 3),
                "load_write": round(loads["postgresql"] / max(loads["sqlite"], 1e-9), 3),
            }
            print_table(kn_id, figures[kn_id], ratio[kn_id])
        for store in stores.values():
            store.close()
    write_result("db_backends", figures, baseline=baseline, ratio=ratio,
                 split="distinct queries from each network's names + its fixed 10-query set, in-process",
                 n=args.distinct)


def print_table(kn_id: str, fig: dict, rat: dict) -> None:
    print(f"\n{kn_id}: rows {fig['rows']}, prepare once {fig['prepare_seconds_once']} s, "
          f"identical responses {fig['identical_responses']}")
    print(f"{'backend':<12}{'write s':>10}{'distinct p50':>14}{'p95':>10}{'fixed p50':>12}{'p95':>10}")
    for name in ("sqlite", "postgresql"):
        d, f = fig["kn_search"][name]["distinct"], fig["kn_search"][name]["fixed"]
        print(f"{name:<12}{fig['load_write_seconds'][name]:>10}{d['p50_ms']:>14}{d['p95_ms']:>10}"
              f"{f.get('p50_ms', '-'):>12}{f.get('p95_ms', '-'):>10}")
    print(f"ratio pg/sqlite: {rat}")


if __name__ == "__main__":
    main()
