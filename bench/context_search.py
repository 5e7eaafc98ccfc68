"""context_search in-process: p50/p95 and SQL statements per question, responses compared with a saved golden file.

    python -m bench.context_search --networks medical --n 60 --save /tmp/h-ctx/golden.json    # record
    python -m bench.context_search --networks medical --n 60 --compare /tmp/h-ctx/golden.json  # compare

The questions are bench/http_serving.py's (the network's own names, fixed seed). Every call gets fresh
ContextSessions (no session cache) and ``use_llm=False``. ``synthetic`` is loaded into ``--synthetic-db``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from sqlalchemy import event

from bench.common import write_result
from bench.http_serving import questions
from kgrag.network.store import NetworkStore
from kgrag.search.contextual import ContextSessions
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search


def _store(kn_id: str, args: argparse.Namespace) -> NetworkStore:
    if kn_id == "medical":
        return NetworkStore(args.medical_db)
    store = NetworkStore(f"sqlite:///{args.synthetic_db}")
    if kn_id not in {k for k, _ in store.list_networks()}:
        from kgrag.network.loaders.registry import load_named
        load_named(kn_id, store)
    return store


def run(kn_id: str, args: argparse.Namespace) -> dict:
    store = _store(kn_id, args)
    counter = {"n": 0}

    def count(*_a, **_k) -> None:
        counter["n"] += 1

    event.listen(store.engine, "before_cursor_execute", count)
    texts = questions(store, kn_id, args.n)
    context_search(KnSearchRequest(query=texts[0], kn_id=kn_id), store, ContextSessions(), use_llm=False)  # warm
    times, statements, responses = [], [], {}
    for q in texts:
        counter["n"] = 0
        t0 = time.perf_counter()
        response = context_search(KnSearchRequest(query=q, kn_id=kn_id), store, ContextSessions(), use_llm=False)
        times.append((time.perf_counter() - t0) * 1000)
        statements.append(counter["n"])
        responses[q] = json.loads(response.model_dump_json())
    times.sort()
    return {"p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
            "statements_p50": statistics.median(statements), "statements_max": max(statements),
            "responses": responses}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--networks", default="medical")
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--medical-db", default="sqlite:////work/main/work/kgrag.db")
    parser.add_argument("--synthetic-db", default="/tmp/h-ctx/synthetic.db")
    parser.add_argument("--save")
    parser.add_argument("--compare")
    args = parser.parse_args()
    out = {kn: run(kn, args) for kn in args.networks.split(",")}
    figures = {kn: {k: v for k, v in r.items() if k != "responses"} for kn, r in out.items()}
    print(json.dumps(figures, indent=2))
    if args.save:
        Path(args.save).write_text(json.dumps(out, ensure_ascii=False))
    if args.compare:
        golden = json.loads(Path(args.compare).read_text())
        saved = {kn: golden.get(kn, {}).get("responses", {}) for kn in out}
        compared = [(kn, q) for kn in out for q in out[kn]["responses"] if q in saved[kn]]
        diffs = [(kn, q) for kn, q in compared if saved[kn][q] != out[kn]["responses"][q]]
        for kn, q in diffs:
            print(f"DIFFERENT {kn}: {q}", file=sys.stderr)
        print(f"{len(diffs)} responses differ of {len(compared)} compared "
              f"({sum(len(r['responses']) for r in out.values())} run)")
        baseline = {kn: {k: v for k, v in r.items() if k != "responses"} for kn, r in golden.items()}
        write_result("context_search", figures, baseline,
                     {kn: round(baseline[kn]["p50_ms"] / figures[kn]["p50_ms"], 2) for kn in figures if kn in baseline},
                     "bench questions", args.n)


if __name__ == "__main__":
    main()
