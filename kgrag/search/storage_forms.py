"""Stages 2–3 of contextual recall: which object types a keyword belongs to, and how the data stores it
(spec contextual-recall.md §2.1, §3.2 阶段2/3, §5.1.1).

For one keyword and one object type, through the store's condition queries (interface 1) on the type's name field
(its display key), at most ``forms_per_strategy`` forms per strategy:

* ``exact``    — ``name == keyword``;
* ``contains`` — ``name contain keyword`` (上气道梗阻 -> 上、下气道梗阻), the closest forms first;
* ``fuzzy``    — character-level variants: ``match`` candidates (jieba tokens + CJK bigrams, so 上气道阻塞 and
  上呼吸道梗阻 share tokens with 上气道梗阻) and embedding neighbours (``knn``, when the field has vectors),
  re-ranked by :func:`similarity` and kept above ``min_fuzzy_similarity``.

With ``skip_when_exact`` (spec §6.1.4) an exact hit ends the search for that type. A keyword's confidence for a
type: exact 0.95; otherwise ``0.55 + 0.35 × best similarity`` for contains, ``0.8 × best similarity`` for fuzzy;
+0.05 when concept recall selected the type, +0.1 when the question's relation words name a relation whose other
end is this type (X有哪些症状: X is the source of has_symptom) — capped at 1.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from kgrag.network.model import TEXT_TYPES, Condition, InstanceHit, ObjectType
from kgrag.network.service import ContextStore
from kgrag.search.context_models import ContextConfig, KeywordMapping, StorageForm

__all__ = ["keyword_forms", "map_keyword", "name_field", "similarity"]

_PUNCT = str.maketrans("", "", "、，,。.·・-_/()（）[]【】 　'\"“”")


def similarity(keyword: str, form: str) -> float:
    """Character-level closeness in [0, 1]: the larger of the difflib ratio and the Dice coefficient of
    character bigrams, both on lower-cased text without punctuation (上下气道梗阻 ~ 上、下气道梗阻)."""
    a, b = keyword.lower().translate(_PUNCT), form.lower().translate(_PUNCT)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    ratio = SequenceMatcher(None, a, b, autojunk=False).ratio()
    ba, bb = {a[i : i + 2] for i in range(len(a) - 1)}, {b[i : i + 2] for i in range(len(b) - 1)}
    dice = 2 * len(ba & bb) / (len(ba) + len(bb)) if ba and bb else 0.0
    return round(max(ratio, dice), 4)


def name_field(ot: ObjectType) -> str | None:
    """The field holding an instance's name: the display key when it is a text property, else the first text
    property called ``name`` / ``*_name``, else None."""
    props = {p.name: p for p in ot.data_properties}
    display = props.get(ot.display_key)
    if display is not None and display.type.split("(")[0].strip().lower() in TEXT_TYPES:
        return display.name
    for p in ot.data_properties:
        if p.name == "name" or p.name.endswith("_name"):
            return p.name
    return None


def _form(hit: InstanceHit, field: str, match_type: str, keyword: str) -> StorageForm:
    name = str(hit.properties.get(field, hit.id))
    return StorageForm(form=name, match_type=match_type, sample_instance_id=hit.id, sample_instance_name=name,
                       similarity=1.0 if match_type == "exact" else similarity(keyword, name))


def keyword_forms(store: ContextStore, kn_id: str, keyword: str, ot: ObjectType, field: str,
                  config: ContextConfig) -> list[StorageForm]:
    """Exact, then contains, then fuzzy forms of ``keyword`` in ``ot.field`` (see the module docstring)."""
    k = config.forms_per_strategy
    exact = store.query_instances(kn_id, ot.id, Condition(operation="==", field=field, value=keyword), k,
                                  sort_by_score=False)
    forms = [_form(h, field, "exact", keyword) for h in exact]
    if forms and config.skip_when_exact:
        return forms
    seen = {f.sample_instance_id for f in forms}
    contains = [_form(h, field, "contains", keyword) for h in store.query_instances(
        kn_id, ot.id, Condition(operation="contain", field=field, value=keyword), max(k * 10, 50),
        sort_by_score=False) if h.id not in seen]
    contains.sort(key=lambda f: (-f.similarity, len(f.form), f.form))
    forms += contains[:k]
    seen |= {f.sample_instance_id for f in contains[:k]}
    ops = next((p.condition_operations for p in ot.data_properties if p.name == field), [])
    fuzzy_subs = [Condition(operation=op, field=field, value=keyword, limit=max(k * 6, 30))
                  for op in ("match", "knn") if op in ops]
    if fuzzy_subs:
        cond = fuzzy_subs[0] if len(fuzzy_subs) == 1 else Condition(operation="or", sub_conditions=fuzzy_subs)
        candidates = [_form(h, field, "fuzzy", keyword)
                      for h in store.query_instances(kn_id, ot.id, cond, max(k * 6, 30)) if h.id not in seen]
        candidates = [f for f in candidates if f.similarity >= config.min_fuzzy_similarity]
        candidates.sort(key=lambda f: (-f.similarity, len(f.form), f.form))
        forms += candidates[:k]
    return forms


def map_keyword(store: ContextStore, kn_id: str, keyword: str, object_types: list[ObjectType],
                config: ContextConfig, recalled: set[str], related: set[str],
                known_types: set[str] | None = None) -> list[KeywordMapping]:
    """The keyword's mappings, best first, at most ``max_types_per_keyword``; a keyword found nowhere gives one
    mapping with ``object_type_id=None`` and confidence 0. ``known_types``: types where the keyword is a stored
    name (from the lexicon) — searched first; when it is given and not empty only those are searched."""
    candidates = [ot for ot in object_types if name_field(ot) is not None]
    if known_types:
        candidates = [ot for ot in candidates if ot.id in known_types]
    mappings: list[KeywordMapping] = []
    for ot in candidates:
        field = name_field(ot)
        assert field is not None
        forms = keyword_forms(store, kn_id, keyword, ot, field, config)
        if not forms:
            continue
        best = max(f.similarity for f in forms)
        kinds = {f.match_type for f in forms}
        confidence = 0.95 if "exact" in kinds else 0.55 + 0.35 * best if "contains" in kinds else 0.8 * best
        confidence += 0.05 * (ot.id in recalled) + 0.1 * (ot.id in related)
        mappings.append(KeywordMapping(keyword=keyword, object_type_id=ot.id, primary_field=field,
                                       match_fields=[field], storage_forms=forms,
                                       match_confidence=round(min(confidence, 1.0), 4)))
    mappings.sort(key=lambda m: (-m.match_confidence, m.object_type_id or ""))
    if not mappings:
        return [KeywordMapping(keyword=keyword, match_confidence=0.0)]
    return mappings[: config.max_types_per_keyword]
