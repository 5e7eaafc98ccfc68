"""Question encoder for kn_search: MiniLM (torch) vs its ONNX export (fp32 / int8), same run, same questions.

Questions are built as bench/http_serving.py ``questions()`` does, from a network in ``--db`` (opened read-only).
Figures: per-question encode p50/p95 for each encoder, and the cosine of each ONNX vector to MiniLM's.
Not yet covered: kn_search end to end and the old vs new statement path (the statement work is not done).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from bench.common import percentiles, write_result
from bench.http_serving import questions
from kgrag.network.store import NetworkStore
from kgrag.rank.onnx_encoder import load_onnx_encoder
from kgrag.rank.sentence_embedder import DEFAULT_MODEL, load_model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", default="/work/main/work/kgrag.db")
    parser.add_argument("--kn-id", default="medical")
    parser.add_argument("-n", type=int, default=60)
    args = parser.parse_args(argv)
    store = NetworkStore(f"sqlite:///file:{args.db}?mode=ro&uri=true")
    texts = questions(store, args.kn_id, args.n)
    model = load_model(DEFAULT_MODEL)
    models_dir = tempfile.mkdtemp(prefix="kgrag-onnx-")
    encoders = {"torch": lambda t: model.encode([t], normalize_embeddings=True, convert_to_numpy=True)[0]}
    for name, int8 in (("onnx", False), ("onnx-int8", True)):
        enc = load_onnx_encoder(DEFAULT_MODEL, models_dir, int8=int8)
        if enc is not None:
            encoders[name] = lambda t, enc=enc: enc.encode([t])[0]
    for fn in encoders.values():  # warm-up
        fn(texts[0])
    seconds = {name: [] for name in encoders}
    vectors = {name: [] for name in encoders}
    for text in texts:  # interleaved, so load noise hits every encoder alike
        for name, fn in encoders.items():
            t = time.perf_counter()
            vectors[name].append(fn(text))
            seconds[name].append(time.perf_counter() - t)
    figures = {name: percentiles(s) for name, s in seconds.items()}
    ref = np.stack(vectors["torch"])
    for name in encoders:
        if name != "torch":
            cos = (np.stack(vectors[name]) * ref).sum(1)
            figures[name]["cosine_to_torch"] = {"min": round(float(cos.min()), 5), "mean": round(float(cos.mean()), 5)}
    ratio = {name: round(figures["torch"]["p50_ms"] / figures[name]["p50_ms"], 2) for name in encoders}
    write_result("kn_search_speed", {"encode": figures}, {"encode_torch": figures["torch"]}, ratio,
                 split=args.kn_id, n=len(texts))


if __name__ == "__main__":
    main()
