"""kgrag.network.store + conditions: load (idempotent, transactional), every condition operation, scoring,
type search, relation paths, errors — on SQLite and on PostgreSQL (``db_url``/``module_db_url``, a throwaway
cluster: tests/fixtures/postgres.py) with the same expected results."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

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
from kgrag.network.service import ContextStore, OntologyService
from kgrag.network.store import NetworkStore, fts_query
from kgrag.network.store.load import StoreLoader
from kgrag.rank.sentence_embedder import Embedder

NAME_OPS = ["knn", "match", "==", "prefix", "contain"]


@pytest.fixture(scope="session")
def kn_embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """One embedder for the network tests, caching to a session folder."""
    return Embedder(cache_dir=tmp_path_factory.getbasetemp() / "kn-embeddings")


def tiny_network(kn_id: str = "tiny") -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
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


@pytest.fixture(scope="module")
def store(module_db_url: str, kn_embedder: Embedder) -> Iterator[NetworkStore]:
    s = NetworkStore(module_db_url, embedder=kn_embedder)
    s.load(*tiny_network())
    yield s
    s.close()


def ids(store: NetworkStore, cond: dict | None, object_type: str = "Disease", limit: int = 20) -> list[str]:
    condition = Condition.model_validate(cond) if cond is not None else None
    return [h.id.split(":", 1)[1] for h in store.query_instances("tiny", object_type, condition, limit)]


def test_implements_the_protocol(store: NetworkStore) -> None:
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


@pytest.mark.parametrize("query", ["咳嗽", "呼吸道 感染", "糖尿病", "Aspirin", "无此词"])
def test_batched_reads_equal_one_type_at_a_time(store: NetworkStore, query: str) -> None:
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


def test_load_twice_gives_same_counts(db_url: str, kn_embedder: Embedder) -> None:
    s = NetworkStore(db_url, embedder=kn_embedder)
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
    db_url: str, kn_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``contain`` on a list field reads the store's per-version item index (and scans past MAX_MEMBER_IDS
    holders); ``in`` / ``contain`` on the display key read the ``name`` column yet never match an instance that
    lacks the property (its ``name`` is then its id)."""
    from kgrag.network.schema import conditions

    s = NetworkStore(db_url, embedder=kn_embedder)
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
    db_url: str, kn_embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = NetworkStore(db_url, embedder=kn_embedder)
    s.load(*tiny_network())
    version = s.network_stats("tiny")["version"]
    network, instances, links = tiny_network()
    instances = [*instances, Instance(object_type_id="Drug", id="Drug:new", properties={"name": "新药"})]
    original = StoreLoader._insert

    def failing(self, conn, name, rows):  # noqa: ANN001
        original(self, conn, name, rows)
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


def test_load_rejects_inconsistent_data(db_url: str, kn_embedder: Embedder) -> None:
    s = NetworkStore(db_url, embedder=kn_embedder)
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
def test_condition_operations(store: NetworkStore, cond: dict, expected: list[str]) -> None:
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
def test_injection_attempts_match_nothing(store: NetworkStore, value: str) -> None:
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


def test_fts_query_quotes_tokens() -> None:
    assert fts_query(['a"b', "OR", "NEAR"]) == '"a""b" OR "OR" OR "NEAR"'


def test_match_on_chinese_text_via_jieba(store: NetworkStore) -> None:
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


def test_knn_ranks_closest_name_first(store: NetworkStore) -> None:
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


def test_knn_skips_text_the_embedder_cannot_represent(store: NetworkStore) -> None:
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


def test_scored_or_unions_and_and_intersects(store: NetworkStore) -> None:
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
def test_unknown_field_or_operation_raises(store: NetworkStore, cond: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        store.query_instances("tiny", "Disease", Condition.model_validate(cond), 5)


def test_unknown_operation_and_type(store: NetworkStore) -> None:
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


def test_type_search_returns_relevant_types_first(store: NetworkStore) -> None:
    objects = store.search_object_types("tiny", "药物", 3)
    assert objects[0][0] == "Drug"
    assert [s for _, s in objects] == sorted((s for _, s in objects), reverse=True)
    assert all(0 <= s <= 1 for _, s in objects)
    relations = store.search_relation_types("tiny", "感冒有哪些症状", 2)
    assert relations[0][0] == "has_symptom"
    assert store.search_relation_types("tiny", "常用药", 1)[0][0] == "common_drug"
    assert len(store.search_object_types("tiny", "疾病", 1)) == 1


def test_sample_instance_and_unscored_queries(store: NetworkStore) -> None:
    assert store.sample_instance("tiny", "Symptom") == {"name": "发热"} or store.sample_instance(
        "tiny", "Symptom"
    )["name"] in {"咳嗽", "发热", "呼吸困难", "多饮多尿"}
    assert len(store.query_instances("tiny", "Symptom", None, 2)) == 2
    assert store.query_instances("tiny", "Symptom", None, 0) == []
    assert all(h.score is None for h in store.query_instances("tiny", "Disease", None, 10))
    assert store.get_instances("tiny", "Drug", ["Drug:二甲双胍", "Drug:nope"])[0].properties == {
        "name": "二甲双胍"
    }


def test_ordered_instances_sort_numbers_as_numbers_and_count(store: NetworkStore) -> None:
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


def test_query_path_both_directions(store: NetworkStore) -> None:
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


def test_match_leaf_asks_for_the_query_limit_in_an_or_and_more_under_an_and(store: NetworkStore) -> None:
    """In an OR (or alone) the best ``limit`` rows come from each scored branch's best ``limit``; under an AND
    a filter may reject the best candidates, so the pool is ``match_limit``."""
    from kgrag.network.schema.conditions import compile_condition

    asked: list[tuple[str, int]] = []

    def scorer(kind: str):
        def score(type_id: str, fields: list[str], query: str, limit: int) -> dict[str, float]:
            asked.append((kind, limit))
            return {}
        return score

    ot = store.get_network("tiny").object_types[0]
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


def test_knn_top_k_equals_a_full_sort(store: NetworkStore) -> None:
    """The partial selection returns exactly the first items of the full ranking, scores included."""
    full = store.knn_scores("tiny", "instance", "Drug", ["name"], "cough syrup medicine", 1000)
    for k in (1, 2, 3, 5):
        assert list(store.knn_scores("tiny", "instance", "Drug", ["name"], "cough syrup medicine", k).items()) == \
            list(full.items())[:k]


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


def test_concurrent_loads_of_two_networks_while_searching(db_url: str, kn_embedder: Embedder) -> None:
    """Two loads of different networks at the same time (separate stores, as two workers would be) while kn_search
    and match queries run on both: no query errors, every answer equals the one before (readers see the old or
    the new version, never a half-written one), and both networks end with the counts of a sequential load."""
    import threading
    import time

    from kgrag.search import KnSearchRequest, kn_search

    nets = {"wa": wide_network("wa", 2000), "wb": wide_network("wb", 1500)}
    first = NetworkStore(db_url, embedder=kn_embedder)
    sequential = {kn: first.load(*net) for kn, net in nets.items()}
    counts = {kn: (first.count_instances(kn), first.count_links(kn)) for kn in nets}
    versions = {kn: first.network_version(kn) for kn in nets}
    queries = [("wa", "alpha beta part 7"), ("wb", "gamma1 delta2"), ("wa", "omega tagged"), ("wb", "kappa part")]

    def answer(store: NetworkStore, kn: str, q: str) -> tuple:
        resp = kn_search(KnSearchRequest(query=q, kn_id=kn), store, reranker=None)
        match = store.query_instances(kn, "Item", Condition(operation="match", field="*", value=q), 10)
        nodes = [(n.object_type_id, n.instance_name, n.score) for n in resp.nodes]
        return nodes, [o.concept_id for o in resp.object_types], [(h.id, h.score) for h in match]

    reader = NetworkStore(db_url, embedder=kn_embedder)
    expected = {(kn, q): answer(reader, kn, q) for kn, q in queries}
    assert all(e[0] and e[2] for e in expected.values())
    loaders = [NetworkStore(db_url, embedder=kn_embedder) for _ in nets]
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
