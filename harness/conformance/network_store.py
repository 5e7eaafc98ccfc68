"""The knowledge-network store contract (:class:`kgrag.network.store.NetworkStore`), written once and run against
every backend: SQLite and PostgreSQL (tests/test_conformance_network_store.py, one class per backend).

What the product relies on, checked on each backend with the same expected values:

- the protocols (:class:`~kgrag.network.service.OntologyService`, ``ContextStore``): networks listed, schemas
  read back, an unknown network a :class:`~kgrag.errors.NetworkNotFound` on every read that names one (counts of
  one are 0, its links and matches empty, its delete False), an unknown type or field a ``ValueError``;
- load: idempotent (same counts; a new version each time), duplicate links stored once, networks independent,
  inconsistent data rejected before anything is written, a load that fails mid-transaction leaves the previous
  version whole; ``apply_changes`` likewise (one transaction, rolled back on failure); delete removes one network;
- properties round-trip with their JSON types (integers past 2**53 exactly, floats, booleans, lists, nested
  objects, nulls, CJK, emoji, quotes, backslashes, newlines); ids with quotes, ``%``, spaces and accents work in
  every read;
- every condition operation matches the same instances (``==`` exact and case-sensitive; ``prefix`` / ``like`` /
  ``contain`` fold ASCII case only; ``%`` and ``_`` literal where the operation says so), values are bound, never
  pasted (injection-shaped values match nothing and change nothing), numbers compare as numbers (below 2**53:
  beyond it SQLite compares exactly and PostgreSQL as doubles), strings sort by code point, text search (jieba
  tokens, bm25) and knn rank the same, scored and unscored branches combine the same, empty inputs give empty
  results;
- concurrent loads of two networks while searching: readers see the old or the new version, never half of one.

A backend is a subclass providing the ``new_database`` fixture (class scope): a callable that returns the URL of
a new, empty database on that backend.

    .venv/bin/python -m pytest -q tests/test_conformance_network_store.py
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kgrag.errors import NetworkNotFound
from kgrag.network.schema.model import (
    ActionType,
    Condition,
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.service import OntologyService
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.network.store.changes import StoreChanges
from kgrag.network.store.load import StoreLoader
from kgrag.rank.sentence_embedder import Embedder

__all__ = ["NetworkStoreContract", "edge_network", "ids", "tiny_network", "wide_network"]

NAME_OPS = ["knn", "match", "==", "prefix", "contain"]



def tiny_network(kn_id: str = "tiny") -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    """A small Chinese medical network: diseases with every property type, symptoms, drugs, a duplicate link."""
    disease = ObjectType(
        id="Disease",
        name="疾病",
        comment="疾病：名称、简介、治疗方式、费用",
        data_properties=[
            DataProperty(name="name", type="string", condition_operations=NAME_OPS),
            DataProperty(name="desc", type="text", condition_operations=["match"]),
            DataProperty(name="cure_way", type="string[]", condition_operations=["contain"]),
            DataProperty(name="cost", type="integer", condition_operations=[">", "<", "range"]),
            DataProperty(name="insured", type="boolean", condition_operations=["=="]),
            DataProperty(name="get_way", type="string", condition_operations=["=="]),
        ],
    )
    symptom = ObjectType(
        id="Symptom",
        name="症状",
        comment="疾病的症状、临床表现",
        data_properties=[DataProperty(name="name", condition_operations=NAME_OPS)],
    )
    drug = ObjectType(
        id="Drug",
        name="药品",
        comment="治疗用的药物",
        data_properties=[DataProperty(name="name", condition_operations=NAME_OPS)],
    )
    network = KnowledgeNetwork(
        kn_id=kn_id,
        name="tiny medical",
        comment="测试网络",
        object_types=[disease, symptom, drug],
        relation_types=[
            RelationType(
                id="has_symptom",
                name="症状",
                comment="疾病有哪些症状",
                source_object_type_id="Disease",
                target_object_type_id="Symptom",
            ),
            RelationType(
                id="common_drug",
                name="常用药品",
                comment="治疗疾病的常用药物",
                source_object_type_id="Disease",
                target_object_type_id="Drug",
            ),
        ],
        action_types=[ActionType(id="book", name="预约挂号", object_type_id="Disease")],
    )
    diseases = [
        ("上、下气道梗阻", "气道阻塞引起的呼吸困难", ["手术治疗"], 5000, True, "无传染性"),
        (
            "百日咳",
            "百日咳杆菌所致的急性呼吸道传染病，阵发性痉挛性咳嗽",
            ["药物治疗", "支持性治疗"],
            1500,
            False,
            "呼吸道传播",
        ),
        ("流行性感冒", "流感病毒引起的急性呼吸道感染，发热、头痛", ["药物治疗"], 300, True, "呼吸道传播"),
        ("糖尿病", "以高血糖为特征的代谢性疾病", ["药物治疗", "饮食治疗"], 8000, True, "无传染性"),
        ("骨折", "骨的完整性和连续性中断", ["手术治疗", "康复治疗"], 20000, False, "无传染性"),
        ("100%_special", "名字里有通配符的记录", [], 1, False, ""),
    ]
    instances = [
        Instance(
            object_type_id="Disease",
            id=f"Disease:{n}",
            properties={
                "name": n,
                "desc": d,
                "cure_way": c,
                "cost": cost,
                "insured": ins,
                **({"get_way": gw} if gw else {}),
            },
        )
        for n, d, c, cost, ins, gw in diseases
    ]
    symptoms = ["咳嗽", "发热", "呼吸困难", "多饮多尿"]
    instances += [
        Instance(object_type_id="Symptom", id=f"Symptom:{s}", properties={"name": s}) for s in symptoms
    ]
    instances += [
        Instance(object_type_id="Drug", id=f"Drug:{d}", properties={"name": d})
        for d in (
            "奥司他韦",
            "二甲双胍",
            "百咳静糖浆",
            "Aspirin",
            "Insulin injection",
            "Amoxicillin capsules",
        )
    ]
    links = [
        Link(relation_type_id="has_symptom", source_id="Disease:百日咳", target_id="Symptom:咳嗽"),
        Link(relation_type_id="has_symptom", source_id="Disease:流行性感冒", target_id="Symptom:咳嗽"),
        Link(relation_type_id="has_symptom", source_id="Disease:流行性感冒", target_id="Symptom:发热"),
        Link(
            relation_type_id="has_symptom", source_id="Disease:上、下气道梗阻", target_id="Symptom:呼吸困难"
        ),
        Link(relation_type_id="has_symptom", source_id="Disease:糖尿病", target_id="Symptom:多饮多尿"),
        Link(relation_type_id="common_drug", source_id="Disease:流行性感冒", target_id="Drug:奥司他韦"),
        Link(relation_type_id="common_drug", source_id="Disease:糖尿病", target_id="Drug:二甲双胍"),
        Link(relation_type_id="common_drug", source_id="Disease:百日咳", target_id="Drug:百咳静糖浆"),
        Link(relation_type_id="common_drug", source_id="Disease:百日咳", target_id="Drug:百咳静糖浆"),  # dup
    ]
    return network, instances, links



def ids(store: NetworkStore, cond: dict | None, object_type: str = "Disease", limit: int = 20) -> list[str]:
    """The local part of the ids ``condition`` selects in the tiny network (``Disease:百日咳`` → ``百日咳``)."""
    condition = Condition.model_validate(cond) if cond is not None else None
    return [h.id.split(":", 1)[1] for h in store.query_instances("tiny", object_type, condition, limit)]



def wide_network(kn_id: str, n: int) -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    """An ASCII network of ``n`` items and ``n`` links (no knn field: its load is SQL writes, not embeddings)."""
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "lambda", "zeta", "iota"]
    item = ObjectType(id="Item", name="item", comment="a catalogue item", data_properties=[
        DataProperty(name="name", condition_operations=["match", "=="]),
        DataProperty(name="desc", type="text", condition_operations=["match"])])
    tag = ObjectType(id="Tag", name="tag", comment="a label of items",
                     data_properties=[DataProperty(name="name", condition_operations=["match", "=="])])
    network = KnowledgeNetwork(kn_id=kn_id, name=f"wide {kn_id}", object_types=[item, tag], relation_types=[
        RelationType(id="tagged", name="tagged", comment="item carries tag", source_object_type_id="Item",
                     target_object_type_id="Tag")])
    instances = [Instance(object_type_id="Tag", id=f"tag{j}", properties={"name": w}) for j, w in enumerate(words)]
    instances += [
        Instance(object_type_id="Item", id=f"item{i:05d}", properties={
            "name": f"{words[i % 11]} {words[i % 7]} part {i}",
            "desc": " ".join(f"{words[(i * k) % 11]}{k}" for k in range(1, 30))})
        for i in range(n)
    ]
    links = [Link(relation_type_id="tagged", source_id=f"item{i:05d}", target_id=f"tag{i % 11}") for i in range(n)]
    return network, instances, links



#: ``(id, name, size, count, tags, ok)`` of the edge-case network's items (None: the property is absent)
EDGE_ITEMS: list[tuple[str, str, float | None, int | None, list[str] | None, bool | None]] = [
    ("a'b", "O'Brien", 1.5, 3, ["x", "y"], True),
    ('q"uote', 'say "hi"\\ back\nslash\ttab', -2.25, -7, [], False),
    ("ünï", "Ünïcödé ÄÖ ß 𝄞 😀 中文", 1e10, 2**53 + 1, ["中", "😀"], True),
    ("100%", "percent_under", 0.0, 0, ["%", "_"], False),
    ("Apple", "apple", 3.0, 10, ["A"], True),
    ("apple", "APPLE", 2.0, 9, ["a"], None),
    ("id with space", "  spaced  ", None, None, None, None),
]
EDGE_OPS = ["match", "==", "prefix", "contain", "like", "in", "!=", "regex", "knn"]


def edge_network(kn_id: str = "edge") -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    """One type of items with awkward ids and values of every JSON type (:data:`EDGE_ITEMS`), linked in a chain."""
    item = ObjectType(id="Item", name="item", comment="things with awkward ids and values", data_properties=[
        DataProperty(name="name", condition_operations=EDGE_OPS),
        DataProperty(name="size", type="float", condition_operations=[">", "<", ">=", "<=", "range", "=="]),
        DataProperty(name="count", type="integer", condition_operations=[">", "<", "range", "=="]),
        DataProperty(name="tags", type="string[]", condition_operations=["contain"]),
        DataProperty(name="ok", type="boolean", condition_operations=["=="]),
    ])
    network = KnowledgeNetwork(kn_id=kn_id, name="edge cases", object_types=[item], relation_types=[
        RelationType(id="next", name="next", comment="the following item", source_object_type_id="Item",
                     target_object_type_id="Item")])
    instances = []
    for iid, name, size, count, tags, ok in EDGE_ITEMS:
        values = {"name": name, "size": size, "count": count, "tags": tags, "ok": ok}
        properties: dict[str, Any] = {k: v for k, v in values.items() if v is not None}
        properties["extra"] = {"nested": [1, "два", None], "flag": False}
        instances.append(Instance(object_type_id="Item", id=iid, properties=properties))
    links = [Link(relation_type_id="next", source_id=a[0], target_id=b[0])
             for a, b in zip(EDGE_ITEMS, EDGE_ITEMS[1:], strict=False)]
    return network, instances, links


def _edge_ids(store: NetworkStore, field: str, operation: str, value: Any) -> list[str]:
    condition = Condition(operation=operation, field=field, value=value)
    return sorted(h.id for h in store.query_instances("edge", "Item", condition, 50))


class NetworkStoreContract:
    """The suite; a backend's class in tests/ subclasses it and provides ``new_database`` (see the module
    docstring)."""

    @pytest.fixture(scope="class")
    @classmethod
    def new_database(cls) -> Callable[[], str]:
        pytest.fail(f"{cls.__name__} must provide the `new_database` fixture (a callable giving an empty "
                    "database's URL)", pytrace=False)

    @pytest.fixture(scope="class")
    @classmethod
    def kn_embedder(cls, tmp_path_factory: pytest.TempPathFactory) -> Embedder:
        """The real sentence embedder (knn rankings are part of the contract), caching to the session's folder."""
        return Embedder(cache_dir=tmp_path_factory.getbasetemp() / "kn-embeddings")

    @pytest.fixture
    def empty_db_url(self, new_database: Callable[[], str]) -> str:
        return new_database()

    @pytest.fixture(scope="class")
    @classmethod
    def store(cls, new_database: Callable[[], str], kn_embedder: Embedder) -> Iterator[NetworkStore]:
        """The tiny medical network (:func:`tiny_network`), loaded once for the read-only tests."""
        s = NetworkStore(new_database(), embedder=kn_embedder)
        s.load(*tiny_network())
        yield s
        s.close()

    @pytest.fixture(scope="class")
    @classmethod
    def edge_store(cls, new_database: Callable[[], str], kn_embedder: Embedder) -> Iterator[NetworkStore]:
        """The edge-case network (:func:`edge_network`), loaded once for the read-only tests."""
        s = NetworkStore(new_database(), embedder=kn_embedder)
        s.load(*edge_network())
        yield s
        s.close()

    # ------------------------------------------------------------------ the tiny medical network
    def test_implements_the_protocol(self, store: NetworkStore) -> None:
        service: OntologyService = store
        assert service.list_networks() == [("tiny", "tiny medical")]
        net = service.get_network("tiny")
        assert [ot.id for ot in net.object_types] == ["Disease", "Symptom", "Drug"]
        assert [rt.id for rt in net.relation_types] == ["has_symptom", "common_drug"]
        assert [at.id for at in net.action_types] == ["book"]
        with pytest.raises(NetworkNotFound):
            service.get_network("nope")
        with pytest.raises(NetworkNotFound):
            service.query_instances("nope", "Disease", None, 5)

    @pytest.mark.parametrize("query", ["咳嗽", "呼吸道 感染", "糖尿病", "Aspirin", "无此词"])
    def test_batched_reads_equal_one_type_at_a_time(self, store: NetworkStore, query: str) -> None:
        """On both backends each batched read returns what its per-type counterpart returns per type."""
        types = ["Disease", "Symptom", "Drug"]
        for op in ("==", "contain", "prefix"):
            conditions = {tid: Condition(operation=op, field="name", value=query) for tid in types}
            assert store.query_instances_by_type("tiny", conditions, 3) == {
                tid: store.query_instances("tiny", tid, cond, 3, sort_by_score=False) for tid, cond in conditions.items()}
        requests = {tid: (tid, ["name"]) for tid in types} | {"desc": ("Disease", ["desc"])}
        matched = store.match_scores_many("tiny", "instance", requests, query, 4)
        assert matched == {key: store.match_scores("tiny", "instance", tid, fields, query, 4)
                           for key, (tid, fields) in requests.items()}
        for op, scores in (("match", {tid: matched[tid] for tid in types}),
                           ("knn", {tid: store.knn_scores("tiny", "instance", tid, ["name"], query, 4) for tid in types})):
            assert store.scored_instances_by_type("tiny", scores, 4) == {
                tid: store.query_instances("tiny", tid, Condition(operation=op, field="name", value=query, limit=4), 4)
                for tid in types}
        condition = Condition(operation="match", field="name", value=query)
        alone = {tid: store.query_instances("tiny", tid, condition, 5) for tid in types}
        with store.prefetched_matches("tiny", "instance", [(tid, ["name"]) for tid in types], query, 5):
            assert {tid: store.query_instances("tiny", tid, condition, 5) for tid in types} == alone
        assert store.warm_vector_indexes("tiny") > 0

    def test_load_twice_gives_same_counts(self, empty_db_url: str, kn_embedder: Embedder) -> None:
        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        first = s.load(*tiny_network())
        version = s.network_stats("tiny")["version"]
        second = s.load(*tiny_network())
        assert (first.instances, first.links, first.text_rows, first.vectors) == (
            second.instances,
            second.links,
            second.text_rows,
            second.vectors,
        )
        assert first.links == 8  # the duplicate link is stored once
        assert s.count_instances("tiny") == 16 and s.count_links("tiny") == 8
        assert s.network_stats("tiny")["version"] != version
        assert s.list_networks() == [("tiny", "tiny medical")]
        # a second network beside it is independent
        s.load(*tiny_network("tiny2"))
        assert s.count_instances("tiny") == 16 and s.count_instances("tiny2") == 16
        assert s.delete("tiny2") and s.count_instances("tiny2") == 0

    def test_list_contain_index_and_name_column_follow_reloads(
        self,
        empty_db_url: str, kn_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``contain`` on a list field reads the store's per-version item index (and scans past MAX_MEMBER_IDS
        holders); ``in`` / ``contain`` on the display key read the ``name`` column yet never match an instance that
        lacks the property (its ``name`` is then its id)."""
        from kgrag.network.schema import conditions

        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        network, instances, links = tiny_network()
        nameless = Instance(object_type_id="Disease", id="Disease:感冒-无名", properties={"cure_way": ["手术治疗"]})
        s.load(network, [*instances, nameless], links)
        surgery = {"operation": "contain", "field": "cure_way", "value": "手术治疗"}
        assert ids(s, surgery) == ["上、下气道梗阻", "感冒-无名", "骨折"]
        assert sorted(s.queries.list_members("tiny", "Disease", "cure_way")["手术治疗"]) == [
            "Disease:上、下气道梗阻", "Disease:感冒-无名", "Disease:骨折"]
        monkeypatch.setattr(conditions, "MAX_MEMBER_IDS", 1)  # too many holders: the scan answers the same
        assert ids(s, surgery) == ["上、下气道梗阻", "感冒-无名", "骨折"]
        monkeypatch.undo()
        assert ids(s, {"operation": "contain", "field": "name", "value": "感"}) == ["流行性感冒"]
        assert ids(s, {"operation": "in", "field": "name", "value": ["Disease:感冒-无名", "糖尿病"]}) == ["糖尿病"]
        # a reload is a new version: the item index is read again
        changed = [i.model_copy(update={"properties": {**i.properties, "cure_way": ["手术治疗"]}})
                   if i.id == "Disease:糖尿病" else i for i in instances]
        s.load(network, changed, links)
        assert ids(s, surgery) == ["上、下气道梗阻", "糖尿病", "骨折"]
        s.close()

    def test_failed_load_keeps_previous_version(
        self,
        empty_db_url: str, kn_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        s.load(*tiny_network())
        version = s.network_stats("tiny")["version"]
        network, instances, links = tiny_network()
        instances = [*instances, Instance(object_type_id="Drug", id="Drug:new", properties={"name": "新药"})]
        original = StoreLoader._insert

        def failing(loader: StoreLoader, conn: Any, name: str, rows: Any) -> None:
            original(loader, conn, name, rows)
            if name == "links":  # instances already written (and the old rows deleted) in this transaction
                raise RuntimeError("injected failure")

        monkeypatch.setattr(StoreLoader, "_insert", failing)
        with pytest.raises(RuntimeError, match="injected"):
            s.load(network, instances, links)
        monkeypatch.undo()
        assert s.network_stats("tiny")["version"] == version
        assert s.count_instances("tiny") == 16 and s.count_links("tiny") == 8
        assert ids(s, {"operation": "match", "field": "name", "value": "百日咳"})[0] == "百日咳"
        assert ids(s, {"operation": "==", "field": "name", "value": "新药"}, "Drug") == []

    def test_load_rejects_inconsistent_data(self, empty_db_url: str, kn_embedder: Embedder) -> None:
        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        network, instances, links = tiny_network()
        with pytest.raises(ValueError, match="unknown object type 'Nope'"):
            s.load(network, [Instance(object_type_id="Nope", id="x", properties={})], [])
        with pytest.raises(ValueError, match="duplicate instance id"):
            s.load(network, [*instances, instances[0]], links)
        with pytest.raises(ValueError, match="not an instance of 'Symptom'"):
            s.load(
                network,
                instances,
                [Link(relation_type_id="has_symptom", source_id="Disease:骨折", target_id="Drug:奥司他韦")],
            )
        with pytest.raises(ValueError, match="unknown relation type 'nope'"):
            s.load(network, instances, [Link(relation_type_id="nope", source_id="a", target_id="b")])
        assert s.list_networks() == []

    @pytest.mark.parametrize(
        ("cond", "expected"),
        [
            ({"operation": "==", "field": "name", "value": "百日咳"}, ["百日咳"]),
            (
                {"operation": "!=", "field": "get_way", "value": "无传染性"},
                ["100%_special", "百日咳", "流行性感冒"],
            ),
            ({"operation": "in", "field": "name", "value": ["骨折", "糖尿病", "不存在"]}, ["糖尿病", "骨折"]),
            ({"operation": "in", "field": "name", "value": []}, []),
            ({"operation": "contain", "field": "name", "value": "感"}, ["流行性感冒"]),
            ({"operation": "contain", "field": "cure_way", "value": "手术治疗"}, ["上、下气道梗阻", "骨折"]),
            ({"operation": "contain", "field": "cure_way", "value": ["药物治疗", "饮食治疗"]}, ["糖尿病"]),
            ({"operation": "contain", "field": "cure_way", "value": "手术"}, []),  # membership, not substring
            ({"operation": "like", "field": "name", "value": "%咳"}, ["百日咳"]),
            ({"operation": "prefix", "field": "name", "value": "流行"}, ["流行性感冒"]),
            ({"operation": "prefix", "field": "name", "value": "100%"}, ["100%_special"]),
            ({"operation": "prefix", "field": "name", "value": "1%"}, []),  # % is literal in prefix
            ({"operation": "regex", "field": "name", "value": "^[百骨]"}, ["百日咳", "骨折"]),
            (
                {"operation": "exist", "field": "get_way"},
                ["上、下气道梗阻", "百日咳", "流行性感冒", "糖尿病", "骨折"],
            ),
            ({"operation": "exist", "field": "get_way", "value": False}, ["100%_special"]),
            (
                {"operation": "range", "field": "cost", "value": [300, 5000]},
                ["上、下气道梗阻", "百日咳", "流行性感冒"],
            ),
            ({"operation": "range", "field": "cost", "value": [8000, None]}, ["糖尿病", "骨折"]),
            ({"operation": ">", "field": "cost", "value": 5000}, ["糖尿病", "骨折"]),
            ({"operation": ">=", "field": "cost", "value": "5000"}, ["上、下气道梗阻", "糖尿病", "骨折"]),
            ({"operation": "<", "field": "cost", "value": 300}, ["100%_special"]),
            ({"operation": "<=", "field": "cost", "value": 300}, ["100%_special", "流行性感冒"]),
            ({"operation": "==", "field": "insured", "value": True}, ["上、下气道梗阻", "流行性感冒", "糖尿病"]),
            ({"operation": "==", "field": "id", "value": "Disease:骨折"}, ["骨折"]),
            (
                {
                    "operation": "and",
                    "sub_conditions": [
                        {"operation": "contain", "field": "cure_way", "value": "药物治疗"},
                        {
                            "operation": "or",
                            "sub_conditions": [
                                {"operation": ">", "field": "cost", "value": 5000},
                                {"operation": "==", "field": "name", "value": "百日咳"},
                            ],
                        },
                    ],
                },
                ["百日咳", "糖尿病"],
            ),
            (
                {
                    "operation": "or",
                    "sub_conditions": [
                        {"operation": "==", "field": "name", "value": "骨折"},
                        {
                            "operation": "and",
                            "sub_conditions": [
                                {"operation": "==", "field": "get_way", "value": "呼吸道传播"},
                                {"operation": "<", "field": "cost", "value": 1000},
                            ],
                        },
                    ],
                },
                ["流行性感冒", "骨折"],
            ),
            (
                {"operation": "and", "sub_conditions": []},
                ["100%_special", "上、下气道梗阻", "流行性感冒", "百日咳", "糖尿病", "骨折"],
            ),
            ({"operation": "or", "sub_conditions": []}, []),
        ],
    )
    def test_condition_operations(self, store: NetworkStore, cond: dict, expected: list[str]) -> None:
        assert sorted(ids(store, cond)) == sorted(expected)

    @pytest.mark.parametrize(
        "value",
        [
            "'; DROP TABLE kn_instances; --",
            '" OR 1=1 --',
            "百日咳' OR '1'='1",
            'x"); DELETE FROM kn_links; --',
            "$.name",
            "%",
            "_",
        ],
    )
    def test_injection_attempts_match_nothing(self, store: NetworkStore, value: str) -> None:
        for op in ("==", "contain", "prefix", "like"):
            got = ids(store, {"operation": op, "field": "name", "value": value})
            assert (
                got == []
                or (op in ("contain", "like") and value in ("%", "_"))
                or (op == "contain" and value == "%" and got == ["100%_special"])
            ), (op, value, got)
        # match/knn take the value as a query: nothing breaks and the tables are intact
        store.query_instances("tiny", "Disease", Condition(operation="match", field="name", value=value), 5)
        store.query_instances("tiny", "Disease", Condition(operation="knn", field="name", value=value), 5)
        assert store.count_instances("tiny") == 16 and store.count_links("tiny") == 8

    def test_match_on_chinese_text_via_jieba(self, store: NetworkStore) -> None:
        hits = store.query_instances(
            "tiny", "Disease", Condition(operation="match", field="name", value="上气道梗阻"), 5
        )
        assert hits[0].id == "Disease:上、下气道梗阻"
        assert 0 < hits[0].score <= 1
        desc = store.query_instances(
            "tiny", "Disease", Condition(operation="match", field="desc", value="急性呼吸道传染病"), 5
        )
        assert desc[0].id == "Disease:百日咳"
        assert all(0 < h.score <= 1 for h in desc)
        assert [h.score for h in desc] == sorted((h.score for h in desc), reverse=True)
        # '*' searches every match field
        star = store.query_instances(
            "tiny", "Disease", Condition(operation="match", field="*", value="高血糖"), 5
        )
        assert [h.id for h in star] == ["Disease:糖尿病"]

    def test_knn_ranks_closest_name_first(self, store: NetworkStore) -> None:
        hits = store.query_instances(
            "tiny", "Drug", Condition(operation="knn", field="name", value="insulin shot"), 3
        )
        assert hits[0].id == "Drug:Insulin injection"
        assert all(0 <= h.score <= 1 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        one = store.query_instances(
            "tiny", "Drug", Condition(operation="knn", field="name", value="Aspirin", limit=1), 10
        )
        assert [h.id for h in one] == ["Drug:Aspirin"] and one[0].score == pytest.approx(1.0, abs=1e-5)
        antibiotic = store.query_instances(
            "tiny", "Drug", Condition(operation="knn", field="name", value="antibiotic amoxicillin"), 1
        )
        assert antibiotic[0].id == "Drug:Amoxicillin capsules"

    def test_knn_skips_text_the_embedder_cannot_represent(self, store: NetworkStore) -> None:
        # the default MiniLM maps most Chinese characters to [UNK]: such names get no vector, such queries no knn
        assert store.representable(["感冒", "Aspirin", "SARS"]) == [False, True, True]
        assert (
            store.query_instances("tiny", "Drug", Condition(operation="knn", field="name", value="二甲双胍片"), 3)
            == []
        )
        # ... while match still finds them
        hits = store.query_instances(
            "tiny", "Drug", Condition(operation="match", field="name", value="二甲双胍片"), 3
        )
        assert hits and hits[0].id == "Drug:二甲双胍"

    def test_scored_or_unions_and_and_intersects(self, store: NetworkStore) -> None:
        either = Condition.model_validate(
            {
                "operation": "or",
                "sub_conditions": [
                    {"operation": "match", "field": "name", "value": "百日咳"},
                    {"operation": "match", "field": "desc", "value": "高血糖"},
                    {"operation": "==", "field": "name", "value": "骨折"},
                ],
            }
        )
        hits = store.query_instances("tiny", "Disease", either, 10)
        assert {h.id for h in hits} == {"Disease:百日咳", "Disease:糖尿病", "Disease:骨折"}
        assert hits[-1].id == "Disease:骨折" and hits[-1].score is None  # unscored branch last
        both = Condition.model_validate(
            {
                "operation": "and",
                "sub_conditions": [
                    {"operation": "match", "field": "desc", "value": "呼吸 骨 高血糖"},
                    {"operation": "contain", "field": "cure_way", "value": "手术治疗"},
                ],
            }
        )
        got = store.query_instances("tiny", "Disease", both, 10)
        assert {h.id for h in got} == {"Disease:上、下气道梗阻", "Disease:骨折"}
        assert all(h.score is not None for h in got)
        nothing = Condition.model_validate(
            {
                "operation": "and",
                "sub_conditions": [
                    {"operation": "match", "field": "name", "value": "百日咳"},
                    {"operation": "match", "field": "desc", "value": "高血糖"},
                ],
            }
        )
        assert store.query_instances("tiny", "Disease", nothing, 10) == []

    @pytest.mark.parametrize("limit", [10, 3, 2])
    def test_scored_limit_keeps_the_best_scored_and_the_same_unscored(self, store: NetworkStore, limit: int) -> None:
        either = Condition.model_validate({"operation": "or", "sub_conditions": [
            {"operation": "match", "field": "name", "value": "百日咳 糖尿病"},
            {"operation": "==", "field": "name", "value": "骨折"},
            {"operation": "==", "field": "name", "value": "流行性感冒"}]})
        whole = store.query_instances("tiny", "Disease", either, limit)
        scored = [h for h in whole if h.score is not None]
        assert len(scored) == 2 and len(whole) == min(limit, 4)
        for kept in (0, 1, 2, 50):
            got = store.query_instances("tiny", "Disease", either, limit, scored_limit=kept)
            assert got == scored[:kept] + [h for h in whole if h.score is None], kept

    @pytest.mark.parametrize(
        ("cond", "message"),
        [
            ({"operation": "==", "field": "colour", "value": "x"}, "unknown field 'colour'"),
            ({"operation": "match", "field": "nope", "value": "x"}, "unknown field 'nope'"),
            ({"operation": "knn", "field": "desc", "value": "x"}, "does not support 'knn'"),
            ({"operation": "match", "field": "cost", "value": "x"}, "does not support 'match'"),
            ({"operation": ">", "field": "cost", "value": "abc"}, "numeric"),
            ({"operation": "regex", "field": "name", "value": "("}, "invalid regex"),
            ({"operation": "in", "field": "name", "value": "x"}, "needs a list"),
            ({"operation": "range", "field": "cost", "value": [1]}, "low, high"),
            ({"operation": "==", "field": "cure_way", "value": "x"}, "list field 'cure_way'"),
            ({"operation": "==", "field": "*", "value": "x"}, "only works with match or knn"),
            (
                {
                    "operation": "or",
                    "sub_conditions": [{"operation": "prefix", "field": "bad_field", "value": "x"}],
                },
                "unknown field 'bad_field'",
            ),
        ],
    )
    def test_unknown_field_or_operation_raises(self, store: NetworkStore, cond: dict, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            store.query_instances("tiny", "Disease", Condition.model_validate(cond), 5)

    def test_unknown_operation_and_type(self, store: NetworkStore) -> None:
        from pydantic import ValidationError

        with pytest.raises(ValidationError):
            Condition.model_validate({"operation": "sounds_like", "field": "name", "value": "x"})
        bad = Condition.model_construct(
            operation="sounds_like", field="name", value="x", sub_conditions=[], limit=None
        )
        with pytest.raises(ValueError, match="unknown operation 'sounds_like'"):
            store.query_instances("tiny", "Disease", bad, 5)
        with pytest.raises(ValueError, match="unknown object type 'Planet'"):
            store.query_instances("tiny", "Planet", None, 5)

    def test_type_search_returns_relevant_types_first(self, store: NetworkStore) -> None:
        objects = store.search_object_types("tiny", "药物", 3)
        assert objects[0][0] == "Drug"
        assert [s for _, s in objects] == sorted((s for _, s in objects), reverse=True)
        assert all(0 <= s <= 1 for _, s in objects)
        relations = store.search_relation_types("tiny", "感冒有哪些症状", 2)
        assert relations[0][0] == "has_symptom"
        assert store.search_relation_types("tiny", "常用药", 1)[0][0] == "common_drug"
        assert len(store.search_object_types("tiny", "疾病", 1)) == 1

    def test_sample_instance_and_unscored_queries(self, store: NetworkStore) -> None:
        assert store.sample_instance("tiny", "Symptom") == {"name": "发热"} or store.sample_instance(
            "tiny", "Symptom"
        )["name"] in {"咳嗽", "发热", "呼吸困难", "多饮多尿"}
        assert len(store.query_instances("tiny", "Symptom", None, 2)) == 2
        assert store.query_instances("tiny", "Symptom", None, 0) == []
        assert all(h.score is None for h in store.query_instances("tiny", "Disease", None, 10))
        assert store.get_instances("tiny", "Drug", ["Drug:二甲双胍", "Drug:nope"])[0].properties == {
            "name": "二甲双胍"
        }

    def test_ordered_instances_sort_numbers_as_numbers_and_count(self, store: NetworkStore) -> None:
        """ORDER BY a property's typed value (20000 after 8000, not before 300 as text), either way, with a condition
        (a scored one too); instances without the value last; ``count_matching`` counts in SQL."""
        def order(field: str, descending: bool, cond: dict | None = None, limit: int = 10) -> list[str]:
            condition = Condition.model_validate(cond) if cond is not None else None
            hits = store.ordered_instances("tiny", "Disease", condition, field, descending, limit)
            return [h.id.split(":", 1)[1] for h in hits]

        assert order("cost", False) == ["100%_special", "流行性感冒", "百日咳", "上、下气道梗阻", "糖尿病", "骨折"]
        assert order("cost", True, limit=2) == ["骨折", "糖尿病"]
        assert order("cost", True, {"operation": "<", "field": "cost", "value": 5000}) == [
            "百日咳", "流行性感冒", "100%_special"]
        assert order("cost", False, {"operation": "match", "field": "desc", "value": "呼吸道"}, 1) == ["流行性感冒"]
        # get_way is missing on one instance: it sorts last whichever way
        assert order("get_way", False)[-1] == "100%_special" and order("get_way", True)[-1] == "100%_special"
        assert store.count_matching("tiny", "Disease", None) == 6
        assert store.count_matching("tiny", "Disease", Condition(operation=">", field="cost", value=1000)) == 4
        assert store.count_matching("tiny", "Disease", Condition(operation="contain", field="cure_way",
                                                                 value="药物治疗")) == 3
        for field, says in (("nope", "unknown property 'nope'"), ("cure_way", "has no order"),
                            ("insured", "has no order")):
            with pytest.raises(ValueError, match=says):
                store.ordered_instances("tiny", "Disease", None, field, False, 3)
        with pytest.raises(ValueError, match="unknown field"):
            store.count_matching("tiny", "Disease", Condition(operation="==", field="nope", value=1))

    def test_query_path_both_directions(self, store: NetworkStore) -> None:
        cough = Condition(operation="==", field="name", value="咳嗽")
        paths = store.query_path("tiny", "Symptom", cough, "has_symptom", "Disease", None)
        assert {p.source.id for p in paths} == {"Disease:百日咳", "Disease:流行性感冒"}
        assert all(p.target.id == "Symptom:咳嗽" for p in paths)
        flu = Condition(operation="match", field="name", value="流行性感冒")
        forward = store.query_path(
            "tiny", "Disease", flu, "common_drug", "Drug", Condition(operation="prefix", field="name", value="奥")
        )
        assert [(p.source.id, p.target.id) for p in forward] == [("Disease:流行性感冒", "Drug:奥司他韦")]
        with pytest.raises(ValueError, match="not 'Drug' and 'Symptom'"):
            store.query_path("tiny", "Drug", None, "has_symptom", "Symptom", None)

    def test_knn_top_k_equals_a_full_sort(self, store: NetworkStore) -> None:
        """The partial selection returns exactly the first items of the full ranking, scores included."""
        full = store.knn_scores("tiny", "instance", "Drug", ["name"], "cough syrup medicine", 1000)
        for k in (1, 2, 3, 5):
            assert list(store.knn_scores("tiny", "instance", "Drug", ["name"], "cough syrup medicine", k).items()) == \
                list(full.items())[:k]

    def test_concurrent_loads_of_two_networks_while_searching(self, empty_db_url: str, kn_embedder: Embedder) -> None:
        """Two loads of different networks at the same time (separate stores, as two workers would be) while kn_search
        and match queries run on both: no query errors, every answer equals the one before (readers see the old or
        the new version, never a half-written one), and both networks end with the counts of a sequential load."""
        import threading
        import time

        from kgrag.search import KnSearchRequest, kn_search

        nets = {"wa": wide_network("wa", 2000), "wb": wide_network("wb", 1500)}
        first = NetworkStore(empty_db_url, embedder=kn_embedder)
        sequential = {kn: first.load(*net) for kn, net in nets.items()}
        counts = {kn: (first.count_instances(kn), first.count_links(kn)) for kn in nets}
        versions = {kn: first.network_version(kn) for kn in nets}
        queries = [("wa", "alpha beta part 7"), ("wb", "gamma1 delta2"), ("wa", "omega tagged"), ("wb", "kappa part")]

        def answer(store: NetworkStore, kn: str, q: str) -> tuple:
            resp = kn_search(KnSearchRequest(query=q, kn_id=kn), store, reranker=None)
            match = store.query_instances(kn, "Item", Condition(operation="match", field="*", value=q), 10)
            nodes = [(n.object_type_id, n.instance_name, n.score) for n in resp.nodes]
            return nodes, [o.concept_id for o in resp.object_types], [(h.id, h.score) for h in match]

        reader = NetworkStore(empty_db_url, embedder=kn_embedder)
        expected = {(kn, q): answer(reader, kn, q) for kn, q in queries}
        assert all(e[0] and e[2] for e in expected.values())
        loaders = [NetworkStore(empty_db_url, embedder=kn_embedder) for _ in nets]
        errors: list[BaseException] = []
        mismatches: list[tuple] = []
        done = threading.Event()
        answered = [0]
        windows: dict[str, tuple[float, float]] = {}
        stats: dict[str, object] = {}

        def load(store: NetworkStore, kn: str) -> None:
            start = time.perf_counter()
            try:
                stats[kn] = store.load(*nets[kn])
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors.append(exc)
            windows[kn] = (start, time.perf_counter())

        def search() -> None:
            while not done.is_set():
                for kn, q in queries:
                    try:
                        got = answer(reader, kn, q)
                    except BaseException as exc:  # noqa: BLE001
                        errors.append(exc)
                        return
                    answered[0] += 1
                    if got != expected[(kn, q)]:
                        mismatches.append((kn, q, got))

        threads = [threading.Thread(target=load, args=(s, kn)) for s, kn in zip(loaders, nets, strict=True)]
        searcher = threading.Thread(target=search)
        searcher.start()
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=300)
        done.set()
        searcher.join(timeout=120)
        assert not errors, errors
        assert not mismatches, mismatches[:3]
        assert answered[0] >= len(queries)
        (a0, a1), (b0, b1) = windows["wa"], windows["wb"]
        assert a0 < b1 and b0 < a1  # the loads ran at the same time
        time.sleep(reader.SCHEMA_RECHECK_SECONDS + 0.1)  # the reader trusts its cached versions that long
        for kn in nets:
            assert reader.network_version(kn) != versions[kn]  # both loads committed
            assert (reader.count_instances(kn), reader.count_links(kn)) == counts[kn]
            got, want = stats[kn], sequential[kn]
            assert (got.instances, got.links, got.text_rows, got.vectors) == (
                want.instances, want.links, want.text_rows, want.vectors)
        assert {kn: answer(reader, kn, q) for kn, q in queries} == {kn: expected[(kn, q)] for kn, q in queries}
        for s in (first, reader, *loaders):
            s.close()

    # ------------------------------------------------------------------ the contract's edges (edge_network)
    def test_every_read_of_an_unknown_network_says_so(self, edge_store: NetworkStore) -> None:
        s = edge_store
        reads: dict[str, Callable[[], Any]] = {
            "get_network": lambda: s.get_network("nope"),
            "network_version": lambda: s.network_version("nope"),
            "network_stats": lambda: s.network_stats("nope"),
            "query_instances": lambda: s.query_instances("nope", "Item", None, 5),
            "get_instances": lambda: s.get_instances("nope", "Item", ["a'b"]),
            "instance_names": lambda: s.instance_names("nope"),
            "sample_instance": lambda: s.sample_instance("nope", "Item"),
            "count_matching": lambda: s.count_matching("nope", "Item", None),
            "ordered_instances": lambda: s.ordered_instances("nope", "Item", None, "size", False, 3),
            "link_cardinality": lambda: s.link_cardinality("nope", "next"),
            "search_object_types": lambda: s.search_object_types("nope", "item", 3),
            "query_path": lambda: s.query_path("nope", "Item", None, "next", "Item", None),
        }
        for name, read in reads.items():
            with pytest.raises(NetworkNotFound):
                read()
                pytest.fail(f"{name} of an unknown network did not raise")
        assert (s.count_instances("nope"), s.count_links("nope")) == (0, 0)
        assert s.linked_ids("nope", "next", ["a'b"], True) == []
        assert s.match_scores("nope", "instance", "Item", ["name"], "apple", 3) == {}
        assert s.delete("nope") is False
        with pytest.raises(ValueError, match="unknown object type 'Nope' in network 'edge'"):
            s.query_instances("edge", "Nope", None, 5)
        assert s.count_instances("edge", "Nope") == 0 and s.linked_ids("edge", "nope", ["a'b"], True) == []

    def test_properties_round_trip_with_their_json_types(self, edge_store: NetworkStore) -> None:
        _, instances, _ = edge_network()
        got = edge_store.get_instances("edge", "Item", [i.id for i in instances])
        assert [h.id for h in got] == [i.id for i in instances]
        for hit, inst in zip(got, instances, strict=True):
            assert hit.properties == inst.properties, inst.id
            assert {k: type(v) for k, v in hit.properties.items()} == {k: type(v) for k, v in inst.properties.items()}
        assert got[2].properties["count"] == 2**53 + 1  # exact, not through a double
        assert edge_store.get_instances("edge", "Item", []) == []
        assert edge_store.get_instances("edge", "Item", ["nope", "ünï"])[0].id == "ünï"

    def test_awkward_ids_work_in_every_read(self, edge_store: NetworkStore) -> None:
        s = edge_store
        forward = s.linked_ids("edge", "next", ["a'b", "ünï", "nope"], True)
        assert sorted(forward) == [("a'b", 'q"uote'), ("ünï", "100%")]
        backward = s.linked_ids("edge", "next", ['q"uote', "id with space"], False)
        assert sorted(backward) == [("id with space", "apple"), ('q"uote', "a'b")]
        assert s.linked_ids("edge", "next", [], True) == []
        assert s.link_cardinality("edge", "next") == (1, 1, len(EDGE_ITEMS) - 1)
        assert sorted(s.instance_names("edge")) == sorted(("Item", i, n) for i, n, *_ in EDGE_ITEMS)
        for iid, *_ in EDGE_ITEMS:
            assert _edge_ids(s, "id", "==", iid) == [iid]
        paths = s.query_path("edge", "Item", Condition(operation="==", field="id", value="100%"), "next", "Item",
                             None)
        assert [(p.source.id, p.target.id) for p in paths] == [("100%", "Apple")]
        assert s.count_instances("edge") == len(EDGE_ITEMS) and s.count_links("edge") == len(EDGE_ITEMS) - 1

    @pytest.mark.parametrize(("operation", "value", "expected"), [
        ("==", "apple", ["Apple"]),  # exact: the item named "apple" (its id is "Apple"), not "APPLE"
        ("==", "Apple", []),
        ("==", "  spaced  ", ["id with space"]),  # surrounding spaces kept
        ("==", "spaced", []),
        ("!=", "apple", ["100%", "a'b", "apple", "id with space", 'q"uote', "ünï"]),
        ("in", ["apple", "O'Brien"], ["Apple", "a'b"]),
        ("prefix", "app", ["Apple", "apple"]),  # ASCII case folded
        ("prefix", "App", ["Apple", "apple"]),
        ("prefix", "Ünï", ["ünï"]),
        ("prefix", "ünï", []),  # only ASCII letters fold
        ("like", "app%", ["Apple", "apple"]),
        ("like", "_pple", ["Apple", "apple"]),
        ("contain", "PPL", ["Apple", "apple"]),
        ("contain", "😀", ["ünï"]),
        ("contain", '"hi"\\', ['q"uote']),
        ("contain", "_", ["100%"]),  # literal underscore in contain
        ("regex", "^a", ["Apple"]),  # case-sensitive
        ("regex", "\\n", ['q"uote']),
    ])
    def test_text_operations_on_awkward_values(self, edge_store: NetworkStore, operation: str, value: Any,
                                               expected: list[str]) -> None:
        assert _edge_ids(edge_store, "name", operation, value) == expected

    @pytest.mark.parametrize(("field", "operation", "value", "expected"), [
        ("size", ">", 1.5, ["Apple", "apple", "ünï"]),
        ("size", ">=", "1.5", ["Apple", "a'b", "apple", "ünï"]),
        ("size", "<", 0, ['q"uote']),
        ("size", "<=", 0, ["100%", 'q"uote']),
        ("size", "range", [0, 2], ["100%", "a'b", "apple"]),
        ("size", "range", [None, -1], ['q"uote']),
        ("size", "==", 1.5, ["a'b"]),
        ("size", ">", 1e9, ["ünï"]),
        ("count", "<", -1, ['q"uote']),
        ("count", ">", 9, ["Apple", "ünï"]),
        ("count", "range", [0, 9], ["100%", "a'b", "apple"]),
        ("tags", "contain", "%", ["100%"]),
        ("tags", "contain", "中", ["ünï"]),
        ("ok", "==", False, ["100%", 'q"uote']),
        ("ok", "==", "true", ["Apple", "a'b", "ünï"]),
    ])
    def test_typed_operations_compare_values_as_their_type(self, edge_store: NetworkStore, field: str,
                                                           operation: str, value: Any, expected: list[str]) -> None:
        assert _edge_ids(edge_store, field, operation, value) == expected

    def test_strings_sort_by_code_point_and_numbers_as_numbers(self, edge_store: NetworkStore) -> None:
        def order(field: str, descending: bool) -> list[str]:
            return [h.id for h in edge_store.ordered_instances("edge", "Item", None, field, descending, 50)]

        by_name = [iid for _, iid in sorted((name, iid) for iid, name, *_ in EDGE_ITEMS)]
        assert order("name", False) == by_name and order("name", True) == by_name[::-1]
        by_size = [iid for _, iid in sorted((size, iid) for iid, _, size, *_ in EDGE_ITEMS if size is not None)]
        assert order("size", False) == [*by_size, "id with space"]  # the item without a size last, either way
        assert order("size", True) == [*by_size[::-1], "id with space"]
        assert order("count", False)[:2] == ['q"uote', "100%"] and order("count", True)[0] == "ünï"

    def test_empty_inputs_give_empty_results(self, edge_store: NetworkStore, empty_db_url: str,
                                             kn_embedder: Embedder) -> None:
        assert edge_store.query_instances("edge", "Item", None, 0) == []
        assert edge_store.query_instances("edge", "Item", Condition(operation="in", field="name", value=[]), 5) == []
        assert edge_store.query_instances_by_type("edge", {}, 5) == {}
        empty = NetworkStore(empty_db_url, embedder=kn_embedder)
        assert empty.list_networks() == []
        network, _, _ = edge_network("hollow")
        stats = empty.load(network, [], [])
        assert (stats.instances, stats.links) == (0, 0)
        assert empty.list_networks() == [("hollow", "edge cases")]
        assert empty.query_instances("hollow", "Item", None, 5) == []
        assert empty.ordered_instances("hollow", "Item", None, "size", False, 5) == []
        assert empty.sample_instance("hollow", "Item") is None
        assert empty.count_matching("hollow", "Item", None) == 0
        assert empty.query_instances("hollow", "Item", Condition(operation="match", field="name", value="x"), 5) == []
        assert empty.link_cardinality("hollow", "next") == (0, 0, 0)
        empty.close()

    def test_a_failed_change_leaves_the_previous_version(self, empty_db_url: str, kn_embedder: Embedder,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
        """``apply_changes`` writes in one transaction: a failure after its deletes and before its inserts (here
        injected into the store's own insert step) rolls every write back."""
        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        s.load(*edge_network())
        version = s.network_version("edge")
        before = s.get_instances("edge", "Item", [i for i, *_ in EDGE_ITEMS])
        changes = NetworkChanges(
            upsert_instances=[Instance(object_type_id="Item", id="new'one", properties={"name": "新的"}),
                              Instance(object_type_id="Item", id="a'b", properties={"name": "changed"})],
            delete_instances=[("Item", "100%")])
        original = StoreChanges._insert_rows

        def failing(changes_part: StoreChanges, conn: Any, plan: Any) -> None:
            original(changes_part, conn, plan)
            raise RuntimeError("injected failure")

        monkeypatch.setattr(StoreChanges, "_insert_rows", failing)
        with pytest.raises(RuntimeError, match="injected"):
            s.apply_changes("edge", changes)
        monkeypatch.undo()
        assert s.network_version("edge") == version
        assert s.get_instances("edge", "Item", [i for i, *_ in EDGE_ITEMS]) == before
        assert s.get_instances("edge", "Item", ["new'one"]) == []
        assert _edge_ids(s, "name", "==", "changed") == [] and s.count_links("edge") == len(EDGE_ITEMS) - 1
        stats = s.apply_changes("edge", changes)  # the same change, unhindered, applies whole
        assert (stats.instances_inserted, stats.instances_updated, stats.instances_deleted) == (1, 1, 1)
        assert s.network_version("edge") != version and _edge_ids(s, "name", "==", "changed") == ["a'b"]
        s.close()

    def test_delete_removes_one_network_only(self, empty_db_url: str, kn_embedder: Embedder) -> None:
        s = NetworkStore(empty_db_url, embedder=kn_embedder)
        s.load(*edge_network("one"))
        s.load(*edge_network("two"))
        assert s.delete("one") is True and s.delete("one") is False
        with pytest.raises(NetworkNotFound):
            s.get_network("one")
        assert (s.count_instances("one"), s.count_links("one")) == (0, 0)
        assert s.list_networks() == [("two", "edge cases")] and s.count_instances("two") == len(EDGE_ITEMS)
        assert [h.id for h in s.query_instances("two", "Item", Condition(operation="match", field="name",
                                                                             value="percent_under"), 3)][:1] == ["100%"]
        s.load(*edge_network("one"))  # loaded again after a delete: whole
        assert s.count_instances("one") == len(EDGE_ITEMS) and s.count_links("one") == len(EDGE_ITEMS) - 1
        s.close()
