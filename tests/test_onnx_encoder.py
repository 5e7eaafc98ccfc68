"""The ONNX question encoder matches MiniLM (torch) and gives way to it when export fails."""

from __future__ import annotations

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
