"""A triple graph as columns: its classes as :class:`~kgrag.reading.tables.TypeTable` s, the triples that end at a
value as their properties and the triples between typed entities as relation types — so the plans over rows
(:mod:`kgrag.reading.table_plan`), their linking and their scorer run on a triple KG as on a network.

    view = view_of_graph(CSRGraph.load("work/scientists/graph.npz"))   # None: the graph types no entity
    view.types["Person"].column("birthDate")[:2]                        # ['1867-11-07', '1859-05-15']

Contract: a **class** is the object of a type relation (``rdf:type``, ``wdt:P31``, Freebase's
``type.object.type``: :func:`kgrag.graph.classes.type_relations`); a class's rows are the entities typed with it
(an entity with two classes is a row of each), in row order, with a ``name`` property (the entity's name).
A **value** is a node with no class and no triple of its own (a literal the import made a node: a number, a date,
a string; or a bare named thing such as a country with only a label): a triple from a typed entity to a value is a
property of the entity's class named by the relation — unless the relation gives some entity two values (a film's
genres): then its values are a table of their own (named by the relation's last part, a ``name`` each) linked from
the entity's class by the relation, as a network holds a many-to-many. A
triple between two typed entities is a link of the relation type ``relation@source>target`` (named by the
relation: one per pair of classes it joins). Class nodes, untyped entities with triples of their own (CVTs) and the
triples through them are left out. One vectorised pass over the triples; :func:`view_for_graph` keeps one view
per graph object (a changed KG is a new graph object). A graph with more typed rows than ``max_rows`` has no view.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import Any

import numpy as np

from kgrag.graph.classes import type_relations
from kgrag.graph.csr import CSRGraph, gather_ranges
from kgrag.network.schema.model import DataProperty, KnowledgeNetwork, ObjectType, RelationType
from kgrag.reading.tables import MAX_ROWS, TableView, TypeTable

__all__ = ["NAME", "GraphView", "view_for_graph", "view_of_graph"]

#: the property holding each row's entity name
NAME = "name"
_SLUG = re.compile(r"[^0-9A-Za-z]+")


class GraphView(TableView):
    """A :class:`TableView` of a triple graph that also knows which graph rows are typed entities."""

    #: graph rows that are typed entities
    typed: np.ndarray


def _slug(text: str, taken: set[str]) -> str:
    base = _SLUG.sub("_", text).strip("_") or "type"
    out, n = base, 2
    while out in taken:
        out, n = f"{base}_{n}", n + 1
    taken.add(out)
    return out


def view_of_graph(graph: CSRGraph, max_rows: int = MAX_ROWS) -> GraphView | None:
    """The graph's classes, values and links as a :class:`GraphView` (see the module docstring)."""
    kinds = type_relations(graph)
    if not kinds or not graph.num_triples:
        return None
    head, rel, tail = (np.asarray(graph.head, dtype=np.int64), np.asarray(graph.rel, dtype=np.int64),
                       np.asarray(graph.tail, dtype=np.int64))
    is_type = np.isin(rel, np.asarray(kinds, dtype=np.int64))
    if not is_type.any() or int(is_type.sum()) > max_rows:
        return None
    n = graph.num_entities
    # memberships (entity, class) sorted by class, then entity: a class's table rows
    m_entity, m_class = head[is_type], tail[is_type]
    order = np.lexsort((m_entity, m_class))
    m_entity, m_class = m_entity[order], m_class[order]
    classes, first = np.unique(m_class, return_index=True)
    class_of = np.searchsorted(classes, m_class)
    position = np.arange(m_entity.size) - first[class_of]
    typed = np.zeros(n, dtype=bool)
    typed[m_entity] = True
    is_class = np.zeros(n, dtype=bool)
    is_class[classes] = True
    out_degree = np.diff(np.asarray(graph.out_ptr, dtype=np.int64))
    is_value = ~typed & ~is_class & (out_degree == 0)
    # memberships by entity: the rows an edge's end stands for
    by_entity = np.argsort(m_entity, kind="stable")
    sorted_entity = m_entity[by_entity]

    def expand(ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = np.searchsorted(sorted_entity, ends, "left"), np.searchsorted(sorted_entity, ends, "right")
        owner, at = gather_ranges(lo, hi)
        return owner, by_entity[at]

    taken: set[str] = set()
    class_names = graph.names_of(classes)
    type_ids = [_slug(name or graph.entity_ids[int(c)], taken) for name, c in zip(class_names, classes, strict=True)]
    sizes = np.bincount(class_of, minlength=classes.size)
    labels = graph.relation_labels
    names = np.asarray(graph.names_of(np.arange(n)) if n else [], dtype=object)
    entity_names = names[m_entity]

    # properties: typed entity → value
    kept = ~is_type & typed[head] & is_value[tail]
    e_head, e_rel, e_tail = head[kept], rel[kept], tail[kept]
    owner, member = expand(e_head)
    p_class, p_pos, p_rel, p_value = class_of[member], position[member], e_rel[owner], e_tail[owner]
    order = np.lexsort((-np.arange(p_class.size), p_rel, p_class))  # within a (class, relation): last edge first
    p_class, p_pos, p_rel, p_value = p_class[order], p_pos[order], p_rel[order], p_value[order]
    columns: dict[int, dict[str, list[Any]]] = {}
    props: dict[int, list[DataProperty]] = {}
    groups: list[tuple[int, int, int, int]] = []  # (class, relation, start, stop) of p_*
    if p_class.size:
        keys = p_class * (len(graph.relations) + 1) + p_rel
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        stops = np.r_[starts[1:], keys.size]
        groups = [(int(p_class[s]), int(p_rel[s]), s, e) for s, e in zip(starts.tolist(), stops.tolist(), strict=True)]
    # a relation with two values on one row is a table of its own values, linked (film → genre), not a column
    several = {r for _, r, s, e in groups if np.unique(p_pos[s:e]).size < e - s}
    value_types: dict[int, tuple[str, np.ndarray]] = {}
    for r in sorted(several):
        word = (labels[r] if labels[r] != graph.relations[r] else graph.relations[r]).rsplit(".", 1)[-1]
        value_types[r] = (_slug(word, taken), np.unique(p_value[p_rel == r]))
    value_links: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # (class, relation, rows, value rows)
    for c, r, s, e in groups:
        if r in value_types:
            value_links.append((c, r, p_pos[s:e], np.searchsorted(value_types[r][1], p_value[s:e])))
            continue
        column = np.full(int(sizes[c]), None, dtype=object)
        column[p_pos[s:e]] = names[p_value[s:e]]  # the last write per row is the row's first edge
        prop = graph.relations[r] if graph.relations[r] != NAME else f"{NAME}_value"
        values = column.tolist()
        label = labels[r] if labels[r] != graph.relations[r] else ""
        props.setdefault(c, []).append(DataProperty(name=prop, display_name=label))
        columns.setdefault(c, {})[prop] = values

    object_types, tables = [], {}
    for c, type_id in enumerate(type_ids):
        lo, hi = int(first[c]), int(first[c]) + int(sizes[c])
        ot = ObjectType(id=type_id, name=class_names[c] or type_id, display_key=NAME,
                        data_properties=[DataProperty(name=NAME), *props.get(c, [])])
        object_types.append(ot)
        rows = m_entity[lo:hi]
        values = {NAME: entity_names[lo:hi].tolist(), **columns.get(c, {})}
        tables[type_id] = TypeTable(ot, [graph.entity_ids[int(r)] for r in rows.tolist()], values)
    for type_id, rows in value_types.values():
        values = names[rows].tolist()
        ot = ObjectType(id=type_id, name=type_id.replace("_", " "), display_key=NAME,
                        data_properties=[DataProperty(name=NAME)])
        object_types.append(ot)
        tables[type_id] = TypeTable(ot, [graph.entity_ids[int(r)] for r in rows.tolist()], {NAME: values})

    # links: typed entity → typed entity, one relation type per (relation, source class, target class)
    kept = ~is_type & typed[head] & typed[tail]
    l_head, l_rel, l_tail = head[kept], rel[kept], tail[kept]
    h_owner, h_member = expand(l_head)
    t_owner, t_member = expand(l_tail[h_owner])
    edge = h_owner[t_owner]
    src_member, tgt_member = h_member[t_owner], t_member
    s_class, t_class, r_of = class_of[src_member], class_of[tgt_member], l_rel[edge]
    links: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    relation_types = []
    if r_of.size:
        key = (r_of * classes.size + s_class) * classes.size + t_class
        order = np.argsort(key, kind="stable")
        key, src_member, tgt_member, r_of = key[order], src_member[order], tgt_member[order], r_of[order]
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        stops = np.r_[starts[1:], key.size]
        for s, e in zip(starts.tolist(), stops.tolist(), strict=True):
            r = int(r_of[s])
            sc, tc = int(class_of[src_member[s]]), int(class_of[tgt_member[s]])
            rid = f"{graph.relations[r]}@{type_ids[sc]}>{type_ids[tc]}"
            name = labels[r] if labels[r] != graph.relations[r] else graph.relations[r]
            relation_types.append(RelationType(id=rid, name=name, source_object_type_id=type_ids[sc],
                                               target_object_type_id=type_ids[tc]))
            links[rid] = (position[src_member[s:e]].astype(np.int64), position[tgt_member[s:e]].astype(np.int64))
    for c, r, rows, value_rows in value_links:
        target = value_types[r][0]
        rid = f"{graph.relations[r]}@{type_ids[c]}>{target}"
        name = labels[r] if labels[r] != graph.relations[r] else graph.relations[r]
        relation_types.append(RelationType(id=rid, name=name, source_object_type_id=type_ids[c],
                                           target_object_type_id=target))
        links[rid] = (rows.astype(np.int64), value_rows.astype(np.int64))
    network = KnowledgeNetwork(kn_id=graph.name, name=graph.name, object_types=object_types,
                               relation_types=relation_types)
    view = GraphView(network, tables, links, version=f"graph:{id(graph)}")
    view.typed = np.flatnonzero(typed)
    return view


#: id(graph) → (a weak reference to the graph, its view): a view lives as long as its graph object
_VIEWS: dict[int, tuple[weakref.ref[CSRGraph], GraphView | None]] = {}
_LOCK = threading.Lock()


def view_for_graph(graph: CSRGraph, max_rows: int = MAX_ROWS) -> GraphView | None:
    """:func:`view_of_graph`, built once per graph object."""
    key = id(graph)
    with _LOCK:
        held = _VIEWS.get(key)
        if held is not None and held[0]() is graph:
            return held[1]
    view = view_of_graph(graph, max_rows)
    with _LOCK:
        _VIEWS[key] = (weakref.ref(graph, lambda _ref, k=key: _VIEWS.pop(k, None)), view)
    return view
