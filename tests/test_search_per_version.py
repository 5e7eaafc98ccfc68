"""What contextual recall reads once per network version instead of once per question (issue 50 §6): ``contain``
on the display key of many types from the per-version name scan (the same rows as SQLite's ``LIKE``), and the
categorical values, primary-field samples and a relation's usual shape kept per version — and all of them follow a
change another store commits (a running process trusts its cached version for ``SCHEMA_RECHECK_SECONDS``; 0 here).

    .venv/bin/python -m pytest -q -p no:xdist -p no:randomly tests/test_search_per_version.py
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag.network.schema.model import (
    Condition,
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.network.store.core import StoreCore
from kgrag.network.store.query import NameScan
from kgrag.search.context_models import AttributeCondition, ContextConfig
from kgrag.search.formats import categorical_candidates, primary_fields
from kgrag.search.patterns import relation_pattern

KN = "pv"
OPS = ["match", "==", "contain"]
TITLES = ["The Hobbit", "HOBBIT tales", "hobbit_2", "100% Hobbit", "a/b hobbit", "Ärger im Hobbit", "ärger",
          "Farmer Giles", "Tales of hobbits", "hob_bit"]


def network() -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    net = KnowledgeNetwork(kn_id=KN, name="per-version test", object_types=[
        ObjectType(id="Book", name="book", display_key="title", data_properties=[
            DataProperty(name="title", type="string", condition_operations=OPS),
            DataProperty(name="year", type="integer", condition_operations=["=="])]),
        ObjectType(id="Person", name="person", display_key="name", data_properties=[
            DataProperty(name="name", type="string", condition_operations=OPS),
            DataProperty(name="p_gender", type="string", condition_operations=["=="])]),
    ], relation_types=[RelationType(id="wrote", name="wrote", source_object_type_id="Person",
                                    target_object_type_id="Book")])
    books = [Instance(object_type_id="Book", id=f"b{i + 1:02d}", properties={"title": title, "year": 1930 + i})
             for i, title in enumerate(TITLES)]
    # no title: its name column holds the id, which contains "hobbit" — contain must still leave it out
    books.append(Instance(object_type_id="Book", id="b99-hobbit", properties={"year": 2000}))
    people = [Instance(object_type_id="Person", id=f"p{i}", properties={"name": name, "p_gender": "female"})
              for i, name in ((1, "Hobbit Fan"), (2, "Edith"), (3, "Priscilla"))]
    links = [Link(relation_type_id="wrote", source_id=p, target_id=b)
             for p, b in (("p1", "b01"), ("p1", "b02"), ("p2", "b03"), ("p3", "b08"))]
    return net, books + people, links


@pytest.fixture
def db(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'kn.db'}"
    store = NetworkStore(url)
    store.load(*network())
    store.close()
    yield url


def _escaped(item: str) -> str:
    return item.replace("/", "//").replace("%", "/%").replace("_", "/_")


NAME_CHARS = st.sampled_from(list("aAbBäÄ%_/ -"))


@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.text(NAME_CHARS, max_size=6), max_size=12),
       items=st.lists(st.text(NAME_CHARS, max_size=3), min_size=1, max_size=2))
def test_name_scan_finds_what_sqlite_like_finds(names: list[str], items: list[str]) -> None:
    """NameScan.containing gives the ids, in id order, that ``name LIKE '%item%' ESCAPE '/'`` (every item)
    selects in SQLite: ASCII letters without case, other letters as written, % _ / literal."""
    ids = [f"{i:03d}" for i in range(len(names))]
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE n (id TEXT PRIMARY KEY, name TEXT NOT NULL)")
    conn.executemany("INSERT INTO n VALUES (?, ?)", list(zip(ids, names, strict=True)))
    where = " AND ".join("name LIKE '%' || ? || '%' ESCAPE '/'" for _ in items)
    expected = [r[0] for r in conn.execute(f"SELECT id FROM n WHERE {where} ORDER BY id",
                                           [_escaped(i) for i in items])]
    assert list(NameScan.of(ids, names).containing(items)) == expected


def test_name_scan_edge_items() -> None:
    scan = NameScan.of(["a", "b", "c"], ["Alpha", "", "beta"])
    assert list(scan.containing([""])) == ["a", "b", "c"]  # LIKE '%%': every name
    assert list(scan.containing(["A"])) == ["a", "c"]
    assert list(scan.containing(["x\x00y"])) == []  # the separator inside a keyword: name by name, no match
    assert list(scan.containing(["ta", "BE"])) == ["c"]


@pytest.mark.parametrize("limit", [1, 2, 3, 50])
def test_contain_for_many_types_equals_each_types_own_query(db: str, limit: int) -> None:
    """query_instances_by_type's ``contain`` on the display key (the name scan, then those rows only) returns what
    each type's own ``query_instances`` returns through SQL ``LIKE``: the first ``limit`` by id."""
    store = NetworkStore(db)
    try:
        fields = {"Book": "title", "Person": "name"}
        for value in ["hobbit", "HOBBIT", "Hobbit", "%", "_", "/", "a/b", "100%", "ärger", "Ärger", "", "t",
                      "nothing here", ["hob", "tales"], ["HOB", "_"]]:
            conditions = {tid: Condition(operation="contain", field=f, value=value) for tid, f in fields.items()}
            assert store.query_instances_by_type(KN, conditions, limit) == {
                tid: store.query_instances(KN, tid, cond, limit, sort_by_score=False)
                for tid, cond in conditions.items()}, value
        found = store.query_instances_by_type(KN, {"Book": Condition(operation="contain", field="title",
                                                                     value="hobbit")}, 50)
        assert "b99-hobbit" not in {h.id for h in found["Book"]}  # the id in the name column is no title
    finally:
        store.close()


def test_per_version_reads_follow_a_change(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A served store answers (filling every per-version cache), another store commits a change, and the served
    store's next answers come from the new version: contain on names, categorical values, primary-field samples
    and a relation's usual shape."""
    monkeypatch.setattr(StoreCore, "SCHEMA_RECHECK_SECONDS", 0.0)
    served = NetworkStore(db)
    try:
        network = served.get_network(KN)
        types = {ot.id: ot for ot in network.object_types}
        config = ContextConfig()
        male = AttributeCondition(text="男性", value="男性")

        def views() -> dict:
            pattern = relation_pattern(served, KN, network.relation_types[0], types, config)
            return {
                "contain": [h.id for h in served.query_instances_by_type(
                    KN, {"Book": Condition(operation="contain", field="title", value="silmaril")}, 5)["Book"]],
                "categorical": [(ot.id, p.name, v) for ot, p, v in categorical_candidates(
                    served, KN, male, network.object_types)],
                "primary": primary_fields(served, KN, types["Book"], 3).field_samples["title"],
                "pattern": (pattern.typical_source_values, pattern.typical_target_values),
            }

        before = views()
        assert views() == before  # answered from the caches
        assert before["contain"] == [] and before["categorical"] == []
        assert "The Silmarillion" not in before["primary"]
        writer = NetworkStore(db)
        writer.apply_changes(KN, NetworkChanges(
            upsert_instances=[
                Instance(object_type_id="Book", id="b00", properties={"title": "The Silmarillion", "year": 1977}),
                Instance(object_type_id="Person", id="p0", properties={"name": "Christopher", "p_gender": "male"})],
            delete_instances=[("Book", "b01")],
            upsert_links=[Link(relation_type_id="wrote", source_id="p0", target_id="b00")]))
        writer.close()
        after = views()
        assert after["contain"] == ["b00"]
        assert after["categorical"] == [("Person", "p_gender", "male")]
        assert after["primary"] == ["The Silmarillion", "HOBBIT tales", "hobbit_2"]
        assert "Christopher" in after["pattern"][0] and "The Silmarillion" in after["pattern"][1]
        assert "The Hobbit" not in after["pattern"][1]
    finally:
        served.close()
