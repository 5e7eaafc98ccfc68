"""Concept recall (spec kn-search.md, the kn_search API specification of concept and instance recall, §3.2):
network detail → coarse recall → relation ranking → object-type selection → response conversion (schema
brief, property pruning, sample data, action types)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kgrag.network.schema.model import KnowledgeNetwork, ObjectType, RelationType
from kgrag.network.service import OntologyService
from kgrag.rank.rerank import Reranker
from kgrag.search.kn_models import (
    ConceptRetrievalConfig,
    KnSearchActionType,
    KnSearchDataProperty,
    KnSearchLogicProperty,
    KnSearchObjectType,
    KnSearchRelationType,
)
from kgrag.search.relevance import (
    object_type_rerank_scores,
    prune_properties,
    rank_relations,
    select_object_types,
)

log = logging.getLogger(__name__)

__all__ = ["ConceptResult", "CoarseResult", "coarse_recall", "convert_object_type", "recall_concepts"]


@dataclass
class CoarseResult:
    """What coarse recall left of the schema, and the scores it gave object types."""

    object_types: list[ObjectType]
    relation_types: list[RelationType]
    object_scores: dict[str, float] = field(default_factory=dict)
    applied: bool = False  # False: skipped, failed or empty -> the full schema


@dataclass
class ConceptResult:
    network: KnowledgeNetwork
    object_types: list[ObjectType]  # selected, full schema (instance recall searches these)
    relation_types: list[RelationType]  # selected top k, ranked
    relation_scores: list[float | None]
    object_scores: dict[str, float]
    coarse_applied: bool
    out_object_types: list[KnSearchObjectType]
    out_relation_types: list[KnSearchRelationType]
    out_action_types: list[KnSearchActionType]


def coarse_recall(
    service: OntologyService, network: KnowledgeNetwork, query: str, config: ConceptRetrievalConfig
) -> CoarseResult:
    """§3.2.2. Runs only when ``enable_coarse_recall`` and the network has at least
    ``coarse_min_relation_count`` relation types. Keeps object types that were coarse-recalled or are an
    endpoint of a coarse-recalled relation type, and the coarse-recalled relation types (network order both).
    A failing search, or both searches empty, leaves the full schema."""
    full = CoarseResult(list(network.object_types), list(network.relation_types))
    if not config.enable_coarse_recall or len(network.relation_types) < config.coarse_min_relation_count:
        return full
    try:
        objects = service.search_object_types(network.kn_id, query, config.coarse_object_limit)
        relations = service.search_relation_types(network.kn_id, query, config.coarse_relation_limit)
    except Exception as exc:  # noqa: BLE001 - coarse recall is best effort (spec §3.2.2)
        log.warning("coarse recall failed for %s (%s: %s); using the full schema", network.kn_id,
                    type(exc).__name__, exc)
        return full
    if not objects and not relations:
        return full
    object_scores: dict[str, float] = {}
    for ot_id, score in objects:
        object_scores.setdefault(ot_id, float(score))
    relation_ids = {rel_id for rel_id, _ in relations}
    kept_relations = [rel for rel in network.relation_types if rel.id in relation_ids]
    keep_objects = set(object_scores)
    for rel in kept_relations:
        keep_objects.add(rel.source_object_type_id)
        keep_objects.add(rel.target_object_type_id)
    kept_objects = [ot for ot in network.object_types if ot.id in keep_objects]
    return CoarseResult(kept_objects, kept_relations, object_scores, applied=True)


def convert_object_type(
    ot: ObjectType, brief: bool, keep: set[tuple[str, str]] | None = None
) -> KnSearchObjectType:
    """Response shape of one object type. ``brief`` (schema_brief) keeps concept_id, concept_name, comment
    and properties as ``{name, display_name, comment}``; full mode adds tags, primary_keys, display_key and
    each property's type (and a data property's condition_operations). ``keep`` (property pruning) limits
    the properties to those ``(kind, name)`` pairs, in declaration order."""
    data = [p for p in ot.data_properties if keep is None or ("data", p.name) in keep]
    logic = [p for p in ot.logic_properties if keep is None or ("logic", p.name) in keep]
    if brief:
        return KnSearchObjectType(
            concept_id=ot.id, concept_name=ot.name, comment=ot.comment,
            data_properties=[KnSearchDataProperty(name=p.name, display_name=p.display_name, comment=p.comment)
                             for p in data],
            logic_properties=[KnSearchLogicProperty(name=p.name, display_name=p.display_name, comment=p.comment)
                              for p in logic],
        )
    return KnSearchObjectType(
        concept_id=ot.id, concept_name=ot.name, comment=ot.comment, tags=list(ot.tags),
        data_properties=[KnSearchDataProperty(name=p.name, display_name=p.display_name, comment=p.comment,
                                              type=p.type, condition_operations=list(p.condition_operations))
                         for p in data],
        logic_properties=[KnSearchLogicProperty(name=p.name, display_name=p.display_name, comment=p.comment,
                                                type=p.type)
                          for p in logic],
        primary_keys=list(ot.primary_keys), display_key=ot.display_key,
    )


def convert_relation_type(rel: RelationType, brief: bool, names: dict[str, str]) -> KnSearchRelationType:
    """Response shape of one relation type (``names``: object type id -> name). ``brief`` (schema_brief) drops
    ``concept_type`` and ``comment``, keeping the id, name and both ends."""
    return KnSearchRelationType(
        concept_type=None if brief else "relation_type",
        concept_id=rel.id, concept_name=rel.name, comment=None if brief else rel.comment,
        source_object_type_id=rel.source_object_type_id, target_object_type_id=rel.target_object_type_id,
        source_object_type_name=names.get(rel.source_object_type_id),
        target_object_type_name=names.get(rel.target_object_type_id),
    )


def recall_concepts(
    service: OntologyService,
    kn_id: str,
    query: str,
    config: ConceptRetrievalConfig,
    enable_rerank: bool,
    reranker: Reranker | None,
) -> ConceptResult:
    """§3.2 end to end. ``get_network`` errors (``NetworkNotFound`` included) propagate."""
    network = service.get_network(kn_id)  # §3.2.1: failure -> error, stop
    coarse = coarse_recall(service, network, query, config)
    names = {ot.id: ot.name for ot in network.object_types}
    top_k = max(config.top_k, 1)
    selected, ranked = rank_relations(query, coarse.relation_types, names, top_k, enable_rerank, reranker)
    relations = [item.relation for item in selected]
    # an object type's score for topping up: the better of its coarse score and its rerank score (the best
    # score among ranked relations, beyond the top k too, that it is an endpoint of)
    scores = dict(coarse.object_scores)
    for ot_id, score in object_type_rerank_scores(ranked).items():
        scores[ot_id] = max(score, scores.get(ot_id, score))
    object_types = select_object_types(coarse.object_types, relations, top_k, scores)

    keep = (prune_properties(object_types, query, config.per_object_property_top_k, config.global_property_top_k)
            if config.enable_property_brief else None)
    out_objects = [convert_object_type(ot, config.schema_brief, keep[ot.id] if keep is not None else None)
                   for ot in object_types]
    if config.include_sample_data:
        for out in out_objects:
            try:
                out.sample_data = service.sample_instance(kn_id, out.concept_id)
            except Exception as exc:  # noqa: BLE001 - a missing sample never fails the search
                log.warning("sample data for %s/%s failed: %s", kn_id, out.concept_id, exc)
    out_relations = [convert_relation_type(rel, config.schema_brief, names) for rel in relations]
    out_actions = [
        KnSearchActionType(id=act.id, name=act.name, object_type_id=act.object_type_id,
                           object_type_name=names.get(act.object_type_id, ""), comment=act.comment,
                           tags=list(act.tags), kn_id=network.kn_id)
        for act in network.action_types
    ]
    return ConceptResult(
        network=network, object_types=object_types, relation_types=relations,
        relation_scores=[item.score for item in selected], object_scores=scores,
        coarse_applied=coarse.applied, out_object_types=out_objects, out_relation_types=out_relations,
        out_action_types=out_actions,
    )
