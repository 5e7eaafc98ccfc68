"""Which encoder a network load should embed its ``knn`` texts with: the torch model, its ONNX export (fp32), an
int8-quantised export (the project's, and two per-channel variants: :func:`int8_variants`) or the transformer in
bf16 (``torch-bf16``, where the CPU computes bf16 natively: :mod:`kgrag.rank.bf16_encoder`), each with
length-sorted batches, on the generated shop network's names and descriptions.

    python -m bench.load_encoders [--n 4000] [--size 100000]

Per encoder: texts/s over the same texts (names, then sentence-long descriptions), the cosine of its vectors to
torch's (min / mean), and how far its neighbours agree with torch's: recall@10 of each text's 10 nearest texts
(by its vectors) against torch's — what a knn query would see change. Baseline: torch (today's load path); ratio:
texts/s over torch's. Results: bench/results/load_encoders.json.
"""

from __future__ import annotations

import argparse
import csv
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.big_network import ROOT, dataset
from bench.common import write_result
from kgrag.config import get_settings
from kgrag.rank.bf16_encoder import load_bf16_encoder
from kgrag.rank.onnx_encoder import OnnxEncoder, load_onnx_encoder
from kgrag.rank.sentence_embedder import DEFAULT_MODEL, load_model, resolve_model


def texts_of(schema: Path, n: int, column: str, seed: int = 0) -> list[str]:
    rows: list[str] = []
    for kind in ("customer", "product", "order", "review"):
        with (schema.parent / f"{kind}.csv").open(encoding="utf-8") as f:
            rows += [r[column] for r in csv.DictReader(f)]
    return random.Random(seed).sample(sorted(set(rows)), n)


def sorted_batches(encode, texts: list[str], batch: int) -> np.ndarray:  # noqa: ANN001
    order = np.argsort([len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), 384), np.float32)
    for start in range(0, len(texts), batch):
        rows = order[start:start + batch]
        out[rows] = encode([texts[i] for i in rows])
    return out


def recall_at_10(reference: np.ndarray, other: np.ndarray) -> float:
    ref_sims, oth_sims = reference @ reference.T, other @ other.T
    np.fill_diagonal(ref_sims, -2)
    np.fill_diagonal(oth_sims, -2)
    ref_top = np.argpartition(-ref_sims, 10, axis=1)[:, :10]
    oth_top = np.argpartition(-oth_sims, 10, axis=1)[:, :10]
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ref_top, oth_top, strict=True)]))


def int8_variants(fp32: Path, folder: Path) -> dict[str, Path]:
    """Other dynamic int8 quantisations of the fp32 export than the project's (``quantize_dynamic`` defaults):
    per-channel weights on the MatMuls only (``onnx-int8-pc``), and that without the feed-forward output layers,
    whose inputs carry BERT's outlier activations (``onnx-int8-pc-ffn32``)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    matmuls = [n.name for n in onnx.load(str(fp32)).graph.node if n.op_type == "MatMul"]
    options = {
        "onnx-int8-pc": {},
        "onnx-int8-pc-ffn32": {"nodes_to_exclude": [n for n in matmuls if "/output/dense" in n and "attention" not in n]},
    }
    out: dict[str, Path] = {}
    for name, extra in options.items():
        out[name] = folder / f"{name}.onnx"
        quantize_dynamic(str(fp32), str(out[name]), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=["MatMul"], **extra)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=128)
    args = parser.parse_args(argv)
    schema = dataset(args.size, ROOT / "work" / "big_network" / "data")
    model = load_model(DEFAULT_MODEL)
    folder = get_settings().onnx_dir
    threads = len(__import__("os").sched_getaffinity(0))
    fp32 = load_onnx_encoder(model, DEFAULT_MODEL, folder).with_threads(threads)
    encoders = {
        "torch": lambda ts: model.encode(ts, batch_size=args.batch, convert_to_numpy=True, normalize_embeddings=True,
                                         show_progress_bar=False),
        "onnx-fp32": fp32.encode,
        "onnx-int8": load_onnx_encoder(model, DEFAULT_MODEL, folder, int8=True).with_threads(threads).encode,
        **{name: OnnxEncoder(path, fp32.tokenize, threads).encode
           for name, path in int8_variants(fp32.path, Path(tempfile.mkdtemp(prefix="int8-"))).items()},
    }
    batches = dict.fromkeys(encoders, args.batch)
    bf16 = load_bf16_encoder(Path(resolve_model(DEFAULT_MODEL)))
    if bf16 is not None:
        encoders["torch-bf16"], batches["torch-bf16"] = bf16.encode, bf16.batch
    else:
        print("torch-bf16: this CPU has no native bf16 (not measured)")
    figures: dict[str, dict] = {}
    for column in ("name", "description"):
        texts = texts_of(schema, args.n, column)
        vectors: dict[str, np.ndarray] = {}
        for name, encode in encoders.items():
            sorted_batches(encode, texts[:256], batches[name])  # warm-up
            t = time.perf_counter()
            vectors[name] = (np.asarray(encode(texts), np.float32) if name == "torch"
                             else sorted_batches(encode, texts, batches[name]))
            seconds = time.perf_counter() - t
            cos = np.sum(vectors[name] * vectors["torch"], axis=1)
            figures[f"{column} {name}"] = {
                "texts_per_s": round(len(texts) / seconds), "cosine_to_torch_min": round(float(cos.min()), 4),
                "cosine_to_torch_mean": round(float(cos.mean()), 5),
                "neighbour_recall_at_10_vs_torch": round(recall_at_10(vectors["torch"], vectors[name]), 4)}
            print(f"{column:12} {name:10} {figures[f'{column} {name}']}", flush=True)
    baseline = {k: v for k, v in figures.items() if k.endswith("torch")}
    ratio = {k: round(v["texts_per_s"] / figures[k.rsplit(' ', 1)[0] + " torch"]["texts_per_s"], 2)
             for k, v in figures.items()}
    write_result("load_encoders", figures, baseline, ratio,
                 split=f"generated shop network ({args.size:,}, seed 0): {args.n} distinct names and descriptions",
                 n=2 * args.n)


if __name__ == "__main__":
    main()
