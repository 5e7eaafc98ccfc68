"""The rows of one load, derived from a network without touching the database: validation, instance and link
rows, schema rows, text-index rows and the texts that wait for a vector.

    pending = Embeddable(); rows, ids = instance_rows(network, instances, check_schema(network), [], pending)

Contract: every function here is pure (the database is :mod:`kgrag.network.store.load`'s); they are the named
steps of :meth:`kgrag.network.store.load.StoreLoader.load`, called in this order: :func:`check_schema`,
:func:`instance_ids` and :func:`link_keys` (every check, before a write; for input a reader has checked and reads
again, :func:`checked_ids` and :func:`distinct_links`, checked as the links are written), then per chunk of instances
:func:`checked_instance_rows`, then :func:`index_types`, :func:`chunk_rows`, :func:`type_rows` and (after the vectors)
:func:`network_row`. Text rows and texts to embed are appended in that order, so a load's
rows are the same for the same input. Which values get indexed: a data property whose ``condition_operations``
include ``match`` goes into the text index, one with ``knn`` into the vectors; every object and relation type
gets both, over ``"name comment"`` (the text index adds the id). An inconsistent network raises ``ValueError``.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link, ObjectType, RelationType, fields_with
from kgrag.network.store.index import index_tokens
from kgrag.network.text.chunking import chunk_instances
from kgrag.rank.token_count import TokenCounter

__all__ = [
    "Embeddable",
    "Rows",
    "check_schema",
    "checked_instance_rows",
    "chunk_rows",
    "content_hash",
    "index_types",
    "instance_ids",
    "instance_rows",
    "knn_texts",
    "link_keys",
    "link_rows",
    "network_row",
    "type_rows",
]

#: the rows of one load, by table name (see :data:`kgrag.network.store.load.StoreLoader.TABLES`)
Rows = dict[str, list[dict[str, Any]]]


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return " ".join(_value_text(v) for v in value)
    return str(value)


#: the canonical JSON of :func:`content_hash` (one encoder: json.dumps builds one per call)
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def content_hash(properties: dict[str, Any]) -> str:
    """sha1 of the canonical JSON of an instance's properties (keys sorted): equal for equal content, whatever
    the order the properties were given in; what an incremental change compares (``kn_instances.content_hash``)."""
    return hashlib.sha1(_CANONICAL.encode(properties).encode("utf-8")).hexdigest()


@dataclass
class Embeddable:
    """Texts waiting for a vector, in load order, with their ``(kind, type_id, item_id, field)`` keys."""

    keys: list[tuple[str, str, str, str]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)

    def add(self, kind: str, type_id: str, item_id: str, field_name: str, text_value: str) -> None:
        self.keys.append((kind, type_id, item_id, field_name))
        self.texts.append(text_value)


def check_schema(network: KnowledgeNetwork) -> dict[str, ObjectType]:
    """The network's object types by id; ``ValueError`` for a duplicate type id or a relation type naming an
    unknown object type."""
    object_types: dict[str, ObjectType] = {}
    for ot in network.object_types:
        if ot.id in object_types:
            raise ValueError(f"network {network.kn_id!r}: duplicate object type id {ot.id!r}")
        object_types[ot.id] = ot
    seen: set[str] = set()
    for rt in network.relation_types:
        if rt.id in seen:
            raise ValueError(f"network {network.kn_id!r}: duplicate relation type id {rt.id!r}")
        seen.add(rt.id)
        for end in (rt.source_object_type_id, rt.target_object_type_id):
            if end not in object_types:
                raise ValueError(
                    f"network {network.kn_id!r}: relation type {rt.id!r} names unknown object type {end!r}"
                )
    actions: set[str] = set()
    for at in network.action_types:
        if at.id in actions:
            raise ValueError(f"network {network.kn_id!r}: duplicate action type id {at.id!r}")
        actions.add(at.id)
    return object_types


def _text_row(kn_id: str, kind: str, type_id: str, item_id: str, field_name: str, tokens: list[str]
              ) -> dict[str, Any]:
    """One ``kn_text_rows`` row: the space-joined index tokens of one (item, field) and its scope token."""
    return {
        "text": " ".join(tokens),
        "scope": t.scope_token(kn_id, kind, type_id, field_name),
        "kn_id": kn_id,
        "kind": kind,
        "type_id": type_id,
        "item_id": item_id,
        "field": field_name,
    }


def _index_instance(kn_id: str, type_id: str, inst: Instance, match_fields: list[str], knn_fields: list[str],
                    text_rows: list[dict[str, Any]], pending: Embeddable) -> None:
    """The text rows (``match`` fields) and texts to embed (``knn`` fields) of one instance."""
    for field_name in match_fields:
        tokens = index_tokens(_value_text(inst.properties.get(field_name)))
        if tokens:
            text_rows.append(_text_row(kn_id, "instance", type_id, inst.id, field_name, tokens))
    knn_texts(type_id, inst.id, inst.properties, knn_fields, pending)


def knn_texts(type_id: str, item_id: str, properties: dict[str, Any], knn_fields: list[str],
              pending: Embeddable) -> None:
    """The texts of one instance's ``knn`` fields, added to ``pending`` (a load's, or a deferred fill's)."""
    for field_name in knn_fields:
        value = properties.get(field_name)
        value_text = "、".join(map(str, value)) if isinstance(value, list) else _value_text(value)
        if value_text.strip():
            pending.add("instance", type_id, item_id, field_name, value_text.strip())


@runtime_checkable
class CheckedInstances(Protocol):
    """Instances their reader has checked already (each id once per type) and that can be iterated again, each
    time from the start (:class:`kgrag.network.loaders.declarative.FileInstances`): a load takes their
    ``ids_by_type`` instead of holding them all to check them."""

    ids_by_type: dict[str, set[str]]

    def __iter__(self) -> Iterator[Instance]: ...


def checked_ids(ids_by_type: dict[str, set[str]], object_types: dict[str, ObjectType]) -> dict[str, set[str]]:
    """A reader's ids by type (:class:`CheckedInstances`) for these object types; ``ValueError`` for ids of a type
    the network does not declare."""
    for type_id, ids in ids_by_type.items():
        if ids and type_id not in object_types:
            raise ValueError(f"instance {next(iter(ids))!r} has unknown object type {type_id!r}")
    return {ot_id: ids_by_type.get(ot_id, set()) for ot_id in object_types}


def instance_ids(instances: Iterable[Instance], object_types: dict[str, ObjectType]) -> dict[str, set[str]]:
    """The instance ids of each object type; ``ValueError`` for an instance of an unknown type or a duplicate
    instance id within a type (what a load checks before it writes anything)."""
    ids_by_type: dict[str, set[str]] = {ot_id: set() for ot_id in object_types}
    for inst in instances:
        known = ids_by_type.get(inst.object_type_id)
        if known is None:
            raise ValueError(f"instance {inst.id!r} has unknown object type {inst.object_type_id!r}")
        if inst.id in known:
            raise ValueError(f"duplicate instance id {inst.id!r} of object type {inst.object_type_id!r}")
        known.add(inst.id)
    return ids_by_type


def instance_rows(network: KnowledgeNetwork, instances: list[Instance], object_types: dict[str, ObjectType],
                  text_rows: list[dict[str, Any]], pending: Embeddable
                  ) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """``(kn_instances rows, instance ids by object type)``; appends the instances' text rows and texts to
    embed. ``ValueError`` for an instance of an unknown type or a duplicate instance id within a type."""
    ids_by_type = instance_ids(instances, object_types)
    return checked_instance_rows(network, instances, object_types, text_rows, pending), ids_by_type


def checked_instance_rows(network: KnowledgeNetwork, instances: list[Instance], object_types: dict[str, ObjectType],
                          text_rows: list[dict[str, Any]], pending: Embeddable) -> list[dict[str, Any]]:
    """:func:`instance_rows` of instances :func:`instance_ids` has checked already (a load's chunks)."""
    kn = network.kn_id
    match_fields, knn_fields = fields_with(network, "match"), fields_with(network, "knn")
    rows: list[dict[str, Any]] = []
    for inst in instances:
        ot = object_types[inst.object_type_id]
        name = inst.properties.get(ot.display_key)
        rows.append(
            {
                "kn_id": kn,
                "object_type_id": ot.id,
                "id": inst.id,
                "name": _value_text(name) if name is not None else inst.id,
                "properties": inst.properties,
                "content_hash": content_hash(inst.properties),
            }
        )
        _index_instance(kn, ot.id, inst, match_fields[ot.id], knn_fields[ot.id], text_rows, pending)
    return rows


def _check_link(link: Link, relation_types: dict[str, RelationType], ids_by_type: dict[str, set[str]]
                ) -> RelationType:
    """The link's relation type; ``ValueError`` for an unknown one or an endpoint of the wrong type."""
    rt = relation_types.get(link.relation_type_id)
    if rt is None:
        raise ValueError(
            f"link {link.source_id!r} -> {link.target_id!r}: unknown relation type {link.relation_type_id!r}"
        )
    if link.source_id not in ids_by_type[rt.source_object_type_id]:
        raise ValueError(
            f"link of {rt.id!r}: source {link.source_id!r} is not an instance of {rt.source_object_type_id!r}"
        )
    if link.target_id not in ids_by_type[rt.target_object_type_id]:
        raise ValueError(
            f"link of {rt.id!r}: target {link.target_id!r} is not an instance of {rt.target_object_type_id!r}"
        )
    return rt


def link_keys(network: KnowledgeNetwork, links: Iterable[Link], ids_by_type: dict[str, set[str]]) -> list[Link]:
    """Each distinct link (relation, source, target) once, in the order given (see :func:`_check_link` for the
    errors): :func:`distinct_links`, all checked before the list is returned."""
    return list(distinct_links(network, links, ids_by_type))


def distinct_links(network: KnowledgeNetwork, links: Iterable[Link], ids_by_type: dict[str, set[str]]
                   ) -> Iterator[Link]:
    """:func:`link_keys` one link at a time, for links read as they are written: each checked as it comes (a
    load's transaction then rolls back on a bad one), a 16-byte digest kept per distinct link, not the link."""
    relation_types = {rt.id: rt for rt in network.relation_types}
    seen: set[bytes] = set()
    for link in links:
        _check_link(link, relation_types, ids_by_type)
        digest = hashlib.blake2b(f"{link.relation_type_id}\x00{link.source_id}\x00{link.target_id}".encode(),
                                 digest_size=16).digest()
        if digest not in seen:
            seen.add(digest)
            yield link


def link_rows(network: KnowledgeNetwork, links: Iterable[Link], ids_by_type: dict[str, set[str]]
              ) -> list[dict[str, Any]]:
    """``kn_links`` rows of :func:`link_keys`."""
    return [{"kn_id": network.kn_id, "relation_type_id": k.relation_type_id, "source_id": k.source_id,
             "target_id": k.target_id} for k in link_keys(network, links, ids_by_type)]


def type_rows(network: KnowledgeNetwork) -> Rows:
    """The schema rows: ``object_types``, ``relation_types`` and ``action_types``, in declaration order."""
    kn = network.kn_id
    return {
        "object_types": [
            {"kn_id": kn, "id": ot.id, "name": ot.name, "comment": ot.comment, "position": pos,
             "schema": ot.model_dump(mode="json")}
            for pos, ot in enumerate(network.object_types)
        ],
        "relation_types": [
            {"kn_id": kn, "id": rt.id, "name": rt.name, "comment": rt.comment, "position": pos,
             "source_object_type_id": rt.source_object_type_id,
             "target_object_type_id": rt.target_object_type_id, "schema": rt.model_dump(mode="json")}
            for pos, rt in enumerate(network.relation_types)
        ],
        "action_types": [
            {"kn_id": kn, "id": at.id, "name": at.name, "comment": at.comment, "position": pos,
             "schema": at.model_dump(mode="json")}
            for pos, at in enumerate(network.action_types)
        ],
    }


def index_types(network: KnowledgeNetwork, text_rows: list[dict[str, Any]], pending: Embeddable) -> None:
    """A text row (id, name, comment) and a text to embed (name, comment) for every object and relation type."""
    for kind, types in (("object_type", network.object_types), ("relation_type", network.relation_types)):
        for typ in types:
            tokens = index_tokens(f"{typ.id} {typ.name} {typ.comment}")
            if tokens:
                text_rows.append(_text_row(network.kn_id, kind, "", typ.id, "*", tokens))
            pending.add(kind, "", typ.id, "*", f"{typ.name} {typ.comment}".strip() or typ.id)


def chunk_rows(network: KnowledgeNetwork, instances: Iterable[Instance], pending: Embeddable
               ) -> list[dict[str, Any]]:
    """``kn_chunks`` rows of the network's text sections (none without ``network.text``); each chunk's text is
    appended to the texts to embed."""
    rows: list[dict[str, Any]] = []
    if network.text is not None and network.text.sections:
        for chunk in chunk_instances(instances, network.text, TokenCounter.default()):
            rows.append({"kn_id": network.kn_id, **chunk.__dict__})
            pending.add("chunk", "", chunk.id, chunk.section, chunk.text)
    return rows


def network_row(network: KnowledgeNetwork, embedder_name: str, counts: dict[str, int],
                ids_by_type: dict[str, set[str]]) -> dict[str, Any]:
    """The ``kn_networks`` row of a load: a fresh version and the load's counts (``stats``; ``counts``: rows
    written by table name, as :data:`Rows`)."""
    stats = {
        "instances": counts["instances"],
        "links": counts["links"],
        "text_rows": counts["text"],
        "vectors": counts["vectors"],
        "chunks": counts["chunks"],
        "text": network.text.model_dump(mode="json") if network.text is not None else None,
        "instances_by_type": {k: len(v) for k, v in ids_by_type.items()},
    }
    return {
        "kn_id": network.kn_id,
        "name": network.name,
        "comment": network.comment,
        "version": uuid.uuid4().hex,
        "embedder": embedder_name if counts["vectors"] else "",
        "loaded_at": time.time(),
        "stats": stats,
    }
