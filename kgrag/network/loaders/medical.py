"""The Chinese medical knowledge network (xywy.com crawl; ``kgrag.data.medical.read_diseases``).

Object types: ``Disease`` (with its overview properties, under the classic QASystemOnMedicalKG names that the
Cypher-paired questions use: ``cure_way``, ``cure_lasttime``, ``cured_prob``, ``easy_get``, ``get_way``,
``get_prob``, ``cost_money`` …), ``Symptom``, ``Check``, ``Drug``, ``Food``, ``Recipe``, ``Department``
(there is no producer data in this crawl, so no ``Producer``). Relation types (classic names):
``has_symptom``, ``acompany_with`` (complication, Disease → Disease), ``need_check``, ``common_drug``,
``do_eat``, ``no_eat``, ``recommand_recipes``, ``belongs_to`` (Disease → Department) and
``department_belongs_to`` (sub-department → department, from the ``[科室, 子科室]`` lists).

Instance ids are ``<Type>:<name>`` like ``kgrag.data.medical.medical_kg``. Two records with the same disease
name become one instance (the first record's properties) with the union of their links; a complication that
has no record of its own becomes a Disease instance with only a name.

Indexing: names are ``knn`` + ``match`` (short: one embedding each); ``desc`` and ``easy_get`` are ``match``
only; the long texts ``cause``/``prevent``/``nursing``/``symptom_detail``/``diet`` are stored and searchable with
``contain``/``like`` (segmenting 10M characters with jieba on every load is not worth it). For the query modes
the disease texts (:data:`TEXT_SECTIONS`) are chunked (``TextConfig``) and ``desc`` describes a disease.

Aliases: a Disease's ``aliases`` (别名, ``string[]``, ``match``/``contain``/``exist``) are the other names the
texts of any record give it (又称/俗称/简称 …, :func:`kgrag.network.text.aliases.alias_index`), so contextual recall can
map 脑溢血 to 脑出血 (``kgrag.search.storage_forms``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from kgrag.data.medical import Disease, read_diseases
from kgrag.network.loaders import NetworkData
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
    TextConfig,
)
from kgrag.network.text.aliases import alias_index

__all__ = ["ALIASES_PROPERTY", "DISEASE_PROPERTIES", "MEDICAL_RELATION_TYPES", "RELATION_VALUES", "disease_properties", "load_medical",
           "medical_network"]

NAME_OPS = ["knn", "match", "==", "!=", "in", "prefix", "contain", "like", "regex", "exist"]
_TEXT_OPS = ["contain", "like", "regex", "exist"]
_SHORT_OPS = ["==", "!=", "in", "contain", "prefix", "like", "regex", "exist"]

# property -> (display name, type, comment, operations, getter)
DISEASE_PROPERTIES: dict[str, tuple[str, str, str, list[str]]] = {
    "name": ("名称", "string", "疾病名称", NAME_OPS),
    "desc": ("简介", "text", "疾病简介", ["match", *_TEXT_OPS]),
    "cause": ("病因", "text", "疾病的病因", _TEXT_OPS),
    "prevent": ("预防", "text", "预防措施", _TEXT_OPS),
    "nursing": ("护理", "text", "护理方法", _TEXT_OPS),
    "symptom_detail": ("症状详情", "text", "症状的详细描述、临床表现", _TEXT_OPS),
    "diet": ("饮食建议", "text", "饮食宜忌的说明", _TEXT_OPS),
    "cure_way": ("治疗方式", "string[]", "治疗方式（药物治疗、手术治疗……）", ["contain", "exist"]),
    "cure_lasttime": ("治疗周期", "string", "治疗周期，如 1-2个月", _SHORT_OPS),
    "cured_prob": ("治愈率", "string", "治愈概率，如 98%", _SHORT_OPS),
    "easy_get": ("易感人群", "string", "容易感染的人群", ["match", *_SHORT_OPS]),
    "get_way": ("传播途径", "string", "传染方式，如 呼吸道传播、无传染性", _SHORT_OPS),
    "get_prob": ("患病比例", "string", "发病率，如 0.5%", _SHORT_OPS),
    "cost_money": ("治疗费用", "string", "治疗费用说明", _TEXT_OPS),
    "medical_insurance": ("医保疾病", "string", "是否医保疾病（是/否）", _SHORT_OPS),
    "category": ("所属科室", "string[]", "所属科室（列表）", ["contain", "exist"]),
}
#: the Disease property holding its other names; not a record field (it is read from every record's texts), so
#: it is not in DISEASE_PROPERTIES / disease_properties
ALIASES_PROPERTY = DataProperty(name="aliases", display_name="别名", type="string[]",
                                comment="疾病的其他名称：又称、俗称、简称、旧称等（从疾病文本中抽取）",
                                condition_operations=["match", "contain", "exist"])


def disease_properties(d: Disease) -> dict[str, object]:
    """A disease record's properties under the classic names (the data README's mapping)."""
    g = d.gaishu_info
    return {
        "name": g.name,
        "desc": g.desc,
        "cause": d.cause_info,
        "prevent": d.prevent_info,
        "nursing": d.nursing_info,
        "symptom_detail": "\n".join(d.symptom_data.symptom_detail),
        "diet": "\n".join(t for t in (d.food_info.good_diet_text, d.food_info.avoid_diet_text) if t),
        "cure_way": list(dict.fromkeys(g.treat_way)),
        "cure_lasttime": g.treat_cycle,
        "cured_prob": g.cure_prob,
        "easy_get": g.susceptible_people,
        "get_way": g.transmission_way,
        "get_prob": g.disease_ratio,
        "cost_money": g.treat_cost,
        "medical_insurance": g.medical_insurance,
        "category": list(dict.fromkeys(g.belongs_to_department)),
    }


#: the disease texts the query modes chunk, in reading order
TEXT_SECTIONS = ("desc", "symptom_detail", "cause", "prevent", "nursing", "diet")

# (target type, display name, comment)
_ENTITY_TYPES: dict[str, tuple[str, str]] = {
    "Disease": (
        "疾病",
        "疾病：名称、简介、病因、预防、治疗方式、治疗周期、治愈率、易感人群、传播途径、治疗费用等",
    ),
    "Symptom": ("症状", "疾病的症状、临床表现"),
    "Check": ("检查", "诊断检查项目"),
    "Drug": ("药品", "药品、常用药物"),
    "Food": ("食物", "食物：宜吃或忌吃"),
    "Recipe": ("食谱", "推荐的食谱、药膳"),
    "Department": ("科室", "医院科室"),
}

# relation -> (source, target, name, comment)
MEDICAL_RELATION_TYPES: dict[str, tuple[str, str, str, str]] = {
    "has_symptom": ("Disease", "Symptom", "症状", "疾病的症状，有什么症状、表现"),
    "acompany_with": ("Disease", "Disease", "并发症", "疾病的并发症，会引起什么病、一起发生的疾病"),
    "need_check": ("Disease", "Check", "诊断检查", "诊断疾病需要做的检查项目"),
    "common_drug": ("Disease", "Drug", "常用药品", "治疗疾病的常用药物，吃什么药"),
    "do_eat": ("Disease", "Food", "宜吃", "患病时宜吃的食物，吃什么好"),
    "no_eat": ("Disease", "Food", "忌吃", "患病时忌吃的食物，不能吃什么"),
    "recommand_recipes": ("Disease", "Recipe", "推荐食谱", "疾病的推荐食谱、药膳"),
    "belongs_to": ("Disease", "Department", "所属科室", "疾病所属的科室，挂什么科"),
    "department_belongs_to": ("Department", "Department", "上级科室", "子科室所属的上级科室"),
}

#: relation -> the disease record's list of target names (the data README's mapping)
RELATION_VALUES = {
    "has_symptom": lambda d: d.symptom_data.symptoms,
    "acompany_with": lambda d: d.gaishu_info.has_complication,
    "need_check": lambda d: d.inspect_info,
    "common_drug": lambda d: d.gaishu_info.common_drug,
    "do_eat": lambda d: d.food_info.good_food,
    "no_eat": lambda d: d.food_info.avoid_food,
    "recommand_recipes": lambda d: d.food_info.recommand_recipes,
    "belongs_to": lambda d: d.gaishu_info.belongs_to_department,
}


def medical_network(kn_id: str = "medical") -> KnowledgeNetwork:
    """The schema of the medical network."""
    object_types = []
    for type_id, (name, comment) in _ENTITY_TYPES.items():
        if type_id == "Disease":
            props = [
                DataProperty(name=p, display_name=dn, type=ty, comment=c, condition_operations=list(ops))
                for p, (dn, ty, c, ops) in DISEASE_PROPERTIES.items()
            ] + [ALIASES_PROPERTY.model_copy(deep=True)]
        else:
            props = [
                DataProperty(
                    name="name",
                    display_name="名称",
                    type="string",
                    comment=f"{name}名称",
                    condition_operations=list(NAME_OPS),
                )
            ]
        object_types.append(
            ObjectType(
                id=type_id,
                name=name,
                comment=comment,
                data_properties=props,
                primary_keys=["name"],
                display_key="name",
                tags=["medical"],
            )
        )
    relation_types = [
        RelationType(id=rid, name=name, comment=comment, source_object_type_id=src, target_object_type_id=tgt)
        for rid, (src, tgt, name, comment) in MEDICAL_RELATION_TYPES.items()
    ]
    return KnowledgeNetwork(
        kn_id=kn_id,
        name="医疗知识网络",
        comment="中文医疗知识图谱（寻医问药网 xywy.com）：疾病、症状、检查、药品、食物、食谱、科室",
        object_types=object_types,
        relation_types=relation_types,
        text=TextConfig(sections={"Disease": list(TEXT_SECTIONS)}, descriptions={"Disease": "desc"}),
    )


def medical_from_diseases(diseases: Iterable[Disease], kn_id: str = "medical",
                          exclude_aliases: Collection[tuple[str, str]] = ()) -> NetworkData:
    """The network, instances and links for these disease records.

    ``aliases`` (a Disease's other names) come from :func:`kgrag.network.text.aliases.alias_index` over every record's
    texts (:data:`TEXT_SECTIONS`); ``exclude_aliases`` holds ``(disease name, alias)`` pairs left out (held-out
    benchmarks). A disease with no alias has no ``aliases`` property."""
    network = medical_network(kn_id)
    props: dict[str, dict[str, object]] = {}  # instance id -> properties (insertion order)
    types: dict[str, str] = {}
    links: dict[tuple[str, str, str], None] = {}

    def node(type_id: str, name: str) -> str:
        key = f"{type_id}:{name}"
        if key not in props:
            props[key] = {"name": name}
            types[key] = type_id
        return key

    diseases = list(diseases)
    for d in diseases:  # records first, so a record's properties win over a bare complication node
        key = f"Disease:{d.name}"
        if key not in props or len(props[key]) == 1:
            props[key] = disease_properties(d)
            types[key] = "Disease"
    for d in diseases:
        head = f"Disease:{d.name}"
        for rel, get in RELATION_VALUES.items():
            target_type = MEDICAL_RELATION_TYPES[rel][1]
            for target in get(d):
                links.setdefault((rel, head, node(target_type, target)), None)
        depts = d.gaishu_info.belongs_to_department
        for parent, child in zip(depts, depts[1:], strict=False):
            if parent != child:
                links.setdefault(
                    ("department_belongs_to", node("Department", child), node("Department", parent)), None
                )
    excluded = set(exclude_aliases)
    records = [(d.name, [str(p[s] or "") for s in TEXT_SECTIONS]) for d in diseases for p in [disease_properties(d)]]
    disease_names = [str(v["name"]) for k, v in props.items() if types[k] == "Disease"]
    for name, aliases in alias_index(records, disease_names).items():
        kept = [a for a in aliases if (name, a) not in excluded]
        if kept:
            props[f"Disease:{name}"]["aliases"] = kept
    instances = [Instance(object_type_id=types[k], id=k, properties=v) for k, v in props.items()]
    link_list = [Link(relation_type_id=r, source_id=s, target_id=t) for r, s, t in links]
    return network, instances, link_list


def load_medical(data_dir: str | Path, kn_id: str = "medical", limit: int | None = None) -> NetworkData:
    """Read ``<data_dir>/medical/diseases`` (or a folder holding ``medical_*.json``) and build the network.

    ``limit`` keeps the first N disease records (tests).
    """
    path = Path(data_dir)
    folder = path / "medical" / "diseases"
    if not folder.is_dir():
        folder = path / "diseases" if (path / "diseases").is_dir() else path
    records = read_diseases(folder).records
    if limit is not None:
        records = records[:limit]
    return medical_from_diseases(records, kn_id)
