"""Stages 4 and 6 of contextual recall: how attribute values are stored, and each type's primary fields
(spec contextual-recall.md, the specification of recalling how a question's words are stored, §2.2, §2.4,
§3.2 阶段4/6, §4.2.2, §4.2.4).

Attribute formats: an attribute condition (年龄大于30岁, 男性) is tied to data properties by the words that name
it (年龄 ~ a property called/commented 年龄 or ``age``), by its unit (岁 -> an age property), or — for a categorical
value — by where the value or a synonym is actually stored (男性 -> ``p_gender == "male"``). Samples come from an
``exist`` query (interface 1); :func:`classify_values` reads the storage format from them (number, string with a
unit such as "30岁", range string "30-40岁", date, boolean, plain string) and the user's value is rewritten the way
the data stores it (``query_value``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from kgrag.network.schema.model import Condition, DataProperty, ObjectType
from kgrag.network.service import ContextStore
from kgrag.search.cache import PerVersion
from kgrag.search.context_models import AttributeCondition, AttributeFormat, ContextConfig, PrimaryFields
from kgrag.search.keywords import CATEGORICAL_SYNONYMS
from kgrag.search.storage_forms import name_field

__all__ = ["attribute_candidates", "attribute_format", "classify_values", "primary_fields"]

_NUMERIC_TYPES = {"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"}
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(\D{0,4}?)\s*(?:-|~|～|至|到|—)\s*(-?\d+(?:\.\d+)?)\s*(\D{0,6})\s*$")
_WITH_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([^\d\s.\-][^\d]{0,5})\s*$")
_NUMBER = re.compile(r"^\s*-?\d+(?:\.\d+)?\s*$")
_DATE = re.compile(r"^\s*\d{4}[-/年.]\d{1,2}(?:[-/月.]\d{1,2}日?)?(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?\s*$")
#: words for an attribute the user may name only by its unit
_UNIT_ATTRIBUTES = {"岁": ("年龄", "age"), "周岁": ("年龄", "age"), "元": ("价格", "price", "费用", "cost"),
                    "块": ("价格", "price"), "kg": ("体重", "weight"), "公斤": ("体重", "weight"),
                    "cm": ("身高", "height"), "厘米": ("身高", "height")}
_ATTRIBUTE_ALIASES = {"年龄": ("age",), "岁数": ("age", "年龄"), "性别": ("gender", "sex"), "价格": ("price", "cost"),
                      "费用": ("cost", "price", "fee"), "体重": ("weight",), "身高": ("height",)}


def classify_values(values: list[Any]) -> tuple[str, str, str | None, bool]:
    """``(storage_format, value_pattern, unit, is_range)`` of stored sample values (the most common reading)."""
    readings: Counter[tuple[str, str, str | None, bool]] = Counter()
    for v in values:
        if isinstance(v, bool):
            readings[("boolean", "boolean", None, False)] += 1
        elif isinstance(v, int):
            readings[("number", "integer", None, False)] += 1
        elif isinstance(v, float):
            readings[("number", "float", None, False)] += 1
        elif isinstance(v, str):
            if _NUMBER.match(v):
                readings[("string", "integer" if "." not in v else "float", None, False)] += 1
            elif (m := _RANGE.match(v)) is not None:
                readings[("range_string", "range", (m.group(4) or m.group(2) or "").strip() or None, True)] += 1
            elif _DATE.match(v):
                readings[("date", "date", None, False)] += 1
            elif (m := _WITH_UNIT.match(v)) is not None:
                readings[("string", "string_with_unit", m.group(2).strip(), False)] += 1
            else:
                readings[("string", "string", None, False)] += 1
    if not readings:
        return "unknown", "unknown", None, False
    return readings.most_common(1)[0][0]


def _words(prop: DataProperty) -> str:
    return f"{prop.name} {prop.display_name} {prop.comment}".lower()


def attribute_candidates(cond: AttributeCondition, object_types: list[ObjectType]) -> list[tuple[ObjectType, DataProperty]]:
    """Properties the condition's attribute words or unit name (best first)."""
    names: list[str] = []
    if cond.attribute:
        names.append(cond.attribute.lower())
        names += [a.lower() for a in _ATTRIBUTE_ALIASES.get(cond.attribute, ())]
    if cond.unit:
        names += [a.lower() for a in _UNIT_ATTRIBUTES.get(cond.unit.lower(), ())]
    scored: list[tuple[int, int, ObjectType, DataProperty]] = []
    for ti, ot in enumerate(object_types):
        for prop in ot.data_properties:
            words = _words(prop)
            rank = next((i for i, n in enumerate(names) if n and (n == prop.name.lower() or n in words)), None)
            if rank is not None:
                scored.append((rank, ti, ot, prop))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [(ot, prop) for _, _, ot, prop in scored]


_CATEGORICAL_TYPES = frozenset({"string", "text", "varchar", "char", "keyword", "enum"})
#: (value forms, the (type, property) pairs searched) -> what categorical_candidates found: a value absent from
#: every property costs one scan per type, and questions repeat the same few values (男性, 儿童)
_categorical: PerVersion[list[tuple[ObjectType, DataProperty, Any]]] = PerVersion(512)


def categorical_candidates(store: ContextStore, kn_id: str, cond: AttributeCondition,
                           object_types: list[ObjectType]) -> list[tuple[ObjectType, DataProperty, str]]:
    """For a categorical value (男性): ``(type, property, stored value)`` where the value or a synonym is stored
    (the first instance by id of each property holding one), found once per network version."""
    word = str(cond.value).lower()
    forms = {word}
    for canonical, synonyms in CATEGORICAL_SYNONYMS.items():
        if word in synonyms or word == canonical:
            forms |= {canonical, *synonyms}
    variants = sorted({f for form in forms for f in (form, form.upper(), form.capitalize())})
    searched = [(ot, [p for p in ot.data_properties if p.type.lower() in _CATEGORICAL_TYPES]) for ot in object_types]

    def read() -> list[tuple[ObjectType, DataProperty, Any]]:
        found: list[tuple[ObjectType, DataProperty, Any]] = []
        for ot, props in searched:
            # one scan of the type for all its properties first: most types store the value nowhere
            if not props or not store.query_instances(kn_id, ot.id, Condition(operation="or", sub_conditions=[
                    Condition(operation="in", field=p.name, value=variants) for p in props]), 1, sort_by_score=False):
                continue
            for prop in props:
                hits = store.query_instances(kn_id, ot.id, Condition(operation="in", field=prop.name, value=variants),
                                             1, sort_by_score=False)
                if hits:
                    found.append((ot, prop, hits[0].properties.get(prop.name)))
        return found

    key = (tuple(variants), tuple((ot.id, p.name) for ot, props in searched for p in props))
    return list(_categorical.get(store, kn_id, key, read))


def _query_value(cond: AttributeCondition, storage: str, pattern: str, unit: str | None) -> Any:
    value = cond.value
    if isinstance(value, list):
        if pattern == "range" or storage == "range_string":
            return f"{value[0]}-{value[1]}{unit or ''}"
        return value
    if isinstance(value, int | float) and pattern == "string_with_unit":
        return f"{value}{unit or cond.unit or ''}"
    if isinstance(value, int | float) and storage == "string":
        return str(value)
    return value


def attribute_format(store: ContextStore, kn_id: str, cond: AttributeCondition, ot: ObjectType, prop: DataProperty,
                     config: ContextConfig, stored_value: Any = None) -> AttributeFormat:
    """The storage format of ``ot.prop`` read from ``attribute_samples`` stored values (an ``exist`` query)."""
    hits = store.query_instances(kn_id, ot.id, Condition(operation="exist", field=prop.name), config.attribute_samples,
                                 sort_by_score=False)
    samples = [h.properties.get(prop.name) for h in hits if h.properties.get(prop.name) is not None]
    storage, pattern, unit, is_range = classify_values(samples)
    if storage == "unknown" and prop.type.lower() in _NUMERIC_TYPES:
        storage, pattern = "number", "integer" if prop.type.lower() in ("integer", "int", "long", "short") else "float"
    if storage == "string" and pattern in ("integer", "float"):
        storage = "number" if prop.type.lower() in _NUMERIC_TYPES else "string"
    query_value = stored_value if stored_value is not None else _query_value(cond, storage, pattern, unit)
    return AttributeFormat(
        object_type_id=ot.id, attribute=prop.name, storage_format=storage, value_samples=samples,
        value_pattern=pattern, query_operation=cond.operation, has_unit=unit is not None, is_range=is_range,
        unit=unit, query_value=query_value, source_text=cond.text,
    )


#: (object type, samples) -> its PrimaryFields: the same for every question on one version
_primary: PerVersion[PrimaryFields] = PerVersion(4096)


def primary_fields(store: ContextStore, kn_id: str, ot: ObjectType, samples: int) -> PrimaryFields:
    """The type's name field (display key) and id field (first primary key, else ``id``/``*_id``, else the
    instance id), with sample values from ``samples`` instances (the first by id); read once per network
    version."""
    found = _primary.get(store, kn_id, (ot.id, samples), lambda: _read_primary_fields(store, kn_id, ot, samples))
    return found.model_copy(deep=True)


def _read_primary_fields(store: ContextStore, kn_id: str, ot: ObjectType, samples: int) -> PrimaryFields:
    name = name_field(ot) or ot.display_key
    props = [p.name for p in ot.data_properties]
    id_field = (ot.primary_keys[0] if ot.primary_keys else
                next((p for p in props if p == "id" or p.endswith("_id")), "id"))
    hits = store.query_instances(kn_id, ot.id, None, samples, sort_by_score=False)
    field_samples: dict[str, list[Any]] = {name: [h.properties.get(name) for h in hits if h.properties.get(name) is not None]}
    field_samples[id_field] = [h.properties.get(id_field, h.id) if id_field in props else h.id for h in hits]
    return PrimaryFields(object_type_id=ot.id, primary_name_field=name, primary_id_field=id_field,
                         field_samples=field_samples)
