"""Knowledge networks at enterprise scale (issue 53): a generated shop network (bench/big_network_data.py) loaded by
`kgrag kn load` and queried, at each size, on SQLite (and PostgreSQL with ``--backends``).

    python -m bench.big_network --sizes 100000,1000000 [--backends sqlite,postgresql] [--queries 300]

Per (size, backend), in one run, each step a fresh process measured from outside (wall seconds, peak RSS of the
process tree sampled every 0.2 s):
1. ``load``: `kgrag kn load shop.yaml` into an empty database with a cold embedding cache (a fresh work dir);
2. ``reload``: the same command again (nothing changed);
3. ``sync_1pct``: the network with 1 % of its Customers, Products and Orders changed (same seed), loaded over it;
4. ``kn_search`` / ``context_search`` in-process (one warm-up pass, then p50 / p95 over distinct queries made from
   the data: instance names, partial names, descriptions' words), then each over HTTP against `kgrag serve`
   (``--workers``, default one): one client, then 8 clients (requests/s);
5. ``ann_recall@10``: where the store answers knn from an ANN index, its top 10 against the exact scan's for
   the same query (the ``knn`` name field of each big object type, the first 100 queries): ``recall_at_10`` the
   share of the exact top 10 it returns, ``recall_at_10_ties`` the share of its answers whose exact cosine reaches
   the exact 10th best (names repeat: among equal vectors any is a right answer).
``--loads-only`` runs steps 1-3 alone (on each of ``--backends``), the 1 % sync also into a copy whose recorded
source lacks the per-file hashes (the whole state diffed, as before syncs read only changed files: the baseline).
``--queries-on RUN_DIR`` runs steps 4-5 alone on an earlier run's database (a query change measured without a
load); with ``--ab NAME=VALUE``, kn_search over HTTP as it is and with that setting, alternating ``--reps`` times. Disk: the database file (and the ANN index files) after the load. The baseline is the path before issue 53 where
it is still selectable (``KGRAG_KN_ANN_MIN_ROWS=0``: the exact scan; ``KGRAG_LOAD_ENCODER=torch``: the torch
encoder) at ``--baseline-size`` in the same run; ratios are new / baseline. Results: bench/results/big_network.json and a table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from bench.big_network_data import generate, vocabulary
from bench.common import percentiles, write_result
from bench.http_load import http_load, start_server, stop_server

ROOT = Path(__file__).resolve().parents[1]
RETRIEVAL = "/api/agent-retrieval/in/v1/kn"
GENERATOR_VERSION = "1"


def progress(message: str) -> None:
    print(f"[bench.big_network {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def dataset(size: int, root: Path, changed: float = 0.0, short: bool = False) -> Path:
    """The generated network's schema file (written once per size / change / profile under ``root``; ``short``:
    without descriptions, short names only)."""
    folder = root / f"{size}{'-changed' if changed else ''}{'-short' if short else ''}"
    marker = folder / f".generated-v{GENERATOR_VERSION}"
    if not marker.exists():
        t = time.perf_counter()
        counts = generate(size, folder, seed=0, changed=changed, vocab=vocabulary(), descriptions=not short)
        marker.write_text(json.dumps(counts))
        what = f"{size:,}{' (1 % changed)' if changed else ''}{' short names' if short else ''}"
        progress(f"generated {what} in {time.perf_counter() - t:.0f} s: {counts}")
    return folder / "shop.yaml"


def run_env(work: Path, **extra: str) -> dict[str, str]:
    """The environment of a measured command or server on a run's folder: its own work dir (embedding cache), offline,
    no LLM (``extra``: settings on top)."""
    return {**os.environ, "KGRAG_WORK_DIR": str(work / "work"), "HF_HUB_OFFLINE": "1", "KGRAG_LLM_BASE_URL": "",
            **extra}


def query_sets(schema: Path, n_queries: int) -> tuple[list[str], list[str], list[str]]:
    """``(one client's, 8 clients', warm-up)`` queries — each asks its own, so no answer comes from the response
    cache."""
    both = queries(schema, 2 * n_queries + 30)
    return both[:n_queries], both[n_queries:2 * n_queries], both[2 * n_queries:]


def _anon_bytes(process: psutil.Process) -> int:
    """Resident anonymous memory (``RssAnon``: not the file pages a process maps, which the kernel can drop)."""
    try:
        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str], env: dict[str, str], log: Path) -> dict[str, Any]:
    """Run ``cmd``; its wall seconds and the peak RSS of its process tree, all of it and its anonymous part
    (without the mapped database and embedding-cache pages), sampled every 0.2 s."""
    peak = peak_anon = 0
    start = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
        root = psutil.Process(proc.pid)
        done = threading.Event()

        def sample() -> None:
            nonlocal peak, peak_anon
            while not done.is_set():
                try:
                    tree = [root, *root.children(recursive=True)]
                    peak = max(peak, sum(p.memory_info().rss for p in tree))
                    peak_anon = max(peak_anon, sum(_anon_bytes(p) for p in tree))
                except psutil.Error:
                    pass
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = proc.wait()
        done.set()
        sampler.join()
    seconds = time.perf_counter() - start
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}); see {log}: {log.read_text()[-3000:]}")
    return {"seconds": round(seconds, 1), "peak_rss_gb": round(peak / 1e9, 2),
            "peak_anon_gb": round(peak_anon / 1e9, 2)}


def queries(schema: Path, n: int, seed: int = 0) -> list[str]:
    """Distinct user-like queries from the data: names, partial names and description words of random instances."""
    import csv

    rng = random.Random(seed)
    pool: list[tuple[str, str]] = []
    for kind in ("customer", "product", "supplier", "review", "order"):
        with (schema.parent / f"{kind}.csv").open(encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        pool += [(r["name"], r["description"]) for r in rng.sample(rows, min(len(rows), n))]
    out: dict[str, None] = {}
    while len(out) < n and pool:
        name, desc = pool.pop(rng.randrange(len(pool)))
        words = name.split()
        form = rng.random()
        if form < 0.5:
            q = name
        elif form < 0.75 and len(words) > 1:
            q = " ".join(words[: max(1, len(words) // 2 + 1)])
        else:
            dw = desc.split()
            start = rng.randrange(max(1, len(dw) - 4))
            q = " ".join(dw[start : start + 4]).strip(",.;")
        out.setdefault(q, None)
    return list(out)


def in_process(db_url: str, work: Path, qs: list[str], env: dict[str, str]) -> dict[str, Any]:
    """kn_search / context_search latencies in a fresh process (one warm-up pass, one measured pass)."""
    script = (
        "import json, sys, time\n"
        "from kgrag.network.store import NetworkStore\n"
        "from kgrag.search.kn_models import KnSearchRequest\n"
        "from kgrag.search.pipeline import context_search, kn_search\n"
        f"store = NetworkStore({db_url!r})\n"
        "qs = json.load(open(sys.argv[1]))\n"
        "out = {}\n"
        "for name, fn in (('kn_search', lambda r: kn_search(r, store, reranker=None)),\n"
        "                 ('context_search', lambda r: context_search(r, store))):\n"
        "    t0 = time.perf_counter(); fn(KnSearchRequest(query=qs[0], kn_id='shop'))\n"
        "    first = time.perf_counter() - t0\n"
        "    for q in qs: fn(KnSearchRequest(query=q, kn_id='shop'))\n"
        "    ms = []\n"
        "    for q in qs:\n"
        "        t = time.perf_counter(); fn(KnSearchRequest(query=q, kn_id='shop')); ms.append((time.perf_counter() - t) * 1e3)\n"
        "    out[name] = {'first_query_s': round(first, 2), 'ms': ms}\n"
        "import os\n"
        "import numpy as np\n"
        "from kgrag.config import get_settings\n"
        "big = store.index.ann_types('shop')\n"
        "def top(t, f, q): return list(store.knn_scores('shop', 'instance', t, [f], q, 10))\n"
        "probe = [(t, fs[0], q) for t, fs in big.items() for q in qs[:100]]\n"
        "approx = [top(*p) for p in probe]\n"
        "os.environ['KGRAG_KN_ANN_MIN_ROWS'] = '0'; get_settings.cache_clear()\n"
        "version = store.network_version('shop'); emb = store.index.embedder_for('shop')\n"
        "strict, tie = [], []\n"
        "for (t, f, q), got in zip(probe, approx):\n"
        "    index = store.index._vector_index('shop', version, 'instance', t)\n"
        "    rows, matrix = index.rows_for([f])\n"
        "    sims = dict(zip(index.ids[rows], matrix @ emb.encode_query(q)))\n"
        "    exact = sorted(sims, key=lambda i: (-sims[i], i))[:10]\n"
        "    if not exact: continue\n"
        "    tenth = sims[exact[-1]]\n"
        "    strict.append(len(set(got) & set(exact)) / len(exact))\n"
        "    tie.append(sum(sims.get(i, -2) >= tenth - 1e-6 for i in got) / len(exact))\n"
        "out['ann'] = {'types': sorted(big), 'probes': len(tie), "
        "'recall_at_10': round(sum(strict) / len(strict), 4) if strict else None, "
        "'recall_at_10_ties': round(sum(tie) / len(tie), 4) if tie else None}\n"
        "print(json.dumps(out))\n"
    )
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(qs))
    res = subprocess.run([sys.executable, "-c", script, str(qfile)], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=3600)
    if res.returncode != 0:
        raise RuntimeError(f"in-process search failed: {res.stderr[-3000:]}")
    raw = json.loads(res.stdout.strip().splitlines()[-1])
    ann = raw.pop("ann")
    return {**{name: {"first_query_s": v["first_query_s"], **percentiles([ms / 1e3 for ms in v["ms"]])}
               for name, v in raw.items()}, "ann": ann}


def over_http(db_url: str, qs: list[str], more: list[str], warm: list[str], env: dict[str, str],
              workers: int = 1, routes: tuple[str, ...] = ("kn_search", "context_search")) -> dict[str, Any]:
    """kn_search over HTTP against ``kgrag serve --workers``: one client, then 8 clients on other queries; then
    context_search the same way (one client on the first queries, 8 on the others: no answer from a cache)."""
    server, base = start_server(db_url, workers=workers, env=env, startup_s=1800)
    try:
        out: dict[str, Any] = {}
        for route in routes:
            # 8 connections: with several workers each gets its share of the warm-up (a connection stays on one)
            http_load(base, f"{RETRIEVAL}/{route}", [{"kn_id": "shop", "query": q} for q in warm], clients=8)
            out[f"{route}_1_client"] = http_load(base, f"{RETRIEVAL}/{route}",
                                                 [{"kn_id": "shop", "query": q} for q in qs], clients=1)
            out[f"{route}_8_clients"] = http_load(base, f"{RETRIEVAL}/{route}",
                                                  [{"kn_id": "shop", "query": q} for q in more], clients=8)
        return out
    finally:
        stop_server(server)


def db_size(db_url: str, work: Path) -> dict[str, float]:
    """GB on disk: the database file(s) and the ANN bases (next to a SQLite file, else under the work dir)."""
    def size(folder: Path) -> int:
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0

    if db_url.startswith("sqlite:///"):
        path = Path(db_url.removeprefix("sqlite:///"))
        database = sum(p.stat().st_size for p in path.parent.glob(path.name + "*") if p.is_file())
        ann = size(path.parent / f"{path.name}.ann")
    else:
        database, ann = 0, size(work / "ann")
    return {"database_gb": round(database / 1e9, 2), "ann_gb": round(ann / 1e9, 2)}


def load_steps(size: int, root: Path, label: str, work: Path, db_url: str, env: dict[str, str],
               whole_diff: Callable[[], str] | None = None) -> dict[str, Any]:
    """Steps 1-3 on ``db_url``: the load, the reload and the 1 % sync, each a measured ``kn load`` (and, with
    ``whole_diff`` — made after the reload, returning a copy's URL — the same sync into that copy:
    ``sync_1pct_whole_diff``)."""
    schema, changed = dataset(size, root / "data"), dataset(size, root / "data", changed=0.01)
    cmd = [sys.executable, "-m", "kgrag.cli", "kn", "load", "--db"]
    log = work / "load.log"
    counts = json.loads(next((root / "data" / str(size)).glob(".generated-v*")).read_text())
    progress(f"{label}: loading {counts['instances']:,} instances + {counts['links']:,} links")
    fig: dict[str, Any] = {"instances": counts["instances"], "links": counts["links"]}
    fig["load"] = run_measured([*cmd, db_url, str(schema)], env, log)
    fig["load"]["rows_per_s"] = round((counts["instances"] + counts["links"]) / fig["load"]["seconds"])
    fig["disk_gb"] = db_size(db_url, work / "work")
    progress(f"{label}: load {fig['load']}; disk {fig['disk_gb']} GB")
    fig["reload"] = run_measured([*cmd, db_url, str(schema)], env, log)
    copy = whole_diff() if whole_diff is not None else None
    fig["sync_1pct"] = run_measured([*cmd, db_url, str(changed)], env, log)
    if copy is not None:
        fig["sync_1pct_whole_diff"] = run_measured([*cmd, copy, str(changed)], env, log)
    progress(f"{label}: reload {fig['reload']}; 1 % sync {fig['sync_1pct']}"
             + (f"; whole diff {fig['sync_1pct_whole_diff']}" if copy is not None else ""))
    return fig


def measure(size: int, backend: str, root: Path, n_queries: int, baseline: bool,
            pg_url: str | None, workers: int = 1) -> dict[str, Any]:
    label = f"{size:,} on {backend}{' (baseline)' if baseline else ''}"
    work = Path(tempfile.mkdtemp(prefix="big-", dir=root))
    db_url = f"sqlite:///{work / 'kn.db'}" if backend == "sqlite" else str(pg_url)
    env = run_env(work, **({"KGRAG_KN_ANN_MIN_ROWS": "0", "KGRAG_LOAD_ENCODER": "torch"} if baseline else {}))
    fig = load_steps(size, root, label, work, db_url, env)
    schema = dataset(size, root / "data")
    qs, more, warm = query_sets(schema, n_queries)
    fig["queries"] = len(qs) + len(more) + len(warm)
    fig["in_process"] = in_process(db_url, work, qs, env)
    ip = fig["in_process"]
    progress(f"{label}: in-process kn_search p50 {ip['kn_search']['p50_ms']:.1f} p95 {ip['kn_search']['p95_ms']:.1f} "
             f"ms, context_search p50 {ip['context_search']['p50_ms']:.1f} ms; ANN {ip['ann']}")
    fig["http"] = over_http(db_url, qs, more, warm, env, workers)
    one, eight = fig["http"]["kn_search_1_client"], fig["http"]["kn_search_8_clients"]
    progress(f"{label}: HTTP 1 client p50 {one.get('p50_ms')} p95 {one.get('p95_ms')} ms; 8 clients "
             f"{eight['requests_per_s']} req/s")
    return fig


def measure_queries(size: int, folder: Path, root: Path, n_queries: int, workers: int = 1) -> dict[str, Any]:
    """Steps 4-5 alone on a database an earlier run loaded (``folder``: its ``kn.db`` and ``work``), with the
    queries :func:`measure` asks: a query change measured without loading again."""
    schema = dataset(size, root / "data")
    db_url = f"sqlite:///{folder / 'kn.db'}"
    env = run_env(folder)
    qs, more, warm = query_sets(schema, n_queries)
    fig: dict[str, Any] = {"database": db_url, "queries": len(qs) + len(more) + len(warm),
                           "in_process": in_process(db_url, folder, qs, env)}
    ip = fig["in_process"]
    progress(f"{size:,}: in-process kn_search p50 {ip['kn_search']['p50_ms']:.1f} p95 {ip['kn_search']['p95_ms']:.1f} "
             f"ms; ANN {ip['ann']}")
    fig["http"] = over_http(db_url, qs, more, warm, env, workers)
    return fig


def ab_http(size: int, folder: Path, root: Path, n_queries: int, setting: str, reps: int,
            workers: int = 1) -> dict[str, Any]:
    """kn_search over HTTP (1 client, 8 clients) on an earlier run's database, as it is and with ``setting``
    (``NAME=VALUE``) in the server's environment, alternating ``reps`` times: one change's cost or gain measured
    side by side, in one session."""
    name, _, value = setting.partition("=")
    qs, more, warm = query_sets(dataset(size, root / "data"), n_queries)
    env = run_env(folder)
    runs: dict[str, list[dict[str, Any]]] = {"as is": [], setting: []}
    for rep in range(reps):
        for label, extra in (("as is", {}), (setting, {name: value})):
            got = over_http(f"sqlite:///{folder / 'kn.db'}", qs, more, warm, {**env, **extra}, workers,
                            routes=("kn_search",))
            runs[label].append({k: {m: v.get(m) for m in ("p50_ms", "p95_ms", "requests_per_s")}
                                for k, v in got.items()})
            progress(f"A/B {rep} {label}: {runs[label][-1]}")
    return runs


def whole_diff_copy(db_url: str, work: Path, cluster: Any = None) -> str:
    """A copy of a run's database (SQLite: the file and its ANN bases; PostgreSQL: ``CREATE DATABASE … TEMPLATE``
    in ``cluster``) whose recorded source lacks the per-file hashes: a sync into it diffs the whole state, as every
    sync did before it read only changed files (the in-run baseline)."""
    import shutil
    import sqlite3

    if cluster is not None:
        import sqlalchemy as sa

        name = db_url.rsplit("/", 1)[1]
        admin = sa.create_engine(cluster.url_for("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}_whole" TEMPLATE "{name}"')
        admin.dispose()
        copy_url = cluster.url_for(f"{name}_whole")
        engine = sa.create_engine(copy_url)
        with engine.begin() as conn:
            conn.exec_driver_sql("UPDATE kn_networks SET stats = (stats::jsonb #- '{source,files}')::json")
        engine.dispose()
        return copy_url
    path = Path(db_url.removeprefix("sqlite:///"))
    copy = work / "whole-diff.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(path, copy)
    if Path(f"{path}.ann").exists():
        shutil.copytree(f"{path}.ann", f"{copy}.ann")
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE kn_networks SET stats = json_remove(stats, '$.source.files')")
    return f"sqlite:///{copy}"


def measure_loads(size: int, root: Path, cluster: Any = None) -> dict[str, Any]:
    """``--loads-only``: the load, the reload and the 1 % sync of ``measure`` (no query steps) on SQLite, or on a
    new database of the PostgreSQL ``cluster``, plus the same sync diffing the whole state on a copy taken before
    it (``sync_1pct_whole_diff``: the baseline; run second, its changed texts' vectors come from the embedding
    cache: a lower bound of its time)."""
    label = f"{size:,} on {'postgresql' if cluster is not None else 'sqlite'}"
    work = Path(tempfile.mkdtemp(prefix="big-", dir=root))
    db_url = cluster.create_database(f"loads_{size}") if cluster is not None else f"sqlite:///{work / 'kn.db'}"
    fig = load_steps(size, root, label, work, db_url, run_env(work), lambda: whole_diff_copy(db_url, work, cluster))
    for step in ("reload", "sync_1pct", "sync_1pct_whole_diff"):
        fig[step]["share_of_load"] = round(fig[step]["seconds"] / fig["load"]["seconds"], 4)
    return fig


def table(results: dict[str, dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table("run", "instances + links", "load s", "rows/s", "peak GB", "disk GB (db + ANN)", "reload s", "1 % sync s",
              "kn_search p50/p95 ms (in-proc)", "HTTP 1 client p50/p95 ms", "HTTP 8 clients req/s", "ANN recall@10 (ties)",
              title="bench.big_network")
    for name, f in results.items():
        ip, one = f["in_process"]["kn_search"], f["http"]["kn_search_1_client"]
        t.add_row(name, f"{f['instances']:,} + {f['links']:,}", str(f["load"]["seconds"]), f"{f['load']['rows_per_s']:,}",
                  str(f["load"]["peak_rss_gb"]), f"{f['disk_gb']['database_gb']} + {f['disk_gb']['ann_gb']}",
                  str(f["reload"]["seconds"]),
                  str(f["sync_1pct"]["seconds"]), f"{ip['p50_ms']} / {ip['p95_ms']}",
                  f"{one.get('p50_ms')} / {one.get('p95_ms')}", str(f["http"]["kn_search_8_clients"]["requests_per_s"]),
                  f"{f['in_process']['ann']['recall_at_10']} / {f['in_process']['ann']['recall_at_10_ties']}")
    Console().print(t)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--baseline-size", type=int, default=100_000, help="0: no baseline run")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--workers", type=int, default=1, help="kgrag serve workers for the HTTP measurements")
    parser.add_argument("--root", type=Path, default=ROOT / "work" / "big_network")
    parser.add_argument("--queries-on", type=Path, default=None, metavar="RUN_DIR",
                        help="only the query steps, on the database an earlier run of the first size loaded "
                        "(its big-… folder under --root); results: bench/results/big_network_queries.json")
    parser.add_argument("--ab", default=None, metavar="NAME=VALUE",
                        help="with --queries-on: kn_search over HTTP as it is and with this setting, alternating "
                        "--reps times (bench/results/big_network_ab.json)")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--loads-only", action="store_true",
                        help="the load, reload and 1 %% sync alone (no query steps; each --backends), the sync "
                        "also diffing the whole state on a copy (the baseline); results: "
                        "bench/results/big_network_loads.json")
    args = parser.parse_args(argv)
    args.root.mkdir(parents=True, exist_ok=True)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.loads_only:
        loads: dict[str, Any] = {}
        for backend in [b for b in args.backends.split(",") if b]:
            if backend == "postgresql":
                from harness.servers.postgres import throwaway_postgres

                with throwaway_postgres() as cluster:
                    loads.update({f"{size} postgresql": measure_loads(size, args.root, cluster) for size in sizes})
            else:
                loads.update({f"{size} sqlite": measure_loads(size, args.root) for size in sizes})
        print(json.dumps(loads, indent=1))
        last = loads[list(loads)[-1]]
        write_result("big_network_loads", loads, {"sync_1pct_whole_diff": last["sync_1pct_whole_diff"]},
                     {"sync_1pct_seconds": round(last["sync_1pct"]["seconds"]
                                                 / last["sync_1pct_whole_diff"]["seconds"], 3)},
                     split="generated shop network (bench/big_network_data.py, seed 0) and its 1 %-changed version",
                     n=len(sizes), module="big_network")
        return
    if args.queries_on is not None and args.ab:
        runs = ab_http(sizes[0], args.queries_on, args.root, args.queries, args.ab, args.reps, args.workers)
        print(json.dumps(runs, indent=1))
        write_result("big_network_ab", {"as is": runs["as is"]}, {args.ab: runs[args.ab]}, {},
                     split="generated shop network (seed 0); kn_search over HTTP on an earlier run's database, "
                     "alternating", n=args.reps * 2 * (2 * args.queries), module="big_network")
        return
    if args.queries_on is not None:
        fig = measure_queries(sizes[0], args.queries_on, args.root, args.queries, args.workers)
        ip, http = fig["in_process"]["kn_search"], fig["http"]
        print(json.dumps({"kn_search_in_process": ip, "ann": fig["in_process"]["ann"],
                          **{k: {m: v.get(m) for m in ("p50_ms", "p95_ms", "requests_per_s")} for k, v in http.items()}},
                         indent=1))
        write_result("big_network_queries", {f"{sizes[0]} sqlite": fig}, {}, {},
                     split="generated shop network (bench/big_network_data.py, seed 0); queries from its own rows; "
                     "the query steps alone on an earlier run's database", n=fig["queries"], module="big_network")
        return
    backends = [b for b in args.backends.split(",") if b]
    results: dict[str, dict] = {}
    baseline: dict[str, Any] = {}
    pg_cm = None
    pg_url = None
    if "postgresql" in backends:
        from harness.servers.postgres import throwaway_postgres

        pg_cm = throwaway_postgres()
        cluster = pg_cm.__enter__()
    try:
        for backend in backends:
            for size in sizes:
                if backend == "postgresql":
                    pg_url = cluster.create_database(f"big_{size}")
                results[f"{size} {backend}"] = measure(size, backend, args.root, args.queries, False, pg_url,
                                                       args.workers)
        if args.baseline_size:
            results[f"{args.baseline_size} sqlite baseline"] = baseline = measure(
                args.baseline_size, "sqlite", args.root, args.queries, True, None, args.workers)
    finally:
        if pg_cm is not None:
            pg_cm.__exit__(None, None, None)
    table(results)
    ratio: dict[str, float] = {}
    new = results.get(f"{args.baseline_size} sqlite")
    if baseline and new:
        ratio = {"load_seconds": round(new["load"]["seconds"] / baseline["load"]["seconds"], 3),
                 "peak_rss": round(new["load"]["peak_rss_gb"] / max(baseline["load"]["peak_rss_gb"], 1e-9), 3),
                 "kn_search_http_p50": round(new["http"]["kn_search_1_client"]["p50_ms"]
                                             / baseline["http"]["kn_search_1_client"]["p50_ms"], 3)}
    write_result("big_network", {k: v for k, v in results.items() if "baseline" not in k}, baseline, ratio,
                 split="generated shop network (bench/big_network_data.py, seed 0); queries from its own rows",
                 n=sum(r["queries"] for r in results.values()))


if __name__ == "__main__":
    main()
