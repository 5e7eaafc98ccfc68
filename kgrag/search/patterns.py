"""Stage 5 of contextual recall: typical values along a relation and its cardinality (spec
contextual-recall.md, the specification of recalling how a question's words are stored, §2.3, §3.2 阶段5,
§4.2.3, §5.2).

Typical instances come from a relation-path query (interface 2, :meth:`ContextStore.query_path`): the source side
is ``name == form`` when a keyword of the question was found stored in the source type (场景2), else
``exist name`` (场景1); ``relation_samples`` per side. The cardinality is computed from all the relation's links:
``one_to_one`` when no source has two targets and no target two sources, ``one_to_many`` when only sources fan
out, ``many_to_one`` when only targets fan in (the spec lists one_to_one / one_to_many / many_to_many; a relation
such as drug -> producer is many-to-one and is called so), ``many_to_many`` otherwise.
"""

from __future__ import annotations

from kgrag.network.schema.model import Condition, ObjectType, PathHit, RelationType
from kgrag.network.service import ContextStore
from kgrag.search.cache import PerVersion
from kgrag.search.context_models import ContextConfig, RelationPattern
from kgrag.search.storage_forms import name_field

__all__ = ["cardinality", "relation_pattern"]

#: (relation, source type and field, target type and field, samples) -> the relation's usual shape (any source
#: to any target): the same for every question on one version of the network
_usual: PerVersion[list[PathHit]] = PerVersion(4096)


def cardinality(max_targets_per_source: int, max_sources_per_target: int) -> str:
    fan_out, fan_in = max_targets_per_source > 1, max_sources_per_target > 1
    if fan_out and fan_in:
        return "many_to_many"
    if fan_out:
        return "one_to_many"
    if fan_in:
        return "many_to_one"
    return "one_to_one"


def relation_pattern(store: ContextStore, kn_id: str, rt: RelationType, types: dict[str, ObjectType],
                     config: ContextConfig, source_forms: list[str] | None = None,
                     target_forms: list[str] | None = None) -> RelationPattern:
    """``source_forms`` / ``target_forms``: stored forms of the question's keywords in the relation's source /
    target type; the path query starts from them (source first), else from any instance."""
    source, target = types[rt.source_object_type_id], types[rt.target_object_type_id]
    source_field = name_field(source) or source.display_key
    target_field = name_field(target) or target.display_key
    k = config.relation_samples
    any_source = Condition(operation="exist", field=source_field)
    any_target = Condition(operation="exist", field=target_field)
    paths = []
    if source_forms:
        paths = store.query_path(kn_id, source.id, Condition(operation="in", field=source_field, value=source_forms),
                                 rt.id, target.id, any_target, limit_per_type=k)
    if not paths and target_forms:  # walk the relation backwards from the keyword (阿莫西林胶囊治疗什么病)
        paths = store.query_path(kn_id, target.id, Condition(operation="in", field=target_field, value=target_forms),
                                 rt.id, source.id, any_source, limit_per_type=k)
    if not paths:  # no keyword on either end, or no such link: the relation's usual shape, read once per version
        paths = _usual.get(store, kn_id, (rt.id, source.id, source_field, target.id, target_field, k),
                           lambda: store.query_path(kn_id, source.id, any_source, rt.id, target.id, any_target,
                                                    limit_per_type=k))
    sources = list(dict.fromkeys(p.source.properties.get(source_field, p.source.id) for p in paths))[:k]
    targets = list(dict.fromkeys(p.target.properties.get(target_field, p.target.id) for p in paths))[:k]
    fan_out, fan_in, links = store.link_cardinality(kn_id, rt.id)
    return RelationPattern(
        relation_type_id=rt.id, source_object_type_id=source.id, target_object_type_id=target.id,
        source_field=source_field, target_field=target_field, typical_source_values=sources,
        typical_target_values=targets, relation_pattern=cardinality(fan_out, fan_in), link_count=links,
    )
