"""Stages 2–3 of contextual recall: which object types a keyword belongs to, and how the data stores it
(spec contextual-recall.md, the specification of recalling how a question's words are stored, §2.1, §3.2
阶段2/3, §5.1.1).

For one keyword and one object type, through the store's condition queries (interface 1) on the type's name field
(its display key), at most ``forms_per_strategy`` forms per strategy:

* ``exact``    — ``name == keyword``;
* ``alias``    — the keyword is (or nearly is) a recorded other name of an instance: the type has an alias
  property (:func:`alias_field`: ``aliases`` / ``alias`` / ``other_names``, a list or string) and
  ``alias contain keyword`` finds it (list: membership; string: one of its 、/,/; separated items), or ``match``
  on the alias property (when declared) finds an alias equal to it but for case and punctuation, or one that
  contains it or is contained in it with :func:`similarity` ≥ :data:`ALIAS_SIMILARITY` (眼震有 ~ 眼震).
  The form is the instance's stored *name* (脑溢血 -> 脑出血); ``similarity`` is the keyword's closeness to the
  alias (1 when equal). Ranked right after exact forms;
* ``standard_name`` / ``abbreviation`` / ``segments`` / ``ngram`` — other names the data does not record
  (``config.other_names``; :func:`other_name_forms`, :mod:`kgrag.search.other_names`): with ``use_llm`` and an
  LLM configured, its standard name for the keyword when that is a stored name or maps to one; learned contractions
  and compositions; learned segment substitutions and segments in order; one substituted character. At most
  ``forms_per_strategy`` of them, best similarity first; ``standard_name`` and ``abbreviation`` forms ranked right
  after alias forms, ``segments`` and ``ngram`` forms after the first :data:`LATE_AFTER_FUZZY` fuzzy forms (on the
  held-out aliases of ``bench/aliases.py`` a one-character or segment variant of a short name was more often
  another disease than the embedding neighbours);
* ``contains`` — ``name contain keyword`` (上气道梗阻 -> 上、下气道梗阻), the closest forms first;
* ``fuzzy``    — character-level variants: ``match`` candidates (jieba tokens + CJK bigrams, so 上气道阻塞 and
  上呼吸道梗阻 share tokens with 上气道梗阻) and embedding neighbours (``knn``, when the field has vectors),
  kept when their :func:`similarity` is at least ``min_fuzzy_similarity`` — or, for a ``knn`` neighbour, when its
  cosine is at least ``min_knn_cosine`` (a synonym the characters do not show: vectors; its ``similarity`` is
  then the cosine) — and ranked by similarity + :data:`KNN_WEIGHT` × cosine (0 for a ``match``-only candidate):
  the character similarity leads, the vectors break near-ties (domain FastText gives names sharing a character
  cosines near 1, so the cosine alone is a poor ranking).

With ``skip_when_exact`` (spec §6.1.4) an exact hit ends the search for that type. A keyword's confidence for a
type: exact 0.95; alias or standard_name 0.9; otherwise ``0.55 + 0.35 × best similarity`` for contains and
abbreviation, ``0.8 × best similarity`` for fuzzy, segments and ngram; +0.05 when concept recall selected the type, +0.1 when the
question's relation words name a relation whose other end is this type (X有哪些症状: X is the source of
has_symptom) — capped at 1. When the lexicon restricts the search to the types where the keyword is a stored name
(``known_types``), types where it is a recorded alias are searched too.

    forms = keyword_forms(store, "medical", "脑溢血", disease_type, "name", ContextConfig())
    # [StorageForm(form='脑出血', match_type='alias', similarity=1.0, …), …]
"""

from __future__ import annotations

import dataclasses
import functools
import re
from difflib import SequenceMatcher

from kgrag.network.schema.conditions import is_list_type
from kgrag.network.schema.model import TEXT_TYPES, Condition, InstanceHit, ObjectType
from kgrag.network.service import ContextStore
from kgrag.search.context_models import ContextConfig, KeywordMapping, StorageForm
from kgrag.search.other_names import OtherNameIndex, other_name_index
from kgrag.search.standard_name import standard_names, validated
from kgrag.text import fold_punct

__all__ = ["ALIAS_FIELDS", "ALIAS_SIMILARITY", "EARLY_OTHER_TYPES", "KNN_WEIGHT", "LATE_AFTER_FUZZY",
           "OTHER_NAME_TYPES", "TypeHits", "alias_field", "alias_forms", "prefetch_hits",
           "alias_values", "keyword_forms", "map_keyword", "name_field", "other_name_forms", "similarity"]

#: property names holding an instance's other names, in order of preference
ALIAS_FIELDS = ("aliases", "alias", "other_names")
#: a recorded alias at least this close to the keyword (:func:`similarity`) counts as the keyword
ALIAS_SIMILARITY = 0.8
#: weight of a knn neighbour's cosine in the fuzzy ranking (character similarity + weight × cosine)
KNN_WEIGHT = 0.5
_ALIAS_SPLIT = re.compile(r"[、,，;；/|]")
#: match types of the other-name strategies (:mod:`kgrag.search.other_names`)
OTHER_NAME_TYPES = frozenset({"standard_name", "abbreviation", "segments", "ngram"})
#: other-name types ranked right after alias forms (the rest: after the first fuzzy forms)
EARLY_OTHER_TYPES = frozenset({"standard_name", "abbreviation"})
#: fuzzy forms ranked before the segments / ngram forms (a one-character or segment variant of a short name is
#: often another thing: the embedding neighbours come first)
LATE_AFTER_FUZZY = 2


@functools.lru_cache(maxsize=16384)  # a question's keyword meets the same names in several strategies and types
def similarity(keyword: str, form: str) -> float:
    """Character-level closeness in [0, 1]: the larger of the difflib ratio and the Dice coefficient of
    character bigrams, both on lower-cased text without punctuation (:func:`kgrag.text.fold_punct`: 上下气道梗阻 ~
    上、下气道梗阻)."""
    a, b = fold_punct(keyword), fold_punct(form)
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


def alias_field(ot: ObjectType) -> str | None:
    """The property holding an instance's other names: the first of :data:`ALIAS_FIELDS` that the type has, of a
    list or text type; None when it has none."""
    props = {p.name: p for p in ot.data_properties}
    for name in ALIAS_FIELDS:
        prop = props.get(name)
        if prop is not None and (is_list_type(prop.type) or prop.type.split("(")[0].strip().lower() in TEXT_TYPES):
            return name
    return None


def alias_values(value: object) -> list[str]:
    """The other names an alias property value holds: a list's items, or a string's 、/,/;-separated parts
    (stripped, blanks dropped)."""
    if isinstance(value, list | tuple):
        items = [str(v) for v in value if v is not None]
    else:
        items = _ALIAS_SPLIT.split(str(value)) if value else []
    return [a.strip() for a in items if a.strip()]


def _aliases_of(hit: InstanceHit, field: str) -> list[str]:
    return alias_values(hit.properties.get(field))


def _alias_closeness(keyword: str, alias: str) -> float:
    """1 when equal ignoring case and punctuation (Hamman-Rich综合征 ~ HammanRich综合征); :func:`similarity` when
    one contains the other and that is at least :data:`ALIAS_SIMILARITY` (眼震有 ~ 眼震: a word left attached);
    else 0 — a changed character (甲型 / 乙型) is another name, not the same alias."""
    a, b = fold_punct(keyword), fold_punct(alias)
    if not a or not b:
        return 0.0
    if a == b:
        return 1.0
    if a in b or b in a:
        closeness = similarity(keyword, alias)
        return closeness if closeness >= ALIAS_SIMILARITY else 0.0
    return 0.0


def alias_forms(store: ContextStore, kn_id: str, keyword: str, ot: ObjectType, field: str,
                config: ContextConfig) -> list[StorageForm]:
    """Forms of instances of ``ot`` that record ``keyword`` (or a near-equal name) as an alias: the stored name
    (``field``) with ``match_type="alias"``, closest alias first (see the module docstring). [] when the type
    has no alias property."""
    afield = alias_field(ot)
    if afield is None:
        return []
    k = config.forms_per_strategy
    hits = store.query_instances(kn_id, ot.id, Condition(operation="contain", field=afield, value=keyword),
                                 max(k * 4, 20), sort_by_score=False)
    ops = next((p.condition_operations for p in ot.data_properties if p.name == afield), [])
    if "match" in ops:
        hits += store.query_instances(kn_id, ot.id, Condition(operation="match", field=afield, value=keyword,
                                                              limit=max(k * 6, 30)), max(k * 6, 30))
    best: dict[str, tuple[float, InstanceHit]] = {}
    for hit in hits:
        closeness = max((_alias_closeness(keyword, a) for a in _aliases_of(hit, afield)), default=0.0)
        if closeness > 0 and closeness > best.get(hit.id, (0.0, hit))[0]:
            best[hit.id] = (closeness, hit)
    forms = [_form(hit, field, "alias", keyword).model_copy(update={"similarity": closeness})
             for closeness, hit in best.values()]
    forms.sort(key=lambda f: (-f.similarity, len(f.form), f.form))
    return forms[:k]


def _form(hit: InstanceHit, field: str, match_type: str, keyword: str) -> StorageForm:
    name = str(hit.properties.get(field, hit.id))
    return StorageForm(form=name, match_type=match_type, sample_instance_id=hit.id, sample_instance_name=name,
                       similarity=1.0 if match_type == "exact" else similarity(keyword, name))


def other_name_forms(store: ContextStore, kn_id: str, keyword: str, ot: ObjectType, field: str,
                     config: ContextConfig, use_llm: bool = False) -> list[StorageForm]:
    """Forms of names ``keyword`` may stand for though no instance records it: with ``use_llm`` (and an LLM
    configured) the LLM's standard names that are stored names or map to one (``standard_name``, first), then
    :meth:`kgrag.search.other_names.OtherNameIndex.lookup`'s (``abbreviation`` / ``segments`` / ``ngram``), at
    most ``forms_per_strategy`` of each; [] when the type has no other-name index."""
    index = other_name_index(store, kn_id, ot, field, alias_field(ot), alias_values)
    if index is None:
        return []
    k = config.forms_per_strategy

    def form(position: int, match_type: str, sim: float) -> StorageForm:
        name = index.names[position]
        return StorageForm(form=name, match_type=match_type, sample_instance_id=index.ids[position],  # type: ignore[arg-type]
                           sample_instance_name=name, similarity=sim)

    forms: list[StorageForm] = []
    if use_llm:
        network = store.get_network(kn_id)
        answers = standard_names(keyword, network.name or network.kn_id)  # one request per keyword, every type
        if answers:
            resolve = lambda answer: _resolve(store, kn_id, answer, ot, field, config, index)  # noqa: E731
            forms += [form(pos, "standard_name", 0.95) for _, pos in validated(answers, resolve)][:k]
    seen = {f.sample_instance_id for f in forms}
    forms += [form(o.position, o.match_type, o.similarity) for o in index.lookup(keyword, k * 2)
              if index.ids[o.position] not in seen][:k]
    return forms


def _resolve(store: ContextStore, kn_id: str, answer: str, ot: ObjectType, field: str, config: ContextConfig,
             index: OtherNameIndex) -> list[int]:
    """Positions of the stored names an LLM answer names: the name itself, else the instance recording it as an
    alias, else the other-name forms' best hit."""
    exact = index.positions(answer)
    if exact:
        return exact
    aliased = [f.sample_instance_id for f in alias_forms(store, kn_id, answer, ot, field, config)
               if f.similarity == 1.0]
    if aliased:
        return [p for i in aliased[:1] for p in index.positions_of_id(i)]
    best = index.lookup(answer, 1)
    return [best[0].position] if best else []


@dataclasses.dataclass
class TypeHits:
    """What the store's condition queries found for one keyword in one type (read for many types at once by
    :func:`prefetch_hits`): ``exact`` (``name == keyword``), ``contains`` and the ``match`` / ``knn`` pools —
    the latter three empty when ``exact`` ends the type's search."""

    exact: list[InstanceHit]
    contains: list[InstanceHit] = dataclasses.field(default_factory=list)
    fuzzy: dict[str, list[InstanceHit]] = dataclasses.field(default_factory=dict)


def _contains_limit(config: ContextConfig) -> int:
    return max(config.forms_per_strategy * 10, 50)


def _fuzzy_ops(ot: ObjectType, name: str) -> list[str]:
    ops = next((p.condition_operations for p in ot.data_properties if p.name == name), [])
    return [op for op in ("match", "knn") if op in ops]


def prefetch_hits(store: ContextStore, kn_id: str, keyword: str, fields: dict[str, tuple[ObjectType, str]],
                  config: ContextConfig) -> dict[str, TypeHits]:
    """:class:`TypeHits` of every type in ``fields`` (``{type id: (type, name field)}``) with one statement per
    strategy across the types: the store's batched reads (:meth:`ContextStore.query_instances_by_type` for
    ``==`` and ``contain``, :meth:`ContextStore.match_scores_many` / :meth:`ContextStore.knn_scores` then
    :meth:`ContextStore.scored_instances_by_type` for the ``match`` / ``knn`` pools), each equal to the type's own
    ``query_instances``. A network of 1,200 types answered a keyword with ~3,700 statements one type at a time."""
    k = config.forms_per_strategy
    exact = store.query_instances_by_type(
        kn_id, {tid: Condition(operation="==", field=f, value=keyword) for tid, (_, f) in fields.items()}, k)
    found = {tid: TypeHits(exact[tid]) for tid in fields}
    rest = {tid: ot_field for tid, ot_field in fields.items() if not (exact[tid] and config.skip_when_exact)}
    contains = store.query_instances_by_type(kn_id, {tid: Condition(operation="contain", field=f, value=keyword)
                                                     for tid, (_, f) in rest.items()}, _contains_limit(config))
    pool = max(k * 6, 30)
    match = store.match_scores_many(kn_id, "instance", {tid: (tid, [f]) for tid, (ot, f) in rest.items()
                                                        if "match" in _fuzzy_ops(ot, f)}, keyword, pool)
    neighbours = {tid: store.knn_scores(kn_id, "instance", tid, [f], keyword, pool) for tid, (ot, f) in rest.items()
                  if "knn" in _fuzzy_ops(ot, f)}
    match_hits = store.scored_instances_by_type(kn_id, match, pool)
    knn_hits = store.scored_instances_by_type(kn_id, neighbours, pool)
    for tid in rest:
        hits = found[tid]
        hits.contains = contains[tid]
        hits.fuzzy = {op: pool_hits[tid] for op, pool_hits in (("match", match_hits), ("knn", knn_hits))
                      if tid in pool_hits}
    return found


def keyword_forms(store: ContextStore, kn_id: str, keyword: str, ot: ObjectType, field: str,
                  config: ContextConfig, use_llm: bool = False, found: TypeHits | None = None) -> list[StorageForm]:
    """Exact, alias, early other-name, contains, then fuzzy forms with the late other-name forms after the first
    :data:`LATE_AFTER_FUZZY` (see the module docstring). ``found``: the type's condition-query results when
    :func:`prefetch_hits` read them already for many types (else it reads them for this one)."""
    k = config.forms_per_strategy
    if found is None:
        found = prefetch_hits(store, kn_id, keyword, {ot.id: (ot, field)}, config)[ot.id]
    forms = [_form(h, field, "exact", keyword) for h in found.exact]
    if forms and config.skip_when_exact:
        return forms
    seen = {f.sample_instance_id for f in forms}
    aliases = [f for f in alias_forms(store, kn_id, keyword, ot, field, config) if f.sample_instance_id not in seen]
    forms += aliases
    seen |= {f.sample_instance_id for f in aliases}
    late: list[StorageForm] = []  # segments / ngram forms: after the best fuzzy forms
    if config.other_names:
        others = [f for f in other_name_forms(store, kn_id, keyword, ot, field, config, use_llm and not forms)
                  if f.sample_instance_id not in seen]
        forms += [f for f in others if f.match_type in EARLY_OTHER_TYPES]
        late = [f for f in others if f.match_type not in EARLY_OTHER_TYPES]
        seen |= {f.sample_instance_id for f in others}
    contains = [_form(h, field, "contains", keyword) for h in found.contains if h.id not in seen]
    contains.sort(key=lambda f: (-f.similarity, len(f.form), f.form))
    forms += contains[:k]
    seen |= {f.sample_instance_id for f in contains[:k]}
    # match and knn separately, so a knn neighbour's cosine is known (an ``or`` would mix the two scores)
    candidates: dict[str, tuple[float, StorageForm]] = {}  # id -> (rank, form)
    for op in _fuzzy_ops(ot, field):
        for h in found.fuzzy.get(op, []):
            if h.id in seen:
                continue
            form = _form(h, field, "fuzzy", keyword)
            cosine = h.score if op == "knn" and h.score is not None else 0.0
            if form.similarity < config.min_fuzzy_similarity:
                if cosine < config.min_knn_cosine:
                    continue
                form = form.model_copy(update={"similarity": round(cosine, 4)})  # kept by its vector alone
            rank = similarity(keyword, form.form) + KNN_WEIGHT * cosine
            if h.id not in candidates or rank > candidates[h.id][0]:
                candidates[h.id] = (rank, form)
    fuzzy = [f for _, f in sorted(candidates.values(), key=lambda rf: (-rf[0], len(rf[1].form), rf[1].form))][:k]
    return forms + fuzzy[:LATE_AFTER_FUZZY] + late + fuzzy[LATE_AFTER_FUZZY:]


def map_keyword(store: ContextStore, kn_id: str, keyword: str, object_types: list[ObjectType],
                config: ContextConfig, recalled: set[str], related: set[str],
                known_types: set[str] | None = None, use_llm: bool = False) -> list[KeywordMapping]:
    """The keyword's mappings, best first, at most ``max_types_per_keyword``; a keyword found nowhere gives one
    mapping with ``object_type_id=None`` and confidence 0. ``known_types``: types where the keyword is a stored
    name (from the lexicon) — searched first; when it is given and not empty only those are searched."""
    candidates = [ot for ot in object_types if name_field(ot) is not None]
    if known_types:
        # also the types where the keyword is a recorded alias (眼震: a stored Symptom, an alias of 眼球震颤)
        aliased = {ot.id for ot in candidates if ot.id not in known_types and (afield := alias_field(ot))
                   and store.query_instances(kn_id, ot.id, Condition(operation="contain", field=afield,
                                                                     value=keyword), 1, sort_by_score=False)}
        candidates = [ot for ot in candidates if ot.id in known_types or ot.id in aliased]
    fields = {ot.id: (ot, name_field(ot) or "") for ot in candidates}
    prefetched = prefetch_hits(store, kn_id, keyword, fields, config)
    mappings: list[KeywordMapping] = []
    for ot in candidates:
        field = fields[ot.id][1]
        forms = keyword_forms(store, kn_id, keyword, ot, field, config, use_llm, prefetched[ot.id])
        if not forms:
            continue
        best = max(f.similarity for f in forms)
        kinds = {f.match_type for f in forms}
        confidence = (0.95 if "exact" in kinds else 0.9 if kinds & {"alias", "standard_name"} else 0.55 + 0.35 * best
                      if kinds & {"contains", "abbreviation"} else 0.8 * best)
        confidence += 0.05 * (ot.id in recalled) + 0.1 * (ot.id in related)
        mappings.append(KeywordMapping(keyword=keyword, object_type_id=ot.id, primary_field=field,
                                       match_fields=[field], storage_forms=forms,
                                       match_confidence=round(min(confidence, 1.0), 4)))
    mappings.sort(key=lambda m: (-m.match_confidence, m.object_type_id or ""))
    if not mappings:
        return [KeywordMapping(keyword=keyword, match_confidence=0.0)]
    return mappings[: config.max_types_per_keyword]
