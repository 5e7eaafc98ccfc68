"""kn_search rules as pure functions (spec kn-search.md): config merge, relation documents, relevance scores,
relation ranking with rerank fallback, object-type selection, property pruning, instance scoring and filters."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kgrag.network.schema.model import DataProperty, InstanceHit, LogicProperty, ObjectType, RelationType
from kgrag.search.instances import (
    SearchableField,
    build_instance_condition,
    filter_node_properties,
    global_score_filter,
    hit_to_node,
    rank_type_nodes,
    score_nodes,
    searchable_fields,
    truncate_properties,
)
from kgrag.search.kn_models import (
    KnSearchNode,
    KnSearchRequest,
    PropertyFilterConfig,
    RetrievalConfig,
    RetrievalConfigIn,
    merge_retrieval_config,
)
from kgrag.search.relevance import (
    calculate_relevance_score,
    object_type_rerank_scores,
    prune_properties,
    rank_relations,
    relation_document,
    select_object_types,
)

# -- config merge -------------------------------------------------------------------------------------------


def test_defaults_match_spec():
    cfg = RetrievalConfig()
    c, s, p = cfg.concept_retrieval, cfg.semantic_instance_retrieval, cfg.property_filter
    assert (c.coarse_object_limit, c.coarse_relation_limit, c.coarse_min_relation_count) == (2000, 300, 5000)
    assert c.enable_coarse_recall is True and c.top_k == 10
    assert (s.initial_candidate_count, s.per_type_instance_limit, s.max_semantic_sub_conditions) == (50, 5, 10)
    assert (s.min_direct_relevance, s.global_final_score_ratio, s.exact_name_match_score) == (0.3, 0.25, 0.85)
    assert s.enable_global_final_score_ratio_filter is True
    assert (p.max_properties_per_instance, p.max_property_value_length, p.enable_property_filter) == (20, 500, True)
    req = KnSearchRequest(query="q", kn_id="k")
    assert req.only_schema is False and req.enable_rerank is True


def test_merge_absent_config_is_defaults():
    assert merge_retrieval_config(None) == RetrievalConfig()
    assert merge_retrieval_config(RetrievalConfigIn()) == RetrievalConfig()


def test_merge_numbers_override_only_when_positive():
    partial = RetrievalConfigIn.model_validate({
        "concept_retrieval": {"top_k": 3, "coarse_object_limit": 0, "coarse_relation_limit": -5},
        "semantic_instance_retrieval": {"min_direct_relevance": 0, "global_final_score_ratio": 0.5,
                                        "per_type_instance_limit": 2},
        "property_filter": {"max_property_value_length": 0, "max_properties_per_instance": 7},
    })
    cfg = merge_retrieval_config(partial)
    assert cfg.concept_retrieval.top_k == 3
    assert cfg.concept_retrieval.coarse_object_limit == 2000  # 0 keeps the default
    assert cfg.concept_retrieval.coarse_relation_limit == 300  # negative keeps the default
    assert cfg.semantic_instance_retrieval.min_direct_relevance == 0.3
    assert cfg.semantic_instance_retrieval.global_final_score_ratio == 0.5
    assert cfg.semantic_instance_retrieval.per_type_instance_limit == 2
    assert cfg.property_filter.max_property_value_length == 500
    assert cfg.property_filter.max_properties_per_instance == 7
    assert isinstance(cfg.semantic_instance_retrieval.global_final_score_ratio, float)
    cfg = merge_retrieval_config(RetrievalConfigIn.model_validate(
        {"semantic_instance_retrieval": {"exact_name_match_score": 1}}))
    assert cfg.semantic_instance_retrieval.exact_name_match_score == 1.0
    with pytest.raises(ValidationError):
        RetrievalConfigIn.model_validate({"concept_retrieval": {"top_k": True}})


def test_merge_booleans_override_whenever_present():
    partial = RetrievalConfigIn.model_validate({
        "concept_retrieval": {"enable_coarse_recall": False, "include_sample_data": True, "schema_brief": None},
        "semantic_instance_retrieval": {"enable_global_final_score_ratio_filter": False},
        "property_filter": {"enable_property_filter": False},
    })
    cfg = merge_retrieval_config(partial)
    assert cfg.concept_retrieval.enable_coarse_recall is False
    assert cfg.concept_retrieval.include_sample_data is True
    assert cfg.concept_retrieval.schema_brief is False  # null = absent = default
    assert cfg.concept_retrieval.enable_property_brief is True  # absent = default
    assert cfg.semantic_instance_retrieval.enable_global_final_score_ratio_filter is False
    assert cfg.property_filter.enable_property_filter is False


def test_merge_partial_section_keeps_other_sections_default():
    cfg = merge_retrieval_config(RetrievalConfigIn.model_validate({"property_filter": {"max_properties_per_instance": 3}}))
    assert cfg.concept_retrieval == RetrievalConfig().concept_retrieval
    assert cfg.semantic_instance_retrieval == RetrievalConfig().semantic_instance_retrieval
    assert cfg.property_filter.max_properties_per_instance == 3


@pytest.mark.parametrize("body", [{"kn_id": "k"}, {"query": "q"}, {"query": "", "kn_id": "k"},
                                  {"query": "q", "kn_id": ""}, {"query": "  ", "kn_id": "k"}])
def test_request_requires_query_and_kn_id(body):
    with pytest.raises(ValidationError):
        KnSearchRequest.model_validate(body)


def test_request_ignores_unknown_config_keys():
    req = KnSearchRequest.model_validate({"query": "q", "kn_id": "k", "session_id": "s",
                                          "retrieval_config": {"concept_retrieval": {"concept_groups": ["x"]}}})
    assert merge_retrieval_config(req.retrieval_config) == RetrievalConfig()


# -- relation documents and relevance -----------------------------------------------------------------------


def test_relation_document_exact_strings():
    assert relation_document("药品", "治疗", "药品用于治疗疾病", "疾病") == "药品 治疗，药品用于治疗疾病 疾病"
    assert relation_document("药品", "治疗", "", "疾病") == "药品 治疗 疾病"
    assert relation_document("Person", "acted_in", "an actor in a film", "Movie") == \
        "Person acted_in，an actor in a film Movie"
    assert relation_document("", "治疗", "", "疾病") == "治疗 疾病"
    assert relation_document("药品", "", "说明", "") == "药品 说明"
    assert relation_document("", "", "", "") == ""


@pytest.mark.parametrize(("name", "comment", "expected"), [
    ("治疗", "", 1.0),  # name == query
    ("治疗方案", "", 0.5),  # name contains query
    ("治", "", 0.3),  # query contains name
    ("症状", "用于治疗", 0.2),  # comment contains query
    ("治疗", "治疗疾病", 1.2),
    ("治疗方案", "治疗疾病", 0.7),
    ("症状", "", 0.0),
    ("", "", 0.0),
])
def test_calculate_relevance_score(name, comment, expected):
    assert calculate_relevance_score("治疗", name, comment) == pytest.approx(expected)


def test_calculate_relevance_score_case_insensitive():
    assert calculate_relevance_score("Treats", "treats") == 1.0


def _ot(ot_id, name=None, **kw):
    return ObjectType(id=ot_id, name=name or ot_id, **kw)


def _rel(rel_id, src, dst, name=None, comment=""):
    return RelationType(id=rel_id, name=name or rel_id, comment=comment, source_object_type_id=src,
                        target_object_type_id=dst)


class _ScriptedReranker:
    """Scores each document by a lookup table (a real reranker is exercised in the store-backed tests)."""

    def __init__(self, table):
        self.table = table
        self.docs = None

    def rerank(self, query, docs, top_k=None):
        from kgrag.rank.bm25 import stable_top_k

        self.docs = list(docs)
        return stable_top_k([self.table.get(doc, 0.0) for doc in docs], top_k)


class _BrokenReranker:
    def rerank(self, query, docs, top_k=None):
        raise ConnectionError("rerank service down")


RELS = [_rel("r1", "a", "b", "causes"), _rel("r2", "b", "c", "treats", "drug treats disease"),
        _rel("r3", "c", "d", "treatment"), _rel("r4", "a", "d", "has")]
NAMES = {"a": "Drug", "b": "Disease", "c": "Symptom", "d": "Gene"}


def test_rank_relations_without_rerank_keeps_order():
    selected, ranked = rank_relations("treats", RELS, NAMES, 2, enable_rerank=False, reranker=_BrokenReranker())
    assert [r.relation.id for r in selected] == ["r1", "r2"]
    assert all(r.score is None for r in ranked) and len(ranked) == 4


def test_rank_relations_by_reranker_scores():
    rr = _ScriptedReranker({"Symptom treatment Gene": 0.9, "Drug has Gene": 0.5})
    selected, ranked = rank_relations("treats", RELS, NAMES, 3, enable_rerank=True, reranker=rr)
    assert rr.docs == ["Drug causes Disease", "Disease treats，drug treats disease Symptom",
                       "Symptom treatment Gene", "Drug has Gene"]
    assert [r.relation.id for r in selected] == ["r3", "r4", "r1"]  # ties keep current order
    assert [r.score for r in selected] == [0.9, 0.5, 0.0]
    assert len(ranked) == 4


def test_rank_relations_rerank_failure_falls_back_to_relevance_score():
    selected, ranked = rank_relations("treats", RELS, NAMES, 3, enable_rerank=True, reranker=_BrokenReranker())
    # r2: name == query (1.0) + comment contains query (0.2); r3 "treatment" does not contain "treats"
    assert [r.relation.id for r in selected] == ["r2", "r1", "r3"]
    assert selected[0].score == pytest.approx(1.2)
    selected, _ = rank_relations("treat", RELS, NAMES, 2, enable_rerank=True, reranker=_BrokenReranker())
    assert [r.relation.id for r in selected] == ["r2", "r3"]  # 0.5 + 0.2, 0.5


def test_rank_relations_bad_reranker_indices_fall_back():
    class Bad:
        def rerank(self, query, docs, top_k=None):
            return [(99, 1.0)]

    selected, _ = rank_relations("treats", RELS, NAMES, 1, enable_rerank=True, reranker=Bad())
    assert selected[0].relation.id == "r2" and selected[0].score == pytest.approx(1.2)


def test_object_type_rerank_scores_take_max_over_relations():
    _, ranked = rank_relations("treats", RELS, NAMES, 4, True, _BrokenReranker())
    scores = object_type_rerank_scores(ranked)
    assert scores["b"] == pytest.approx(1.2) and scores["c"] == pytest.approx(1.2)
    assert scores["a"] == 0.0 and scores["d"] == 0.0


# -- object-type selection --------------------------------------------------------------------------------


OTS = [_ot(x) for x in "abcdefgh"]


def test_select_object_types_filtered_reaches_cap_returns_all_filtered():
    rels = [_rel("r1", "a", "b"), _rel("r2", "c", "d"), _rel("r3", "e", "f")]
    # cap = max(2*3, top_k=2) = 6 == len(filtered)
    assert [o.id for o in select_object_types(OTS, rels, 2, {})] == list("abcdef")
    # filtered can never exceed 2 * len(relations) <= cap, so ">= cap" means "== cap": returned as is
    rels = [_rel("r1", "a", "b"), _rel("x", "c", "h")]
    assert [o.id for o in select_object_types(OTS, rels, 1, {"g": 9.0})] == ["a", "b", "c", "h"]
    # shared endpoints: filtered (3) < cap (4) -> topped up
    rels = [_rel("r1", "a", "b"), _rel("r2", "b", "c")]
    assert [o.id for o in select_object_types(OTS, rels, 1, {"g": 9.0})] == ["a", "b", "c", "g"]


def test_select_object_types_network_order_then_scored_then_unscored():
    rels = [_rel("r1", "e", "b")]
    # filtered = b, e (network order); cap = max(2, 5) = 5 -> 3 more: scored first by score desc, then unscored
    out = select_object_types(OTS, rels, 5, {"g": 0.2, "d": 0.9, "b": 5.0})
    assert [o.id for o in out] == ["b", "e", "d", "g", "a"]


def test_select_object_types_without_relations_by_score_top_2k():
    out = select_object_types(OTS, [], 2, {"h": 0.1, "c": 0.7})
    assert [o.id for o in out] == ["c", "h", "a", "b"]


# -- property pruning ---------------------------------------------------------------------------------------


def test_prune_properties_per_object_and_global():
    drug = _ot("drug", data_properties=[DataProperty(name="id"), DataProperty(name="name", comment="drug name"),
                                        DataProperty(name="dosage", comment="name of the dose")],
               logic_properties=[LogicProperty(name="name_len")])
    disease = _ot("disease", data_properties=[DataProperty(name="code"), DataProperty(name="name")])
    keep = prune_properties([drug, disease], "name", per_object_top_k=2, global_top_k=3)
    # drug: name 1.0 (+0.2 comment? "drug name" contains "name" -> 1.2), name_len 0.5, dosage 0.2 -> top2
    assert keep["drug"] == {("data", "name"), ("logic", "name_len")}
    # global top 3 over {drug.name 1.2, drug.name_len 0.5, disease.name 1.0, disease.code 0}
    assert keep["disease"] == {("data", "name")}
    keep = prune_properties([drug, disease], "name", per_object_top_k=10, global_top_k=100)
    assert len(keep["drug"]) == 4 and len(keep["disease"]) == 2


# -- instance recall helpers ----------------------------------------------------------------------------------


def test_searchable_fields_text_types_and_operations():
    ot = _ot("drug", display_key="name", data_properties=[
        DataProperty(name="desc", type="text", condition_operations=["match"]),
        DataProperty(name="code", type="VARCHAR(32)", condition_operations=["equal"]),
        DataProperty(name="name", type="string", condition_operations=["knn", "match", "=="]),
        DataProperty(name="price", type="float", condition_operations=["knn", "=="]),
        DataProperty(name="tag", type="char", condition_operations=["prefix"]),
    ])
    fields = searchable_fields(ot)
    assert fields == [SearchableField("name", True, True, True), SearchableField("desc", False, True, False),
                      SearchableField("code", False, False, True)]


def test_build_instance_condition_order_and_cap():
    fields = [SearchableField("name", True, True, True), SearchableField("desc", False, True, False)]
    cond = build_instance_condition(fields, "阿司匹林", per_type_instance_limit=5, max_sub_conditions=10)
    assert cond.operation == "or"
    assert [(c.operation, c.field, c.value, c.limit) for c in cond.sub_conditions] == [
        ("knn", "name", "阿司匹林", 5), ("==", "name", "阿司匹林", None), ("match", "name", "阿司匹林", None),
        ("match", "desc", "阿司匹林", None)]
    cond = build_instance_condition(fields, "q", 5, 2)
    assert [c.operation for c in cond.sub_conditions] == ["knn", "=="]
    assert build_instance_condition([], "q", 5, 10) is None


def test_hit_to_node_and_scoring():
    ot = _ot("drug", name="药品", display_key="name", primary_keys=["drug_id"])
    hits = [InstanceHit(object_type_id="drug", id="1", properties={"drug_id": "D1", "name": "阿司匹林"}),
            InstanceHit(object_type_id="drug", id="2", properties={"drug_id": "D2", "name": "阿司匹林肠溶片"}),
            InstanceHit(object_type_id="drug", id="3", properties={"drug_id": "D3", "name": "林"}),
            InstanceHit(object_type_id="drug", id="4", properties={"drug_id": "D4", "name": "布洛芬"}),
            InstanceHit(object_type_id="drug", id="5", properties={"drug_id": "D5", "name": "x"}, score=0.42)]
    nodes = [hit_to_node(h, ot) for h in hits]
    assert nodes[0].instance_name == "阿司匹林" and nodes[0].unique_identities == {"drug_id": "D1"}
    assert nodes[0].object_type_name == "药品"
    scored = score_nodes(nodes, [h.score for h in hits], "阿司匹林", 0.85)
    assert [n.score for n in scored] == [0.85, 0.5, 0.3, 0.0, 0.42]
    bare = hit_to_node(InstanceHit(object_type_id="t", id="i9", properties={}), _ot("t"))
    assert bare.instance_name == "i9" and bare.unique_identities == {"id": "i9"}


def _node(name, score, **props):
    return KnSearchNode(object_type_id="t", instance_name=name, score=score, properties=props)


def test_rank_type_nodes_sort_cut_then_min_relevance():
    nodes = [_node("a", 0.2), _node("b", 0.9), _node("c", 0.5), _node("d", 0.3), _node("e", 0.85)]
    assert [n.instance_name for n in rank_type_nodes(nodes, 3, 0.3)] == ["b", "e", "c"]
    assert [n.instance_name for n in rank_type_nodes(nodes, 5, 0.3)] == ["b", "e", "c", "d"]  # a: 0.2 < 0.3


def test_global_score_filter():
    nodes = [_node("a", 0.9), _node("b", 0.2), _node("c", 0.3)]
    assert [n.instance_name for n in global_score_filter(nodes, True, 0.25)] == ["a", "c"]  # threshold 0.225
    assert len(global_score_filter(nodes, False, 0.25)) == 3
    assert len(global_score_filter([_node("a", 0.0), _node("b", 0.0)], True, 0.25)) == 2  # max 0: no filter
    # a ratio above 1 filters everything: the best node is kept
    assert [n.instance_name for n in global_score_filter(nodes, True, 2.0)] == ["a"]
    assert global_score_filter([], True, 0.25) == []


def test_truncate_properties():
    props = {f"k{i:02d}": i for i in range(25)}
    out = truncate_properties(props, 20, 500)
    assert list(out) == [f"k{i:02d}" for i in range(20)]
    out = truncate_properties({"b": "x" * 10, "a": "短文本", "c": 12345678}, 20, 5)
    assert out == {"b": "xxxxx...", "a": "短文本", "c": 12345678}
    out = truncate_properties({"zeta": 1, "alpha": 2, "mid": 3}, 2, 500)
    assert out == {"alpha": 2, "mid": 3}


def test_filter_node_properties_disabled():
    nodes = [_node("a", 1.0, long="y" * 600)]
    assert filter_node_properties(nodes, PropertyFilterConfig(enable_property_filter=False))[0].properties["long"] == "y" * 600
    assert filter_node_properties(nodes, PropertyFilterConfig())[0].properties["long"] == "y" * 500 + "..."
