"""A big network load's texts go through the transformer in bf16 where the CPU computes bf16 natively, and through
the fp32 export everywhere else (small calls, other callers, other CPUs, models the bf16 encoder cannot reproduce)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from kgrag.rank import bf16_encoder  # noqa: E402
from kgrag.rank.sentence_embedder import (  # noqa: E402
    DEFAULT_MODEL,
    Embedder,
    bulk_texts,
    load_model,
    resolve_model,
)

FOLDER = Path(resolve_model(DEFAULT_MODEL))
TEXTS = [f"{word} number {i}" for i, word in enumerate(["a long product title of some kind", "x", "mid size",
                                                         "order 0001234 of Cathy Come Home"] * 90)]


def _reference(texts: list[str]) -> np.ndarray:
    return load_model(DEFAULT_MODEL).encode(texts, normalize_embeddings=True, convert_to_numpy=True)


def test_bf16_vectors_match_the_model_where_the_cpu_has_bf16_and_none_elsewhere():
    enc = bf16_encoder.load_bf16_encoder(FOLDER)
    if not bf16_encoder.native_bf16():
        assert enc is None  # emulated bf16 is slower than the fp32 export: never used
        return
    assert enc is not None and enc.batch == bf16_encoder.BATCH
    got = enc.encode(TEXTS[:64])
    assert got.dtype == np.float32 and got.shape == (64, 384)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.all((_reference(TEXTS[:64]) * got).sum(1) > 0.999)


def test_a_big_auto_call_uses_bf16_where_native_and_a_small_one_the_export(tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "BF16_MIN_TEXTS", 300)
    ref = _reference(TEXTS)
    auto = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path, load_encoder="auto")
    onnx = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path, load_encoder="onnx")
    native = bf16_encoder.native_bf16()
    assert not isinstance(auto.load_batch_encoder(len(TEXTS)), bf16_encoder.Bf16Encoder)  # not a network's load
    with bulk_texts():
        chosen = auto.load_batch_encoder(len(TEXTS))
        assert isinstance(chosen, bf16_encoder.Bf16Encoder) == native
        assert not isinstance(auto.load_batch_encoder(299), bf16_encoder.Bf16Encoder)  # under the threshold
        assert not isinstance(onnx.load_batch_encoder(len(TEXTS)), bf16_encoder.Bf16Encoder)
        big, exported = auto.encode(TEXTS), onnx.encode(TEXTS)
    assert np.all((ref * big).sum(1) > 0.999)
    assert np.array_equal(big, exported) != native  # bf16 differs from the export in the last bits, only there


def test_a_model_with_a_dense_layer_or_other_pooling_is_not_taken(tmp_path):
    copy = tmp_path / "model"
    shutil.copytree(FOLDER, copy)
    assert bf16_encoder._mean_pooled(copy)
    modules = json.loads((copy / "modules.json").read_text())
    dense = [*modules, {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]
    (copy / "modules.json").write_text(json.dumps(dense))
    assert not bf16_encoder._mean_pooled(copy)
    (copy / "modules.json").write_text(json.dumps(modules))
    pooling = copy / "1_Pooling" / "config.json"
    options = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**options, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    assert not bf16_encoder._mean_pooled(copy)
    assert bf16_encoder._load(copy) is None


def test_a_network_load_takes_the_bf16_encoder_where_native(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from bench.big_network_data import generate, vocabulary
    from kgrag.cli import app

    monkeypatch.setattr(Embedder, "BF16_MIN_TEXTS", 300)
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    calls: list[int] = []
    real = bf16_encoder.Bf16Encoder.encode
    monkeypatch.setattr(bf16_encoder.Bf16Encoder, "encode", lambda self, texts: calls.append(len(texts))
                        or real(self, texts))
    generate(1500, tmp_path / "net", vocab=vocabulary())
    from kgrag.config import get_settings

    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(app, ["kn", "load", "--db", f"sqlite:///{tmp_path / 'kn.db'}",
                                          str(tmp_path / "net" / "shop.yaml")])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert (sum(calls) > 300) == bf16_encoder.native_bf16()
