"""ANN bases for big object types (kgrag.network.store.ann, ann_search) on the library network with the threshold
lowered to one instance, on SQLite and PostgreSQL: the ANN answers equal the exact scan's; after changes (an
instance added, one rewritten, one deleted) they still do, from the base plus the delta, without a rebuild; a
full reload of the same content keeps the base; a large delta rebuilds it; removing the network removes its bases.

    .venv/bin/python -m pytest -q tests/test_kn_ann.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kgrag.config import get_settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema.model import Instance
from kgrag.network.store import NetworkChanges, NetworkStore, ann
from kgrag.network.store.ann import build_base, open_base

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
KN = "library"
QUERIES = ["Orwell", "a novel about a farm", "Jane", "hobbits and dragons", "Penguin", "science fiction"]


@pytest.fixture
def ann_store(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NetworkStore:
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "1")
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    get_settings.cache_clear()
    store = NetworkStore(db_url)
    store.load(*load_declarative(LIBRARY))
    yield store
    store.close()
    get_settings.cache_clear()


def _exact(store: NetworkStore, monkeypatch: pytest.MonkeyPatch, type_id: str, field: str, query: str
           ) -> dict[str, float]:
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "0")
    get_settings.cache_clear()
    try:
        return store.knn_scores(KN, "instance", type_id, [field], query, 5)
    finally:
        monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "1")
        get_settings.cache_clear()


def _agrees(store: NetworkStore, monkeypatch: pytest.MonkeyPatch, type_id: str, field: str) -> None:
    for query in QUERIES:
        approx = store.knn_scores(KN, "instance", type_id, [field], query, 5)
        exact = _exact(store, monkeypatch, type_id, field, query)
        assert list(approx) == list(exact), (type_id, query, approx, exact)
        assert all(abs(approx[k] - exact[k]) < 2e-3 for k in exact), (approx, exact)  # f16 scalars


def test_ann_answers_equal_the_exact_scan(ann_store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ann_store.index.ann_types(KN) == {"Author": ["name"], "Book": ["title"], "Genre": ["name"],
                                             "Publisher": ["name"], "City": ["name"]}
    base = open_base(ann_store.index.ann_files.folder(KN, "Book", "title"))
    assert base is not None and len(base) == 9 and base.model == ann_store.core.recorded_embedder(KN)
    if ann_store.dialect == "sqlite":  # next to the database file
        assert str(base.path).startswith(ann_store.core.engine.url.database + ".ann")
    _agrees(ann_store, monkeypatch, "Book", "title")
    _agrees(ann_store, monkeypatch, "Author", "name")


def test_changes_are_answered_from_the_base_and_the_delta(ann_store: NetworkStore,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    folder = ann_store.index.ann_files.folder(KN, "Book", "title")
    built = open_base(folder).path
    hit = ann_store.get_instances(KN, "Book", ["b:1984"])[0]
    ann_store.apply_changes(KN, NetworkChanges(
        upsert_instances=[Instance(object_type_id="Book", id="b:zorblax", properties={"title": "The Zorblax Saga"}),
                          Instance(object_type_id="Book", id="b:1984",
                                   properties={**hit.properties, "title": "Nineteen Eighty-Four"})],
        delete_instances=[("Book", "b:hobbit")]))
    found = ann_store.knn_scores(KN, "instance", "Book", ["title"], "The Zorblax Saga", 3)
    assert next(iter(found)) == "b:zorblax"
    assert "b:hobbit" not in ann_store.knn_scores(KN, "instance", "Book", ["title"], "The Hobbit", 20)
    typed = ann_store.index._ann[(KN, "Book")]
    assert sorted(typed.delta_ids) == ["b:1984", "b:zorblax"] and typed.fields["title"].dead.sum() == 2
    assert open_base(folder).path == built  # no rebuild for a small change
    _agrees(ann_store, monkeypatch, "Book", "title")
    ann_store.load(*load_declarative(LIBRARY))  # the original content again, reloaded in full
    assert open_base(folder).path == built  # its rows match the base again: kept
    assert ann_store.index._ann[(KN, "Book")].delta_ids.size == 0
    _agrees(ann_store, monkeypatch, "Book", "title")


def test_a_large_delta_rebuilds_and_removal_removes(ann_store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ann, "MIN_DELTA_ROWS", 2)  # the library's 9 books: 5 new ones are a large delta
    folder = ann_store.index.ann_files.folder(KN, "Book", "title")
    built = open_base(folder).path
    ann_store.apply_changes(KN, NetworkChanges(upsert_instances=[
        Instance(object_type_id="Book", id=f"b:new{i}", properties={"title": f"New book number {i}"})
        for i in range(5)]))
    assert "b:new3" in ann_store.knn_scores(KN, "instance", "Book", ["title"], "New book number 3", 3)
    rebuilt = open_base(folder)
    assert rebuilt.path != built and len(rebuilt) == 14 and not built.exists()
    _agrees(ann_store, monkeypatch, "Book", "title")
    assert ann_store.delete(KN)
    assert not folder.exists()


def test_an_opened_base_then_the_onnx_encoder_do_not_crash(tmp_path: Path) -> None:
    """usearch imported before onnxruntime crashes onnxruntime's import (usearch 2.26.6): the bases import it after,
    so a server that opens a base before its first query encoder lives on."""
    import subprocess
    import sys

    script = ("from kgrag.network.store.ann import _usearch\n_usearch()\nimport onnxruntime\n"
              "print(onnxruntime.get_device())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "CPU", done.stderr[-2000:]


def test_rows_of_one_text_share_one_point(tmp_path: Path) -> None:
    """A base holds one point per distinct vector: 600 rows of 40 distinct vectors (in chunks, repeats across them)
    make 40 keys; a search returns every row of each vector it finds, with that vector's similarity; knn over it
    answers as the exact scan (the best items by cosine, ties by id)."""
    from kgrag.network.store.ann_search import TypeIndex, _Field

    rng = np.random.default_rng(3)
    distinct = rng.normal(size=(40, 16)).astype(np.float32)
    distinct /= np.linalg.norm(distinct, axis=1, keepdims=True)
    which = rng.integers(0, 40, 600)
    ids = [f"i{n:04d}" for n in range(600)]
    chunks = [(ids[s:s + 250], ["h"] * len(ids[s:s + 250]), distinct[which[s:s + 250]]) for s in range(0, 600, 250)]
    base = build_base(tmp_path / "f", chunks, "m")
    assert len(base) == 600 and base.keys == 40 and open_base(tmp_path / "f").keys == 40
    rows, sims = base.search(distinct[7], 3)
    assert set(which[rows[: int((which == 7).sum())]]) == {7}  # the nearest vector's rows first, all of them
    assert {int(r) for r in rows} >= {int(r) for r in np.flatnonzero(which == 7)}
    assert abs(float(sims[0]) - 1.0) < 2e-3
    typed = TypeIndex("v", {"name": _Field(base, np.zeros(600, bool))})
    query = rng.normal(size=16).astype(np.float32)
    exact = distinct[which] @ query
    order = sorted(range(600), key=lambda n: (-round(float(exact[n]), 3), ids[n]))[:10]
    got = typed.knn(query, ["name"], 10)
    assert [i for i, _ in got] == [ids[n] for n in order]


def test_a_load_reads_the_file_unmapped_and_gives_the_map_back(tmp_path: Path) -> None:
    """A load's connection and an ANN build's reader read through the pager (mapped pages would only count in
    the loading process's memory); the pooled connection gets its map back."""
    from kgrag.network.store.core import SQLITE_MMAP_BYTES, make_engine, unmapped

    engine = make_engine(f"sqlite:///{tmp_path / 'kn.db'}")
    try:
        with unmapped(engine) as conn:
            assert conn.exec_driver_sql("PRAGMA mmap_size").scalar() == 0
        with engine.connect() as conn:  # the same pooled connection, its map restored
            assert conn.exec_driver_sql("PRAGMA mmap_size").scalar() == SQLITE_MMAP_BYTES
    finally:
        engine.dispose()


def test_the_search_expansion_is_the_setting_else_the_bases_own(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    vectors = np.eye(8, dtype=np.float32)
    build_base(tmp_path / "f", [([f"i{n}" for n in range(8)], ["h"] * 8, vectors)], "m")
    monkeypatch.setenv("KGRAG_KN_ANN_EXPANSION", "64")
    get_settings.cache_clear()
    try:
        assert open_base(tmp_path / "f").index.expansion_search == 64
    finally:
        get_settings.cache_clear()
    monkeypatch.delenv("KGRAG_KN_ANN_EXPANSION")
    assert get_settings().kn_ann_expansion == 0  # each base's own: this one was built with no calibration queries
    assert open_base(tmp_path / "f").index.expansion_search == ann.UNCALIBRATED_EXPANSION == 1536


def test_a_base_built_by_the_store_is_calibrated_on_the_networks_knn_vectors(ann_store: NetworkStore) -> None:
    import json

    base = open_base(ann_store.index.ann_files.folder(KN, "Book", "title"))
    manifest = json.loads((base.path / "manifest.json").read_text())
    stored = sum(len(ann_store.query_instances(KN, tid, None, 1000)) for tid in ann_store.index.ann_types(KN))
    # every knn field of every type gives its share (the library has fewer vectors than the sample asks)
    assert manifest["calibration"]["queries"] == stored
    assert manifest["calibration"]["target"] == get_settings().kn_ann_recall
    assert manifest["expansion_search"] == base.expansion == base.index.expansion_search


def test_a_search_reads_its_big_types_knn_side_by_side_with_the_same_answers(
        ann_store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgrag.network.store.index import _KNN_MEMO

    monkeypatch.setenv("KGRAG_KN_KNN_THREADS", "2")
    get_settings.cache_clear()

    asked = [(tid, fields, 5) for tid, fields in ann_store.index.ann_types(KN).items()]
    for query in QUERIES:
        direct = {tid: ann_store.knn_scores(KN, "instance", tid, fields, query, 5) for tid, fields, _ in asked}
        with ann_store.prefetched_matches(KN, "instance", [], query, 20, knn=asked):
            memo = _KNN_MEMO.get()
            assert memo is not None and {key[2] for key in memo} == {tid for tid, _, _ in asked}  # read on entry
            inside = {tid: ann_store.knn_scores(KN, "instance", tid, fields, query, 5) for tid, fields, _ in asked}
        assert inside == direct and any(inside.values()), query
        assert _KNN_MEMO.get() is None  # the block's answers end with it


def test_a_search_reads_a_large_exact_scan_side_by_side_and_a_tiny_one_where_it_is(
        ann_store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgrag.network.store import index
    from kgrag.network.store.index import _KNN_MEMO

    monkeypatch.setenv("KGRAG_KN_KNN_THREADS", "2")
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "1000000")  # no ANN base answers: every type is an exact scan
    get_settings.cache_clear()
    counts = ann_store.core.network_stats(KN)["instances_by_type"]
    monkeypatch.setattr(index, "KNN_THREAD_MIN_ROWS", sorted(counts.values())[-1])  # only the largest is worth it
    fields = ann_store.index._knn_types(KN, 1)
    largest = {tid for tid in fields if counts[tid] == max(counts.values())}
    asked = [(tid, fields[tid], 5) for tid in fields]
    assert ann_store.index.ann_types(KN) == {} and largest and set(fields) - largest
    for query in QUERIES:
        direct = {tid: ann_store.knn_scores(KN, "instance", tid, f, query, 5) for tid, f, _ in asked}
        with ann_store.prefetched_matches(KN, "instance", [], query, 20, knn=asked):
            assert {key[2] for key in _KNN_MEMO.get()} == largest  # the large scans on the threads, no other
            inside = {tid: ann_store.knn_scores(KN, "instance", tid, f, query, 5) for tid, f, _ in asked}
        assert inside == direct and any(inside.values()), query


def test_a_search_that_finds_another_running_reads_its_knn_where_it_is(
        ann_store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from kgrag.network.store.index import _KNN_MEMO

    monkeypatch.setenv("KGRAG_KN_KNN_THREADS", "2")
    get_settings.cache_clear()

    asked = [(tid, fields, 5) for tid, fields in ann_store.index.ann_types(KN).items()]
    direct = ann_store.knn_scores(KN, "instance", "Book", ["title"], "Orwell", 5)
    with ann_store.prefetched_matches(KN, "instance", [], "Jane", 20, knn=asked):
        assert _KNN_MEMO.get()  # alone: read side by side
        with ann_store.prefetched_matches(KN, "instance", [], "Orwell", 20, knn=asked):
            assert _KNN_MEMO.get() == {}  # another search is running: nothing handed to the pool
            assert ann_store.knn_scores(KN, "instance", "Book", ["title"], "Orwell", 5) == direct
    monkeypatch.setenv("KGRAG_KN_KNN_THREADS", "0")  # off: every read where it is asked
    get_settings.cache_clear()
    with ann_store.prefetched_matches(KN, "instance", [], "Orwell", 20, knn=asked):
        assert _KNN_MEMO.get() == {}
