"""kgrag.network.store beyond its contract: the store answers every call of the protocols, the FTS query quoting,
how a scored leaf's candidate pool follows its place in the condition tree, and the SQLite migration of the old
inline text index. The contract itself (load, every condition operation, scoring, type search, paths, errors,
transactions, awkward ids and values) runs on SQLite and PostgreSQL in tests/test_conformance_network_store.py
(:mod:`harness.conformance.network_store`)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from harness.conformance.network_store import ids, tiny_network
from kgrag.network.schema.model import Condition
from kgrag.network.service import ContextStore, OntologyService
from kgrag.network.store import NetworkStore, fts_query
from kgrag.rank.sentence_embedder import Embedder


@pytest.fixture(scope="session")
def kn_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """One embedder for the network tests, caching to a session folder."""
    return Embedder(cache_dir=tmp_path_factory.getbasetemp() / "kn-embeddings")


def test_provides_every_call_of_the_protocols() -> None:
    """Every call of :class:`OntologyService` and :class:`ContextStore` — the batched ones included — is a
    NetworkStore method (or property) with the protocol's parameters and defaults."""
    for protocol in (OntologyService, ContextStore):
        for name, declared in vars(protocol).items():
            if name.startswith("_"):
                continue
            own = getattr(NetworkStore, name)
            if isinstance(declared, property):
                assert isinstance(own, property), name
                continue
            wanted, found = inspect.signature(declared).parameters, inspect.signature(own).parameters
            assert list(found) == list(wanted), name
            assert [p.default for p in found.values()] == [p.default for p in wanted.values()], name


def test_fts_query_quotes_tokens() -> None:
    assert fts_query(['a"b', "OR", "NEAR"]) == '"a""b" OR "OR" OR "NEAR"'


def test_match_leaf_asks_for_the_query_limit_in_an_or_and_more_under_an_and() -> None:
    """In an OR (or alone) the best ``limit`` rows come from each scored branch's best ``limit``; under an AND
    a filter may reject the best candidates, so the pool is ``match_limit``."""
    from kgrag.network.schema.conditions import compile_condition

    asked: list[tuple[str, int]] = []

    def scorer(kind: str):
        def score(type_id: str, fields: list[str], query: str, limit: int) -> dict[str, float]:
            asked.append((kind, limit))
            return {}
        return score

    ot = tiny_network()[0].object_types[0]
    match = {"operation": "match", "field": "name", "value": "咳"}
    knn = {"operation": "knn", "field": "name", "value": "cough"}
    exact = {"operation": "==", "field": "name", "value": "百日咳"}
    for tree, expected in [
        (match, [("match", 7)]),
        ({"operation": "or", "sub_conditions": [knn, exact, match]}, [("knn", 7), ("match", 7)]),
        ({"operation": "and", "sub_conditions": [match, exact]}, [("match", 2000)]),
        ({"operation": "or", "sub_conditions": [{"operation": "and", "sub_conditions": [match]}]}, [("match", 2000)]),
        ({**match, "limit": 3}, [("match", 3)]),
    ]:
        asked.clear()
        compile_condition(Condition.model_validate(tree), ot, match=scorer("match"), knn=scorer("knn"),
                          default_limit=7)
        assert asked == expected, tree


def test_store_with_the_old_inline_text_index_is_migrated(tmp_path: Path, kn_embedder: Embedder) -> None:
    """A store written when ``kn_text`` held its own rows opens with the rows moved to ``kn_text_rows`` and the
    index rebuilt over them: match finds the same instances, and a reload still replaces cleanly."""
    import sqlite3

    db = tmp_path / "old.db"
    s = NetworkStore(f"sqlite:///{db}", embedder=kn_embedder)
    s.load(*tiny_network())
    before = ids(s, {"operation": "match", "field": "desc", "value": "呼吸困难"})
    rows = s.count_instances("tiny")
    s.close()
    con = sqlite3.connect(db)  # rewrite the text index in the old layout
    con.executescript(
        "CREATE VIRTUAL TABLE legacy USING fts5(text, scope, kn_id UNINDEXED, kind UNINDEXED, type_id UNINDEXED,"
        " item_id UNINDEXED, field UNINDEXED, tokenize = 'unicode61 remove_diacritics 0');"
        "INSERT INTO legacy SELECT text, scope, kn_id, kind, type_id, item_id, field FROM kn_text_rows;"
        "DROP TABLE kn_text; DELETE FROM kn_text_rows; ALTER TABLE legacy RENAME TO kn_text;"
    )
    con.commit()
    con.close()
    migrated = NetworkStore(f"sqlite:///{db}", embedder=kn_embedder)
    assert before and ids(migrated, {"operation": "match", "field": "desc", "value": "呼吸困难"}) == before
    migrated.load(*tiny_network())  # delete + insert through the external-content index
    assert ids(migrated, {"operation": "match", "field": "desc", "value": "呼吸困难"}) == before
    assert migrated.count_instances("tiny") == rows
    con = sqlite3.connect(db)
    con.execute("INSERT INTO kn_text(kn_text) VALUES ('integrity-check')")  # raises if index != rows
    con.close()
