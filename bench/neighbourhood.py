"""One-hop neighbourhood lookup on MetaQA: CSR vs SPARQL on the embedded store vs SPARQL over HTTP.

The same seeded sample of entities is looked up three ways in one run: the CSR graph (``neighbourhood``), the
embedded pyoxigraph store and a real ``oxigraph serve-read-only`` over HTTP (RemoteStore/SPARQLWrapper), each
returning the full set of one-hop edges in both directions. Baseline for the ratios: CSR.
Run: ``python -m bench.neighbourhood [--n 300]`` (prepares MetaQA in the work dir if needed).
"""

from __future__ import annotations

import argparse
import random
import time

from bench.common import percentiles, write_result
from harness.servers.oxigraph_server import serve_read_only
from kgrag.config import get_settings
from kgrag.graph.csr import CSRGraph
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.graph.queries import neighbourhood_query
from kgrag.graph.remote_store import RemoteStore
from kgrag.prep import steps


def ensure_prepared(dataset: str = "metaqa") -> None:
    settings = get_settings()
    out = settings.dataset_dir(dataset)
    fp = steps.input_fingerprint(dataset, settings.data_dir)
    steps.build_graph(dataset, settings.data_dir, out, fp)
    steps.load_store(out, fp)


def time_calls(fn, items) -> tuple[list[float], list[int]]:
    seconds, sizes = [], []
    for item in items:
        t = time.perf_counter()
        n = fn(item)
        seconds.append(time.perf_counter() - t)
        sizes.append(n)
    return seconds, sizes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300, help="entities to look up")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)


    ensure_prepared()
    settings = get_settings()
    out = settings.dataset_dir("metaqa")
    graph = CSRGraph.load(out / "graph.npz")
    _ = graph.out_incidence, graph.in_incidence
    sample = random.Random(args.seed).sample(range(graph.num_entities), args.n)
    base = graph.iri_base

    embedded = OxigraphStore(out / "oxigraph", read_only=True)
    served = serve_read_only(out / "oxigraph")  # the same store directory, opened read-only by a second process
    try:
        remote = RemoteStore(served.url, timeout=30)
        for warm in sample[:10]:  # warm caches / connections equally
            embedded.select(neighbourhood_query(base, graph.entity_ids[warm]))
            remote.select(neighbourhood_query(base, graph.entity_ids[warm]))
        csr_s, csr_n = time_calls(lambda i: len(graph.neighbourhood(i)), sample)
        emb_s, emb_n = time_calls(lambda i: len(embedded.select(neighbourhood_query(base, graph.entity_ids[i]))), sample)
        http_s, http_n = time_calls(lambda i: len(remote.select(neighbourhood_query(base, graph.entity_ids[i]))), sample)
    finally:
        served.stop()
    assert csr_n == emb_n == http_n, "the three backends disagree on neighbourhood sizes"
    figures = {
        "csr": percentiles(csr_s),
        "sparql_embedded": percentiles(emb_s),
        "sparql_http": percentiles(http_s),
        "mean_edges_per_lookup": round(sum(csr_n) / len(csr_n), 1),
        "max_edges_per_lookup": max(csr_n),
    }
    ratio = {
        "embedded_vs_csr_p50": round(figures["sparql_embedded"]["p50_ms"] / figures["csr"]["p50_ms"], 1),
        "http_vs_csr_p50": round(figures["sparql_http"]["p50_ms"] / figures["csr"]["p50_ms"], 1),
        "http_vs_embedded_p50": round(figures["sparql_http"]["p50_ms"] / figures["sparql_embedded"]["p50_ms"], 2),
    }
    write_result("neighbourhood", figures, baseline={"csr": figures["csr"]}, ratio=ratio,
                 split="metaqa kb.txt, seeded random entities", n=args.n)


if __name__ == "__main__":
    main()
