"""Offline MiniLM embedder: cold encode vs on-disk cache hit (texts/s and the ratio, one run).

Texts: the first ``--n`` MetaQA entity names (sorted, so the sample is fixed); falls back to demo names.
Run: ``python -m bench.embedder [--n 1000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench.common import write_result
from kgrag.data import load_kg
from kgrag.data.spec import BUILTIN_SPECS
from kgrag.rank.sentence_embedder import Embedder, load_model


def sample_texts(n: int) -> tuple[list[str], str]:
    try:
        kg = load_kg(BUILTIN_SPECS["metaqa"])
        split = "metaqa entity names"
    except Exception:  # noqa: BLE001 - no shared data: the demo KG is always there
        kg = load_kg(BUILTIN_SPECS["demo"])
        split = "demo entity names"
    return sorted(set(kg.names.values()))[:n], split


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000)
    args = parser.parse_args(argv)
    texts, split = sample_texts(args.n)
    t = time.perf_counter()
    load_model()
    load_seconds = time.perf_counter() - t
    with tempfile.TemporaryDirectory(prefix="kgrag-bench-emb-") as tmp:
        cold = Embedder(cache_dir=Path(tmp))
        t = time.perf_counter()
        cold.encode(texts)
        cold_s = time.perf_counter() - t
        warm = Embedder(cache_dir=Path(tmp))  # a new instance: reads the shards written above
        t = time.perf_counter()
        warm.encode(texts)
        warm_s = time.perf_counter() - t
        assert warm.stats.model_calls == 0
    figures = {
        "model_load_seconds": round(load_seconds, 2),
        "cold_encode_seconds": round(cold_s, 3),
        "cold_texts_per_s": round(len(texts) / cold_s, 1),
        "cache_hit_seconds": round(warm_s, 4),
        "cache_hit_texts_per_s": round(len(texts) / warm_s, 1),
    }
    write_result("embedder", figures, baseline={"cold_texts_per_s": figures["cold_texts_per_s"]},
                 ratio={"cache_hit_speedup": round(cold_s / warm_s, 1)}, split=split, n=len(texts))


if __name__ == "__main__":
    main()
