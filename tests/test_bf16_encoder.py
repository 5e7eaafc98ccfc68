"""A big network load's texts go through the transformer in bf16 where the CPU computes bf16 natively and it measures
faster than the fp32 export on a sample of them, and through the fp32 export everywhere else (small calls, other
callers, other CPUs, CPUs whose bf16 is slow, models the bf16 encoder cannot reproduce)."""

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


def _taken() -> bool:
    """Whether this process's load takes bf16: native, and measured faster (once, by the first big call)."""
    found = bf16_encoder.measured(str(FOLDER))
    return bf16_encoder.native_bf16() and found is not None and found[0]


def test_a_big_auto_call_uses_bf16_where_native_and_faster_and_a_small_one_the_export(tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "BF16_MIN_TEXTS", 300)
    ref = _reference(TEXTS)
    auto = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path, load_encoder="auto")
    onnx = Embedder(DEFAULT_MODEL, query_encoder="onnx", models_dir=tmp_path, load_encoder="onnx")
    native = bf16_encoder.native_bf16()
    assert not isinstance(auto.load_batch_encoder(TEXTS), bf16_encoder.Bf16Encoder)  # not a network's load
    with bulk_texts():
        chosen = auto.load_batch_encoder(TEXTS)
        found = bf16_encoder.measured(str(FOLDER))
        assert (found is not None) == native  # measured only where native
        if found is not None:
            assert found[0] == (found[1] >= bf16_encoder.MIN_SPEEDUP * found[2]) and min(found[1:]) > 0
        assert isinstance(chosen, bf16_encoder.Bf16Encoder) == _taken()
        assert not isinstance(auto.load_batch_encoder(TEXTS[:299]), bf16_encoder.Bf16Encoder)  # under the threshold
        assert not isinstance(onnx.load_batch_encoder(TEXTS), bf16_encoder.Bf16Encoder)
        big, exported = auto.encode(TEXTS), onnx.encode(TEXTS)
    assert np.all((ref * big).sum(1) > 0.999)
    assert np.array_equal(big, exported) != _taken()  # bf16 differs from the export in the last bits, only there


class _Paced:
    """An encoder that takes ``seconds`` a text (the timing the choice reads), zero vectors."""

    def __init__(self, seconds: float, batch: int = 64) -> None:
        self.seconds, self.batch, self.calls = seconds, batch, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        import time

        self.calls += 1
        time.sleep(self.seconds * len(texts))
        return np.zeros((len(texts), 4), np.float32)


def test_bf16_is_taken_only_when_it_measures_faster_and_the_choice_is_made_once(monkeypatch):
    monkeypatch.setattr(bf16_encoder, "_faster", {})
    texts = [f"text {'x' * (i % 40)} {i}" for i in range(1000)]
    fast, slow = _Paced(2e-5), _Paced(2e-4, batch=128)
    assert bf16_encoder.bf16_pays(fast, slow, texts, "a")  # type: ignore[arg-type]
    assert fast.calls == 1 + 2 * 2 and slow.calls == 1 + 2  # a warm-up, then the sample twice in its batches
    taken, bf16_rate, export_rate = bf16_encoder.measured("a") or (None, 0.0, 0.0)
    assert taken and bf16_rate > 3 * export_rate
    assert not bf16_encoder.bf16_pays(slow, fast, texts, "b")  # type: ignore[arg-type]
    calls = fast.calls
    assert bf16_encoder.bf16_pays(slow, fast, texts, "a")  # type: ignore[arg-type]  # measured for "a" already
    assert fast.calls == calls
    same = _Paced(1e-4)
    assert not bf16_encoder.bf16_pays(same, _Paced(1e-4), texts, "c")  # type: ignore[arg-type]  # no 1.1x gain


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


def test_a_network_load_takes_the_bf16_encoder_where_native_and_faster(tmp_path, monkeypatch):
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
    # the choice's timing encodes at most 8 + 2 x 128 texts with bf16: a load through it encodes more
    assert (sum(calls) > 300) == _taken()
