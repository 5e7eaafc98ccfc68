"""The knowledge-network query tools an agent calls (KWeaver context-loader parity), pure logic over the store.

    query_object_instance(store, ObjectInstanceQuery(kn_id="medical", object_type="Disease",
                          condition={"operation": "==", "field": "name", "value": "百日咳"}, limit=1))

- ``query_object_instance``: instances of one object type matching a condition tree (the condition language of
  :mod:`kgrag.network.schema.conditions`; values are always bound SQL parameters), optionally projected to some
  properties; ``order_by`` a property (``order`` asc / desc: a number orders as a number, a date as a date) with
  ``limit`` (the oldest book: ``order_by="year", limit=1``), ``order_by_links`` — by how many links of one
  relation type each instance has (``direction`` out: as the link's source; the author who wrote the most
  books: ``{"relation_type": "wrote", "direction": "out"}``, ``order="desc"``; each instance says its ``links``;
  instances with no such link are left out) — or ``count_only`` (the number of matching instances, no instance
  listed).
- ``query_instance_subgraph``: instances reached from start instances along a path of relation types, each step
  walked in the relation's direction when its source type is the current type, else backwards (or as the step
  says: ``out`` / ``in`` / ``both``), with the links walked (in each relation's own direction).

Requests are pydantic models (the HTTP routes and the LLM tool schemas use the same ones). Unknown networks,
object types, relation types, fields or operations raise :class:`ToolInputError` naming the culprit; limits are
clamped to :data:`MAX_LIMIT` (the response says the limit used).
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from kgrag.errors import NetworkNotFound
from kgrag.network.schema.model import Condition, InstanceHit, KnowledgeNetwork

__all__ = [
    "MAX_LIMIT",
    "InstanceSubgraphQuery",
    "LinkOrder",
    "ObjectInstanceQuery",
    "PathStep",
    "QueryStore",
    "StartInstances",
    "ToolInputError",
    "query_instance_subgraph",
    "query_object_instance",
]

#: the most instances one call returns (per step for subgraphs)
MAX_LIMIT = 200
#: the most relation types one subgraph path walks
MAX_PATH = 4
_ID = Field(min_length=1, max_length=200)
#: ``ot_id`` is the context-loader's name for the object type
_TYPE_ALIASES = AliasChoices("object_type", "ot_id")


class ToolInputError(ValueError):
    """A tool argument names something the network does not have (or is malformed); the message says which."""


class QueryStore(Protocol):
    """What the tools need from a knowledge-network store (:class:`kgrag.network.store.NetworkStore`)."""

    def get_network(self, kn_id: str) -> KnowledgeNetwork: ...

    def query_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, limit: int,
                        sort_by_score: bool = True) -> list[InstanceHit]: ...

    def get_instances(self, kn_id: str, object_type_id: str, ids: list[str]) -> list[InstanceHit]: ...

    def ordered_instances(self, kn_id: str, object_type_id: str, condition: Condition | None, order_by: str,
                          descending: bool, limit: int) -> list[InstanceHit]: ...

    def count_matching(self, kn_id: str, object_type_id: str, condition: Condition | None) -> int: ...

    def ranked_by_links(self, kn_id: str, object_type_id: str, condition: Condition | None, relation_type_id: str,
                        forward: bool, descending: bool, limit: int) -> list[tuple[InstanceHit, int]]: ...

    def linked_ids(self, kn_id: str, relation_type_id: str, ids: list[str], forward: bool
                   ) -> list[tuple[str, str]]: ...


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @field_validator("limit", mode="before", check_fields=False)
    @classmethod
    def _clamp(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_LIMIT:
            return MAX_LIMIT
        return value


class LinkOrder(BaseModel):
    """Order instances by how many links of ``relation_type`` they have (``out``: as the link's source)."""

    model_config = ConfigDict(extra="forbid")

    relation_type: str = Field(min_length=1, max_length=200)
    direction: Literal["out", "in"] = "out"


class ObjectInstanceQuery(_Request):
    """``query_object_instance``: instances of ``object_type`` matching ``condition`` (None = any)."""

    kn_id: str = _ID
    object_type: str = Field(min_length=1, max_length=200, validation_alias=_TYPE_ALIASES,
                             description="object type id (kn_search lists them)")
    condition: Condition | None = Field(
        default=None, description='condition tree, e.g. {"operation": "==", "field": "name", "value": "百日咳"}')
    properties: list[str] | None = Field(default=None, max_length=50,
                                         description="return only these properties (None = all)")
    limit: int = Field(default=10, ge=1, description=f"at most this many instances (capped at {MAX_LIMIT})")
    order_by: str | None = Field(default=None, min_length=1, max_length=200,
                                 description="sort by this data property's value (a number or date as such)")
    order: Literal["asc", "desc"] = Field(default="asc", description="asc: smallest / earliest first; desc: largest")
    order_by_links: LinkOrder | None = Field(
        default=None, description='sort by the number of links of one relation type, e.g. {"relation_type": '
        '"wrote", "direction": "out"} with order desc: the instances with the most links first')
    count_only: bool = Field(default=False, description="return only the number of matching instances")


class StartInstances(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    object_type: str = Field(min_length=1, max_length=200, validation_alias=_TYPE_ALIASES)
    condition: Condition | None = None
    ids: list[str] | None = Field(default=None, max_length=MAX_LIMIT, description="instance ids (instead of a condition)")


class PathStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    relation_type: str = Field(min_length=1, max_length=200)
    direction: Literal["auto", "out", "in", "both"] = "auto"


class InstanceSubgraphQuery(_Request):
    """``query_instance_subgraph``: from the ``start`` instances along ``relation_type_path``."""

    kn_id: str = _ID
    start: StartInstances
    relation_type_path: list[PathStep | str] = Field(min_length=1, max_length=MAX_PATH)
    limit: int = Field(default=20, ge=1, description=f"at most this many instances per step (capped at {MAX_LIMIT})")

    def steps(self) -> list[PathStep]:
        return [s if isinstance(s, PathStep) else PathStep(relation_type=s) for s in self.relation_type_path]


def _network(store: QueryStore, kn_id: str) -> KnowledgeNetwork:
    try:
        return store.get_network(kn_id)
    except NetworkNotFound as exc:
        raise ToolInputError(f"unknown knowledge network {kn_id!r}") from exc


def _check_type(network: KnowledgeNetwork, type_id: str) -> None:
    if type_id not in {ot.id for ot in network.object_types}:
        known = ", ".join(ot.id for ot in network.object_types)
        raise ToolInputError(f"unknown object type {type_id!r} in network {network.kn_id!r} (object types: {known})")


def _instances(store: QueryStore, kn_id: str, type_id: str, condition: Condition | None, limit: int
               ) -> list[InstanceHit]:
    try:
        return store.query_instances(kn_id, type_id, condition, limit)
    except ToolInputError:
        raise
    except ValueError as exc:  # an unknown field / operation / malformed value of the condition
        raise ToolInputError(f"condition on {type_id!r}: {exc}") from exc


def _project(hit: InstanceHit, properties: list[str] | None) -> dict[str, Any]:
    props = hit.properties if properties is None else {k: hit.properties.get(k) for k in properties}
    out: dict[str, Any] = {"object_type": hit.object_type_id, "id": hit.id, "properties": props}
    if hit.score is not None:
        out["score"] = round(hit.score, 6)
    return out


def query_object_instance(store: QueryStore, query: ObjectInstanceQuery) -> dict[str, Any]:
    """``{"kn_id", "object_type", "limit", "count", "instances": [{"object_type", "id", "properties"[, "score"]}]}``
    (plus ``"order_by"``, ``"order"`` when ordered; ``"order_by_links"``, ``"order"`` and each instance's
    ``"links"`` when ordered by its links); with ``count_only``: ``{"kn_id", "object_type", "count_only":
    true, "count": <matching instances>, "instances": []}``."""
    network = _network(store, query.kn_id)
    _check_type(network, query.object_type)
    if query.properties is not None:
        declared = {p.name for ot in network.object_types if ot.id == query.object_type for p in ot.data_properties}
        unknown = [p for p in query.properties if p not in declared and p != "id"]
        if unknown:
            raise ToolInputError(f"unknown properties {unknown} of object type {query.object_type!r} "
                                 f"(data properties: {', '.join(sorted(declared))})")
    if query.order_by_links is not None:
        if query.order_by is not None or query.count_only:
            raise ToolInputError("order_by_links cannot be combined with order_by or count_only")
        return _ranked_by_links(store, network, query)
    if query.count_only:
        try:
            total = store.count_matching(query.kn_id, query.object_type, query.condition)
        except ValueError as exc:
            raise ToolInputError(f"condition on {query.object_type!r}: {exc}") from exc
        return {"kn_id": query.kn_id, "object_type": query.object_type, "count_only": True, "count": total,
                "instances": []}
    if query.order_by is not None:
        try:
            hits = store.ordered_instances(query.kn_id, query.object_type, query.condition, query.order_by,
                                           query.order == "desc", query.limit)
        except ValueError as exc:
            raise ToolInputError(f"order_by / condition on {query.object_type!r}: {exc}") from exc
        return {"kn_id": query.kn_id, "object_type": query.object_type, "limit": query.limit, "count": len(hits),
                "order_by": query.order_by, "order": query.order,
                "instances": [_project(h, query.properties) for h in hits]}
    hits = _instances(store, query.kn_id, query.object_type, query.condition, query.limit)
    return {"kn_id": query.kn_id, "object_type": query.object_type, "limit": query.limit, "count": len(hits),
            "instances": [_project(h, query.properties) for h in hits]}


def _ranked_by_links(store: QueryStore, network: KnowledgeNetwork, query: ObjectInstanceQuery) -> dict[str, Any]:
    order = query.order_by_links
    assert order is not None
    rt = next((r for r in network.relation_types if r.id == order.relation_type), None)
    if rt is None:
        known = ", ".join(r.id for r in network.relation_types)
        raise ToolInputError(f"unknown relation type {order.relation_type!r} in network {network.kn_id!r} "
                             f"(relation types: {known})")
    end = rt.source_object_type_id if order.direction == "out" else rt.target_object_type_id
    if end != query.object_type:
        raise ToolInputError(f"relation type {rt.id!r} links {rt.source_object_type_id!r} -> "
                             f"{rt.target_object_type_id!r}: {query.object_type!r} is not its "
                             f"{'source' if order.direction == 'out' else 'target'}")
    try:
        ranked = store.ranked_by_links(query.kn_id, query.object_type, query.condition, rt.id,
                                       order.direction == "out", query.order == "desc", query.limit)
    except ValueError as exc:
        raise ToolInputError(f"condition on {query.object_type!r}: {exc}") from exc
    return {"kn_id": query.kn_id, "object_type": query.object_type, "limit": query.limit, "count": len(ranked),
            "order_by_links": order.model_dump(), "order": query.order,
            "instances": [{**_project(h, query.properties), "links": n} for h, n in ranked]}


def _walks(network: KnowledgeNetwork, current: str, step: PathStep) -> list[tuple[bool, str]]:
    """``(forward, next type)`` of each way ``step`` can be walked from ``current`` (raises when none can)."""
    rt = next((r for r in network.relation_types if r.id == step.relation_type), None)
    if rt is None:
        known = ", ".join(r.id for r in network.relation_types)
        raise ToolInputError(f"unknown relation type {step.relation_type!r} in network {network.kn_id!r} "
                             f"(relation types: {known})")
    src, tgt = rt.source_object_type_id, rt.target_object_type_id
    out = (True, tgt) if src == current else None
    back = (False, src) if tgt == current else None
    wanted = {"auto": [out or back], "out": [out], "in": [back], "both": [out, back]}[step.direction]
    walks = [w for w in wanted if w is not None]
    if not walks or len({t for _, t in walks}) > 1:
        raise ToolInputError(f"relation type {rt.id!r} links {src!r} -> {tgt!r}: it cannot be walked "
                             f"{step.direction} from {current!r}")
    return walks


def query_instance_subgraph(store: QueryStore, query: InstanceSubgraphQuery) -> dict[str, Any]:
    """``{"kn_id", "limit", "start": [ids], "steps": [{"relation_type", "direction", "object_type", "ids"}],
    "nodes": {id: instance}, "links": [{"source", "relation_type", "target", "step", "forward"}], "ends": [ids],
    "truncated"}``: each link in its relation's own direction, with the step that walked it and whether that
    walk went the relation's way (``forward``: from source to target).

    Each step keeps at most ``limit`` distinct instances (the first reached, in order), so a path's size is
    bounded; ``truncated`` says when a step had more."""
    network = _network(store, query.kn_id)
    start = query.start
    _check_type(network, start.object_type)
    if start.ids is not None:
        hits = store.get_instances(query.kn_id, start.object_type, start.ids[: query.limit])
    else:
        hits = _instances(store, query.kn_id, start.object_type, start.condition, query.limit)
    nodes: dict[str, dict[str, Any]] = {h.id: _project(h, None) for h in hits}
    frontier, current = [h.id for h in hits], start.object_type
    steps_out: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    truncated = False
    for index, step in enumerate(query.steps()):
        walks = _walks(network, current, step)
        current = walks[0][1]
        reached: dict[str, None] = {}
        for forward, _ in walks:
            for near, far in store.linked_ids(query.kn_id, step.relation_type, frontier, forward) if frontier else []:
                if far not in reached and len(reached) >= query.limit:
                    truncated = True
                    continue
                reached.setdefault(far, None)
                source, target = (near, far) if forward else (far, near)
                links.append({"source": source, "relation_type": step.relation_type, "target": target,
                              "step": index, "forward": forward})
        frontier = list(reached)
        for hit in store.get_instances(query.kn_id, current, frontier):
            nodes.setdefault(hit.id, _project(hit, None))
        direction = step.direction if step.direction != "auto" else ("out" if walks[0][0] else "in")
        steps_out.append({"relation_type": step.relation_type, "direction": direction, "object_type": current,
                          "ids": frontier})
    return {"kn_id": query.kn_id, "limit": query.limit, "start": [h.id for h in hits], "steps": steps_out,
            "nodes": nodes, "links": links, "ends": frontier, "truncated": truncated}
