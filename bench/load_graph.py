"""Load the MetaQA KB (≈134k triples) into Oxigraph and into the CSR graph: seconds and peak memory.

Each load runs in a fresh interpreter so peak RSS is its own. Figures: parse (kb.txt → records), CSR build+save,
CSR load from file, N-Triples export + Oxigraph bulk load. Baseline for the ratio: the CSR build.
Run: ``python -m bench.load_graph``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bench.common import measure_in_subprocess, write_result

WORK = Path(tempfile.gettempdir()) / "kgrag-bench-load"


def _noop() -> dict:
    import kgrag.graph  # noqa: F401 - the imports every step pays for

    return {}


def _parse() -> dict:
    from kgrag.data import load_kg
    from kgrag.data.spec import BUILTIN_SPECS

    kg = load_kg(BUILTIN_SPECS["metaqa"])
    return {"triples_read": len(kg.triples)}


def _csr_build() -> dict:
    from kgrag.data import load_kg
    from kgrag.data.spec import BUILTIN_SPECS
    from kgrag.graph.csr import CSRGraph

    kg = load_kg(BUILTIN_SPECS["metaqa"])
    t = time.perf_counter()
    g = CSRGraph.from_dataset(kg)
    _ = g.out_incidence, g.in_incidence
    g.save(WORK / "graph.npz")
    return {"triples": g.num_triples, "entities": g.num_entities, "build_only_seconds": round(time.perf_counter() - t, 3)}


def _csr_load() -> dict:
    from kgrag.graph.csr import CSRGraph

    g = CSRGraph.load(WORK / "graph.npz")
    _ = g.out_incidence, g.in_incidence, g.key_index
    return {"triples": g.num_triples}


def _oxigraph_load() -> dict:
    from kgrag.data import load_kg
    from kgrag.data.spec import BUILTIN_SPECS
    from kgrag.graph.csr import CSRGraph
    from kgrag.graph.oxigraph_store import build_store
    from kgrag.graph.rdf import write_ntriples

    kg = load_kg(BUILTIN_SPECS["metaqa"])
    g = CSRGraph.from_dataset(kg)
    t = time.perf_counter()
    write_ntriples(g, kg, WORK / "triples.nt")
    t_nt = time.perf_counter() - t
    t = time.perf_counter()
    count = build_store(WORK / "triples.nt", WORK / "oxigraph")
    return {"rdf_triples": count, "ntriples_seconds": round(t_nt, 3), "bulk_load_only_seconds": round(time.perf_counter() - t, 3)}


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    interpreter = measure_in_subprocess(_noop)
    parse = measure_in_subprocess(_parse)
    csr = measure_in_subprocess(_csr_build)
    csr_load = measure_in_subprocess(_csr_load)
    oxi = measure_in_subprocess(_oxigraph_load)
    figures = {"interpreter_with_imports": interpreter, "parse_kb": parse, "csr_build_and_save": csr,
               "csr_load_from_file": csr_load, "oxigraph_export_and_bulk_load": oxi}
    ratio = {
        "oxigraph_load_vs_csr_build_seconds": round(oxi["seconds"] / csr["seconds"], 2),
        "oxigraph_vs_csr_peak_rss": round(oxi["peak_rss_mib"] / csr["peak_rss_mib"], 2),
        "csr_load_vs_build_seconds": round(csr_load["seconds"] / csr["seconds"], 3),
    }
    write_result("load_graph", figures, baseline={"csr_build_and_save": csr}, ratio=ratio, split="metaqa kb.txt",
                 n=csr["triples"])


if __name__ == "__main__":
    main()
