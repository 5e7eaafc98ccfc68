"""The text index's layout by scope (kgrag.network.store.text_layout): a full load's blocks, a change's runs, the
ranges a read takes, and a store that reads its layout answering as FTS5 does.

    .venv/bin/python -m pytest -q tests/test_kn_text_layout.py
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert, text

from kgrag.config import get_settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance
from kgrag.network.store import NetworkStore
from kgrag.network.store.changes import NetworkChanges
from kgrag.network.store.text_layout import ScopeBlocks, TextLayout, read_layout
from kgrag.network.store.text_rank import SqliteText

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"


def _rows(scopes: str) -> list[dict]:
    return [{"text": f"w{i % 7} x{i}", "scope": t.scope_token("kn", "instance", name, "f"), "kn_id": "kn",
             "kind": "instance", "type_id": name, "item_id": f"i{i}", "field": "f"} for i, name in enumerate(scopes)]


def _engine(tmp_path: Path, scopes: str):  # noqa: ANN202
    engine = create_engine(f"sqlite:///{tmp_path / 'kn.db'}")
    with engine.begin() as conn:
        t.create_schema(conn)
        conn.execute(insert(t.text_index), _rows(scopes))
        t.fts_sync_insert(conn, "kn")
    return engine


def _scope_of(conn) -> dict[int, str]:  # noqa: ANN001
    return dict(conn.execute(text("SELECT id, scope FROM kn_text_rows")).fetchall())


def test_runs_are_the_stretches_of_one_scope_and_ranges_merge_neighbours(tmp_path: Path) -> None:
    engine = _engine(tmp_path, "AAAABBBCCCCCAAB")  # blocks A, B, C, then a change's tail A, A, B
    with engine.connect() as conn:
        layout = read_layout(conn)
        scope_of = _scope_of(conn)
    assert layout is not None
    a, b, c = (t.scope_token("kn", "instance", name, "f") for name in "ABC")
    assert [(lo, hi) for _, lo, hi in layout.runs[a]] == [(1, 4), (13, 14)]
    assert [(lo, hi) for _, lo, hi in layout.runs[b]] == [(5, 7), (15, 15)]
    assert [(lo, hi) for _, lo, hi in layout.runs[c]] == [(8, 12)]
    assert layout.ranges([a, b]) == [(1, 7), (13, 15)]  # neighbouring runs read as one range
    assert layout.ranges([a, c]) == [(1, 4), (8, 14)]
    assert layout.ranges(["s-none"]) == []
    for scopes in ([a], [b], [c], [a, b], [a, c], [b, c]):  # every row of the scopes inside, no other row
        inside = {i for lo, hi in layout.ranges(scopes) for i in range(lo, hi + 1) if i in scope_of}
        assert inside == {i for i, s in scope_of.items() if s in scopes}
    assert TextLayout(layout.runs, max_ranges=1).ranges([a]) is None
    engine.dispose()


def test_interleaved_rows_have_no_useful_layout(tmp_path: Path) -> None:
    engine = _engine(tmp_path, "ABC" * 20)
    with engine.connect() as conn:
        assert read_layout(conn, max_runs=59) is None
        layout = read_layout(conn)
    assert layout is not None and layout.ranges([t.scope_token("kn", "instance", "A", "f")]) is None  # > 16 reads
    engine.dispose()


def test_ranged_reads_hold_holes_limits_and_every(tmp_path: Path) -> None:
    engine = _engine(tmp_path, "A" * 30 + "B" * 30 + "A" * 5)
    with engine.begin() as conn:  # holes: deleted rows inside the runs
        conn.execute(text("INSERT INTO kn_text(kn_text, rowid, text, scope) "
                          "SELECT 'delete', id, text, scope FROM kn_text_rows WHERE id % 4 = 0"))
        conn.execute(text("DELETE FROM kn_text_rows WHERE id % 4 = 0"))
    a = t.scope_token("kn", "instance", "A", "f")
    with engine.connect() as conn:
        plain, ranged = SqliteText(conn), SqliteText(conn, layout=read_layout(conn))
        assert ranged.layout.ranges([a]) == [(1, 30), (61, 65)]
        for terms, every in ((["w1"], False), (["w1", "w2"], False), (["w1", "x1"], True), (["w3", "x31"], True)):
            for limit in (1, 3, 5, 100):
                want = plain.rows([a], terms, every, limit)
                assert ranged.rows([a], terms, every, limit) == want, (terms, every, limit)
        assert [r[0] for r in ranged.rows([a], ["w1"], False, 100)][-1] > 60  # the tail's rows too
    engine.dispose()


def test_scope_blocks_give_each_scope_its_block_and_the_rest_after() -> None:
    blocks = ScopeBlocks(10, {"a": 3, "b": 2})
    rows = blocks.assign([{"scope": s} for s in "abab" + "a" * 3 + "z"])
    assert [r["id"] for r in rows] == [10, 13, 11, 14, 12, 15, 16, 17]  # a's 4th row and z's after the blocks


def test_a_loaded_store_is_laid_out_by_scope_and_answers_as_fts5(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    get_settings.cache_clear()
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    try:
        store.load(*load_declarative(LIBRARY))
        with store.core.engine.connect() as conn:
            layout = read_layout(conn)
        instance_scopes = [s for s in layout.runs if s in {
            t.scope_token("library", "instance", ot, f) for ot, f in
            (("Book", "title"), ("Author", "name"), ("Publisher", "name"), ("City", "name"), ("City", "country"))}]
        assert len(instance_scopes) == 5 and all(len(layout.runs[s]) == 1 for s in instance_scopes)
        book = Instance(object_type_id="Book", id="b:new", properties={"title": "A New Farm Story", "year": 2020})
        author = Instance(object_type_id="Author", id="a:new", properties={"name": "New Writer"})
        store.apply_changes("library", NetworkChanges(upsert_instances=[author, book],
                                                      delete_instances=[("Book", "b:1984")]))
        with store.core.engine.connect() as conn:
            layout = read_layout(conn)
        assert all(len(layout.runs[s]) <= 2 for s in instance_scopes)
        queries = ["Orwell", "a new farm story", "Jane Austen", "the", "writer", "science fiction 1984"]
        requests = {("Book", "title"): ("Book", ["title"]), ("Author", "name"): ("Author", ["name"])}

        def answers() -> list:
            get_settings.cache_clear()
            return [store.match_scores_many("library", "instance", requests, q, 5) for q in queries]

        fts5 = answers()
        monkeypatch.setenv("KGRAG_KN_TEXT_STAGED_ROWS", "0")
        answers()  # the first staged read starts reading the layout
        cache = store.index._text_cache
        assert cache is not None and cache.layout_done.wait(30) and cache.layout is not None
        assert answers() == fts5
        assert any(found for found in fts5[1].values())
        # a new version's layout read waits while another read's share of a core would pass a quarter
        store.index._layout_clock = (time.monotonic(), 3600.0)
        store.apply_changes("library", NetworkChanges(delete_instances=[("Author", "a:new")]))
        answers()
        cache = store.index._text_cache
        assert cache.layout is None and not cache.layout_started.is_set()
        store.index._layout_clock = (-math.inf, 0.0)
        answers()
        assert cache.layout_done.wait(30) and cache.layout is not None
    finally:
        store.close()
        get_settings.cache_clear()
