"""Incremental network changes (kgrag.network.store.changes) on the library network, on SQLite and PostgreSQL:
inserts, updates and deletes of instances and links through ``apply_changes`` and ``sync``; unchanged rows
untouched; counts, FTS index, vectors and PostgreSQL's term statistics equal to a fresh load's; the version bumped
once per change and never for no change; a bad change rejected whole.

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_changes.py
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema import tables as t
from kgrag.network.schema.conditions import NOT_TEXT
from kgrag.network.schema.model import Instance, Link
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.network.store.load import _term_rows

LIBRARY = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
KN = "library"


@pytest.fixture
def store(db_url: str) -> NetworkStore:
    s = NetworkStore(db_url)
    s.sync(*load_declarative(LIBRARY))
    yield s
    s.close()


def _rows(store: NetworkStore, table: Any, *cols: str) -> set[tuple]:
    with store.engine.connect() as conn:
        return {tuple(r) for r in conn.execute(select(*(table.c[c] for c in cols)).where(table.c.kn_id == KN))}


def _book(store: NetworkStore, book_id: str) -> Instance:
    hit = store.get_instances(KN, "Book", [book_id])[0]
    return Instance(object_type_id="Book", id=hit.id, properties=hit.properties)


def _fresh(tmp_path: Path, store: NetworkStore) -> NetworkStore:
    """A store holding a full load of what ``store`` holds now (the reference an incremental change must equal)."""
    fresh = NetworkStore(f"sqlite:///{tmp_path / 'fresh.db'}", embedder=store.embedder)
    network = store.get_network(KN)
    instances = [Instance(object_type_id=h.object_type_id, id=h.id, properties=h.properties)
                 for ot in network.object_types for h in store.query_instances(KN, ot.id, None, 10_000, False)]
    with store.engine.connect() as conn:
        links = [Link(relation_type_id=r.relation_type_id, source_id=r.source_id, target_id=r.target_id)
                 for r in conn.execute(select(t.links).where(t.links.c.kn_id == KN))]
    fresh.load(network, instances, links)
    return fresh


def _derived(store: NetworkStore) -> dict[str, set[tuple]]:
    """Every row of the network except row ids and versions (what must equal a fresh load's)."""
    return {
        "instances": _rows(store, t.instances, "object_type_id", "id", "name", "content_hash"),
        "links": _rows(store, t.links, "relation_type_id", "source_id", "target_id"),
        "text": _rows(store, t.text_index, "text", "scope", "kind", "type_id", "item_id", "field"),
        "vectors": _rows(store, t.vectors, "kind", "type_id", "item_id", "field", "vector"),
        "chunks": _rows(store, t.chunks, "id", "doc_id", "text"),
    }


MIXED = NetworkChanges(
    upsert_instances=[Instance(object_type_id="Book", id="b:zorblax",
                               properties={"title": "The Zorblax Chronicles", "year": 2021, "pages": 410})],
    delete_instances=[("Book", "b:hobbit")],
    upsert_links=[Link(relation_type_id="wrote", source_id="a:orwell", target_id="b:zorblax")],
    delete_links=[Link(relation_type_id="born_in", source_id="a:orwell", target_id="c:motihari")],
)


def test_mixed_change_equals_a_fresh_load(store: NetworkStore, tmp_path: Path) -> None:
    before = store.network_stats(KN)
    old_1984 = _book(store, "b:1984")
    changes = NetworkChanges(
        upsert_instances=[*MIXED.upsert_instances,
                          Instance(object_type_id="Book", id="b:1984", properties={**old_1984.properties,
                                                                                    "title": "Nineteen Eighty-Four"})],
        delete_instances=MIXED.delete_instances, upsert_links=MIXED.upsert_links, delete_links=MIXED.delete_links)
    hobbit_links = [r for r in _rows(store, t.links, "relation_type_id", "source_id", "target_id")
                    if "b:hobbit" in r]
    stats = store.apply_changes(KN, changes)
    assert (stats.instances_inserted, stats.instances_updated, stats.instances_deleted) == (1, 1, 1)
    assert stats.links_inserted == 1
    assert stats.links_deleted == len(hobbit_links) + 1 and hobbit_links
    assert stats.version != before["version"] and not stats.full_reload
    after = store.network_stats(KN)
    assert after["version"] == stats.version
    assert after["instances"] == before["instances"] and after["links"] == before["links"] - len(hobbit_links)
    assert after["instances_by_type"]["Book"] == before["instances_by_type"]["Book"]
    fresh = _fresh(tmp_path, store)
    assert _derived(store) == _derived(fresh)
    fresh_stats = fresh.network_stats(KN)
    for key in ("instances", "links", "text_rows", "vectors", "chunks", "instances_by_type"):
        assert after[key] == fresh_stats[key], key
    assert store.match_scores(KN, "instance", "Book", ["title"], "Zorblax", 5) == {"b:zorblax": 1.0}
    assert store.match_scores(KN, "instance", "Book", ["title"], "Hobbit", 5) == {}
    assert "b:1984" in store.match_scores(KN, "instance", "Book", ["title"], "Nineteen Eighty-Four", 5)
    if store.dialect == "sqlite":
        with store.engine.begin() as conn:  # raises when the FTS index and its rows disagree
            conn.exec_driver_sql("INSERT INTO kn_text(kn_text) VALUES('integrity-check')")
    else:
        text_rows = [{"text": r[0]} for r in _rows(store, t.text_index, "text", "id")]
        expected = {(r["token"], r["rows"], r["tokens"]) for r in _term_rows(KN, text_rows)}
        assert _rows(store, t.text_terms, "token", "rows", "tokens") == expected


def test_unchanged_rows_are_not_rewritten(store: NetworkStore) -> None:
    text_ids = {r[1:]: r[0] for r in _rows(store, t.text_index, "id", "item_id", "field")}
    stats = store.apply_changes(KN, MIXED)
    after = {r[1:]: r[0] for r in _rows(store, t.text_index, "id", "item_id", "field")}
    kept = {k: v for k, v in text_ids.items() if k[0] != "b:hobbit"}
    assert {k: after[k] for k in kept} == kept  # same row ids: untouched
    assert ("b:hobbit", "title") not in after and ("b:zorblax", "title") in after
    assert stats.instances_unchanged == 0


def test_version_bumps_once_and_never_for_nothing(store: NetworkStore) -> None:
    v0 = store.network_version(KN)
    same = _book(store, "b:1984")
    stats = store.apply_changes(KN, NetworkChanges(upsert_instances=[same]))
    assert stats.version == v0 and stats.instances_unchanged == 1 and not stats.changed
    stats = store.sync(*load_declarative(LIBRARY))
    assert stats.version == v0 and stats.instances_unchanged == store.count_instances(KN)
    store.apply_changes(KN, NetworkChanges(delete_instances=[("Book", "no-such-book")],
                                           delete_links=[Link(relation_type_id="wrote", source_id="x",
                                                              target_id="y")]))
    assert store.network_version(KN) == v0
    stats = store.apply_changes(KN, MIXED)
    assert store.network_version(KN) == stats.version != v0


@pytest.mark.parametrize("changes, message", [
    (NetworkChanges(upsert_instances=[Instance(object_type_id="Nope", id="x", properties={})]),
     "instance 'x': unknown object type 'Nope'"),
    (NetworkChanges(upsert_links=[Link(relation_type_id="wrote", source_id="a:orwell", target_id="b:missing")]),
     "target 'b:missing' is not an instance of 'Book'"),
    (NetworkChanges(delete_instances=[("Book", "b:1984")],
                    upsert_links=[Link(relation_type_id="wrote", source_id="a:orwell", target_id="b:1984")]),
     "target 'b:1984' is not an instance of 'Book' after the change"),
    (NetworkChanges(upsert_links=[Link(relation_type_id="nope", source_id="a", target_id="b")]),
     "unknown relation type 'nope'"),
    (NetworkChanges(upsert_instances=[Instance(object_type_id="Book", id="b:x", properties={"title": "x"})] * 2),
     "instance 'b:x' of 'Book' is upserted twice"),
    (NetworkChanges(upsert_instances=[Instance(object_type_id="Book", id="b:x", properties={"title": "x"})],
                    delete_instances=[("Book", "b:x")]),
     "both upserted and deleted"),
])
def test_a_bad_change_is_rejected_whole(store: NetworkStore, changes: NetworkChanges, message: str) -> None:
    before = _derived(store)
    version = store.network_version(KN)
    # the bad row comes after good ones: nothing of them may be applied either
    changes = replace(changes, upsert_instances=[*MIXED.upsert_instances, *changes.upsert_instances],
                      delete_instances=[("City", "c:london"), *changes.delete_instances])
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        store.apply_changes(KN, changes)
    assert store.network_version(KN) == version and _derived(store) == before


def test_unknown_network(store: NetworkStore) -> None:
    from kgrag.errors import NetworkNotFound

    with pytest.raises(NetworkNotFound):
        store.apply_changes("no-such-network", MIXED)


def test_sync_applies_a_changed_schema_file(store: NetworkStore, tmp_path: Path) -> None:
    """A copy of the library files, edited: a renamed author, a deleted book, a new genre with a link, a new
    property and a relation type; only the difference is written and the result equals a fresh load."""
    folder = tmp_path / "lib"
    folder.mkdir()
    for f in LIBRARY.parent.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    authors = (folder / "authors.csv").read_text().replace("George Orwell", "Eric Blair")
    (folder / "authors.csv").write_text(authors)
    books = [line for line in (folder / "books.csv").read_text().splitlines() if not line.startswith("b:hobbit,")]
    (folder / "books.csv").write_text("\n".join(books) + "\n")
    links = [line for line in (folder / "links.csv").read_text().splitlines() if "b:hobbit" not in line]
    (folder / "genres.csv").write_text((folder / "genres.csv").read_text() + "g:poetry,poetry\n")
    links.append("genre,b:1984,g:poetry")
    (folder / "links.csv").write_text("\n".join(links) + "\n")
    schema = (folder / "library.yaml").read_text()
    schema = schema.replace("  - {id: located_in,", "  - {id: set_in, name: set in, comment: where the story is set, "
                            "source_object_type_id: Book, target_object_type_id: City}\n  - {id: located_in,")
    (folder / "library.yaml").write_text(schema)
    text_ids = {r[1:]: r[0] for r in _rows(store, t.text_index, "id", "item_id", "field")}
    stats = store.sync(*load_declarative(folder / "library.yaml"), source={"kind": "file", "path": str(folder)})
    assert (stats.instances_inserted, stats.instances_updated, stats.instances_deleted) == (1, 1, 1)
    assert stats.links_inserted == 1 and stats.links_deleted >= 1 and not stats.full_reload
    assert "set_in" in {rt.id for rt in store.get_network(KN).relation_types}
    assert store.network_stats(KN)["source"] == {"kind": "file", "path": str(folder)}
    after = {r[1:]: r[0] for r in _rows(store, t.text_index, "id", "item_id", "field")}
    assert after[("b:1984", "title")] == text_ids[("b:1984", "title")]  # untouched
    assert after[("a:orwell", "name")] != text_ids[("a:orwell", "name")]  # rewritten
    assert _derived(store) == _derived(_fresh(tmp_path, store))
    assert store.search_object_types(KN, "genre", 3)[0][0] == "Genre"
    assert "set_in" in dict(store.search_relation_types(KN, "where the story is set", 3))


def test_sync_reindexes_a_type_whose_index_definition_changed(store: NetworkStore, tmp_path: Path) -> None:
    network, instances, links = load_declarative(LIBRARY)
    city = next(ot for ot in network.object_types if ot.id == "City")
    country = next(p for p in city.data_properties if p.name == "country")
    country.condition_operations = [*country.condition_operations, "knn"]
    stats = store.sync(network, instances, links)
    cities = sum(1 for i in instances if i.object_type_id == "City")
    assert stats.instances_unchanged == len(instances) and str(cities) in stats.note
    assert stats.version != "" and not stats.full_reload
    assert _derived(store) == _derived(_fresh(tmp_path, store))


def test_sync_of_a_changed_text_config_reloads_in_full(store: NetworkStore) -> None:
    from kgrag.network.schema.model import TextConfig

    network, instances, links = load_declarative(LIBRARY)
    network.text = TextConfig(sections={"Book": ["title"]})
    stats = store.sync(network, instances, links)
    assert stats.full_reload and "text (chunking)" in stats.note
    assert store.network_stats(KN)["chunks"] == sum(1 for i in instances if i.object_type_id == "Book")


def test_caches_move_forward_like_a_fresh_read(store: NetworkStore, db_url: str) -> None:
    """A store's per-version vector index and instance names, warm before a change, are moved forward by it (the
    touched rows re-read) and equal what a fresh store reads."""
    store.knn_scores(KN, "instance", "Book", ["title"], "The Hobbit", 5)
    store.instance_names(KN)
    store.queries.list_members(KN, "Book", "title")
    old = store.network_version(KN)
    stats = store.apply_changes(KN, NetworkChanges(
        upsert_instances=[*MIXED.upsert_instances,
                          Instance(object_type_id="Book", id="b:1984",
                                   properties={**_book(store, "b:1984").properties, "title": "Nineteen"})],
        delete_instances=MIXED.delete_instances, upsert_links=MIXED.upsert_links))
    assert store.core.touched_since(KN, old, stats.version) == [("Book", "b:1984"), ("Book", "b:hobbit"),
                                                                ("Book", "b:zorblax")]
    fresh = NetworkStore(db_url, embedder=store.embedder)

    def vectors(s: NetworkStore) -> set[tuple[str, str, bytes]]:
        index = s.index._vector_index(KN, stats.version, "instance", "Book")
        return {(i, f, v.tobytes()) for i, f, v in zip(index.ids, index.fields, index.matrix, strict=True)}

    assert vectors(store) == vectors(fresh) and any(i == "b:zorblax" for i, _, _ in vectors(store))
    assert store.instance_names(KN) == fresh.instance_names(KN)
    assert ("Book", "b:1984", "Nineteen") in store.instance_names(KN)
    members = {k: sorted(v) for k, v in store.queries.list_members(KN, "Book", "title").items()}
    assert members == {k: sorted(v) for k, v in fresh.queries.list_members(KN, "Book", "title").items()}
    assert members["Nineteen"] == ["b:1984"] and "1984" not in members and "The Hobbit" not in members
    # the same rows in another order: the same neighbours, scores equal up to float32 summation order
    assert store.knn_scores(KN, "instance", "Book", ["title"], "Zorblax Chronicles", 3) == pytest.approx(
        fresh.knn_scores(KN, "instance", "Book", ["title"], "Zorblax Chronicles", 3), abs=1e-5)
    fresh.close()


def test_rows_stored_without_a_hash_are_compared_by_their_properties(store: NetworkStore) -> None:
    """A store written before the content-hash column: the hashes are computed from the stored properties (and
    written back), nothing is taken for changed, the version stays."""
    with store.engine.begin() as conn:
        conn.execute(t.instances.update().where(t.instances.c.kn_id == KN).values(content_hash=None))
    version = store.network_version(KN)
    stats = store.sync(*load_declarative(LIBRARY))
    assert stats.instances_unchanged == 36 and not stats.changed and stats.version == version
    assert None not in {r[0] for r in _rows(store, t.instances, "content_hash")}


def test_a_load_by_copy_equals_one_by_executemany(pg_url: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """PostgreSQL loads big batches with COPY: every row, the term statistics and the answers are those of the
    executemany path (and of SQLite's load)."""
    from kgrag.network.store import load as load_module

    monkeypatch.setattr(load_module, "COPY_MIN_ROWS", 1)  # the library's rows, every one by COPY
    copied = NetworkStore(pg_url)
    try:
        copied.load(*load_declarative(LIBRARY))
        reference = NetworkStore(f"sqlite:///{tmp_path / 'ref.db'}", embedder=copied.embedder)
        reference.load(*load_declarative(LIBRARY))
        assert _derived(copied) == _derived(reference)
        with copied.engine.connect() as conn:
            props = {r.id: r.properties for r in conn.execute(select(t.instances).where(t.instances.c.kn_id == KN))}
        assert props["b:1984"] == _book(reference, "b:1984").properties  # JSON as the engine writes it
        text_rows = [{"text": r[0]} for r in _rows(copied, t.text_index, "text", "id")]
        expected = {(r["token"], r["rows"], r["tokens"]) for r in _term_rows(KN, text_rows)}
        assert _rows(copied, t.text_terms, "token", "rows", "tokens") == expected
        assert copied.match_scores(KN, "instance", "Book", ["title"], "Hobbit", 5) == \
            reference.match_scores(KN, "instance", "Book", ["title"], "Hobbit", 5)
        reference.close()
    finally:
        copied.close()


def test_equality_on_a_text_field_reads_only_its_holders(store: NetworkStore) -> None:
    """``==`` on a text field other than the display key is answered through the field's value index (the holders'
    ids, not every row's JSON): the same rows as the plain comparison; a value nobody holds reads no row; a field
    with a non-text value somewhere is left to the database (PostgreSQL compares numbers as text)."""
    from kgrag.network.schema.model import Condition

    def ids(value: object) -> list[str]:
        cond = Condition(operation="==", field="country", value=value)
        return [h.id for h in store.query_instances(KN, "City", cond, 10)]

    plan = store.compile(KN, "City", Condition(operation="==", field="country", value="Atlantis"), 10)
    assert "false" in str(plan.clause).lower() or str(plan.clause) in ("0 = 1", "false")
    assert ids("Atlantis") == []
    uk = sorted(h.id for h in store.query_instances(KN, "City", None, 100)
                if h.properties.get("country") == "United Kingdom")
    assert ids("United Kingdom") == uk and "c:london" in uk
    hit = store.get_instances(KN, "City", ["c:toronto"])[0]
    store.apply_changes(KN, NetworkChanges(upsert_instances=[
        Instance(object_type_id="City", id="c:toronto", properties={**hit.properties, "country": 5})]))
    assert NOT_TEXT in store.queries.list_members(KN, "City", "country")
    assert ids("United Kingdom") == uk  # the database's comparison again
    assert ids("5") == (["c:toronto"] if store.dialect == "postgresql" else [])
