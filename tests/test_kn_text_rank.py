"""Staged full-text ranking (kgrag.network.store.text_rank) against FTS5's own ``bm25()`` on a real FTS5 index.

A text index of Zipf-distributed words (common, middling and rare terms, several scopes, decimals — a query's
decimal is FTS5's phrase of its digit runs) is written
with the store's schema; for many queries the staged ranking returns FTS5's rows, in its order, with its scores,
whenever it says it is exact — with the caps lowered so that every stage (the rare terms' rows, the bound, the
common terms' rows read whole or cut) is taken. Through the store, a network answers ``match`` the same with the
staged ranking forced on (``KGRAG_KN_TEXT_STAGED_ROWS=0``) as with FTS5's. Every check runs on two layouts of the
same rows: interleaved (a scope phrase names the scopes) and laid out by scope with a later change's tail and
deleted rows (the scopes are read as id ranges: ``kgrag.network.store.text_layout``).

    .venv/bin/python -m pytest -q tests/test_kn_text_rank.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, insert, text

from kgrag.config import get_settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema import tables as t
from kgrag.network.store import NetworkStore, fts_query
from kgrag.network.store.text_layout import read_layout
from kgrag.network.store.text_rank import RowSamples, SqliteText, bm25, staged_many, staged_rows

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
SCOPES = {name: t.scope_token("kn", "instance", name, "name") for name in ("A", "B", "C")}


@pytest.fixture(scope="module", params=["interleaved", "by scope"])
def index(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):  # noqa: ANN201
    """An FTS5 text index of 6,000 rows over three scopes (one row in 97 deleted): words drawn Zipf-like from
    3,000, some decimals; the rows in turn, or each scope's first 4,500 together, then a tail of the rest by scope
    (a full load's blocks, then a change's rows)."""
    engine = create_engine(f"sqlite:///{tmp_path_factory.mktemp('fts') / 'kn.db'}")
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(3000)]
    rows = []
    for i in range(6000):
        n = int(rng.integers(1, 9))
        picks = list(dict.fromkeys(words[min(int(rng.zipf(1.3)) - 1, 2999)] for _ in range(n)))
        if i % 10 == 0:
            picks.append(f"{int(rng.integers(0, 4))}.{int(rng.integers(0, 4))}")
        scope_name = "ABC"[i % 3]
        rows.append({"text": " ".join(picks), "scope": SCOPES[scope_name], "kn_id": "kn", "kind": "instance",
                     "type_id": scope_name, "item_id": f"i{i}", "field": "name"})
    if request.param == "by scope":
        rows = sorted(rows[:4500], key=lambda r: r["scope"]) + sorted(rows[4500:], key=lambda r: r["scope"])
    with engine.begin() as conn:
        t.create_schema(conn)
        conn.execute(insert(t.text_index), rows)
        t.fts_sync_insert(conn, "kn")
        conn.execute(text("INSERT INTO kn_text(kn_text, rowid, text, scope) "
                          "SELECT 'delete', id, text, scope FROM kn_text_rows WHERE id % 97 = 0"))
        conn.execute(text("DELETE FROM kn_text_rows WHERE id % 97 = 0"))
    yield engine
    engine.dispose()


def _fts5(conn, scopes: list[str], terms: list[str], fetch: int) -> list[tuple[int, float]]:  # noqa: ANN001
    return [(r[0], r[1]) for r in conn.execute(text(
        "SELECT rowid, bm25(kn_text, 1.0, 0.0) AS rank FROM kn_text WHERE kn_text MATCH :q "
        "ORDER BY rank, rowid LIMIT :n"), {"q": f"scope : ({fts_query(scopes)}) AND text : ({fts_query(terms)})",
                                           "n": fetch})]


QUERIES = [["w0"], ["w0", "w1"], ["w2500", "w0"], ["w40", "w3", "w1"], ["w1", "w7", "w900", "w2999"],
           ["w5", "w6"], ["w12", "w0", "w1", "w2"], ["w77"], ["nothing"], ["w0", "nothing"], ["3", "w0"],
           ["1", "2", "w150"], ["1.2"], ["3.1", "w0"], ["0.0", "1", "w5"], ["2.3", "2", "3"]]


@pytest.mark.parametrize("samples", [False, True])
@pytest.mark.parametrize(("rare_rows", "sample_rows"), [(5000, 200), (50, 200), (0, 10_000), (50, 5), (0, 3)])
def test_exact_answers_are_fts5s(index, rare_rows: int, sample_rows: int, samples: bool) -> None:  # noqa: ANN001
    cut = exact_seen = 0
    with index.connect() as conn:
        source = SqliteText(conn, samples=RowSamples() if samples else None, layout=read_layout(conn))
        for terms in QUERIES:
            for scopes in ([SCOPES["A"]], [SCOPES["A"], SCOPES["C"]], list(SCOPES.values())):
                for fetch in (1, 8, 40):
                    rows, exact = staged_rows(source, scopes, terms, fetch, rare_rows, sample_rows)
                    ref = _fts5(conn, scopes, terms, fetch)
                    holders = {r.id for r in rows}
                    assert len(holders) == len(rows) <= fetch
                    assert all(r.rank < 0 for r in rows), terms  # each holds a query term (bm25 > 0)
                    assert [r.rank for r in rows] == sorted(r.rank for r in rows)
                    if not exact:
                        cut += 1
                        assert len(rows) == min(fetch, len(ref))  # a full answer all the same
                        continue
                    exact_seen += 1
                    assert [r.id for r in rows] == [rid for rid, _ in ref], (terms, scopes, fetch)
                    assert all(abs(r.rank - rank) < 1e-9 for r, (_, rank) in zip(rows, ref, strict=True))
    assert exact_seen > 0
    if sample_rows <= 5:
        assert cut > 0  # the small samples were cut and said so


@pytest.mark.parametrize("max_rows", [100_000, 60])
def test_reads_merged_from_kept_samples_equal_one_read(index, max_rows: int) -> None:  # noqa: ANN001
    """A cut read of the rows holding any term is the merge of each (scope, term)'s first rows, whatever the kept
    samples hold: read with smaller and larger limits, in turn, and with a cache small enough to drop pairs; the
    reads by id range (where the layout has them) are the scope phrase's."""
    samples = RowSamples(max_rows)
    with index.connect() as conn:
        plain, kept = SqliteText(conn), SqliteText(conn, samples=samples, layout=read_layout(conn))
        for limit in (5, 40, 3, 400, 40):
            for terms in QUERIES:
                for scopes in ([SCOPES["A"]], [SCOPES["A"], SCOPES["C"]], list(SCOPES.values())):
                    want = plain.rows(scopes, terms, False, limit)
                    assert kept.rows(scopes, terms, False, limit) == want, (limit, terms, scopes)
                    assert kept.rows(scopes, terms, True, limit) == plain.rows(scopes, terms, True, limit)
        assert samples._held <= max_rows and samples._lists


def test_many_requests_answer_as_each_alone(index) -> None:  # noqa: ANN001
    requests = {"a": [SCOPES["A"]], "bc": [SCOPES["B"], SCOPES["C"]], "none": []}
    with index.connect() as conn:
        source = SqliteText(conn)
        for terms in QUERIES:
            many = staged_many(source, requests, terms, 10, 50, 20)
            assert many["none"] == ([], True)
            for key, scopes in requests.items():
                if scopes:
                    assert many[key] == staged_rows(source, scopes, terms, 10, 50, 20)


def test_bm25_and_totals_are_fts5s(index) -> None:  # noqa: ANN001
    with index.connect() as conn:
        source = SqliteText(conn)
        rows, tokens = source.totals
        assert rows == conn.execute(text("SELECT count(*) FROM kn_text_rows")).scalar() == 6000 - 6000 // 97
        assert tokens == conn.execute(text("SELECT sum(length(text) - length(replace(replace(text, '.', ' '), ' ', ''))"
                                           " + 1) FROM kn_text_rows")).scalar() + rows
        stats = source.stats(["w0", "w1", "w2500", "1"])
        for rid, rank in _fts5(conn, [SCOPES["B"]], ["w0", "w1", "w2500", "1"], 30):
            row_text = conn.execute(text("SELECT text FROM kn_text_rows WHERE id = :i"), {"i": rid}).scalar()
            assert abs(bm25(row_text.replace(".", " ").split(), ["w0", "w1", "w2500", "1"], stats) + rank) < 1e-9


def test_a_store_answers_match_alike_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    get_settings.cache_clear()
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    try:
        store.load(*load_declarative(LIBRARY))
        queries = ["Orwell", "a novel about a farm", "Jane Austen", "the", "Penguin books", "science fiction 1984"]
        requests = {("Book", "title"): ("Book", ["title"]), ("Author", "name"): ("Author", ["name"]),
                    ("Publisher", "name"): ("Publisher", ["name"])}

        def answers() -> list:
            get_settings.cache_clear()
            return [(store.match_scores("library", "instance", "Book", ["title"], q, 5),
                     store.match_scores_many("library", "instance", requests, q, 5)) for q in queries]

        fts5 = answers()
        monkeypatch.setenv("KGRAG_KN_TEXT_STAGED_ROWS", "0")
        staged = answers()
        assert staged == fts5
        assert any(single for single, _ in fts5)  # the queries do find books
    finally:
        store.close()
        get_settings.cache_clear()
