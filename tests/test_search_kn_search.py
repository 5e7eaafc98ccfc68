"""kn_search end to end on a real NetworkStore (SQLite + FTS5 + embeddings, and PostgreSQL: ``module_db_url``)
with small networks built here; the same expected results on both backends."""

from __future__ import annotations

import time

import pytest

from kgrag.errors import NetworkNotFound
from kgrag.network.schema.model import (
    ActionType,
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    LogicProperty,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore
from kgrag.rank.rerank import EmbeddingReranker
from kgrag.rank.sentence_embedder import Embedder
from kgrag.search import KnSearchRequest, kn_search
from kgrag.search.concept import recall_concepts
from kgrag.search.kn_models import (
    MSG_INSTANCE_FAILED,
    MSG_NO_CONCEPTS,
    MSG_NO_INSTANCES,
    ConceptRetrievalConfig,
)
from kgrag.search.relevance import calculate_relevance_score

NAME = ["knn", "match", "=="]


def _medical() -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    drug = ObjectType(
        id="drug", name="药品", comment="药物与药品", display_key="name", primary_keys=["drug_id"],
        data_properties=[
            DataProperty(name="drug_id", type="string", comment="药品编号", condition_operations=["=="]),
            DataProperty(name="name", display_name="名称", type="string", comment="药品名称",
                         condition_operations=NAME),
            DataProperty(name="desc", display_name="说明", type="text", comment="药品说明",
                         condition_operations=["match"]),
            DataProperty(name="price", type="float", comment="价格", condition_operations=["==", ">"]),
        ],
        logic_properties=[LogicProperty(name="sales", comment="销量指标")],
    )
    disease = ObjectType(
        id="disease", name="疾病", comment="疾病", display_key="name", primary_keys=["disease_id"],
        data_properties=[
            DataProperty(name="disease_id", type="string", condition_operations=["=="]),
            DataProperty(name="name", display_name="名称", type="string", comment="疾病名称",
                         condition_operations=NAME),
        ],
    )
    symptom = ObjectType(
        id="symptom", name="症状", comment="疾病表现出的症状", display_key="name",
        data_properties=[DataProperty(name="name", type="text", condition_operations=["knn", "match"])],
    )
    gene = ObjectType(  # no semantically searchable field: skipped by instance recall
        id="gene", name="基因", display_key="code",
        data_properties=[DataProperty(name="code", type="integer", condition_operations=["=="])],
    )
    hospital = ObjectType(id="hospital", name="医院", comment="医疗机构", display_key="name",
                          data_properties=[DataProperty(name="name", type="string", condition_operations=["match"])])
    network = KnowledgeNetwork(
        kn_id="med", name="医疗",
        object_types=[drug, disease, symptom, gene, hospital],
        relation_types=[
            RelationType(id="treats", name="治疗", comment="药品用于治疗疾病", source_object_type_id="drug",
                         target_object_type_id="disease"),
            RelationType(id="has_symptom", name="症状表现", comment="疾病的典型症状", source_object_type_id="disease",
                         target_object_type_id="symptom"),
            RelationType(id="gene_of", name="致病基因", source_object_type_id="gene",
                         target_object_type_id="disease"),
        ],
        action_types=[ActionType(id="prescribe", name="开处方", object_type_id="drug", comment="为患者开具药品")],
    )
    drugs = [("D1", "阿司匹林", "解热镇痛药，用于头痛发热。" + "长" * 600, 9.5),
             ("D2", "阿司匹林肠溶片", "肠溶剂型的阿司匹林", 12.0),
             ("D3", "布洛芬", "非甾体抗炎药，缓解头痛", 15.0),
             ("D4", "青霉素", "抗生素", 8.0)]
    instances = [Instance(object_type_id="drug", id=d, properties={"drug_id": d, "name": n, "desc": s, "price": p})
                 for d, n, s, p in drugs]
    instances += [Instance(object_type_id="disease", id=i, properties={"disease_id": i, "name": n})
                  for i, n in [("S1", "头痛"), ("S2", "感冒"), ("S3", "肺炎")]]
    instances += [Instance(object_type_id="symptom", id=f"Y{i}", properties={"name": n})
                  for i, n in enumerate(["头痛", "发热", "咳嗽"])]
    instances += [Instance(object_type_id="gene", id="G1", properties={"code": 7})]
    instances += [Instance(object_type_id="hospital", id="H1", properties={"name": "协和医院"})]
    links = [Link(relation_type_id="treats", source_id="D1", target_id="S1"),
             Link(relation_type_id="has_symptom", source_id="S2", target_id="Y1")]
    return network, instances, links


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return Embedder(cache_dir=tmp_path_factory.mktemp("kn-search-emb"))


@pytest.fixture(scope="module")
def store(embedder, module_db_url):
    s = NetworkStore(module_db_url, embedder)
    s.load(*_medical())
    s.load(KnowledgeNetwork(kn_id="empty", name="空网络"), [], [])
    yield s
    s.close()


@pytest.fixture(scope="module")
def reranker(embedder):
    return EmbeddingReranker(embedder)


def _req(query="阿司匹林", kn_id="med", **kw):
    return KnSearchRequest(query=query, kn_id=kn_id, **kw)


class _BrokenReranker:
    calls = 0

    def rerank(self, query, docs, top_k=None):
        type(self).calls += 1
        raise TimeoutError("rerank timed out")


def test_kn_search_concepts_and_instances(store, reranker):
    resp = kn_search(_req(session_id="s-1"), store, reranker=reranker)
    assert resp.session_id == "s-1"
    assert {r.concept_id for r in resp.relation_types} == {"treats", "has_symptom", "gene_of"}
    ids = [o.concept_id for o in resp.object_types]
    # cap = max(2 * 3, 10) = 10 > 4 endpoints -> hospital is topped up after the endpoints
    assert ids[:4] == ["drug", "disease", "symptom", "gene"] and ids[4] == "hospital"
    assert [a.id for a in resp.action_types] == ["prescribe"]
    assert resp.action_types[0].object_type_name == "药品" and resp.action_types[0].kn_id == "med"
    names = [n.instance_name for n in resp.nodes]
    assert names[0] == "阿司匹林"
    assert "阿司匹林肠溶片" in names
    top = resp.nodes[0]
    assert top.object_type_id == "drug" and top.object_type_name == "药品"
    assert top.unique_identities == {"drug_id": "D1"}
    assert top.properties["desc"].endswith("...") and len(top.properties["desc"]) == 503
    assert all(n.score >= 0.3 for n in resp.nodes)
    assert max(n.score for n in resp.nodes) * 0.25 <= min(n.score for n in resp.nodes)
    assert resp.message == ""


def test_kn_search_relation_rerank_order_and_top_k(store, reranker):
    cfg = {"concept_retrieval": {"top_k": 1}}
    resp = kn_search(_req("药品治疗疾病", retrieval_config=cfg, only_schema=True), store, reranker=reranker)
    assert [r.concept_id for r in resp.relation_types] == ["treats"]
    assert resp.relation_types[0].source_object_type_name == "药品"
    # cap = max(2 * 1, 1) = 2 == |{drug, disease}| -> exactly the endpoints
    assert [o.concept_id for o in resp.object_types] == ["drug", "disease"]


def test_kn_search_enable_rerank_false_keeps_network_order(store):
    _BrokenReranker.calls = 0
    resp = kn_search(_req("头痛", enable_rerank=False, only_schema=True,
                          retrieval_config={"concept_retrieval": {"top_k": 2}}), store, reranker=_BrokenReranker())
    assert [r.concept_id for r in resp.relation_types] == ["treats", "has_symptom"]
    assert _BrokenReranker.calls == 0


def test_kn_search_rerank_failure_falls_back_to_relevance_score(store):
    resp = kn_search(_req("症状", only_schema=True), store, reranker=_BrokenReranker())
    network = store.get_network("med")
    expected = sorted(network.relation_types,
                      key=lambda r: -calculate_relevance_score("症状", r.name, r.comment))
    assert [r.concept_id for r in resp.relation_types] == [r.id for r in expected]
    assert resp.relation_types[0].concept_id == "has_symptom"  # "症状表现" contains the query (+0.5 +0.2)


def test_kn_search_only_schema_returns_no_nodes(store, reranker):
    resp = kn_search(_req(only_schema=True), store, reranker=reranker)
    assert resp.object_types and resp.nodes == [] and resp.message == ""


def test_kn_search_no_concepts_message(store, reranker):
    resp = kn_search(_req(kn_id="empty"), store, reranker=reranker)
    assert resp.object_types == [] and resp.nodes == []
    assert resp.message == MSG_NO_CONCEPTS == "未召回到相关概念，无法进行实例检索"


def test_kn_search_no_instances_message(store, reranker):
    cfg = {"semantic_instance_retrieval": {"min_direct_relevance": 0.99}}
    resp = kn_search(_req("量子计算机", retrieval_config=cfg), store, reranker=reranker)
    assert resp.object_types and resp.nodes == []
    assert resp.message == MSG_NO_INSTANCES == "未检索到符合条件的实例数据"


def test_kn_search_unknown_network_raises(store, reranker):
    with pytest.raises(NetworkNotFound):
        kn_search(_req(kn_id="nope"), store, reranker=reranker)


class _FailingInstancesStore(NetworkStore):
    def query_instances(self, *args, **kwargs):
        raise RuntimeError("ontology query unavailable")


def test_kn_search_instance_failure_keeps_concepts(embedder, reranker):
    failing = _FailingInstancesStore("sqlite://", embedder)
    failing.load(*_medical())
    resp = kn_search(_req(), failing, reranker=reranker)
    assert resp.object_types and resp.relation_types and resp.action_types
    assert resp.nodes == []
    assert resp.message.startswith(MSG_INSTANCE_FAILED)
    assert "ontology query unavailable" in resp.message
    failing.close()


def test_kn_search_schema_brief_and_sample_data(store, reranker):
    cfg = {"concept_retrieval": {"schema_brief": True, "include_sample_data": True, "enable_property_brief": False}}
    resp = kn_search(_req(only_schema=True, retrieval_config=cfg), store, reranker=reranker)
    drug = next(o for o in resp.object_types if o.concept_id == "drug")
    dumped = drug.model_dump(exclude_none=True)
    assert set(dumped) == {"concept_type", "concept_id", "concept_name", "comment", "data_properties",
                           "logic_properties", "sample_data"}
    assert dumped["data_properties"][1] == {"name": "name", "display_name": "名称", "comment": "药品名称"}
    assert drug.sample_data["drug_id"] == "D1"
    gene = next(o for o in resp.object_types if o.concept_id == "gene")
    assert gene.sample_data == {"code": 7}


def test_kn_search_schema_brief_drops_relation_comment_and_concept_type(store, reranker):
    brief = kn_search(_req(only_schema=True, retrieval_config={"concept_retrieval": {"schema_brief": True}}),
                      store, reranker=reranker)
    assert brief.relation_types
    for rel in brief.relation_types:
        dumped = rel.model_dump(exclude_none=True)
        assert "comment" not in dumped and "concept_type" not in dumped
        assert {"concept_id", "concept_name", "source_object_type_id", "target_object_type_id"} <= set(dumped)
    full = kn_search(_req(only_schema=True), store, reranker=reranker)
    treats = next(r for r in full.relation_types if r.concept_id == "treats")
    assert treats.concept_type == "relation_type" and treats.comment == "药品用于治疗疾病"


def test_kn_search_full_schema_and_property_brief(store, reranker):
    full = kn_search(_req(only_schema=True, retrieval_config={"concept_retrieval": {"enable_property_brief": False}}),
                     store, reranker=reranker)
    drug = next(o for o in full.object_types if o.concept_id == "drug")
    assert drug.primary_keys == ["drug_id"] and drug.display_key == "name" and drug.sample_data is None
    assert [p.name for p in drug.data_properties] == ["drug_id", "name", "desc", "price"]
    assert drug.data_properties[1].condition_operations == NAME
    cfg = {"concept_retrieval": {"per_object_property_top_k": 1, "global_property_top_k": 2}}
    pruned = kn_search(_req("名称", only_schema=True, retrieval_config=cfg), store, reranker=reranker)
    kept = {(o.concept_id, p.name) for o in pruned.object_types for p in o.data_properties + o.logic_properties}
    # "名称" == display name of drug.name and disease.name (1.0) beats everything else
    assert kept == {("drug", "name"), ("disease", "name")}


def test_kn_search_property_filter_config(store, reranker):
    cfg = {"property_filter": {"max_properties_per_instance": 2, "max_property_value_length": 3}}
    resp = kn_search(_req(retrieval_config=cfg), store, reranker=reranker)
    top = resp.nodes[0]
    assert list(top.properties) == ["desc", "drug_id"]
    assert top.properties["desc"] == "解热镇..."
    off = kn_search(_req(retrieval_config={"property_filter": {"enable_property_filter": False}}), store,
                    reranker=reranker)
    assert len(off.nodes[0].properties["desc"]) > 600


def test_kn_search_per_type_limit_and_global_filter(store, reranker):
    cfg = {"semantic_instance_retrieval": {"per_type_instance_limit": 1,
                                           "enable_global_final_score_ratio_filter": False,
                                           "min_direct_relevance": 0.01}}
    resp = kn_search(_req("头痛", retrieval_config=cfg), store, reranker=reranker)
    per_type = {}
    for n in resp.nodes:
        per_type[n.object_type_id] = per_type.get(n.object_type_id, 0) + 1
    assert all(count == 1 for count in per_type.values())
    assert "gene" not in per_type  # no searchable field
    assert {n.instance_name for n in resp.nodes if n.object_type_id in ("disease", "symptom")} == {"头痛"}


# -- coarse recall ---------------------------------------------------------------------------------------------


def _big_network(n_objects=120, n_relations=5100) -> KnowledgeNetwork:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
             "kilo", "lima"]
    # names repeat (12 distinct texts): the embedder encodes each distinct text once, so loading stays fast
    ots = [ObjectType(id=f"ot{i}", name=f"entity {words[i % 12]}") for i in range(n_objects)]
    ots.append(ObjectType(id="patient", name="patient", comment="a person receiving medical care"))
    ots.append(ObjectType(id="hospital", name="hospital", comment="a medical institution"))
    rels = [RelationType(id=f"r{j}", name=f"link {words[j % 12]}", source_object_type_id=f"ot{j % n_objects}",
                         target_object_type_id=f"ot{(j * 7 + 1) % n_objects}") for j in range(n_relations)]
    rels.append(RelationType(id="admitted_to", name="admitted to", comment="patient admitted to hospital",
                             source_object_type_id="patient", target_object_type_id="hospital"))
    return KnowledgeNetwork(kn_id="big", name="big", object_types=ots, relation_types=rels)


@pytest.fixture(scope="module")
def big_store(embedder, module_db_url):
    s = NetworkStore(module_db_url, embedder)
    start = time.perf_counter()
    s.load(_big_network(), [], [])
    assert time.perf_counter() - start < 120
    yield s
    s.close()


def test_coarse_recall_on_large_network(big_store, reranker):
    assert len(big_store.get_network("big").relation_types) > 5000  # above the default threshold
    cfg = ConceptRetrievalConfig(top_k=3)
    result = recall_concepts(big_store, "big", "patient admitted to hospital", cfg, True, reranker)
    assert result.coarse_applied
    assert result.relation_types[0].id == "admitted_to"
    assert len(result.relation_types) == 3
    ids = [o.id for o in result.object_types]
    assert "patient" in ids and "hospital" in ids
    # the coarse object scores reach the selection (types topped up beyond the relation endpoints are scored)
    assert result.object_scores["hospital"] > 0
    # every selected relation survived coarse recall (<= coarse_relation_limit candidates)
    coarse_ids = {rid for rid, _ in big_store.search_relation_types("big", "patient admitted to hospital", 300)}
    assert {r.id for r in result.relation_types} <= coarse_ids


def test_coarse_recall_limits_and_switch(big_store, reranker):
    cfg = ConceptRetrievalConfig(top_k=3, coarse_relation_limit=5, coarse_object_limit=1)
    result = recall_concepts(big_store, "big", "patient admitted to hospital", cfg, False, None)
    assert result.coarse_applied and len(result.relation_types) == 3
    off = recall_concepts(big_store, "big", "patient admitted to hospital",
                          ConceptRetrievalConfig(top_k=3, enable_coarse_recall=False), False, None)
    assert not off.coarse_applied
    assert [r.id for r in off.relation_types] == ["r0", "r1", "r2"]  # full schema, network order


def test_coarse_recall_threshold_and_failure(store, embedder, reranker):
    # the small network is below the default threshold (3 < 5000): no coarse recall
    assert not recall_concepts(store, "med", "头痛", ConceptRetrievalConfig(), True, reranker).coarse_applied
    low = ConceptRetrievalConfig(coarse_min_relation_count=2)
    assert recall_concepts(store, "med", "治疗", low, True, reranker).coarse_applied

    class FailingSearch(NetworkStore):
        def search_relation_types(self, *args, **kwargs):
            raise RuntimeError("search down")

    failing = FailingSearch("sqlite://", embedder)
    failing.load(*_medical())
    result = recall_concepts(failing, "med", "治疗", low, True, reranker)
    assert not result.coarse_applied and len(result.relation_types) == 3
    failing.close()


def test_kn_search_request_override_enables_coarse_on_small_network(store, reranker):
    cfg = {"concept_retrieval": {"coarse_min_relation_count": 1, "coarse_relation_limit": 1}}
    resp = kn_search(_req("药品治疗疾病", retrieval_config=cfg, only_schema=True), store, reranker=reranker)
    assert len(resp.relation_types) == 1


def test_kn_search_on_large_network_end_to_end(big_store, reranker):
    resp = kn_search(_req("patient admitted to hospital", kn_id="big"), big_store, reranker=reranker)
    assert resp.relation_types[0].concept_id == "admitted_to"
    assert len(resp.relation_types) == 10
    assert {"patient", "hospital"} <= {o.concept_id for o in resp.object_types}
    assert resp.nodes == [] and resp.message == MSG_NO_INSTANCES  # no instances / searchable fields at all


def test_warm_search_encodes_the_relation_documents_before_any_query(store, monkeypatch, tmp_path):
    """After warm_search a never-seen query runs the model for the query only: every relation document of the
    network was encoded at warm-up, in one call."""
    from kgrag.search.warm import relation_documents, warm_search

    network = store.get_network("med")
    cold = Embedder(cache_dir=tmp_path)  # an empty cache: nothing encoded before the warm-up
    cold_reranker = EmbeddingReranker(cold)
    calls: list[list[str]] = []
    original = cold._run_model_locked

    def recording(model, texts, batch_size):
        calls.append(list(texts))
        return original(model, texts, batch_size)

    monkeypatch.setattr(cold, "_run_model_locked", recording)
    report = warm_search(store, cold_reranker, kn_ids=["med", "no-such-network"])
    assert report["med"]["relation_documents"] == len(network.relation_types) == 3
    assert report["no-such-network"]["error"].startswith("NetworkNotFound")  # reported, the others still warm
    assert sorted(relation_documents(network)) == sorted(calls[0])  # one call for all of them
    calls.clear()
    # never asked in this process (query vectors are shared by the embedders of a model: another test may have)
    query = f"一个从没问过的问题：阿司匹林的副作用 {tmp_path.name}"
    response = kn_search(_req(query), store, cold_reranker)
    assert response.relation_types and calls == [[query]]
