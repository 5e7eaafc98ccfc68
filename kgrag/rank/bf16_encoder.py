"""The sentence model's transformer in bfloat16 for batch jobs, on CPUs that compute bf16 natively (AVX-512 BF16
or AMX): a big network load's ``knn`` texts by the hundred thousand.

    enc = load_bf16_encoder(model_folder)        # None where the CPU has no native bf16 or the folder is not usable
    vectors = enc.encode(["order 0001234 of Cathy Come Home", ...])   # float32 (n, 384), unit L2 norm

Contract: the model's weights loaded in bf16 (``transformers.AutoModel``, eager attention: on a 2-core AVX-512
BF16 machine ~2,000 names/s against ~1,300/s for the fp32 ONNX export), tokenised by the folder's own
``tokenizer.json`` (:class:`~kgrag.rank.onnx_encoder.FolderTokenizer`, the same token ids), mean-pooled over the
attention mask and L2-normalised in float32 — what the fp32 model gives to a cosine of ~0.9999 and 0.99 of each
text's 10 nearest texts (``python -m bench.load_encoders``). Used only where :func:`native_bf16` holds (elsewhere
bf16 is emulated and slower than the fp32 export) and it measures faster than the export on a sample of the
call's own texts (:func:`bf16_pays`, once a process: native is not always fast — an AVX-512 BF16 Xeon without AMX
ran it at 0.69x the export), and only for large calls
(:attr:`kgrag.rank.sentence_embedder.Embedder.BF16_MIN_TEXTS` new texts) of a network's load
(:func:`kgrag.rank.sentence_embedder.bulk_texts`): small networks and other batch jobs keep the fp32 export's vectors. Its vectors enter the shared embedding cache as
the export's do, so a later call for the same text gets them (cosine ~0.9999 to the fp32 ones).
:data:`BATCH` texts a call, length-sorted by the caller.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.rank.onnx_encoder import FolderTokenizer, mean_pooled

__all__ = ["BATCH", "MIN_SPEEDUP", "Bf16Encoder", "bf16_pays", "load_bf16_encoder", "measured", "native_bf16"]

log = logging.getLogger(__name__)

#: texts per model call when a caller sorts its texts by length (64 measured fastest of 32–128 on names)
BATCH = 64

_loaded: dict[str, Bf16Encoder | None] = {}
_lock = threading.Lock()


def native_bf16() -> bool:
    """Whether this CPU multiplies bf16 natively (AVX-512 BF16 or AMX), as torch reports it."""
    try:
        import torch

        cpu = torch.cpu
        checks = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
        return any(bool(getattr(cpu, name)()) for name in checks if hasattr(cpu, name))
    except Exception:  # noqa: BLE001 - no torch, or a build without the probes: not native
        return False


class Bf16Encoder:
    """L2-normalised mean-pooled float32 vectors from the transformer run in bf16 (see the module docstring)."""

    batch = BATCH

    def __init__(self, model: Any, tokenize: FolderTokenizer) -> None:
        self.model = model
        self.tokenize = tokenize

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        enc = self.tokenize(list(texts))
        feed = {name: torch.from_numpy(values) for name, values in enc.items()}
        with torch.inference_mode():
            hidden = self.model(**feed).last_hidden_state.float().numpy()
        return mean_pooled(hidden, enc["attention_mask"])


def load_bf16_encoder(model_folder: Path | None) -> Bf16Encoder | None:
    """The process's bf16 encoder of the sentence-transformers folder ``model_folder`` (its transformer, its
    ``tokenizer.json`` and ``sentence_bert_config.json``; mean pooling), or ``None`` where the CPU has no native
    bf16, the folder is not such a model, or loading fails (the caller keeps the fp32 export)."""
    if model_folder is None or not native_bf16():
        return None
    key = str(model_folder)
    with _lock:
        if key not in _loaded:
            _loaded[key] = _load(Path(model_folder))
        return _loaded[key]


#: bf16 is taken only when it embeds a sample of the call's texts at least this many times as fast as the fp32
#: export: a CPU's native bf16 is not always fast (an AVX-512 BF16 Xeon without AMX measured 0.69x the export)
MIN_SPEEDUP = 1.1
#: texts of the call timed by each encoder, spread over its lengths
SAMPLE = 128

_faster: dict[str, tuple[bool, float, float]] = {}


def bf16_pays(bf16: Bf16Encoder, export: Any, texts: Sequence[str], key: str) -> bool:
    """Whether ``bf16`` embeds a sample of ``texts`` (:data:`SAMPLE`, spread over their lengths) at least
    :data:`MIN_SPEEDUP` times as fast as ``export`` (an encoder with ``encode`` and optionally ``batch``), each
    warmed up then timed twice (the better time); measured once per process and ``key`` (the model folder) —
    :func:`measured` says what was found."""
    with _lock:
        if key in _faster:
            return _faster[key][0]
    by_length = sorted(texts, key=len)
    step = max(1, len(by_length) // SAMPLE)
    sample = by_length[::step][:SAMPLE]
    rates = [_rate(encoder, sample) for encoder in (bf16, export)]
    found = (rates[0] >= MIN_SPEEDUP * rates[1], rates[0], rates[1])
    log.info("bf16 encoder %.0f texts/s, fp32 export %.0f texts/s on %d of the texts: %s", found[1], found[2],
             len(sample), "bf16" if found[0] else "the export")
    with _lock:
        _faster[key] = found
    return found[0]


def measured(key: str) -> tuple[bool, float, float] | None:
    """``(bf16 taken, its texts/s, the export's texts/s)`` as :func:`bf16_pays` measured them for ``key``."""
    return _faster.get(key)


def _rate(encoder: Any, sample: list[str]) -> float:
    """Texts a second of ``encoder`` over ``sample`` in its batches (best of two, after a warm-up call)."""
    batch = int(getattr(encoder, "batch", 128))
    encoder.encode(sample[:8])
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        for offset in range(0, len(sample), batch):
            encoder.encode(sample[offset:offset + batch])
        best = min(best, time.perf_counter() - start)
    return len(sample) / max(best, 1e-9)


def _load(folder: Path) -> Bf16Encoder | None:
    try:
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
        if not _mean_pooled(folder):
            return None
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(str(folder), dtype=torch.bfloat16, attn_implementation="eager").eval()
        return Bf16Encoder(model, FolderTokenizer(folder / "tokenizer.json", int(config["max_seq_length"])))
    except Exception as exc:  # noqa: BLE001 - any failure keeps the fp32 export
        log.warning("bf16 encoder unavailable (%s); using the fp32 export", exc)
        return None


def _mean_pooled(folder: Path) -> bool:
    """Whether the folder's model is a transformer, mean pooling and (optionally) normalisation — what
    :meth:`Bf16Encoder.encode` computes — and nothing else (no dense layer, no other pooling)."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        return False
    pooling = next(m for m in modules if str(m.get("type", "")).endswith("Pooling"))
    options = json.loads((folder / pooling["path"] / "config.json").read_text(encoding="utf-8"))
    modes = [k for k, v in options.items() if k.startswith("pooling_mode") and v]
    return modes == ["pooling_mode_mean_tokens"]
