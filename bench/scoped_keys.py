"""kn_search over HTTP with a scoped key against the single ``KGRAG_API_KEY``, in the same run (issue 52).

One ``kgrag serve`` (1 worker) over the medical network with ``KGRAG_API_KEY`` set and a scoped read key on
``medical`` (``kgrag.access.keys``); distinct kn_search bodies (``bench.http_serving.questions``: the response cache
never answers), sent in alternating blocks (single then scoped, then scoped then single, …) so drift on the machine
falls on both alike. Reported per key: requests/s, p50 / p95 over HTTP with 1 client and with 8; the ratio is scoped /
single (the target: within 5 %).

Run: ``python -m bench.scoped_keys [--rounds 3] [--per-block 100]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.common import percentiles, write_result
from bench.http_load import http_load, start_server, stop_server
from bench.http_serving import questions
from kgrag.access.keys import KeyStore
from kgrag.network.loaders.registry import load_named
from kgrag.network.store import NetworkStore

PATH = "/api/agent-retrieval/in/v1/kn/kn_search"
LEGACY = "bench-single-key"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--per-block", type=int, default=100)
    args = parser.parse_args(argv)
    db_url = f"sqlite:///{Path(tempfile.mkdtemp(prefix='kgrag-bench-keys-')) / 'kn.db'}"
    store = NetworkStore(db_url)
    try:
        print("[bench.scoped_keys] loading medical …", file=sys.stderr, flush=True)
        load_named("medical", store)
        need = 2 * args.rounds * args.per_block * 2  # two keys, two client counts
        texts = questions(store, "medical", need)
        token, _ = KeyStore(store.engine).create("bench-reader", "read", kns=["medical"], kgs=[],
                                                 created_by="bench")
    finally:
        store.close()
    if len(texts) < need:
        raise SystemExit(f"only {len(texts)} distinct questions for {need} requests")
    bodies = [{"kn_id": "medical", "query": q, "only_schema": False} for q in texts]
    keys = {"single KGRAG_API_KEY": LEGACY, "scoped read key": token}
    proc, base = start_server(db_url, workers=1, env={"KGRAG_API_KEY": LEGACY})
    figures: dict = {}
    cursor = 0
    try:
        for clients in (1, 8):
            runs: dict[str, list[dict]] = {name: [] for name in keys}
            for r in range(args.rounds):
                order = list(keys.items()) if r % 2 == 0 else list(keys.items())[::-1]  # ABBA: drift cancels
                for name, key in order:
                    block = bodies[cursor : cursor + args.per_block]
                    cursor += args.per_block
                    runs[name].append(http_load(base, PATH, block, clients=clients,
                                                headers={"Authorization": f"Bearer {key}"}, keep_latencies=True))
            for name, blocks in runs.items():
                ok = sum(b["ok"] for b in blocks)
                requests = sum(b["requests"] for b in blocks)
                seconds = sum(b["seconds"] for b in blocks)
                pooled = percentiles([s for b in blocks for s in b["latencies_s"]])
                figures.setdefault(f"{clients} client(s)", {})[name] = {
                    "requests": requests, "ok": ok, "requests_per_s": round(requests / seconds, 1),
                    "p50_ms": round(pooled["p50_ms"], 1), "p95_ms": round(pooled["p95_ms"], 1)}
    finally:
        stop_server(proc)
    ratio = {c: round(f["scoped read key"]["requests_per_s"] / f["single KGRAG_API_KEY"]["requests_per_s"], 3)
             for c, f in figures.items()}
    table = Table("clients", "key", "requests", "ok", "req/s", "p50 ms", "p95 ms", title="kn_search over HTTP")
    for clients, per_key in figures.items():
        for name, f in per_key.items():
            table.add_row(clients, name, str(f["requests"]), str(f["ok"]), str(f["requests_per_s"]),
                          str(f["p50_ms"]), str(f["p95_ms"]))
    Console().print(table)
    write_result("scoped_keys", figures, {"key": "single KGRAG_API_KEY"}, ratio,
                 "medical network, distinct kn_search questions built from its names (bench.http_serving)",
                 cursor)


if __name__ == "__main__":
    main()
