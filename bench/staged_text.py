"""The staged full-text ranking (kgrag.network.store.text_rank) against FTS5's own ``bm25()`` on a loaded network.

    python -m bench.staged_text --db sqlite:///work/big_network/big-…/kn.db [--kn shop] [--queries 60]

For each query (the big-network bench's user-like queries, made from the network's own files) and each object
type's ``match`` fields — what kn_search's instance recall asks, 40 rows a type — the staged ranking and FTS5's
``ORDER BY bm25 LIMIT 40`` over the same scopes: how many staged answers say they are exact, whether every exact
one is FTS5's rows in its order with its scores (any that is not is counted as ``differ``), and the time of
each (per request, p50 / p95). Baseline: FTS5's bm25; ratio: its p50 / p95 over the staged ones. Results:
``bench/results/staged_text.json``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sqlalchemy import create_engine, text

from bench.big_network import ROOT, queries
from bench.common import percentiles, write_result
from kgrag.network.store.index import fts_query, index_tokens
from kgrag.network.store.text_rank import SqliteText, sqlite_totals, staged_rows

FETCH = 40


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a SQLite database holding the network (bench.big_network's)")
    parser.add_argument("--kn", default="shop")
    parser.add_argument("--data", type=Path, default=ROOT / "work" / "big_network" / "data" / "1000000" / "shop.yaml",
                        help="the network's schema file (the queries are made from its files)")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args(argv)
    engine = create_engine(args.db)
    same = differ = cut = 0
    staged_s: list[float] = []
    fts5_s: list[float] = []
    cache: dict[str, int] = {}
    with engine.connect() as conn:
        totals = sqlite_totals(conn)
        scopes: dict[str, list[str]] = {}
        for type_id, scope in conn.execute(text(
                "SELECT type_id, scope FROM kn_text_rows WHERE kn_id = :k AND kind = 'instance' GROUP BY scope"),
                {"k": args.kn}):
            scopes.setdefault(type_id, []).append(scope)
        for query in queries(args.data, args.queries):
            tokens = index_tokens(query)
            for type_scopes in scopes.values():
                for scope in type_scopes:  # one request per (type, field), as kn_search's instance recall asks
                    start = time.perf_counter()
                    rows, exact = staged_rows(SqliteText(conn, totals, cache), [scope], tokens, FETCH)
                    staged_s.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    ref = conn.execute(text(
                        "SELECT rowid, bm25(kn_text, 1.0, 0.0) AS rank FROM kn_text WHERE kn_text MATCH :q "
                        "ORDER BY rank, rowid LIMIT :n"),
                        {"q": f"scope : ({fts_query([scope])}) AND text : ({fts_query(tokens)})", "n": FETCH}).all()
                    fts5_s.append(time.perf_counter() - start)
                    if not exact:
                        cut += 1
                    elif [r.id for r in rows] == [r[0] for r in ref] and all(
                            abs(a.rank - b[1]) < 1e-9 for a, b in zip(rows, ref, strict=True)):
                        same += 1
                    else:
                        differ += 1
    staged, fts5 = percentiles(staged_s), percentiles(fts5_s)
    requests = len(staged_s)
    figures = {"requests": requests, "exact_and_fts5s": same, "exact_but_differ": differ, "sampled": cut,
               "staged_ms": staged}
    ratio = {"p50": round(fts5["p50_ms"] / staged["p50_ms"], 2), "p95": round(fts5["p95_ms"] / staged["p95_ms"], 2)}
    write_result("staged_text", figures, {"fts5_bm25_ms": fts5}, ratio,
                 f"{args.db}: {args.queries} queries x the object types' text fields, {FETCH} rows a request", requests)


if __name__ == "__main__":
    main()
