"""Remote SPARQL servers on MetaQA: Virtuoso 7 bulk-load rate, and KG-tool latency on Virtuoso vs ``oxigraph serve``
vs the embedded pyoxigraph store (the baseline of the ratios).

Load: MetaQA's ``triples.nt`` (``kgrag prepare``'s graph step, 176,920 RDF triples: 133,582 edges + names +
typed years) bulk-loaded by :func:`harness.servers.virtuoso.bulk_load` into a fresh Virtuoso (a new database per
configuration, ``ld_dir`` + ``rdf_loader_run`` + ``checkpoint``, timed to the end of the checkpoint):

- ``one_file``: the single file, one loader;
- ``gz_splits``: the file split into 8 gzipped N-Triples parts, one ``rdf_loader_run()`` per core, the way a
  Freebase dump is loaded (docs/freebase-virtuoso.md);
- ``gz_splits_x<K>`` (``--scale K``, default 10): K copies of MetaQA under K distinct namespaces (K × 176,920
  distinct triples, so the database is K times larger) as 8 × K gzipped parts, loaded the same way: the rate at
  a size where the load no longer sits in a few buffers, the figure docs/freebase-virtuoso.md extrapolates from.

The embedded baseline: ``build_store`` (pyoxigraph bulk load of the same file, what ``kgrag prepare`` does).

Latency: a seeded sample of MetaQA dev-question topic entities (as bench/kgtools.py). Per entity and backend, in a
fresh :class:`KGSession`: ``get_relations(<id>)`` (cold session caches), then ``get_triples(<id>, [first 2
relations shown])``. Backends are interleaved per entity in rotating order, after an untimed warm-up pass over every
entity on every backend (so the figures are warm-server latencies, not cold disk). Checks: the relation SETS each
backend shows agree for every entity; exact text agreement is counted (row order, hence BM25 ties and sampling,
may differ between servers: no query has an ORDER BY).

Run: ``python -m bench.sparql_servers [--n 300]`` (prepares MetaQA in the work dir if needed; needs
``virtuoso-t``/``isql-vt`` from Debian's virtuoso-opensource and the ``oxigraph`` CLI).
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from pathlib import Path

from bench.common import percentiles, write_result
from bench.kgtools import load_topics, relations_of, triples_call
from bench.neighbourhood import ensure_prepared
from harness.servers.oxigraph_server import serve_read_only
from harness.servers.virtuoso import LoadReport, bulk_load, start_virtuoso
from kgrag.config import get_settings
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.graph.oxigraph_store import OxigraphStore, build_store
from kgrag.graph.remote_store import RemoteStore
from kgrag.graph.store import GraphStore
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.factory import make_client
from kgrag.tools.filter import OfflineRelationFilter
from kgrag.tools.session import KGSession

GRAPH = "http://kgrag.local/graph/metaqa"
SPLITS = 8


def split_gz(source: Path, target: Path, parts: int) -> list[Path]:
    """``source`` N-Triples as ``parts`` gzipped files of whole lines (round robin by line blocks)."""
    target.mkdir(parents=True, exist_ok=True)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    size = -(-len(lines) // parts)
    out = []
    for i in range(parts):
        path = target / f"part-{i:03d}.nt.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as fh:
            fh.writelines(lines[i * size:(i + 1) * size])
        out.append(path)
    return out


def scaled_gz(source: Path, target: Path, copies: int, parts_per_copy: int) -> int:
    """``copies`` renamed copies of ``source`` (namespace ``…/ns/`` → ``…/ns<c>/``) as gzipped parts; lines written."""
    target.mkdir(parents=True, exist_ok=True)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    size = -(-len(lines) // parts_per_copy)
    for c in range(copies):
        for i in range(parts_per_copy):
            with gzip.open(target / f"copy-{c:03d}-part-{i:03d}.nt.gz", "wt", encoding="utf-8", compresslevel=1) as fh:
                fh.writelines(line.replace("/ns/", f"/ns{c}/") for line in lines[i * size:(i + 1) * size])
    return copies * len(lines)


def dir_mib(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.glob("virtuoso*.db")) / 2**20, 1)


def virtuoso_load(ntriples: Path, root: Path, mode: str, loaders: int, copies: int = 1) -> dict:
    """One bulk load into a fresh database; the report plus start time and database size."""
    load_dir = root / f"load-{mode}"
    if mode == "one_file":
        load_dir.mkdir(parents=True, exist_ok=True)
        (load_dir / ntriples.name).symlink_to(ntriples)
        pattern = ntriples.name
    elif copies > 1:
        scaled_gz(ntriples, load_dir, copies, SPLITS)
        pattern = "*.nt.gz"
    else:
        split_gz(ntriples, load_dir, SPLITS)
        pattern = "*.nt.gz"
    t = time.perf_counter()
    server = start_virtuoso(root / f"db-{mode}", dirs_allowed=[load_dir, ntriples.parent])
    started = time.perf_counter() - t
    try:
        report: LoadReport = bulk_load(server, load_dir, graph=GRAPH, pattern=pattern, loaders=loaders)
        size = dir_mib(server.directory)
    finally:
        server.stop()
    return {"files": report.files, "loaders": loaders, "triples": report.triples,
            "seconds": round(report.seconds, 3), "triples_per_s": round(report.triples_per_s),
            "server_start_s": round(started, 2), "db_mib": size}


def embedded_load(ntriples: Path, root: Path) -> dict:
    t = time.perf_counter()
    count = build_store(ntriples, root / "oxigraph")
    seconds = time.perf_counter() - t
    return {"triples": count, "seconds": round(seconds, 3), "triples_per_s": round(count / seconds)}


def one_entity(store: GraphStore, entity_id: str, question: str, config: KGToolsConfig,
               relation_filter: OfflineRelationFilter) -> tuple[float, float, str, str]:
    session = KGSession(make_client(store, BUILTIN_SPECS["metaqa"], config), question=question, config=config,
                        relation_filter=relation_filter)
    t = time.perf_counter()
    rels = session.run(f'get_relations("{entity_id}")')
    t_rel = time.perf_counter() - t
    t = time.perf_counter()
    triples = session.run(triples_call(entity_id, relations_of(rels)[:2]))
    t_tri = time.perf_counter() - t
    errors = [r for r in session.trace if r["type"] == "error"]
    assert not errors, f"{store.location}: {errors[0]}"
    return t_rel, t_tri, rels, triples


def latency(stores: dict[str, GraphStore], topics: list, config: KGToolsConfig) -> tuple[dict, dict]:
    relation_filter = OfflineRelationFilter()
    names = list(stores)
    for topic in topics:  # warm-up: every entity on every backend, untimed
        for name in names:
            one_entity(stores[name], topic.entity_id, topic.question, config, relation_filter)
    times = {n: {"get_relations": [], "get_triples": []} for n in names}
    texts: dict[str, list[tuple[str, str]]] = {n: [] for n in names}
    for i, topic in enumerate(topics):
        order = names[i % len(names):] + names[:i % len(names)]
        for name in order:
            t_rel, t_tri, rels, triples = one_entity(stores[name], topic.entity_id, topic.question, config,
                                                     relation_filter)
            times[name]["get_relations"].append(t_rel)
            times[name]["get_triples"].append(t_tri)
            texts[name].append((rels, triples))
    ref = texts["embedded"]
    agreement = {}
    for name in names:
        for (r1, _), (r2, _), topic in zip(ref, texts[name], topics, strict=True):
            assert set(relations_of(r1)) == set(relations_of(r2)), f"{name}: relations differ for {topic.entity_id}"
        agreement[name] = {
            "get_relations_same_text": sum(a[0] == b[0] for a, b in zip(ref, texts[name], strict=True)),
            "get_triples_same_text": sum(a[1] == b[1] for a, b in zip(ref, texts[name], strict=True)),
        }
    figures = {name: {tool: percentiles(s) for tool, s in tools.items()} for name, tools in times.items()}
    return figures, agreement


def table(load: dict, lat: dict) -> str:
    rows = ["| load (MetaQA) | triples | files | loaders | seconds | triples/s |", "|---|---|---|---|---|---|"]
    for name, f in load.items():
        rows.append(f"| {name} | {f['triples']:,} | {f.get('files', 1)} | {f.get('loaders', 1)} | {f['seconds']} | "
                    f"{f['triples_per_s']:,} |")
    rows += ["", "| backend | get_relations p50 / p95 ms | get_triples p50 / p95 ms |", "|---|---|---|"]
    for name, f in lat.items():
        r, t = f["get_relations"], f["get_triples"]
        rows.append(f"| {name} | {r['p50_ms']:.2f} / {r['p95_ms']:.2f} | {t['p50_ms']:.2f} / {t['p95_ms']:.2f} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300, help="topic entities for the latency figures")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loaders", type=int, default=2, help="parallel rdf_loader_run for the gz splits")
    parser.add_argument("--scale", type=int, default=10, help="copies of MetaQA for the scaled load (0: skip)")
    args = parser.parse_args(argv)

    ensure_prepared()
    out = get_settings().dataset_dir("metaqa")
    ntriples = out / "triples.nt"
    topics = load_topics(args.n, args.seed)
    config = KGToolsConfig(seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-sparql-") as tmp:
        root = Path(tmp)
        load = {"embedded_pyoxigraph": embedded_load(ntriples, root),
                "virtuoso_one_file": virtuoso_load(ntriples, root, "one_file", loaders=1),
                "virtuoso_gz_splits": virtuoso_load(ntriples, root, "gz_splits", loaders=args.loaders)}
        if args.scale > 1:
            load[f"virtuoso_gz_splits_x{args.scale}"] = virtuoso_load(
                ntriples, root, f"gz_splits_x{args.scale}", loaders=args.loaders, copies=args.scale)

        server = start_virtuoso(root / "db-serve", dirs_allowed=[out])
        served = serve_read_only(out / "oxigraph")
        embedded = OxigraphStore(out / "oxigraph", read_only=True)
        try:
            bulk_load(server, out, graph=GRAPH, pattern="triples.nt")
            server.restart()  # fresh optimizer samples after the load (VirtuosoServer.restart)
            stores: dict[str, GraphStore] = {
                "embedded": embedded,
                "oxigraph_serve": RemoteStore(served.url, timeout=30),
                "virtuoso": RemoteStore(server.url, timeout=30, graph=GRAPH),
            }
            lat, agreement = latency(stores, topics, config)
        finally:
            served.stop()
            server.stop()
            embedded.close()

    base = lat["embedded"]
    ratio = {f"{name}_{tool}_p50_vs_embedded": round(lat[name][tool]["p50_ms"] / base[tool]["p50_ms"], 3)
             for name in ("oxigraph_serve", "virtuoso") for tool in ("get_relations", "get_triples")}
    ratio["virtuoso_one_file_load_rate_vs_embedded"] = round(
        load["virtuoso_one_file"]["triples_per_s"] / load["embedded_pyoxigraph"]["triples_per_s"], 3)
    figures = {"load": load, "latency": lat, "agreement": agreement, "topics": len(topics)}
    print(table(load, lat))
    print(json.dumps(agreement))
    write_result("sparql_servers", figures, {"embedded_pyoxigraph": {"load": load["embedded_pyoxigraph"],
                                                                     "latency": base}},
                 ratio, split="metaqa dev topic entities (seeded sample)", n=len(topics))


if __name__ == "__main__":
    main()
