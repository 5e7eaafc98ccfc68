"""HTTP serving under load: every agent-facing route, distinct requests, against in-process speed (issue 21 §1).

For the medical network and the 6,000-relation synthetic one, in one run:
- **in-process** (the baseline): each route's Python function called directly, one request at a time in one
  thread, over 60 distinct bodies never seen before — p50, CPU p50/p95 and the requests/s one core gives;
- **HTTP**: ``kgrag serve --workers W`` (its own processes, warm), ``--clients`` concurrent keep-alive clients,
  every request a different body (the response cache never answers) for ``--seconds`` per route —
  requests/s, p50/p95, errors and dropped requests, and the server's CPU per request (its processes' CPU time
  over the window / requests: what other jobs on the machine inflate least);
- **burst**: ``--burst`` distinct kn_search requests from ``--burst-clients`` concurrent clients on the medical
  network — every one must come back 200.

Routes: ``kn_search``, ``context_search``, ``/api/query`` (mode mix, LLM-free), and the agent tools
``query_object_instance`` (``match`` on the display key) and ``query_instance_subgraph`` (one relation from a
named instance). Bodies are built from the network's own names, shuffled with a fixed seed; with ``--held-out``
the medical network's kn_search and context_search bodies are the held-out patient questions instead (the last
20 % of ``medical/questions_cypher_train.json``, as ``bench.first_answer``: real questions, issue 50 §6).
Targets (issue 21, 8 clients, 2 cores): medical ≥ 40 req/s with p95 ≤ 300 ms; synthetic ≥ 10 req/s; burst 0
errors, 0 dropped.
Run: ``python -m bench.http_serving [--workers 2] [--clients 8] [--seconds 15] [--burst 1000] [--held-out]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table
from sqlalchemy import event

from bench.common import held_out_patient_questions, percentiles, write_result
from bench.http_load import http_load, server_cpu_seconds, start_server, stop_server
from kgrag.agent.kn.instance_queries import (
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.config import get_settings
from kgrag.modes.params import QueryRequest
from kgrag.modes.query import kg_query
from kgrag.network.loaders.registry import load_named
from kgrag.network.store import NetworkStore
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search, kn_search
from kgrag.search.warm import warm_search

PREFIX = "/api/agent-retrieval/in/v1/kn"
NETWORKS = ("medical", "synthetic")
ROUTES = ("kn_search", "context_search", "query", "query_object_instance", "query_instance_subgraph")
TARGET_RPS = {"medical": 40.0, "synthetic": 10.0}
TARGET_P95_MS = {"medical": 300.0}


def progress(message: str) -> None:
    print(f"[bench.http_serving] {message}", file=sys.stderr, flush=True)


def questions(store: NetworkStore, kn_id: str, n: int, seed: int = 0) -> list[str]:
    """Up to ``n`` different user-style questions from the network's instance and type names."""
    network = store.get_network(kn_id)
    names = [name for _, _, name in store.instance_names(kn_id)]
    names += [rt.name for rt in network.relation_types] + [ot.name for ot in network.object_types]
    if any("\u4e00" <= ch <= "\u9fff" for ch in "".join(names[:200])):
        templates = ["{}", "{}的症状", "{}怎么治疗", "{} 常用药", "{}需要做什么检查", "{} 饮食"]
    else:
        templates = ["{}", "{} records", "which {}", "{} details"]
    combos = sorted({template.format(name) for template in templates for name in {str(x) for x in names if x}})
    random.Random(seed).shuffle(combos)
    return combos[:n]


def instance_bodies(store: NetworkStore, kn_id: str, n: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Distinct ``query_object_instance`` and ``query_instance_subgraph`` bodies: a named instance of a type
    (its display key matched / equal), and from it one relation type that has that type at either end."""
    network = store.get_network(kn_id)
    types = {ot.id: ot for ot in network.object_types}
    relations: dict[str, list[str]] = {}
    for rt in network.relation_types:
        relations.setdefault(rt.source_object_type_id, []).append(rt.id)
        relations.setdefault(rt.target_object_type_id, []).append(rt.id)
    rows = [(ot, name) for ot, _, name in store.instance_names(kn_id) if name and ot in types]
    rng = random.Random(seed)
    rng.shuffle(rows)
    objects, subgraphs = [], []
    for ot_id, name in rows:
        ot = types[ot_id]
        key = ot.display_key or "name"
        ops = next((p.condition_operations for p in ot.data_properties if p.name == key), [])
        if len(objects) < n and "match" in ops:
            objects.append({"kn_id": kn_id, "object_type": ot_id, "limit": 10,
                            "condition": {"operation": "match", "field": key, "value": name}})
        if len(subgraphs) < n and ot_id in relations:
            subgraphs.append({"kn_id": kn_id, "limit": 20, "relation_type_path": [rng.choice(relations[ot_id])],
                              "start": {"object_type": ot_id,
                                        "condition": {"operation": "==", "field": key, "value": name}}})
        if len(objects) >= n and len(subgraphs) >= n:
            break
    return objects, subgraphs


def routes(store: NetworkStore, kn_id: str, n: int, search_texts: list[str] | None = None
           ) -> dict[str, tuple[str, list[dict], Callable[[dict], object]]]:
    """route name -> (path, distinct bodies, the in-process call of one body); ``search_texts``: the questions of
    kn_search and context_search (default: built from the network's names, as the other routes' bodies)."""
    texts = questions(store, kn_id, n)
    searched = search_texts if search_texts is not None else texts
    objects, subgraphs = instance_bodies(store, kn_id, n)
    return {
        "kn_search": (f"{PREFIX}/kn_search", [{"query": q, "kn_id": kn_id} for q in searched],
                      lambda b: kn_search(KnSearchRequest(**b), store)),
        "context_search": (f"{PREFIX}/context_search", [{"query": q, "kn_id": kn_id} for q in reversed(searched)],
                           lambda b: context_search(KnSearchRequest(**b), store, use_llm=False)),
        "query": ("/api/query", [{"query": q, "kn_id": kn_id, "param": {"mode": "mix"}} for q in texts[1::2]]
                  + [{"query": q, "kn_id": kn_id, "param": {"mode": "mix"}} for q in texts[0::2]],
                  lambda b: kg_query(b["query"], store, kn_id, QueryRequest(**b).param, None)),
        "query_object_instance": (f"{PREFIX}/query_object_instance", objects,
                                  lambda b: query_object_instance(store, ObjectInstanceQuery(**b))),
        "query_instance_subgraph": (f"{PREFIX}/query_instance_subgraph", subgraphs,
                                    lambda b: query_instance_subgraph(store, InstanceSubgraphQuery(**b))),
    }


def in_process(call: Callable[[dict], object], bodies: list[dict], store: NetworkStore) -> dict:
    """One request at a time in this thread: p50/p95 (wall and CPU), the requests/s of one core and the SQL
    statements a request runs (mean)."""
    seconds, cpu = [], []
    statements = [0]

    def count(*_args: object) -> None:
        statements[0] += 1

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        for body in bodies:
            t, c = time.perf_counter(), time.process_time()
            call(body)
            seconds.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    cpu_ms = percentiles(cpu)
    return {**percentiles(seconds), "cpu_p50_ms": cpu_ms["p50_ms"], "cpu_p95_ms": cpu_ms["p95_ms"],
            "requests": len(bodies),
            "requests_per_s_one_core": round(len(bodies) / sum(seconds), 1),
            "statements_per_request": round(statements[0] / max(len(bodies), 1), 1)}


def table(figures: dict) -> Table:
    out = Table(title="HTTP serving: distinct requests (no response-cache hits)")
    for column in ("network", "route", "in-process p50 ms", "SQL / request", "HTTP req/s", "p50 ms", "p95 ms",
                   "server CPU ms / req", "errors", "dropped", "target"):
        out.add_column(column, justify="left" if column in ("network", "route") else "right")
    for kn_id, routes_figures in figures.items():
        for route, f in routes_figures.items():
            http = f["http"]
            ok = http["requests_per_s"] >= TARGET_RPS[kn_id] and http.get("p95_ms", 1e9) <= TARGET_P95_MS.get(
                kn_id, float("inf")) and not http["errors"] and not http["dropped"]
            out.add_row(kn_id, route, f"{f['in_process']['p50_ms']:.1f}",
                        f"{f['in_process'].get('statements_per_request', 0):.1f}", f"{http['requests_per_s']:.1f}",
                        f"{http.get('p50_ms', 0):.0f}", f"{http.get('p95_ms', 0):.0f}",
                        f"{http.get('server_cpu_ms_per_request', float('nan')):.1f}", str(http["errors"]),
                        str(http["dropped"]), "met" if ok else "missed")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="server processes (kgrag serve --workers)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0, help="measured load per route")
    parser.add_argument("--burst", type=int, default=1000, help="distinct kn_search requests in the burst")
    parser.add_argument("--burst-clients", type=int, default=100)
    parser.add_argument("--db", default=None, help="a SQLite file that already holds both networks (skips loading)")
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=NETWORKS)
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--held-out", action="store_true",
                        help="medical kn_search / context_search bodies: the held-out patient questions")
    args = parser.parse_args(argv)
    held = held_out_patient_questions(get_settings().data_dir, None) if args.held_out else None
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="kgrag-bench-http-")) / "kn.db"
    store = NetworkStore(f"sqlite:///{db}")
    loaded = {kn_id for kn_id, _ in store.list_networks()}
    figures: dict = {}
    burst: dict = {}
    for kn_id in args.networks:
        if kn_id not in loaded:
            progress(f"{kn_id}: loading into {db}")
            load_named(kn_id, store)
        # enough distinct bodies for the warm-up, the in-process baseline and the measured seconds at the target
        burst_n = args.burst if kn_id == "medical" else 0
        need = int(60 + 60 + TARGET_RPS[kn_id] * 4 * args.seconds) + burst_n
        texts = held if kn_id == "medical" else None
        plan = {route: spec for route, spec in routes(store, kn_id, need, texts).items() if route in args.routes}
        figures[kn_id] = {}
        progress(f"{kn_id}: in-process baseline (60 distinct requests per route), after warm_search as the server")
        warm_search(store, kn_ids=[kn_id])
        for route, (_, bodies, call) in plan.items():
            for body in bodies[-120:-60]:  # warm-up: model, vector indexes, relation documents
                call(body)
            figures[kn_id][route] = {"in_process": in_process(call, bodies[-60:], store)}
        progress(f"{kn_id}: starting kgrag serve --workers {args.workers} (waits until warm)")
        t = time.perf_counter()
        server, base = start_server(store.db_url, args.workers)
        startup_s = round(time.perf_counter() - t, 1)
        try:
            for route, (path, bodies, _) in plan.items():
                http_load(base, path, bodies[-120:-60], args.clients, cycle=True, seconds=3)  # every worker warm
                progress(f"{kn_id}: {route}: {args.clients} clients, {args.seconds:.0f} s")
                cpu = server_cpu_seconds(server)
                http = figures[kn_id][route]["http"] = http_load(base, path, bodies[: -120 - burst_n], args.clients,
                                                                 args.seconds)
                cpu_after = server_cpu_seconds(server)
                if cpu is not None and cpu_after is not None and http["requests"]:
                    http["server_cpu_ms_per_request"] = round(1000 * (cpu_after - cpu) / http["requests"], 1)
            if burst_n and "kn_search" in plan:
                path, bodies, _ = plan["kn_search"]
                progress(f"medical: burst of {burst_n} kn_search requests from {args.burst_clients} clients")
                burst = http_load(base, path, bodies[-120 - burst_n: -120], args.burst_clients, None)
        finally:
            stop_server(server)
        figures[kn_id]["server_startup_s"] = startup_s  # type: ignore[assignment]
    startups = {kn_id: figures[kn_id].pop("server_startup_s") for kn_id in args.networks}
    Console(width=150).print(table({k: figures[k] for k in args.networks}))
    if burst:
        Console().print(f"burst: {burst['requests']} requests from {burst['clients']} clients: {burst['ok']} ok, "
                        f"{burst['errors']} errors, {burst['dropped']} dropped, {burst['requests_per_s']} req/s, "
                        f"p95 {burst.get('p95_ms', 0):.0f} ms")
    ratio = {kn_id: {route: round(f["http"]["requests_per_s"] / f["in_process"]["requests_per_s_one_core"], 2)
                     for route, f in figures[kn_id].items()} for kn_id in args.networks}
    write_result(
        "http_serving",
        {**figures, "burst": burst, "server_startup_s": startups, "workers": args.workers,
         "clients": args.clients},
        baseline={kn_id: {route: f["in_process"] for route, f in figures[kn_id].items()} for kn_id in args.networks},
        ratio=ratio,
        split=(f"distinct request bodies built from each network's names (seed 0)"
               f"{'; medical searches: held-out patient questions' if args.held_out else ''}, "
               f"{args.seconds:.0f} s per route"),
        n=sum(f["http"]["requests"] for kn_id in args.networks for f in figures[kn_id].values()),
    )


if __name__ == "__main__":
    main()
