"""Semantic instance recall (spec kn-search.md, the kn_search API specification of concept and instance
recall, §3.3): searchable fields, conditions, scoring, filters.

The helpers are pure; :func:`recall_instances` is the only one that calls the :class:`OntologyService`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kgrag.network.schema.model import TEXT_TYPES, Condition, InstanceHit, ObjectType
from kgrag.network.service import OntologyService
from kgrag.search.kn_models import KnSearchNode, PropertyFilterConfig, SemanticInstanceRetrievalConfig
from kgrag.search.relevance import name_match_score

__all__ = [
    "SearchableField",
    "build_instance_condition",
    "filter_node_properties",
    "global_score_filter",
    "hit_to_node",
    "rank_type_nodes",
    "recall_instances",
    "score_nodes",
    "searchable_fields",
    "truncate_properties",
]

ELLIPSIS = "..."


@dataclass(frozen=True)
class SearchableField:
    name: str
    knn: bool
    match: bool
    equal: bool


def _base_type(type_name: str) -> str:
    """``"VARCHAR(255)"`` -> ``"varchar"``; ``"string[]"`` -> ``"string"``."""
    base = (type_name or "").strip().lower()
    for stop in ("(", "["):
        base = base.split(stop, 1)[0]
    return base.strip()


def searchable_fields(object_type: ObjectType) -> list[SearchableField]:
    """Text-typed data properties declaring ``knn``, ``match`` or ``equal`` (``==`` counts as ``equal``).

    Text types are :data:`kgrag.network.schema.model.TEXT_TYPES` (text, string, varchar, char, keyword), compared
    case-insensitively on the base type (``varchar(64)`` is varchar). The display-key field comes first, the
    rest in declaration order, so it is never the one cut by ``max_semantic_sub_conditions``.
    """
    fields = []
    for prop in object_type.data_properties:
        if _base_type(prop.type) not in TEXT_TYPES:
            continue
        ops = {op.strip().lower() for op in prop.condition_operations}
        knn, match, equal = "knn" in ops, "match" in ops, bool(ops & {"equal", "=="})
        if knn or match or equal:
            fields.append(SearchableField(prop.name, knn, match, equal))
    fields.sort(key=lambda f: f.name != object_type.display_key)  # stable: display key first
    return fields


def build_instance_condition(
    fields: Sequence[SearchableField], query: str, per_type_instance_limit: int, max_sub_conditions: int
) -> Condition | None:
    """``OR`` of, per field in order: ``knn(field, query)`` (limit ``per_type_instance_limit``),
    ``field == query``, ``match(field, query)`` — at most ``max_sub_conditions`` in all; None when empty."""
    subs: list[Condition] = []
    for f in fields:
        if f.knn:
            subs.append(Condition(operation="knn", field=f.name, value=query, limit=max(per_type_instance_limit, 1)))
        if f.equal:
            subs.append(Condition(operation="==", field=f.name, value=query))
        if f.match:
            subs.append(Condition(operation="match", field=f.name, value=query))
    subs = subs[: max(max_sub_conditions, 0)]
    if not subs:
        return None
    return Condition(operation="or", sub_conditions=subs)


def hit_to_node(hit: InstanceHit, object_type: ObjectType) -> KnSearchNode:
    """A result node: ``instance_name`` is the display-key value (the instance id when that is missing or
    empty); ``unique_identities`` maps each primary key to its value (``{"id": hit.id}`` when the type
    declares none); ``score`` is the hit's own score, or 0 until :func:`score_nodes` runs."""
    props = dict(hit.properties)
    name = props.get(object_type.display_key)
    instance_name = str(name) if name not in (None, "") else hit.id
    if object_type.primary_keys:
        identities = {key: props.get(key) for key in object_type.primary_keys}
    else:
        identities = {"id": hit.id}
    return KnSearchNode(
        object_type_id=object_type.id,
        object_type_name=object_type.name,
        instance_name=instance_name,
        unique_identities=identities,
        properties=props,
        score=float(hit.score) if hit.score is not None else 0.0,
    )


def score_nodes(
    nodes: Sequence[KnSearchNode], hit_scores: Sequence[float | None], query: str, exact_name_match_score: float
) -> list[KnSearchNode]:
    """scoreNodes: a node whose hit carried a score keeps it; otherwise instance name == query ->
    ``exact_name_match_score``, name contains query -> 0.5, query contains name -> 0.3, else 0."""
    out = []
    for node, hit_score in zip(nodes, hit_scores, strict=True):
        score = float(hit_score) if hit_score is not None else name_match_score(
            query, node.instance_name, exact_name_match_score
        )
        out.append(node.model_copy(update={"score": score}))
    return out


def rank_type_nodes(nodes: Sequence[KnSearchNode], per_type_instance_limit: int, min_direct_relevance: float) -> list[KnSearchNode]:
    """One type's nodes: score descending (ties keep query order), first ``per_type_instance_limit``, then
    those with ``score < min_direct_relevance`` dropped."""
    ordered = sorted(nodes, key=lambda node: -node.score)  # sorted() is stable
    return [node for node in ordered[: max(per_type_instance_limit, 0)] if node.score >= min_direct_relevance]


def global_score_filter(nodes: Sequence[KnSearchNode], enabled: bool, ratio: float) -> list[KnSearchNode]:
    """§3.3.4: when enabled, ``max_score > 0`` and nodes exist, keep ``score >= max_score * ratio``; if that
    leaves nothing, keep the single best node (the first of the best on ties)."""
    nodes = list(nodes)
    if not enabled or not nodes:
        return nodes
    max_score = max(node.score for node in nodes)
    if max_score <= 0:
        return nodes
    threshold = max_score * ratio
    kept = [node for node in nodes if node.score >= threshold]
    if not kept:
        kept = [next(node for node in nodes if node.score == max_score)]
    return kept


def truncate_properties(properties: dict[str, Any], max_properties: int, max_value_length: int) -> dict[str, Any]:
    """§3.3.5: more than ``max_properties`` keys -> the first ``max_properties`` by sorted key name (kept
    keys in that sorted order); string values longer than ``max_value_length`` characters -> the first
    ``max_value_length`` characters plus ``"..."``. Non-string values are untouched."""
    if len(properties) > max_properties:
        properties = {key: properties[key] for key in sorted(properties, key=str)[: max(max_properties, 0)]}
    out = {}
    for key, value in properties.items():
        if isinstance(value, str) and len(value) > max_value_length:
            value = value[:max_value_length] + ELLIPSIS
        out[key] = value
    return out


def filter_node_properties(nodes: Sequence[KnSearchNode], config: PropertyFilterConfig) -> list[KnSearchNode]:
    if not config.enable_property_filter:
        return list(nodes)
    return [
        node.model_copy(update={"properties": truncate_properties(
            node.properties, config.max_properties_per_instance, config.max_property_value_length)})
        for node in nodes
    ]


def _condition(ot: ObjectType, query: str, config: SemanticInstanceRetrievalConfig) -> Condition | None:
    return build_instance_condition(
        searchable_fields(ot), query, config.per_type_instance_limit, config.max_semantic_sub_conditions
    )


def _recall_type(service: OntologyService, kn_id: str, query: str, ot: ObjectType,
                 config: SemanticInstanceRetrievalConfig, condition: Condition | None) -> list[KnSearchNode]:
    """One object type: condition → QueryObjectInstances → nodes → scoreNodes → sort/limit/min relevance."""
    if condition is None:
        return []  # no semantically searchable field: skip the type
    # only the best ``per_type_instance_limit`` scored hits can be among the type's nodes (the rest of the first
    # ``initial_candidate_count`` rank below them), so only their rows are read; the unscored ones stay
    hits = service.query_instances(kn_id, ot.id, condition, config.initial_candidate_count,
                                   scored_limit=config.per_type_instance_limit)
    nodes = [hit_to_node(hit, ot) for hit in hits]
    nodes = score_nodes(nodes, [hit.score for hit in hits], query, config.exact_name_match_score)
    return rank_type_nodes(nodes, config.per_type_instance_limit, config.min_direct_relevance)


def recall_instances(
    service: OntologyService,
    kn_id: str,
    query: str,
    object_types: Sequence[ObjectType],
    config: SemanticInstanceRetrievalConfig,
    property_filter: PropertyFilterConfig,
) -> list[KnSearchNode]:
    """§3.3 end to end over ``object_types`` (the concept-recall selection, full schema), their nodes in
    ``object_types`` order. Raises whatever the service raises; the caller turns that into the failure
    message (rule 4). (The types run one after another: threads were measured slower on 2 cores — the
    GIL hand-offs around each short SQLite call cost more than the overlap gains; only a big type's ANN
    search, which holds no GIL, runs beside the others, in the prefetch.)"""
    conditions = [(ot, _condition(ot, query, config)) for ot in object_types]
    # every type's match leaves in one text-index read (the same scores as one read per type)
    matches = [(ot.id, [leaf.field or ""]) for ot, cond in conditions if cond is not None
               for leaf in cond.sub_conditions if leaf.operation == "match" and not leaf.limit]
    # and their knn leaves searched side by side (a big type's ANN search lets other threads run)
    knn = [(ot.id, [leaf.field or ""], leaf.limit or config.initial_candidate_count) for ot, cond in conditions
           if cond is not None for leaf in cond.sub_conditions if leaf.operation == "knn"]
    with service.prefetched_matches(kn_id, "instance", matches, query, config.initial_candidate_count, knn):
        all_nodes = [node for ot, cond in conditions
                     for node in _recall_type(service, kn_id, query, ot, config, cond)]
    all_nodes = global_score_filter(
        all_nodes, config.enable_global_final_score_ratio_filter, config.global_final_score_ratio
    )
    return filter_node_properties(all_nodes, property_filter)
