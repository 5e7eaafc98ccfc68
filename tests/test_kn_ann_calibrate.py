"""The search expansion of an ANN base calibrated on queries (kgrag.network.store.ann_calibrate): the exact
neighbours are those of a brute-force scan, the expansion chosen is the smallest of the ladder whose search finds
the target share of them (checked here independently), a higher target never chooses less, and a base built with
calibration queries keeps its expansion in its manifest and searches with it.

    .venv/bin/python -m pytest -q tests/test_kn_ann_calibrate.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kgrag.network.store.ann import UNCALIBRATED_EXPANSION, _usearch, build_base, open_base
from kgrag.network.store.ann_calibrate import EXPANSIONS, NEIGHBOURS, calibrate, exact_neighbours
from kgrag.network.store.ann_search import sample_vectors


def _clustered(n: int, dim: int, seed: int) -> np.ndarray:
    """Unit vectors in tight clusters (near-duplicates: what makes a graph search miss neighbours)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((n // 50, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + 0.15 * rng.standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def built() -> tuple[object, np.ndarray, np.ndarray]:
    vectors = _clustered(6_000, 24, seed=0)
    index = _usearch()(ndim=24, metric="ip", dtype="f32", connectivity=4, expansion_add=16)
    index.add(np.arange(len(vectors)), vectors, threads=1)
    queries = _clustered(200, 24, seed=1)
    return index, vectors, queries


def _recall(index: object, queries: np.ndarray, truth: np.ndarray, expansion: int) -> float:
    index.expansion_search = expansion
    found = index.search(queries, NEIGHBOURS, threads=1).keys
    hits = sum(len(set(f.tolist()) & set(t.tolist())) for f, t in zip(found, truth, strict=True))
    return hits / truth.size


def test_exact_neighbours_are_a_brute_force_scan_in_chunks(built) -> None:
    index, vectors, queries = built
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :NEIGHBOURS]
    got = exact_neighbours(index, queries, chunk=700)  # chunks that do not divide the size
    assert [set(r.tolist()) for r in got] == [set(r.tolist()) for r in truth]


def test_the_expansion_is_the_smallest_reaching_the_target(built) -> None:
    index, vectors, queries = built
    truth = np.argsort(-(queries @ vectors.T), axis=1)[:, :NEIGHBOURS]
    lows = []
    for target in (0.5, 0.9, 0.99):
        index.expansion_search = 77
        expansion, recalls = calibrate(index, queries, target, threads=1)
        assert index.expansion_search == 77  # left as it was
        tried = [e for e in EXPANSIONS if e <= expansion]
        assert list(recalls) == tried and recalls[expansion] == pytest.approx(_recall(index, queries, truth, expansion),
                                                                             abs=1e-4)
        assert recalls[expansion] >= target or expansion == EXPANSIONS[-1]
        assert all(recalls[e] < target for e in tried[:-1])
        lows.append(expansion)
    assert lows == sorted(lows) and lows[0] < lows[-1]  # a graph this sparse needs more for more


def test_no_queries_or_a_tiny_index_measure_nothing(built) -> None:
    index, _, queries = built
    assert calibrate(index, queries[:0], 0.95) == (EXPANSIONS[0], {})
    tiny = _usearch()(ndim=24, metric="ip", dtype="f32")
    tiny.add(np.arange(NEIGHBOURS), queries[:NEIGHBOURS])
    assert calibrate(tiny, queries, 0.95) == (EXPANSIONS[0], {})


def test_a_calibrated_base_searches_with_its_own_expansion(tmp_path: Path, built) -> None:
    _, vectors, queries = built
    ids = [f"i{n}" for n in range(len(vectors))]
    base = build_base(tmp_path / "f", [(ids, ["h"] * len(ids), vectors)], "m", threads=1,
                      calibration=lambda: queries)
    manifest = json.loads((base.path / "manifest.json").read_text())
    assert manifest["calibration"]["queries"] == len(queries) and manifest["calibration"]["recall_at_10"]
    assert base.expansion == manifest["expansion_search"] in EXPANSIONS
    assert open_base(tmp_path / "f").index.expansion_search == base.expansion


def test_queries_of_another_width_leave_the_base_uncalibrated(tmp_path: Path, built) -> None:
    _, vectors, _ = built
    ids = [f"i{n}" for n in range(500)]
    base = build_base(tmp_path / "f", [(ids, ["h"] * 500, vectors[:500])], "m", threads=1,
                      calibration=lambda: np.ones((4, 7), np.float32))
    assert base.expansion == UNCALIBRATED_EXPANSION
    assert json.loads((base.path / "manifest.json").read_text())["calibration"]["queries"] == 0


def test_calibration_queries_are_a_seeded_draw_from_the_whole_field(tmp_path: Path) -> None:
    from sqlalchemy import create_engine, insert

    from kgrag.network.schema import tables as t

    engine = create_engine(f"sqlite:///{tmp_path / 'v.db'}")
    t.metadata.create_all(engine, tables=[t.vectors])

    def rows(kn_id: str, type_id: str, field: str, n: int, mark: float) -> list[dict]:
        return [{"kn_id": kn_id, "kind": "instance", "type_id": type_id, "item_id": f"{type_id}-{i:05d}",
                 "field": field, "vector": np.asarray([mark, float(i)], np.float32).tobytes()} for i in range(n)]

    with engine.begin() as conn:
        for batch in (rows("shop", "A", "name", 1_000, 1.0), rows("shop", "B", "name", 300, 2.0),
                      rows("shop", "A", "description", 500, 3.0), rows("other", "A", "name", 1_000, 4.0)):
            conn.execute(insert(t.vectors), batch)
    fields = [("A", "name"), ("B", "name")]
    got = sample_vectors(engine, "shop", fields, total=40)
    assert got.shape == (40, 2)
    assert (got[:, 0] == 1.0).sum() == 20 and (got[:, 0] == 2.0).sum() == 20  # as many of each field, no other
    positions = got[got[:, 0] == 1.0, 1]
    assert len(set(positions.tolist())) == 20 and positions.max() > 500  # spread over the field, not its first ids
    assert np.array_equal(sample_vectors(engine, "shop", fields, total=40), got)  # seeded: the same draw
    assert not np.array_equal(sample_vectors(engine, "shop", fields, total=40, seed=1), got)
    small = sample_vectors(engine, "shop", [("B", "name")], total=1_000)  # a field smaller than its share: all of it
    assert sorted(small[:, 1].tolist()) == list(range(300))
    assert sample_vectors(engine, "shop", [("C", "name")]).shape == (0, 1)
    engine.dispose()
