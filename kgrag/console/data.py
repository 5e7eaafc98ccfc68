"""What the web console shows, as plain JSON-ready dicts: the sources (networks and triple KGs), a network's or a
KG's schema with counts, and one node's detail. Pure functions over a :class:`~kgrag.config.Settings` and a
:class:`~kgrag.network.store.NetworkStore`; no web framework here.

    sources(get_settings(), NetworkStore(get_settings().db_url))["kgs"]   # [{"id": "demo", "prepared": True, …}]

Contract:

- :func:`sources` — ``{"networks": [{"id", "name"}], "kgs": [{"id", "name", "prepared", "triples"}]}``, each list
  sorted by id: every network in the store and every KG the registry knows (built-in and imported). ``prepared``:
  the KG's ``graph.npz`` exists or it lives on its SPARQL endpoint only (as :class:`TripleKG` decides);
  ``triples`` is the local graph's count, ``None`` without one.
- :func:`network_schema` — the network's object types (display key, instance count, per declared property the
  instances holding a non-empty value: not missing, null, ``""``, ``[]`` or ``{}``) and relation types (source,
  target, link count), counted in SQL by ``GROUP BY`` (one scan of the instances, one of the links).
- :func:`kg_schema` — entity and triple counts of a prepared KG and its relations by triple count (desc, ties by
  id), from ``graph.npz`` (``np.bincount`` over the relation column); each relation's ``label`` is its property's
  label where the relation kept an opaque id (``P19`` labelled ``出生地``), else its id.
- :func:`network_node` — one instance by id (``Disease:百日咳``): its name (the display-key value), object type
  and properties. :func:`kg_node` — one KG entity by id (``m.0yr8s``; its key is accepted too): name and at most
  ``limit`` triples ``[subject name, relation, object name]``, outgoing then incoming, and whether there are
  more (unnamed nodes show their id; an opaque relation id with a label reads ``P19 (出生地)``). Slices of the CSR arrays: the work is the triples shown.

Errors: an unknown network raises :class:`~kgrag.errors.NetworkNotFound` naming the known ones; an unknown or
unprepared KG a :class:`~kgrag.errors.KgragError` (``KG 'x' is not prepared: run `kgrag prepare --dataset x```);
an unknown node :class:`NodeNotFound` (a ``KgragError`` and a ``LookupError``). Loaded graphs are cached per
(path, mtime, size) of ``graph.npz`` (:func:`_mapped_graph`, as are the relation counts), so a re-prepare is
seen at the next call.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import ColumnElement, and_, case, func, select

from kgrag.access.audit import AuditLog
from kgrag.config import Settings
from kgrag.data.registry import dataset_spec, registered_specs
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.graph.csr import CSRGraph
from kgrag.graph.imported import opaque_relation_labels
from kgrag.graph.mapped import StringColumn
from kgrag.graph.versions.version_file import graph_file
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.network.store import NetworkStore

__all__ = ["NodeNotFound", "kg_node", "kg_schema", "network_node", "network_schema", "sources"]

#: property columns per aggregate query (SQLite allows 2000 result columns; this keeps statements small)
_PROPERTY_COLUMNS_PER_QUERY = 200


class NodeNotFound(KgragError, LookupError):
    """No instance / entity with that id in the network or KG."""


# ---------------------------------------------------------------------------------------------- sources
def sources(settings: Settings, store: NetworkStore) -> dict[str, Any]:
    """Every loaded network and every registered triple KG (see the module docstring)."""
    networks = [{"id": kn_id, "name": name} for kn_id, name in sorted(store.list_networks())]
    kgs = []
    for name, spec in sorted(registered_specs(settings).items()):
        path = _graph_path(settings, name)
        local = path.is_file()
        triples: int | None = None
        if local:
            try:
                triples = _graph(path).num_triples
            except (OSError, ValueError):  # an unreadable or old-format graph: listed, its count unknown
                triples = None
        kgs.append({"id": name, "name": spec.name, "prepared": local or spec.reader == "endpoint",
                    "triples": triples})
    return {"networks": networks, "kgs": kgs}


# ---------------------------------------------------------------------------------------------- networks
def _network(store: NetworkStore, kn_id: str) -> KnowledgeNetwork:
    """The network's schema, or :class:`NetworkNotFound` naming the loaded networks."""
    try:
        return store.get_network(kn_id)
    except NetworkNotFound:
        known = ", ".join(k for k, _ in store.list_networks()) or "none"
        raise NetworkNotFound(f"unknown network {kn_id!r}: loaded networks are {known}. Load one with "
                              f"`kgrag kn load PATH`.") from None


def _non_empty(name: str) -> ColumnElement[bool]:
    """SQL: instance property ``name`` holds a value (not missing, null, "", [] or {})."""
    value = t.instances.c.properties[name].as_string()
    return and_(value.is_not(None), value != "", value != "[]", value != "{}")


def network_schema(store: NetworkStore, kn_id: str) -> dict[str, Any]:
    """Object types with instance and per-property counts, relation types with link counts (module docstring)."""
    network = _network(store, kn_id)
    ti, tl = t.instances, t.links
    names = sorted({p.name for ot in network.object_types for p in ot.data_properties})
    instances: dict[str, int] = {}
    filled: dict[tuple[str, str], int] = {}
    with store.engine.connect() as conn:
        for start in range(0, max(len(names), 1), _PROPERTY_COLUMNS_PER_QUERY):
            chunk = names[start : start + _PROPERTY_COLUMNS_PER_QUERY]
            counts = [func.sum(case((_non_empty(n), 1), else_=0)) for n in chunk]
            stmt = (select(ti.c.object_type_id, func.count(), *counts)
                    .where(ti.c.kn_id == kn_id).group_by(ti.c.object_type_id))
            for type_id, n, *per in conn.execute(stmt):
                instances[type_id] = int(n)
                filled.update({(type_id, p): int(c or 0) for p, c in zip(chunk, per, strict=True)})
        links = {rid: int(n) for rid, n in conn.execute(
            select(tl.c.relation_type_id, func.count()).where(tl.c.kn_id == kn_id).group_by(tl.c.relation_type_id))}
    return {
        "kind": "kn",
        "id": network.kn_id,
        "name": network.name,
        "object_types": [
            {"id": ot.id, "name": ot.name, "display_key": ot.display_key, "instances": instances.get(ot.id, 0),
             "properties": [{"name": p.name, "type": p.type, "count": filled.get((ot.id, p.name), 0)}
                            for p in ot.data_properties]}
            for ot in network.object_types
        ],
        "relation_types": [
            {"id": rt.id, "name": rt.name, "source": rt.source_object_type_id, "target": rt.target_object_type_id,
             "links": links.get(rt.id, 0)}
            for rt in network.relation_types
        ],
    }


def network_node(store: NetworkStore, kn_id: str, instance_id: str) -> dict[str, Any]:
    """``{"id", "name", "object_type", "properties"}`` of the instance ``instance_id`` (the first object type by
    id when several types hold that id); :class:`NodeNotFound` when none does."""
    network = _network(store, kn_id)
    ti = t.instances
    type_ids = [ot.id for ot in network.object_types]
    stmt = (select(ti.c.object_type_id, ti.c.id, ti.c.name, ti.c.properties)
            .where(ti.c.kn_id == kn_id, ti.c.object_type_id.in_(type_ids), ti.c.id == instance_id)
            .order_by(ti.c.object_type_id).limit(1))
    with store.engine.connect() as conn:
        row = conn.execute(stmt).first() if type_ids else None
    if row is None:
        raise NodeNotFound(f"no instance {instance_id!r} in network {kn_id!r}")
    return {"id": row.id, "name": row.name, "object_type": row.object_type_id, "properties": dict(row.properties)}


# ---------------------------------------------------------------------------------------------- triple KGs
def _graph_path(settings: Settings, name: str) -> Path:
    return graph_file(settings.dataset_dir(name))  # the current version's (kgrag kg update)


#: a graph file's version: (path, mtime in ns, size)
_Version = tuple[str, int, int]


def _version(path: Path) -> _Version:
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=8)
def _mapped_graph(version: _Version) -> CSRGraph:
    return CSRGraph.load(Path(version[0]))


@lru_cache(maxsize=8)
def _relation_counts(version: _Version) -> np.ndarray:
    """Triples per relation id (one ``np.bincount`` over the relation column, once per file version)."""
    graph = _mapped_graph(version)
    return np.bincount(np.asarray(graph.rel), minlength=graph.num_relations)


def _graph(path: Path) -> CSRGraph:
    """The graph at ``path``, mapped once per version of the file."""
    return _mapped_graph(_version(path))


def _kg_graph(settings: Settings, name: str) -> tuple[CSRGraph, _Version]:
    """KG ``name``'s local graph and its file version; a :class:`KgragError` for an unknown, unprepared or
    endpoint-only KG."""
    spec: DatasetSpec = dataset_spec(name, settings)  # names the known KGs when unknown
    path = _graph_path(settings, name)
    if not path.is_file():
        if spec.reader == "endpoint":
            raise KgragError(f"KG {name!r} lives on {spec.describe()}: there is no local graph to show")
        raise KgragError(f"KG {name!r} is not prepared: run `kgrag prepare --dataset {name}`")
    try:
        version = _version(path)
        return _mapped_graph(version), version
    except ValueError as exc:  # an old graph format
        raise KgragError(f"KG {name!r}: {exc}") from None


def kg_schema(settings: Settings, name: str) -> dict[str, Any]:
    """Entity and triple counts and the relations by triple count (module docstring)."""
    graph, version = _kg_graph(settings, name)
    counts = _relation_counts(version)
    relations = np.asarray(graph.relations, dtype=object)
    order = np.lexsort((np.arange(counts.size), -counts))  # count desc; relations are stored sorted: ties by id
    labels = opaque_relation_labels(graph)
    return {
        "kind": "kg",
        "id": name,
        "entities": graph.num_entities,
        "triples": graph.num_triples,
        "relations": [{"id": rid, "triples": n, "label": labels.get(rid, rid)}
                      for rid, n in zip(relations[order].tolist(), counts[order].tolist(), strict=True)],
    }


def _column(values: Any, rows: np.ndarray) -> list[str]:
    if isinstance(values, StringColumn):
        return values.take(rows)
    return [values[r] for r in rows.tolist()]


def _labels(graph: CSRGraph, rows: np.ndarray) -> list[str]:
    """Each row's name, its id where it has none (an unnamed node)."""
    names = graph.names_of(rows)
    ids = _column(graph.entity_ids, rows)
    return [n or i for n, i in zip(names, ids, strict=True)]


def _shown(relation: str, labels: dict[str, str]) -> str:
    """``P19 (出生地)`` for a relation that kept an opaque id and has a label, else the relation."""
    return f"{relation} ({labels[relation]})" if relation in labels else relation


def _entity_row(graph: CSRGraph, entity_id: str) -> int | None:
    for index in (graph.id_index, graph.key_index):
        row = index.get(entity_id)
        if row is not None:
            return int(row)
    return None


def kg_node(settings: Settings, name: str, entity_id: str, limit: int = 50) -> dict[str, Any]:
    """``{"id", "name", "triples", "more"}`` of the entity ``entity_id`` in KG ``name`` (module docstring)."""
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    graph, _ = _kg_graph(settings, name)
    row = _entity_row(graph, entity_id)
    if row is None:
        raise NodeNotFound(f"no entity {entity_id!r} in KG {name!r}")
    out_lo, out_hi = int(graph.out_ptr[row]), int(graph.out_ptr[row + 1])
    in_lo, in_hi = int(graph.in_ptr[row]), int(graph.in_ptr[row + 1])
    out_take = min(out_hi - out_lo, limit)
    in_take = min(in_hi - in_lo, limit - out_take)
    out_edges = (np.arange(out_lo, out_lo + out_take, dtype=np.int64) if graph.out_order is None
                 else np.asarray(graph.out_order[out_lo : out_lo + out_take], dtype=np.int64))
    in_edges = np.asarray(graph.in_order[in_lo : in_lo + in_take], dtype=np.int64)
    edges = np.concatenate([out_edges, in_edges])
    heads, rels, tails = (np.asarray(a[edges], dtype=np.int64) for a in (graph.head, graph.rel, graph.tail))
    ends, inverse = np.unique(np.concatenate([heads, tails, [row]]), return_inverse=True)
    labels = np.asarray(_labels(graph, ends), dtype=object)
    subjects = labels[inverse[: edges.size]].tolist()
    objects = labels[inverse[edges.size : 2 * edges.size]].tolist()
    relation_labels = opaque_relation_labels(graph)
    relations = [_shown(graph.relations[r], relation_labels) for r in rels.tolist()]  # at most ``limit``
    return {
        "id": _column(graph.entity_ids, np.array([row]))[0],
        "name": str(labels[inverse[-1]]),
        "triples": [list(triple) for triple in zip(subjects, relations, objects, strict=True)],
        "more": (out_hi - out_lo) + (in_hi - in_lo) > edges.size,
    }


def network_changes(store: NetworkStore, kn_id: str, limit: int = 20) -> dict[str, Any]:
    """The network's latest changes from the audit log (:mod:`kgrag.access.audit`), newest first: who, when, the
    action, the versions before and after, the counts; :class:`NetworkNotFound` for an unknown network."""
    _network(store, kn_id)
    entries = AuditLog(store.engine).entries(kind="kn", target=kn_id, limit=limit)
    return {"kind": "kn", "id": kn_id, "changes": [e.as_dict() for e in entries]}
