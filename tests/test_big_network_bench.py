"""The big-network benchmark in a small configuration (bench/big_network_data.py, bench/big_network.py): the
generator is deterministic, its link degrees are skewed, a 1 % change touches about 1 % of the rows and nothing
else; the generated network loads through ``kgrag kn load`` with progress, answers knn from ANN bases when its types
are over the threshold, a reload of the same files reads nothing, and the staged ranking's bench finds every
exact answer FTS5's.

    .venv/bin/python -m pytest -q tests/test_big_network_bench.py
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench.big_network import queries
from bench.big_network_data import generate, vocabulary
from kgrag.cli import app
from kgrag.config import get_settings
from kgrag.network.store import NetworkStore


def _rows(folder: Path, name: str) -> list[dict[str, str]]:
    with (folder / name).open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_the_generator_is_deterministic_and_skewed(tmp_path: Path) -> None:
    vocab = vocabulary()
    counts = generate(3000, tmp_path / "a", vocab=vocab)
    generate(3000, tmp_path / "b", vocab=vocab)
    generate(3000, tmp_path / "c", vocab=vocab, changed=0.01)
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == sorted(p.name for p in (tmp_path / "b").iterdir()) and "shop.yaml" in files
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    assert counts["instances"] == sum(len(_rows(tmp_path / "a", f"{t.lower()}.csv"))
                                      for t in ("Customer", "Product", "Supplier", "Order", "Review", "Category"))
    degrees = Counter(r["target_id"] for r in _rows(tmp_path / "a", "link_placed_by.csv"))
    assert max(degrees.values()) >= 8 * (sum(degrees.values()) / len(degrees))  # a few customers order a lot
    before, after = _rows(tmp_path / "a", "customer.csv"), _rows(tmp_path / "c", "customer.csv")
    changed = sum(a != b for a, b in zip(before, after, strict=True))
    assert 0 < changed <= 0.03 * len(before)
    assert [r["id"] for r in before] == [r["id"] for r in after]
    assert _rows(tmp_path / "a", "link_contains.csv") == _rows(tmp_path / "c", "link_contains.csv")
    asked = queries(tmp_path / "a" / "shop.yaml", 50)
    assert len(asked) == len(set(asked)) == 50


def test_the_short_name_profile_is_the_same_network_without_descriptions(tmp_path: Path) -> None:
    vocab = vocabulary()
    full = generate(2000, tmp_path / "full", vocab=vocab)
    short = generate(2000, tmp_path / "short", vocab=vocab, descriptions=False)
    assert short == full
    for kind in ("customer", "product", "supplier", "category", "order", "review"):
        rows, short_rows = _rows(tmp_path / "full", f"{kind}.csv"), _rows(tmp_path / "short", f"{kind}.csv")
        assert short_rows == [{k: v for k, v in r.items() if k != "description"} for r in rows]
    assert "description" in (tmp_path / "full" / "shop.yaml").read_text()
    assert "description" not in (tmp_path / "short" / "shop.yaml").read_text()
    assert _rows(tmp_path / "full", "link_contains.csv") == _rows(tmp_path / "short", "link_contains.csv")
    runner = CliRunner()
    result = runner.invoke(app, ["kn", "load", "--db", f"sqlite:///{tmp_path / 'kn.db'}",
                                 str(tmp_path / "short" / "shop.yaml")])
    assert result.exit_code == 0, result.output
    network = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}").get_network("shop")
    assert network is not None
    assert all([p.name for p in o.data_properties][:1] == ["name"] and "description" not in
               {p.name for p in o.data_properties} for o in network.object_types)


def test_the_generated_network_loads_and_answers_from_ann_bases(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    generate(1000, tmp_path / "shop")
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "220")  # Customers (250), Orders (400), Reviews (240)
    get_settings.cache_clear()
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    try:
        loaded = CliRunner().invoke(app, ["kn", "load", str(tmp_path / "shop" / "shop.yaml"), "--db", db])
        assert loaded.exit_code == 0, loaded.output
        assert "instances (rows, tokens, vectors): 1,200 done" in loaded.output  # the stage lines (no terminal)
        store = NetworkStore(db)
        assert set(store.index.ann_types("shop")) == {"Customer", "Order", "Review"}
        assert (tmp_path / "kn.db.ann").is_dir()
        customer = _rows(tmp_path / "shop", "customer.csv")[7]
        found = store.knn_scores("shop", "instance", "Customer", ["name"], customer["name"], 5)
        assert customer["id"] in found and max(found.values()) > 0.99
        store.close()
        again = CliRunner().invoke(app, ["kn", "load", str(tmp_path / "shop" / "shop.yaml"), "--db", db])
        assert again.exit_code == 0 and "same fingerprint" in again.output, again.output
        # the staged ranking's bench on it (bench/staged_text.py): every exact answer is FTS5's
        monkeypatch.setattr("bench.common.RESULTS", tmp_path / "results")  # not over the real run's result
        from bench.staged_text import main as staged_text

        staged_text(["--db", db, "--data", str(tmp_path / "shop" / "shop.yaml"), "--queries", "12"])
        figures = json.loads((tmp_path / "results" / "staged_text.json").read_text())["figures"]
        assert figures["exact_but_differ"] == 0 and figures["exact_and_fts5s"] > 0
        assert figures["requests"] == figures["exact_and_fts5s"] + figures["sampled"]
    finally:
        get_settings.cache_clear()


def test_the_loads_only_run_measures_the_sync_against_a_whole_diff(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``--loads-only``: load, reload and the 1 % sync, each a measured process, plus the same sync into a copy
    without the per-file hashes (the whole state diffed: the baseline) — both reach the same instances."""
    from bench.big_network import main as big_network

    monkeypatch.setattr("bench.common.RESULTS", tmp_path / "results")  # not over the real run's result
    big_network(["--sizes", "600", "--loads-only", "--root", str(tmp_path)])
    result = json.loads((tmp_path / "results" / "big_network_loads.json").read_text())
    fig = result["figures"]["600 sqlite"]
    assert all(fig[step]["seconds"] > 0 for step in ("load", "reload", "sync_1pct", "sync_1pct_whole_diff"))
    assert result["baseline"]["sync_1pct_whole_diff"] == fig["sync_1pct_whole_diff"]
    log = next(tmp_path.glob("big-*/load.log")).read_text()
    assert "same fingerprint" in log and "files changed: read Customer, Order" in log  # (600: no Product changed)
    dbs = {name: NetworkStore(f"sqlite:///{next(tmp_path.glob('big-*')) / name}") for name in ("kn.db",
                                                                                               "whole-diff.db")}
    try:
        instances = {name: {h.id: h.properties for t in ("Customer", "Order", "Product")
                            for h in store.query_instances("shop", t, None, 1000)} for name, store in dbs.items()}
    finally:
        for store in dbs.values():
            store.close()
    assert instances["kn.db"] == instances["whole-diff.db"] and len(instances["kn.db"]) > 300


def test_the_loads_only_steps_on_postgresql_copy_the_database_for_the_baseline(tmp_path: Path, pg_cluster) -> None:
    """On PostgreSQL the whole-diff copy is ``CREATE DATABASE … TEMPLATE`` without the per-file hashes: the scoped
    sync reads only the changed files' types, the copy's sync diffs the whole state; both end equal."""
    from bench.big_network import measure_loads

    fig = measure_loads(600, tmp_path, pg_cluster)
    assert fig["sync_1pct"]["seconds"] > 0 and fig["sync_1pct_whole_diff"]["seconds"] > 0
    log = next(tmp_path.glob("big-*/load.log")).read_text()
    assert log.count("files changed: read Customer, Order") == 1  # the scoped sync's; the copy's diffs it all
    stores = [NetworkStore(pg_cluster.url_for(name)) for name in ("loads_600", "loads_600_whole")]
    try:
        held = [{h.id: h.properties for h in store.query_instances("shop", "Customer", None, 1000)}
                for store in stores]
        recorded = [store.network_stats("shop")["source"]["files"] for store in stores]
        assert recorded[0] == recorded[1]  # both now record the changed files' hashes
    finally:
        for store in stores:
            store.close()
    assert held[0] == held[1] and len(held[0]) == 150
