"""The difference between two imports of one KG (a re-``prepare`` with changed files), as the changes that turn
the old graph's store into the new graph's — so a checkpoint of the old store takes them instead of a bulk load.

    diff = graph_diff(old_graph, new_graph, "en", arrays.literal_types)   # diff.store: lines to delete / insert

Nodes match by their local id (what the store's IRIs are made of, :func:`string_hashes` of both id columns),
relations by name; edges compare as int64 keys in the new graph's ids, names by hash — all vectorised; only the
changed triples become N-Triples lines (minted from the graphs' own vocabularies, escaped).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph, in_sorted
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE, XSD
from kgrag.graph.mapped import string_hashes
from kgrag.graph.sparql import escape_string
from kgrag.graph.versions.delta import TripleStoreChanges, edge_keys

__all__ = ["GraphDiff", "graph_diff"]


def _row_map(old: Sequence[str], new: Sequence[str]) -> np.ndarray:
    """For each row of ``old``, the row of ``new`` holding the same string (by hash), -1 where none."""
    old_h, new_h = string_hashes(old), string_hashes(new)
    order = np.argsort(new_h, kind="stable")
    sorted_h = new_h[order]
    if not sorted_h.size:
        return np.full(old_h.size, -1, dtype=np.int64)
    at = np.searchsorted(sorted_h, old_h).clip(max=sorted_h.size - 1)
    return np.where(sorted_h[at] == old_h, order[at], -1).astype(np.int64)


@dataclass
class GraphDiff:
    """What turns the old graph's store into the new graph's (see :func:`graph_diff`)."""

    store: TripleStoreChanges
    edges_added: int
    edges_deleted: int
    names_changed: int


def graph_diff(old: CSRGraph, new: CSRGraph, lang: str, literal_types: dict[str, str]) -> GraphDiff:
    """The store changes from ``old`` to ``new`` (two imports of one KG: a re-``prepare`` with changed files).
    Nodes match by their local id (what the store's IRIs are made of), relations by name; edges compare as int64
    keys in the new graph's ids, names by hash — all vectorised; only the changed triples become lines."""
    if old.iri_base != new.iri_base:
        raise KgragError("the graph's namespace changed: a full import")
    n_new = new.num_entities
    rows = _row_map(old.entity_ids, new.entity_ids)
    rel_index = new.relation_index
    rels = np.asarray([rel_index.get(r, -1) for r in old.relations], dtype=np.int64)
    r_new = new.num_relations
    new_keys = edge_keys(new.head, new.rel, new.tail, n_new, r_new)
    if new_keys.size > 1 and not bool(np.all(new_keys[1:] >= new_keys[:-1])):
        new_keys = np.sort(new_keys)
    oh, orr, ot = rows[old.head], rels[old.rel] if rels.size else rels, rows[old.tail]
    valid = (oh >= 0) & (orr >= 0) & (ot >= 0)
    old_keys = np.full(oh.size, -1, dtype=np.int64)
    old_keys[valid] = edge_keys(oh[valid], orr[valid], ot[valid], n_new, r_new)
    kept = valid.copy()
    kept[valid] = in_sorted(old_keys[valid], new_keys)
    new_order_keys = edge_keys(new.head, new.rel, new.tail, n_new, r_new)  # in the new graph's edge order
    added_rows = np.flatnonzero(~in_sorted(new_order_keys, np.sort(old_keys[kept])))
    store = TripleStoreChanges()
    base = new.iri_base
    old_ids, new_ids = old.entity_ids, new.entity_ids
    old_rel = [f"<{base}{r}>" for r in old.relations]
    new_rel = [f"<{base}{r}>" for r in new.relations]
    gone_edges = np.flatnonzero(~kept)
    for h, r, t in zip(np.asarray(old.head)[gone_edges].tolist(), np.asarray(old.rel)[gone_edges].tolist(),
                       np.asarray(old.tail)[gone_edges].tolist(), strict=True):
        store.delete.append(f"<{base}{old_ids[h]}> {old_rel[r]} <{base}{old_ids[t]}> .\n")
    for h, r, t in zip(np.asarray(new.head)[added_rows].tolist(), np.asarray(new.rel)[added_rows].tolist(),
                       np.asarray(new.tail)[added_rows].tolist(), strict=True):
        store.insert.append(f"<{base}{new_ids[h]}> {new_rel[r]} <{base}{new_ids[t]}> .\n")
    # names: by hash, per matched row; a node only one side has
    old_names_h, new_names_h = string_hashes(old.entity_names), string_hashes(new.entity_names)
    empty_h = string_hashes([""])[0]
    matched = rows >= 0
    target = np.where(matched, rows, 0)
    differs = ~matched | (old_names_h != new_names_h[target])
    drop_name = np.flatnonzero(differs & (old_names_h != empty_h))
    covered = np.zeros(n_new, dtype=bool)
    covered[rows[matched]] = True
    same_name = np.zeros(n_new, dtype=bool)
    same_name[rows[matched]] = ~differs[matched]
    put_name = np.flatnonzero(~same_name & (new_names_h != empty_h))
    name_p = f"<{base}{NAME_PREDICATE}>"
    for row in drop_name.tolist():
        store.delete.append(f'<{base}{old_ids[row]}> {name_p} "{escape_string(old.entity_names[row])}"@{lang} .\n')
    for row in put_name.tolist():
        store.insert.append(f'<{base}{new_ids[row]}> {name_p} "{escape_string(new.entity_names[row])}"@{lang} .\n')
    # value triples: nodes that left drop theirs; nodes that arrived bring theirs
    store.drop_values = [f"<{base}{old_ids[row]}>" for row in np.flatnonzero(~matched).tolist()]
    value_p = f"<{base}{VALUE_PREDICATE}>"
    index = new.key_index
    for key, xsd in sorted(literal_types.items()):
        row = index.get(key)
        if row is not None and not covered[row]:
            value = new.entity_names[row] or key
            store.insert_values.append(f'<{base}{new_ids[row]}> {value_p} "{escape_string(value)}"^^<{XSD}{xsd}> .\n')
            store.value_subjects.append(f"<{base}{new_ids[row]}>")
    return GraphDiff(store=store, edges_added=int(added_rows.size), edges_deleted=int(gone_edges.size),
                     names_changed=int(put_name.size))
