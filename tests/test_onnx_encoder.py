"""The ONNX question encoder matches MiniLM (torch) and gives way to it when export fails."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from kgrag.rank import onnx_encoder  # noqa: E402
from kgrag.rank.sentence_embedder import DEFAULT_MODEL, load_model  # noqa: E402

TEXTS = ["what treats high blood pressure", "symptoms of type 2 diabetes", "aspirin"]


def test_onnx_vectors_match_minilm(tmp_path):
    enc = onnx_encoder.load_onnx_encoder(load_model(DEFAULT_MODEL), DEFAULT_MODEL, tmp_path)
    assert enc is not None
    ref = load_model(DEFAULT_MODEL).encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = enc.encode(TEXTS)
    cos = (ref * got).sum(1)
    assert np.all(cos > 0.99), cos


def test_export_failure_returns_none(tmp_path, monkeypatch):
    def boom(*_a, **_k):
        raise RuntimeError("no export here")

    monkeypatch.setattr(onnx_encoder, "_export", boom)
    assert onnx_encoder.load_onnx_encoder(load_model(DEFAULT_MODEL), DEFAULT_MODEL, tmp_path / "fresh") is None


def test_embedder_encode_query_uses_onnx_and_falls_back(tmp_path, monkeypatch):
    from kgrag.rank.sentence_embedder import Embedder

    torch_vec = Embedder(DEFAULT_MODEL).encode_query(TEXTS[0])
    onnx_emb = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path)
    assert float(onnx_emb.encode_query(TEXTS[0]) @ torch_vec) > 0.99
    assert onnx_emb._onnx  # the ONNX encoder answered

    monkeypatch.setattr(onnx_encoder, "_export", lambda *_a, **_k: (_ for _ in ()).throw(RuntimeError("x")))
    broken = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path / "none")
    np.testing.assert_allclose(broken.encode_query(TEXTS[0]), torch_vec, atol=1e-5)
    assert broken._onnx is False


def test_an_existing_export_opens_without_the_model(tmp_path):
    """Once exported, the encoder is read with the folder's tokenizer.json alone: the same token ids and vectors
    as the model's own tokenizer and the torch model."""
    from kgrag.rank.sentence_embedder import resolve_model

    texts = [*TEXTS, "百日咳有哪些症状", "Café Müller’s naïve résumé", "word " * 400, ""]
    assert onnx_encoder.load_exported_encoder(Path(resolve_model(DEFAULT_MODEL)), DEFAULT_MODEL, tmp_path) is None
    model = load_model(DEFAULT_MODEL)
    assert onnx_encoder.load_onnx_encoder(model, DEFAULT_MODEL, tmp_path) is not None  # the export
    enc = onnx_encoder.load_exported_encoder(Path(resolve_model(DEFAULT_MODEL)), DEFAULT_MODEL, tmp_path)
    assert enc is not None
    ours = enc.tokenize(texts)
    theirs = model.tokenizer(texts, padding=True, truncation=True, max_length=int(model.max_seq_length),
                             return_tensors="np")
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        np.testing.assert_array_equal(ours[name], theirs[name])
    ref = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert np.all((ref * enc.encode(texts)).sum(1) > 0.999)


def test_a_question_is_encoded_without_importing_torch(tmp_path):
    """A fresh process whose export exists encodes a question with neither torch nor sentence-transformers loaded
    (what keeps `kgrag ask` a one-shot command of seconds)."""
    onnx_encoder.load_onnx_encoder(load_model(DEFAULT_MODEL), DEFAULT_MODEL, tmp_path)
    script = ("import sys\nfrom kgrag.rank.sentence_embedder import Embedder\n"
              f"e = Embedder(query_encoder='onnx', models_dir={str(tmp_path)!r})\n"
              "v = e.encode_query('who directed Carnival Lights?')\n"
              "assert e._onnx and v.shape == (384,), v.shape\n"
              "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_load_embeds_by_length_with_the_export_and_counts_unknown_tokens_without_the_model(tmp_path):
    """A batch job's texts (a network's load, ``load_encoder="onnx"``) go through the export on every core,
    shortest first, in their order back; the unknown-token counts a load's representability check reads come from
    the folder's tokenizer.json and equal the model tokenizer's."""
    from kgrag.rank.sentence_embedder import Embedder

    texts = [f"{word} number {i}" for i, word in enumerate(["a long product title of some kind", "x", "mid size"] * 120)]
    embedder = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path, load_encoder="onnx")
    got = embedder.encode(texts)
    assert embedder._batch_onnx is not None  # the export answered, not torch
    ref = load_model(DEFAULT_MODEL).encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert np.all((ref * got).sum(1) > 0.999)
    mixed = [*TEXTS, "百日咳有哪些症状", "感冒 cold", "Café naïve résumé", ""]
    tokenizer = load_model(DEFAULT_MODEL).tokenizer
    expected = [(tokenizer.tokenize(t).count(tokenizer.unk_token), len(tokenizer.tokenize(t))) for t in mixed]
    assert Embedder(DEFAULT_MODEL).unknown_token_counts(mixed) == expected
