"""Pure scoring / ordering rules of kn_search concept recall (spec kn-search.md, the kn_search API
specification of concept and instance recall, §3.2.3–§3.2.5).

Every function here is free of I/O, so each rule is testable without a store or a model.

Text comparisons (``==`` / contains) are made on stripped, casefolded strings (:func:`kgrag.text.fold_case`),
so ``"Drug"`` matches the query ``"drug"``; Chinese text is unaffected. An empty name or comment never matches
(otherwise "query contains ''" would always score).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kgrag.network.schema.model import ObjectType, RelationType
from kgrag.rank.rerank import Reranker
from kgrag.text import fold_case

log = logging.getLogger(__name__)

__all__ = [
    "RankedRelation",
    "calculate_relevance_score",
    "name_match_score",
    "object_type_rerank_scores",
    "prune_properties",
    "rank_relations",
    "relation_document",
    "select_object_types",
]

FULLWIDTH_COMMA = "，"


def calculate_relevance_score(query: str, name: str, comment: str = "") -> float:
    """The spec's ``calculateRelevanceScore`` (rerank fallback, property pruning).

    Name part (exclusive, first that holds): ``name == query`` +1.0, else name contains query +0.5, else
    query contains name +0.3. Comment part (added): comment contains query +0.2. Range ``[0, 1.2]``.
    """
    q, n, c = fold_case(query), fold_case(name), fold_case(comment)
    if not q:
        return 0.0
    score = 0.0
    if n:
        if n == q:
            score += 1.0
        elif q in n:
            score += 0.5
        elif n in q:
            score += 0.3
    if c and q in c:
        score += 0.2
    return score


def name_match_score(query: str, name: str, exact_score: float) -> float:
    """Instance name scoring (scoreNodes): ``exact_score`` when equal, 0.5 when the name contains the query,
    0.3 when the query contains the name, else 0."""
    q, n = fold_case(query), fold_case(name)
    if not q or not n:
        return 0.0
    if n == q:
        return exact_score
    if q in n:
        return 0.5
    if n in q:
        return 0.3
    return 0.0


def relation_document(source_name: str, relation_name: str, comment: str, target_name: str) -> str:
    """The rerank document of one relation type: ``"{source} {relation}，{comment} {target}"``.

    The full-width comma appears only when both the relation name and the comment are non-empty; empty
    parts are skipped (no double spaces), e.g. ``"药品 治疗 疾病"`` or ``"药品 治疗，用于治疗 疾病"``.
    """
    middle = FULLWIDTH_COMMA.join(part for part in (relation_name.strip(), comment.strip()) if part)
    return " ".join(part for part in (source_name.strip(), middle, target_name.strip()) if part)


@dataclass(frozen=True)
class RankedRelation:
    relation: RelationType
    score: float | None  # rerank (or fallback) score; None when ranking was off


def rank_relations(
    query: str,
    relations: Sequence[RelationType],
    object_type_names: Mapping[str, str],
    top_k: int,
    enable_rerank: bool,
    reranker: Reranker | None,
) -> tuple[list[RankedRelation], list[RankedRelation]]:
    """Order relation types for ``query`` (§3.2.3); returns ``(top_k selected, every relation ranked)``.

    ``enable_rerank=False`` (or no reranker): current order, no scores. Otherwise the reranker scores
    :func:`relation_document` of each relation and they are sorted by score descending (ties keep the
    current order); if the reranker raises (or answers with bad indices), the fallback sorts by
    :func:`calculate_relevance_score` of ``(query, name, comment)``. The full ranked list is returned too so
    that object types can inherit scores from relations outside the top k (:func:`object_type_rerank_scores`).
    """
    relations = list(relations)
    if not relations:
        return [], []
    if not enable_rerank or reranker is None:
        ranked = [RankedRelation(rel, None) for rel in relations]
        return ranked[:top_k], ranked
    docs = [
        relation_document(
            object_type_names.get(rel.source_object_type_id, ""),
            rel.name,
            rel.comment,
            object_type_names.get(rel.target_object_type_id, ""),
        )
        for rel in relations
    ]
    try:
        pairs = reranker.rerank(query, docs)
        seen: set[int] = set()
        ranked = []
        for index, score in pairs:
            index = int(index)
            if not 0 <= index < len(relations) or index in seen:
                raise ValueError(f"reranker returned an invalid index {index} for {len(relations)} documents")
            seen.add(index)
            ranked.append(RankedRelation(relations[index], float(score)))
        # documents the reranker left out go last, in their current order, unscored
        ranked.extend(RankedRelation(rel, None) for i, rel in enumerate(relations) if i not in seen)
    except Exception as exc:  # noqa: BLE001 - any rerank failure falls back (spec §3.2.3)
        log.warning("relation rerank failed (%s: %s); falling back to name/comment matching",
                    type(exc).__name__, exc)
        scored = [(calculate_relevance_score(query, rel.name, rel.comment), i) for i, rel in enumerate(relations)]
        scored.sort(key=lambda pair: (-pair[0], pair[1]))
        ranked = [RankedRelation(relations[i], score) for score, i in scored]
    return ranked[:top_k], ranked


def object_type_rerank_scores(ranked: Sequence[RankedRelation]) -> dict[str, float]:
    """An object type's rerank score: the highest score among ranked relations it is an endpoint of."""
    scores: dict[str, float] = {}
    for item in ranked:
        if item.score is None:
            continue
        for ot_id in (item.relation.source_object_type_id, item.relation.target_object_type_id):
            if ot_id not in scores or item.score > scores[ot_id]:
                scores[ot_id] = item.score
    return scores


def _by_score(object_types: Sequence[ObjectType], scores: Mapping[str, float]) -> list[ObjectType]:
    """Scored types by score descending (ties: current order), then unscored ones in current order."""
    scored = [(scores[ot.id], i) for i, ot in enumerate(object_types) if ot.id in scores]
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    unscored = [ot for ot in object_types if ot.id not in scores]
    return [object_types[i] for _, i in scored] + unscored


def select_object_types(
    object_types: Sequence[ObjectType],
    relations: Sequence[RelationType],
    top_k: int,
    scores: Mapping[str, float],
) -> list[ObjectType]:
    """Object-type selection (§3.2.4).

    With relations: ``filtered`` = the object types (in ``object_types`` order) that are a source or target of
    one of ``relations``; cap = ``max(2 * len(relations), top_k)``; when ``len(filtered) >= cap`` all of
    ``filtered`` is returned (the spec returns it as is, uncut); else it is topped up to the cap from the
    other types, those with a score (``scores``: coarse / rerank) first by score descending, then unscored
    ones in network order. Without relations: every object type by score descending (unscored last),
    cut to ``2 * top_k``.
    """
    object_types = list(object_types)
    if not relations:
        return _by_score(object_types, scores)[: 2 * top_k]
    endpoints = {rel.source_object_type_id for rel in relations} | {rel.target_object_type_id for rel in relations}
    filtered = [ot for ot in object_types if ot.id in endpoints]
    cap = max(2 * len(relations), top_k)
    if len(filtered) >= cap:
        return filtered
    rest = [ot for ot in object_types if ot.id not in endpoints]
    return filtered + _by_score(rest, scores)[: cap - len(filtered)]


def _property_score(query: str, name: str, display_name: str, comment: str) -> float:
    return max(calculate_relevance_score(query, name, comment), calculate_relevance_score(query, display_name, comment))


def prune_properties(
    object_types: Sequence[ObjectType], query: str, per_object_top_k: int, global_top_k: int
) -> dict[str, set[tuple[str, str]]]:
    """Which properties survive property pruning (§3.2.5, ``enable_property_brief``).

    Each data / logic property is scored by :func:`calculate_relevance_score` of ``(query, name, comment)``
    (the better of its name and display name). Per object type the ``per_object_top_k`` best are kept (ties:
    declaration order, data properties before logic ones); then over all object types the ``global_top_k``
    best of those (ties: object-type order, then declaration order). Returns ``{object_type_id: {(kind,
    name)}}`` with ``kind`` ``"data"`` or ``"logic"``; callers keep surviving properties in declaration order.
    """
    candidates: list[tuple[float, int, int, str, str, str]] = []
    for t_index, ot in enumerate(object_types):
        props = [("data", p.name, p.display_name, p.comment) for p in ot.data_properties]
        props += [("logic", p.name, p.display_name, p.comment) for p in ot.logic_properties]
        scored = [(_property_score(query, name, disp, comment), p_index, kind, name)
                  for p_index, (kind, name, disp, comment) in enumerate(props)]
        scored.sort(key=lambda item: (-item[0], item[1]))
        for score, p_index, kind, name in scored[: max(per_object_top_k, 0)]:
            candidates.append((score, t_index, p_index, ot.id, kind, name))
    candidates.sort(key=lambda item: (-item[0], item[1], item[2]))
    kept: dict[str, set[tuple[str, str]]] = {ot.id: set() for ot in object_types}
    for _score, _t, _p, ot_id, kind, name in candidates[: max(global_top_k, 0)]:
        kept[ot_id].add((kind, name))
    return kept
