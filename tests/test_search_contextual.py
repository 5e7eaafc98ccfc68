"""Contextual recall (spec contextual-recall.md): the spec's two scenarios end to end, each stage's output, the
session cache (counted SQL statements), the LLM path over the scripted server, the route and its 400s — on SQLite
and on PostgreSQL (``module_db_url``), same expected results."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from kgrag.api.app import create_app
from kgrag.config import get_settings
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore
from kgrag.search.context_models import AttributeCondition, ContextConfig
from kgrag.search.contextual import ContextSessions, contextual_recall, lexicon_for
from kgrag.search.formats import classify_values
from kgrag.search.keywords import extract_keywords
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.patterns import cardinality
from kgrag.search.pipeline import context_search, kn_search
from kgrag.search.storage_forms import similarity

NAME_OPS = ["knn", "match", "==", "prefix", "contain"]
CONTEXT_URL = "/api/agent-retrieval/in/v1/kn/context_search"
SEARCH_URL = "/api/agent-retrieval/in/v1/kn/kn_search"


def network() -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    """Diseases/symptoms as in the spec's §8.1, plus the person table of its §8.2 (age as a number, gender as
    male/female) and a drug -> producer relation (many drugs per producer)."""
    def named(type_id: str, *names: str) -> list[Instance]:
        return [Instance(object_type_id=type_id, id=f"{type_id}_{i:03d}", properties={"name": n})
                for i, n in enumerate(names)]

    net = KnowledgeNetwork(
        kn_id="ctx", name="contextual test network",
        object_types=[
            ObjectType(id="disease", name="疾病", comment="疾病实体", primary_keys=["disease_id"], data_properties=[
                DataProperty(name="name", type="string", comment="疾病名称", condition_operations=NAME_OPS),
                DataProperty(name="disease_id", type="string", comment="疾病编号", condition_operations=["=="])]),
            ObjectType(id="symptom", name="症状", comment="症状实体", data_properties=[
                DataProperty(name="name", type="string", comment="症状名称", condition_operations=NAME_OPS)]),
            ObjectType(id="drug", name="药品", comment="药品实体", data_properties=[
                DataProperty(name="name", type="string", comment="药品名称", condition_operations=NAME_OPS)]),
            ObjectType(id="producer", name="生产厂家", comment="药品生产企业", data_properties=[
                DataProperty(name="name", type="string", comment="厂家名称", condition_operations=NAME_OPS)]),
            ObjectType(id="person", name="人员", comment="患者信息", data_properties=[
                DataProperty(name="name", type="string", comment="姓名", condition_operations=NAME_OPS),
                DataProperty(name="age", type="integer", comment="年龄", condition_operations=[">", "<", "=="]),
                DataProperty(name="p_gender", type="string", comment="性别", condition_operations=["=="]),
                DataProperty(name="age_band", type="string", comment="年龄段", condition_operations=["=="])]),
        ],
        relation_types=[
            RelationType(id="has_symptom", name="症状", comment="疾病的症状", source_object_type_id="disease",
                         target_object_type_id="symptom"),
            RelationType(id="drug_producer", name="生产厂家", comment="药品的生产企业", source_object_type_id="drug",
                         target_object_type_id="producer"),
        ],
    )
    diseases = [Instance(object_type_id="disease", id=f"disease_{i:06d}", properties={"name": n, "disease_id": f"disease_{i:06d}"})
                for i, n in enumerate(["上、下气道梗阻", "上气道阻塞性疾病", "百日咳", "流行性感冒", "下气道感染"])]
    symptoms = named("symptom", "呼吸困难", "咳嗽", "喘鸣", "发热")
    drugs = named("drug", "布地奈德", "阿莫西林胶囊", "奥司他韦")
    producers = named("producer", "某某制药")
    people = [Instance(object_type_id="person", id=f"p{i}", properties={
        "name": f"患者{i}", "age": age, "p_gender": gender, "age_band": f"{age // 10 * 10}-{age // 10 * 10 + 9}岁"})
        for i, (age, gender) in enumerate([(25, "male"), (31, "female"), (45, "male"), (62, "female"), (38, "male")])]
    links = [
        Link(relation_type_id="has_symptom", source_id="disease_000000", target_id="symptom_000"),
        Link(relation_type_id="has_symptom", source_id="disease_000000", target_id="symptom_002"),
        Link(relation_type_id="has_symptom", source_id="disease_000002", target_id="symptom_001"),
        Link(relation_type_id="has_symptom", source_id="disease_000003", target_id="symptom_001"),
        Link(relation_type_id="has_symptom", source_id="disease_000003", target_id="symptom_003"),
        *(Link(relation_type_id="drug_producer", source_id=d.id, target_id="producer_000") for d in drugs),
    ]
    return net, [*diseases, *symptoms, *drugs, *producers, *people], links


@pytest.fixture(scope="module")
def store(module_db_url: str) -> Iterator[NetworkStore]:
    s = NetworkStore(module_db_url)
    s.load(*network())
    yield s
    s.close()


def recall(store: NetworkStore, query: str, **kwargs):
    return context_search(KnSearchRequest(query=query, kn_id="ctx", **kwargs), store, sessions=ContextSessions(),
                          use_llm=False)


# -- the spec's scenarios ----------------------------------------------------------------------------------------


def test_scenario_8_1_upper_airway_obstruction_symptoms(store: NetworkStore) -> None:
    response = recall(store, "上气道梗阻有哪些症状")
    ck = response.contextual_knowledge
    assert [e.text for e in ck.extraction.entities] == ["上气道梗阻"]
    assert [(w.text, w.relation_type_ids) for w in ck.extraction.relation_words] == [("症状", ["has_symptom"])]
    best = ck.keyword_mappings[0]
    assert best.object_type_id == "disease" and best.primary_field == "name"
    forms = {(f.form, f.match_type) for f in best.storage_forms}
    assert ("上、下气道梗阻", "fuzzy") in forms or ("上、下气道梗阻", "contains") in forms
    assert best.storage_forms[0].form == "上、下气道梗阻"  # the closest stored form first
    assert best.storage_forms[0].sample_instance_id == "disease_000000"
    pattern = next(p for p in ck.relation_patterns if p.relation_type_id == "has_symptom")
    assert pattern.source_field == "name" and pattern.target_field == "name"
    assert pattern.typical_source_values == ["上、下气道梗阻"]  # started from the keyword's stored form (场景2)
    assert set(pattern.typical_target_values) == {"呼吸困难", "喘鸣"}
    assert pattern.relation_pattern == "many_to_many" and pattern.link_count == 5
    primary = {p.object_type_id: p for p in ck.object_type_primary_fields}
    assert primary["disease"].primary_name_field == "name" and primary["disease"].primary_id_field == "disease_id"
    assert primary["disease"].field_samples["disease_id"][0].startswith("disease_")


def test_scenario_8_2_age_over_30_and_male(store: NetworkStore) -> None:
    ck = recall(store, "年龄大于30岁的男性").contextual_knowledge
    conditions = {c.text: c for c in ck.extraction.attribute_values}
    assert (conditions["年龄大于30岁"].attribute, conditions["年龄大于30岁"].operation,
            conditions["年龄大于30岁"].value, conditions["年龄大于30岁"].unit) == ("年龄", ">", 30, "岁")
    formats = {f.attribute: f for f in ck.attribute_formats}
    age = formats["age"]
    assert (age.object_type_id, age.storage_format, age.value_pattern, age.query_operation) == \
        ("person", "number", "integer", ">")
    assert age.query_value == 30 and not age.has_unit and 25 in age.value_samples  # 30, not "30岁"
    gender = formats["p_gender"]
    assert gender.storage_format == "string" and gender.query_value == "male"  # "male", not "男性"
    assert set(gender.value_samples) == {"male", "female"}


def test_drug_producer_is_many_to_one_and_walked_backwards_from_a_drug(store: NetworkStore) -> None:
    ck = recall(store, "布地奈德的生产厂家").contextual_knowledge
    assert ck.keyword_mappings[0].object_type_id == "drug"
    pattern = next(p for p in ck.relation_patterns if p.relation_type_id == "drug_producer")
    assert pattern.relation_pattern == "many_to_one"
    assert pattern.typical_source_values == ["布地奈德"] and pattern.typical_target_values == ["某某制药"]


def test_keyword_found_nowhere_has_confidence_zero_not_an_error(store: NetworkStore) -> None:
    response = recall(store, "量子纠缠")
    mapping = response.contextual_knowledge.keyword_mappings[0]
    assert (mapping.keyword, mapping.object_type_id, mapping.match_confidence) == ("量子纠缠", None, 0.0)
    assert response.contextual_knowledge.errors == []


def test_exact_hit_skips_the_other_strategies_unless_configured(store: NetworkStore) -> None:
    exact = recall(store, "百日咳").contextual_knowledge.keyword_mappings[0]
    assert [f.match_type for f in exact.storage_forms] == ["exact"]
    full = recall(store, "百日咳", context_config={"skip_when_exact": False}).contextual_knowledge
    assert full.keyword_mappings[0].storage_forms[0].match_type == "exact"


# -- stages ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("年龄大于30岁", ("年龄", ">", 30, "岁")),
    ("30岁以上", (None, ">=", 30, "岁")),
    ("30到40岁之间", (None, "range", [30, 40], "岁")),
    ("价格不超过20.5元", ("价格", "<=", 20.5, "元")),
    ("patients with age > 65", ("age", ">", 65, None)),
    ("older than 40", (None, ">", 40, None)),
])
def test_attribute_conditions_are_parsed(store: NetworkStore, text: str, expected: tuple) -> None:
    cond = extract_keywords(text, lexicon_for(store, "ctx")).attribute_values[0]
    assert (cond.attribute, cond.operation, cond.value, cond.unit) == expected


def test_stored_names_are_kept_whole_and_joined_names_split(store: NetworkStore) -> None:
    lexicon = lexicon_for(store, "ctx")
    assert [e.text for e in extract_keywords("呼吸困难咳嗽怎么办", lexicon).entities] == ["呼吸困难", "咳嗽"]
    entity = extract_keywords("流行性感冒吃什么药", lexicon).entities[0]
    assert (entity.text, entity.in_dictionary, entity.confidence) == ("流行性感冒", True, 0.9)
    # a stored name holding punctuation is not cut at its 、
    assert [e.text for e in extract_keywords("上、下气道梗阻有哪些症状", lexicon).entities] == ["上、下气道梗阻"]


@pytest.mark.parametrize(("values", "expected"), [
    ([30, 35, 40], ("number", "integer", None, False)),
    ([1.5, 2.0], ("number", "float", None, False)),
    (["30岁", "41岁", "52岁"], ("string", "string_with_unit", "岁", False)),
    (["30-40岁", "40-50岁"], ("range_string", "range", "岁", True)),
    (["2024-01-02", "2023-12-31"], ("date", "date", None, False)),
    (["male", "female"], ("string", "string", None, False)),
    ([], ("unknown", "unknown", None, False)),
])
def test_classify_values(values: list, expected: tuple) -> None:
    assert classify_values(values) == expected


def test_range_strings_get_a_range_query_value(store: NetworkStore) -> None:
    ck = recall(store, "年龄段30到39岁", attribute_conditions=None).contextual_knowledge
    band = next(f for f in ck.attribute_formats if f.attribute == "age_band")
    assert band.storage_format == "range_string" and band.is_range and band.query_value == "30-39岁"


def test_cardinality_and_similarity() -> None:
    assert [cardinality(1, 1), cardinality(3, 1), cardinality(1, 3), cardinality(2, 2)] == \
        ["one_to_one", "one_to_many", "many_to_one", "many_to_many"]
    assert similarity("上气道梗阻", "上气道梗阻") == 1.0
    assert similarity("上下气道梗阻", "上、下气道梗阻") == 1.0  # punctuation does not count
    assert similarity("上气道梗阻", "上气道阻塞") > similarity("上气道梗阻", "百日咳")


# -- sessions ----------------------------------------------------------------------------------------------------


def test_session_cache_recalls_only_new_keywords(store: NetworkStore) -> None:
    def statements(query: str, sessions: ContextSessions) -> int:
        """SQL statements one contextual recall issues (kn_search's own run before counting starts)."""
        request = KnSearchRequest(query=query, kn_id="ctx", session_id="s1")
        concepts = kn_search(request, store)
        seen: list[str] = []
        listener = lambda *args: seen.append(args[2])  # noqa: E731 - (conn, cursor, statement, ...)
        event.listen(store.engine, "before_cursor_execute", listener)
        try:
            contextual_recall(request, store, concepts, sessions, use_llm=False)
        finally:
            event.remove(store.engine, "before_cursor_execute", listener)
        return len(seen)

    lexicon_for(store, "ctx")  # the network's dictionary is built once per version, not per session
    session = ContextSessions()
    assert statements("上气道梗阻有哪些症状", session) > 0
    assert statements("上气道梗阻有哪些症状", session) == 0  # same session, same keywords: no query at all
    both_fresh = statements("上气道梗阻 百日咳", ContextSessions())
    incremental = statements("上气道梗阻 百日咳", session)  # only 百日咳 is new in this session
    assert 0 < incremental < both_fresh


# -- LLM path ----------------------------------------------------------------------------------------------------


def test_llm_extraction_is_used_when_valid_and_rules_when_not(store, llm_server, monkeypatch) -> None:
    monkeypatch.setenv("KGRAG_LLM_BASE_URL", llm_server.base_url)
    monkeypatch.setenv("KGRAG_LLM_MODEL", "scripted-model")
    # the script holds the extraction's replies only: the standard-name asks after it meet "script exhausted"
    # (500) and fall back at once rather than after three backed-off retries each (38 s of this test's 39)
    monkeypatch.setenv("KGRAG_LLM_MAX_RETRIES", "0")
    get_settings.cache_clear()
    try:
        llm_server.script(json.dumps({"entities": [{"text": "上气道梗阻", "confidence": 0.95}],
                                      "attribute_values": [], "relation_words": [{"text": "症状", "confidence": 0.9}]},
                                     ensure_ascii=False))
        request = KnSearchRequest(query="上气道梗阻有哪些症状", kn_id="ctx")
        ck = context_search(request, store, sessions=ContextSessions()).contextual_knowledge
        assert ck.extraction.source == "llm" and ck.extraction.relation_words[0].relation_type_ids == ["has_symptom"]
        assert ck.keyword_mappings[0].object_type_id == "disease" and ck.errors == []
        llm_server.script("I think the keyword is 上气道梗阻", "still no json")
        response = context_search(request, store, sessions=ContextSessions())
        ck = response.contextual_knowledge
        assert ck.extraction.source == "rules" and ck.keyword_mappings[0].object_type_id == "disease"
        assert "keyword extraction by LLM failed" in ck.errors[0] and "部分上下文召回失败" in response.message
    finally:
        get_settings.cache_clear()


# -- HTTP --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(store: NetworkStore):
    app = create_app()
    app.state.network_store = store
    with TestClient(app) as c:
        yield c


def test_context_route_and_kn_search_flag(client: TestClient) -> None:
    body = client.post(CONTEXT_URL, json={"query": "上气道梗阻有哪些症状", "kn_id": "ctx", "session_id": "h1"}).json()
    assert body["contextual_knowledge"]["keyword_mappings"][0]["object_type_id"] == "disease"
    assert set(body["contextual_knowledge"]) >= {"keyword_mappings", "attribute_formats", "relation_patterns",
                                                 "object_type_primary_fields"}
    assert body["session_id"] == "h1" and body["object_types"]
    plain = client.post(SEARCH_URL, json={"query": "上气道梗阻有哪些症状", "kn_id": "ctx"}).json()
    assert "contextual_knowledge" not in plain  # the kn_search contract is unchanged by default
    flagged = client.post(SEARCH_URL, json={"query": "上气道梗阻有哪些症状", "kn_id": "ctx", "include_context": True}).json()
    assert flagged["contextual_knowledge"]["keyword_mappings"] == body["contextual_knowledge"]["keyword_mappings"]


def test_caller_conditions_are_validated(client: TestClient) -> None:
    ok = client.post(CONTEXT_URL, json={"query": "患者", "kn_id": "ctx", "attribute_conditions": [
        {"object_type_id": "person", "attribute": "age", "operation": ">=", "value": 40}]})
    assert ok.status_code == 200
    age = next(f for f in ok.json()["contextual_knowledge"]["attribute_formats"] if f["attribute"] == "age")
    assert age["query_operation"] == ">=" and age["storage_format"] == "number"
    for condition, named in [({"attribute": "salary", "operation": ">", "value": 1}, "salary"),
                             ({"object_type_id": "robot", "attribute": "age"}, "robot"),
                             ({"attribute": "age", "operation": "approx", "value": 1}, "operation")]:
        resp = client.post(CONTEXT_URL, json={"query": "患者", "kn_id": "ctx", "attribute_conditions": [condition]})
        assert resp.status_code == 400 and named in resp.json()["error"], resp.text
    assert client.post(CONTEXT_URL, json={"query": "x", "kn_id": "nope"}).status_code == 404
    assert client.post(CONTEXT_URL, json={"kn_id": "ctx"}).status_code == 400


def test_attribute_condition_model_defaults() -> None:
    assert AttributeCondition(text="30岁").operation == "==" and ContextConfig().forms_per_strategy == 5


@pytest.mark.parametrize("keyword", ["气道梗阻", "上、下气道梗阻", "咳嗽", "感冒", "某某", "患者", "阿莫西林", "无此词"])
def test_forms_read_for_all_types_at_once_equal_one_type_at_a_time(store: NetworkStore, keyword: str) -> None:
    """prefetch_hits (one statement per strategy across the types, through the store's batched reads) gives
    every type what the store's own per-type queries give, hence the same forms as a type read alone; the batched
    store reads equal their per-type counterparts."""
    from kgrag.network.schema.model import Condition
    from kgrag.search.storage_forms import keyword_forms, name_field, prefetch_hits

    types = {ot.id: (ot, name_field(ot)) for ot in store.get_network("ctx").object_types}
    for skip in (True, False):
        config = ContextConfig(skip_when_exact=skip)
        k, pool = config.forms_per_strategy, max(config.forms_per_strategy * 6, 30)
        found = prefetch_hits(store, "ctx", keyword, types, config)
        assert found is not None and set(found) == set(types)
        for tid, (ot, field) in types.items():  # each type's own queries, one per strategy
            hits = found[tid]
            assert hits.exact == store.query_instances(
                "ctx", tid, Condition(operation="==", field=field, value=keyword), k, sort_by_score=False)
            if hits.exact and skip:
                assert hits.contains == [] and hits.fuzzy == {}
            else:
                assert hits.contains == store.query_instances(
                    "ctx", tid, Condition(operation="contain", field=field, value=keyword), max(k * 10, 50),
                    sort_by_score=False)
                ops = next(p.condition_operations for p in ot.data_properties if p.name == field)
                assert hits.fuzzy == {op: store.query_instances(
                    "ctx", tid, Condition(operation=op, field=field, value=keyword, limit=pool), pool)
                    for op in ("match", "knn") if op in ops}
            assert keyword_forms(store, "ctx", keyword, ot, field, config, found=found[tid]) == keyword_forms(
                store, "ctx", keyword, ot, field, config)
    for op in ("==", "contain"):
        conditions = {tid: Condition(operation=op, field=field, value=keyword) for tid, (_, field) in types.items()}
        assert store.query_instances_by_type("ctx", conditions, 2) == {
            tid: store.query_instances("ctx", tid, cond, 2, sort_by_score=False) for tid, cond in conditions.items()}
    requests = {tid: (tid, [field]) for tid, (_, field) in types.items()}
    assert store.match_scores_many("ctx", "instance", requests, keyword, 3) == {
        tid: store.match_scores("ctx", "instance", tid, f, keyword, 3) for tid, (_, f) in requests.items()}
