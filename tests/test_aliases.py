"""Aliases: extraction from text (kgrag.network.text.aliases), the medical loader's ``aliases`` property (with a
held-out exclusion set), and the ``alias`` storage form plus knn-kept fuzzy forms (kgrag.search.storage_forms) on
a tiny network loaded with a deterministic fake embedder."""

from __future__ import annotations

import pytest
from fixtures.fake_embedder import HashEmbedder

from kgrag.data.medical import Disease
from kgrag.network.loaders.medical import medical_from_diseases
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore
from kgrag.network.text.aliases import alias_index, clean_alias, extract_aliases
from kgrag.search.context_models import ContextConfig
from kgrag.search.contextual import ContextSessions
from kgrag.search.kn_models import KnSearchRequest
from kgrag.search.pipeline import context_search
from kgrag.search.storage_forms import alias_field, keyword_forms, map_keyword

# -- extraction ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("过敏性紫癜", "过敏性紫癜又称出血性毛细血管中毒症，是一种较为常见的微血管变态反应性出血性疾病。",
     ["出血性毛细血管中毒症"]),
    ("心肌梗死", "心肌梗死（acute myocardial infarction，简称心梗）是冠心病的严重类型。", ["心梗"]),
    ("癫痫", "癫痫(epilepsy)俗称“羊癫疯、羊角风”是大脑神经元突发性异常放电所致。", ["羊癫疯", "羊角风"]),
    ("先天性高肩胛症", "1891年Sprengel报告4例，故本病又称Sprengel畸形。", ["Sprengel畸形"]),
    ("女性尿瘘", "女性尿瘘又称尿粪联合瘘或混合瘘，瘘孔累及泌尿系。", ["尿粪联合瘘", "混合瘘"]),
    ("新生儿青紫", "新生儿青紫(cyanosis)亦称紫绀，发绀，是血液内还原血红蛋白浓度增高所致。", ["紫绀", "发绀"]),
    ("高脂蛋白血症Ⅳ型", "高脂蛋白血症Ⅳ型又名脂肪和碳水化合物诱导的高脂血症，是最常见的类型。",
     ["脂肪和碳水化合物诱导的高脂血症"]),
    ("乳糜泻", "乳糜泻又称麸质(gluten)过敏性肠病，过去称为非热带性脂肪泻。", ["麸质过敏性肠病"]),
    ("真性红细胞增多症", "真性红细胞增多症(又称Vaguez病或Osler病)是一种骨髓增生性疾病。", ["Vaguez病", "Osler病"]),
    ("寒滞肝脉证", "寒滞肝脉证是以冷痛为主要表现的实寒证候。又称寒凝肝经证，简称肝寒证。", ["寒凝肝经证", "肝寒证"]),
    ("颈动脉体瘤", "颈动脉体瘤是一种少见的化学感受器肿瘤，又称为副神经节瘤。", ["副神经节瘤"]),
    ("哕", "哕是以喉间呃呃连声为主要表现的病证。又名哕、发呃。", ["发呃"]),
    ("胆碱能性荨麻疹", "胆碱性荨麻疹又称为热荨麻疹，主要由于运动、受热引起。", ["胆碱性荨麻疹", "热荨麻疹"]),
    ("恶性血管内皮瘤", "恶性血管内皮瘤又称血管肉瘤，小儿少见，多发生于皮肤。", ["血管肉瘤"]),
    ("带状角膜病变", "带状角膜病变(band keratopathy)又称角膜带状混浊和钙化带状角膜病变(calcific)，是一种角膜病。",
     ["角膜带状混浊", "钙化带状角膜病变"]),
    ("小儿一氧化碳中毒", "一氧化碳中毒又称煤气中毒。", ["一氧化碳中毒", "煤气中毒"]),  # 小儿X's text about X
])
def test_extracts_the_other_names(name: str, text: str, expected: list[str]) -> None:
    assert extract_aliases(name, [text]) == expected


@pytest.mark.parametrize(("name", "text"), [
    ("类癌", "类癌(carcinoid)又称carcinoid tumor，是一组发生于胃肠道的肿瘤。"),  # Latin only
    ("某病", "某病又称一种由多种原因引起的慢性进行性全身多系统功能衰竭综合征。"),  # a clause, not a name
    ("某病", "某病又称本病。"),  # generic word
    ("阴挺", "阴挺为子宫下垂。现代医学分别称为“子宫脱垂”、“阴道壁膨出”。"),  # 分别称 is no pattern
    ("某病", "某病的医学名称为心肌炎。"),  # 医学名称 is no pattern
    ("肺气肿", "合并明显肺大泡的肺气肿也称大泡型肺气肿。"),  # the subject is a kind of 肺气肿
    ("胰腺假囊肿", "急性胰腺假囊肿亦称为急性胰液潴留。"),  # 急性X is a kind of X
    ("肩峰下滑囊炎", "肩峰下滑囊又称三角肌下滑囊，是全身最大的滑囊之一。"),  # the organ, not the disease
    ("口腔念珠菌病", "本型的颊粘膜病损又称托牙性口炎。"),  # 本型: a subtype
    ("心绞痛", "心肌梗死又称心梗。"),  # another disease's alias
    ("小儿呼吸道合胞病毒肺炎", "呼吸道合胞病毒(RSV)简称合胞病毒，属副黏病毒科。"),  # the virus, not the disease
    ("慢性肾盂肾炎", "慢性肾盂肾炎是重要的疾病，应重视预防，所谓早期预防，又称“一级预防”。"),  # 一级预防 names 早期预防
])
def test_does_not_extract_non_names(name: str, text: str) -> None:
    assert extract_aliases(name, [text]) == []


def test_clean_alias() -> None:
    assert clean_alias("“痄腮”") == "痄腮"
    assert clean_alias("Wilson病") == "Wilson病"
    assert clean_alias("B.C.G") is None and clean_alias("第3") is None and clean_alias("家族性") is None
    assert clean_alias("此种贫血") is None and clean_alias("本态性高血压") == "本态性高血压"
    assert clean_alias("一" * 16) is None
    assert clean_alias("过熟儿post maurity") == "过熟儿"  # an unbracketed English gloss


def test_alias_index_attributes_statements_across_records() -> None:
    records = [
        ("心肌梗死", ["心肌梗死是冠状动脉急性闭塞所致的心肌坏死。"]),
        ("心绞痛", ["心绞痛可进展为心肌梗死（简称心梗）。本病又称胸痹。"]),
        ("荨麻疹", ["胆碱性荨麻疹又称胆碱能性荨麻疹。"]),
    ]
    index = alias_index(records, names=["胆碱能性荨麻疹"])
    assert index == {"心肌梗死": ["心梗"], "心绞痛": ["胸痹"], "胆碱能性荨麻疹": ["胆碱性荨麻疹"]}
    assert alias_index([("x", ["所以患甲状腺功能亢进症(简称甲亢)的母亲"])], names=["甲亢"]) == {
        "甲亢": ["甲状腺功能亢进症"]}  # 患 is not part of the name
    # a stored name ending a clause counts only as a whole noun (not 的肺气肿), and pronouns only for the record
    assert alias_index([("肺病", ["合并肺大泡的肺气肿（也称大泡型肺气肿）。"]), ("X", ["本病又称甲乙病。"])],
                       names=["肺气肿"]) == {"X": ["甲乙病"]}


def test_loader_records_aliases_and_leaves_out_the_excluded() -> None:
    records = [Disease(gaishu_info={"name": "心肌梗死", "desc": "心肌梗死（简称心梗）俗称心肌梗塞。"}),
               Disease(gaishu_info={"name": "感冒", "desc": "感冒是常见病。"})]
    network, instances, _ = medical_from_diseases(records)
    by_name = {i.properties["name"]: i for i in instances if i.object_type_id == "Disease"}
    assert by_name["心肌梗死"].properties["aliases"] == ["心梗", "心肌梗塞"]
    assert "aliases" not in by_name["感冒"].properties
    disease = next(ot for ot in network.object_types if ot.id == "Disease")
    prop = next(p for p in disease.data_properties if p.name == "aliases")
    assert prop.type == "string[]" and prop.display_name == "别名" and {"contain", "exist"} <= set(
        prop.condition_operations)
    _, held_out, _ = medical_from_diseases(records, exclude_aliases={("心肌梗死", "心梗")})
    assert next(i for i in held_out if i.id == "Disease:心肌梗死").properties["aliases"] == ["心肌梗塞"]


# -- storage forms on a tiny network ---------------------------------------------------------------------------------

#: texts the fake embedder places near each other (same base direction)
SYNONYMS = {"羊角风": "癫痫", "老烂腿": "臁疮"}


NAME_OPS = ["knn", "match", "==", "contain", "prefix"]


def tiny_network(exclude: set[tuple[str, str]] = frozenset()) -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    aliases = {"心肌梗死": ["心梗", "心肌梗塞"], "慢性支气管炎": ["老慢支"], "眼球震颤": ["眼震"],
               "乙型肝炎": ["乙型病毒性肝炎"]}
    net = KnowledgeNetwork(kn_id="al", name="alias test", object_types=[
        ObjectType(id="disease", name="疾病", data_properties=[
            DataProperty(name="name", type="string", condition_operations=NAME_OPS),
            DataProperty(name="aliases", type="string[]", display_name="别名",
                         condition_operations=["match", "contain", "exist"])]),
        ObjectType(id="symptom", name="症状", data_properties=[
            DataProperty(name="name", type="string", condition_operations=NAME_OPS)]),
        ObjectType(id="drug", name="药品", data_properties=[  # aliases as one string: detected too
            DataProperty(name="name", type="string", condition_operations=NAME_OPS),
            DataProperty(name="other_names", type="string", condition_operations=["contain"])]),
    ], relation_types=[RelationType(id="has_symptom", name="症状", comment="疾病的症状",
                                    source_object_type_id="disease", target_object_type_id="symptom")])
    diseases = []
    for name in ["心肌梗死", "急性心肌梗死", "心肌梗塞后综合征", "慢性支气管炎", "眼球震颤", "癫痫", "臁疮", "乙型肝炎"]:
        kept = [a for a in aliases.get(name, []) if (name, a) not in exclude]
        diseases.append(Instance(object_type_id="disease", id=f"d:{name}",
                                 properties={"name": name, **({"aliases": kept} if kept else {})}))
    symptoms = [Instance(object_type_id="symptom", id=f"s:{n}", properties={"name": n}) for n in ["胸痛", "眼震"]]
    drugs = [Instance(object_type_id="drug", id="r:阿司匹林", properties={"name": "阿司匹林",
                                                                         "other_names": "乙酰水杨酸、ASA"})]
    links = [Link(relation_type_id="has_symptom", source_id="d:心肌梗死", target_id="s:胸痛")]
    return net, [*diseases, *symptoms, *drugs], links


@pytest.fixture(scope="module")
def store() -> NetworkStore:
    s = NetworkStore("sqlite://", embedder=HashEmbedder("fake:aliases-test", 32, SYNONYMS))  # type: ignore[arg-type]
    s.load(*tiny_network())
    return s


def types_of(store: NetworkStore) -> dict[str, ObjectType]:
    return {ot.id: ot for ot in store.get_network("al").object_types}


def test_alias_field_is_detected_from_the_schema(store: NetworkStore) -> None:
    types = types_of(store)
    assert alias_field(types["disease"]) == "aliases"
    assert alias_field(types["drug"]) == "other_names"
    assert alias_field(types["symptom"]) is None
    numeric = ObjectType(id="x", name="x", data_properties=[DataProperty(name="alias", type="integer")])
    assert alias_field(numeric) is None


def test_a_recorded_alias_gives_the_stored_name_right_after_exact_forms(store: NetworkStore) -> None:
    disease = types_of(store)["disease"]
    forms = keyword_forms(store, "al", "心肌梗塞", disease, "name", ContextConfig())
    assert (forms[0].form, forms[0].match_type, forms[0].similarity) == ("心肌梗死", "alias", 1.0)
    assert [f.match_type for f in forms[1:]][:1] == ["contains"]  # 心肌梗塞后综合征 after the alias form
    near = keyword_forms(store, "al", "心肌梗塞症", disease, "name", ContextConfig())  # near-equal alias
    assert near[0].form == "心肌梗死" and near[0].match_type == "alias" and 0.8 <= near[0].similarity < 1
    changed = keyword_forms(store, "al", "甲型病毒性肝炎", disease, "name", ContextConfig())  # 甲 for 乙: similar,
    assert "alias" not in {f.match_type for f in changed}  # but another name
    drug = keyword_forms(store, "al", "乙酰水杨酸", types_of(store)["drug"], "name", ContextConfig())
    assert [(f.form, f.match_type) for f in drug] == [("阿司匹林", "alias")]


def test_context_search_maps_an_alias_to_the_stored_name(store: NetworkStore) -> None:
    response = context_search(KnSearchRequest(query="心梗有哪些症状", kn_id="al"), store,
                              sessions=ContextSessions(), use_llm=False, reranker=None)
    ck = response.contextual_knowledge
    top = ck.keyword_mappings[0]
    assert top.keyword == "心梗" and top.object_type_id == "disease" and top.match_confidence >= 0.9
    assert (top.storage_forms[0].form, top.storage_forms[0].match_type) == ("心肌梗死", "alias")
    pattern = next(p for p in ck.relation_patterns if p.relation_type_id == "has_symptom")
    assert pattern.typical_source_values == ["心肌梗死"] and pattern.typical_target_values == ["胸痛"]


def test_a_keyword_stored_under_another_type_still_finds_the_alias(store: NetworkStore) -> None:
    types = list(types_of(store).values())
    mappings = map_keyword(store, "al", "眼震", types, ContextConfig(), set(), {"disease"}, {"symptom"})
    found = {(m.object_type_id, f.form, f.match_type) for m in mappings for f in m.storage_forms}
    assert ("symptom", "眼震", "exact") in found and ("disease", "眼球震颤", "alias") in found


def test_a_held_out_alias_is_not_found_through_the_alias_property() -> None:
    held = NetworkStore("sqlite://", embedder=HashEmbedder("fake:aliases-test", 32, SYNONYMS))  # type: ignore[arg-type]
    held.load(*tiny_network(exclude={("心肌梗死", "心梗"), ("慢性支气管炎", "老慢支")}))
    disease = types_of(held)["disease"]
    assert not [f for f in keyword_forms(held, "al", "心梗", disease, "name", ContextConfig())
                if f.match_type == "alias"]
    assert "alias" not in {f.match_type for f in keyword_forms(held, "al", "老慢支", disease, "name",
                                                                ContextConfig())}
    # the other recorded alias of the same disease still works
    assert keyword_forms(held, "al", "心肌梗塞", disease, "name", ContextConfig())[0].match_type == "alias"


def test_knn_neighbours_are_kept_on_vector_similarity(store: NetworkStore) -> None:
    disease = types_of(store)["disease"]
    forms = keyword_forms(store, "al", "羊角风", disease, "name", ContextConfig())  # no character in common
    assert [(f.form, f.match_type) for f in forms] == [("癫痫", "fuzzy")]
    assert forms[0].similarity >= ContextConfig().min_knn_cosine
    strict = keyword_forms(store, "al", "羊角风", disease, "name", ContextConfig(min_knn_cosine=1.0))
    assert strict == []  # below the cosine threshold and character-dissimilar: dropped


def test_the_agent_takes_an_alias_form_before_contains_and_fuzzy() -> None:
    from kgrag.agent.kn.linking import InstanceMatch, choose_topic

    candidates = [InstanceMatch("心梗后综合征", "Disease", "Disease:心梗后综合征", "contains", "心梗", -1, 0.6),
                  InstanceMatch("心肌梗死", "Disease", "Disease:心肌梗死", "alias", "心梗", -1, 1.0),
                  InstanceMatch("心肌梗塞", "Disease", "Disease:心肌梗塞", "fuzzy", "心梗", -1, 0.7)]
    assert choose_topic(candidates, "Disease").name == "心肌梗死"
    exact = InstanceMatch("心梗", "Disease", "Disease:心梗", "exact", "心梗", 0, 1.0)
    assert choose_topic([*candidates, exact], "Disease").name == "心梗"
