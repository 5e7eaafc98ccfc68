"""A triple graph takes a delta: the triples to add and to delete (each read as a file is, :class:`TripleArrays`)
give the new :class:`CSRGraph` — a bounded, vectorised rebuild from the old arrays — and the RDF lines its store
must lose and gain.

    delta = graph_delta(CSRGraph.load(path), added_arrays, deleted_arrays, lang="en")
    delta.graph.save(new_path); apply_store_changes(...)   # kgrag.graph.versions.commit

Ids stay stable: every old entity and relation keeps its row (trained checkpoints index them); a new entity or
relation is appended. A delta node is found by its key (the IRI or TSV text it was imported from), else by the
IRI the store shows (``<namespace><local id>``); a relation by its source IRI, else by its name under the
namespace. Edges are compared as one int64 key per (head, relation, tail) (the old arrays are sorted, so
membership is a ``searchsorted``); the new arrays are the kept old ones plus the added ones, sorted once
(:meth:`CSRGraph.from_arrays`). A node left in no edge by the delta is *gone*: its name, other names and value
triple go, its row stays nameless (a later add of the same key reuses it). Names: an added name triple names a new
node, and renames an old one; a deleted name triple that is the node's name clears it. Names an import derives from
an IRI's last segment (no name triple) never displace or clear a stored name.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kgrag.data.triples import TripleArrays, iri_label
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph, in_sorted
from kgrag.graph.imported import relation_local_names
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE, XSD, local_id, slug_id
from kgrag.graph.mapped import StringColumn, string_hashes
from kgrag.graph.sparql import escape_string

__all__ = ["GraphDelta", "TripleStoreChanges", "edge_keys", "graph_delta", "replace_strings", "store_update_text",
           "value_count_query"]


@dataclass
class TripleStoreChanges:
    """What the store loses and gains: N-Triples lines, and nodes whose value triples go."""

    delete: list[str] = field(default_factory=list)
    insert: list[str] = field(default_factory=list)
    drop_values: list[str] = field(default_factory=list)  # entity IRIs whose kgrag.value triple goes
    insert_values: list[str] = field(default_factory=list)  # kgrag.value lines (present already for a node kept)
    value_subjects: list[str] = field(default_factory=list)  # the IRIs of insert_values' lines

    def __bool__(self) -> bool:
        return bool(self.delete or self.insert or self.drop_values or self.insert_values)


@dataclass
class GraphDelta:
    """The new graph, the store's changes and the counts ``kgrag kg update`` prints."""

    graph: CSRGraph
    store: TripleStoreChanges
    added: int = 0  # triples (edges) added
    deleted: int = 0
    not_found: int = 0  # triples to delete that the graph does not hold
    already_present: int = 0  # triples to add that it already holds
    names_changed: int = 0
    entities_new: int = 0
    entities_gone: int = 0
    relations_new: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.deleted or self.names_changed or self.entities_new or self.relations_new)


def edge_keys(head: np.ndarray, rel: np.ndarray, tail: np.ndarray, entities: int, relations: int) -> np.ndarray:
    """One int64 per triple, ordered as (head, relation, tail) is; a clear error when the graph is too large."""
    if entities * entities * max(relations, 1) >= 2**62:
        raise KgragError(f"graph too large for a delta ({entities:,} entities × {relations:,} relations): re-run "
                         "`kgrag prepare` with the changed files")
    return ((head.astype(np.int64) * relations + rel.astype(np.int64)) * entities) + tail.astype(np.int64)


def replace_strings(column: Sequence[str], rows: np.ndarray, texts: Sequence[str],
                    extra: Sequence[str] = ()) -> StringColumn:
    """``column`` with ``texts`` at ``rows`` and ``extra`` appended, as a packed column: the unchanged runs of bytes
    between changed rows are copied as slices (a loop over the changed rows only, never over the column)."""
    column = column if isinstance(column, StringColumn) else StringColumn.pack(column)
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    rows = rows[order]
    encoded = [texts[i].encode("utf-8") for i in order.tolist()]
    appended = [t.encode("utf-8") for t in extra]
    old_offsets = np.asarray(column.offsets, dtype=np.int64)
    data = np.asarray(column.data, dtype=np.uint8)
    lengths = np.concatenate([np.diff(old_offsets),
                              np.fromiter((len(b) for b in appended), dtype=np.int64, count=len(appended))])
    if rows.size:
        lengths[rows] = np.fromiter((len(b) for b in encoded), dtype=np.int64, count=len(encoded))
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    chunks: list[np.ndarray] = []
    at = 0
    for row, raw in zip(rows.tolist(), encoded, strict=True):
        chunks.append(data[at:old_offsets[row]])
        chunks.append(np.frombuffer(raw, dtype=np.uint8))
        at = int(old_offsets[row + 1])
    chunks.append(data[at:])
    chunks += [np.frombuffer(raw, dtype=np.uint8) for raw in appended]
    return StringColumn(np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.uint8), offsets)


class _SortedBytes:
    """Many lookups in a column sorted directly or through ``order``: binary search over the raw UTF-8 bytes (no
    string decoded; byte order is code point order, the order :func:`kgrag.graph.csr._sort_order` sorts by)."""

    def __init__(self, column: Sequence[str], order: np.ndarray | None) -> None:
        column = column if isinstance(column, StringColumn) else StringColumn.pack(column)
        self.raw = np.ascontiguousarray(column.data, dtype=np.uint8).tobytes()
        self.offsets = np.asarray(column.offsets, dtype=np.int64).tolist()
        self.order = np.asarray(order, dtype=np.int64) if order is not None else None
        self._order_list = self.order.tolist() if order is not None else None
        self.n = len(self.offsets) - 1

    def _row(self, i: int) -> int:
        return i if self._order_list is None else self._order_list[i]

    def _at(self, i: int) -> bytes:
        row = self._row(i)
        return self.raw[self.offsets[row]:self.offsets[row + 1]]

    def position(self, key: bytes) -> int:
        """Where ``key`` sorts among the column's strings (bisect left)."""
        return bisect.bisect_left(range(self.n), key, key=self._at)

    def find(self, key: str) -> int:
        raw = key.encode("utf-8")
        at = self.position(raw)
        return self._row(at) if at < self.n and self._at(at) == raw else -1

    def merged_order(self, new: Sequence[str], first_row: int) -> np.ndarray | None:
        """The sort order of the column with ``new`` appended (rows from ``first_row``): the new strings inserted
        at their positions (None: nothing new and the column sorted already)."""
        if not len(new):
            return self.order
        raws = [s.encode("utf-8") for s in new]
        ranked = sorted(range(len(raws)), key=raws.__getitem__)
        positions = np.asarray([self.position(raws[i]) for i in ranked], dtype=np.int64)
        base = self.order if self.order is not None else np.arange(self.n, dtype=np.int64)
        return np.insert(base, positions, np.asarray(ranked, dtype=np.int64) + first_row)


class _Vocabulary:
    """The old graph's rows and relations, and what the delta appends to them."""

    def __init__(self, graph: CSRGraph, id_style: str) -> None:
        self.graph = graph
        self.id_style = id_style
        self.new_keys: list[str] = []
        self.new_ids: list[str] = []
        self.new_key_rows: dict[str, int] = {}
        self.new_relations: list[str] = []
        self.new_sources: list[str] = []
        self.new_labels: list[str] = []
        sources = graph.meta.get("relation_sources") or []
        self.source_index = {s: i for i, s in enumerate(sources) if s}
        self.taken_ids: set[str] = set()
        self.keys = _SortedBytes(graph.entity_keys, _order_of(graph, "entity_keys", "key_order"))
        self.ids = _SortedBytes(graph.entity_ids, _order_of(graph, "entity_ids", "id_order"))
        self._key_hashes: np.ndarray | None = None
        self._hash_order: np.ndarray | None = None

    def find(self, key: str) -> int:
        """The old row of ``key`` (by key, else by the store's IRI), -1 when none."""
        row = self.keys.find(key)
        if row >= 0:
            return row
        base = self.graph.iri_base
        if base and key.startswith(base):
            return self.ids.find(key[len(base):])
        return -1

    def column_hashes(self) -> np.ndarray:
        """:func:`string_hashes` of the key column: stored with the graph (:meth:`CSRGraph.save`), else computed."""
        stored = self.graph.__dict__.get("key_hashes")
        if stored is None or len(stored) != self.graph.num_entities:
            stored = self.graph.__dict__["key_hashes"] = string_hashes(self.graph.entity_keys)
        return np.asarray(stored, dtype=np.uint64)

    def find_many(self, keys: Sequence[str]) -> np.ndarray:
        """:meth:`find` of every key, vectorised: by hash over the key column (each match checked against the
        string), the binary search only for what the hashes do not settle."""
        column = self.graph.entity_keys
        if self._key_hashes is None:
            hashes = self.column_hashes()
            self._hash_order = np.argsort(hashes, kind="stable")
            self._key_hashes = hashes[self._hash_order]
        out = np.full(len(keys), -1, dtype=np.int64)
        if not len(keys) or not self._key_hashes.size:
            return out
        wanted = string_hashes(keys)
        at = np.searchsorted(self._key_hashes, wanted).clip(max=self._key_hashes.size - 1)
        hit = np.flatnonzero(self._key_hashes[at] == wanted)
        rows = self._hash_order[at[hit]]
        names = column.take(rows) if isinstance(column, StringColumn) else [column[int(r)] for r in rows]
        for i, row, found in zip(hit.tolist(), rows.tolist(), names, strict=True):
            if found == keys[i]:
                out[i] = row
        for i in np.flatnonzero(out < 0).tolist():  # a new key, an IRI of the store, or a hash collision
            out[i] = self.find(keys[i])
        return out

    def rows(self, keys: Sequence[str], create: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rows of ``keys`` (old, or appended where ``create``; -1 where absent and not created) and which are new."""
        new = np.zeros(len(keys), dtype=bool)
        n_old = self.graph.num_entities
        out = self.find_many(keys)
        for i in np.flatnonzero(out < 0).tolist():  # only the keys the graph does not hold
            row = self.new_key_rows.get(keys[i], -1)
            if row < 0 and create[i]:
                row = self._append(keys[i])
            new[i] = row >= n_old
            out[i] = row
        return out, new

    def _append(self, key: str) -> int:
        ident = local_id(key, self.id_style) if self.id_style != "key" else slug_id(key)
        if ident in self.taken_ids or self.ids.find(ident) >= 0:
            ident = slug_id(key)
        self.taken_ids.add(ident)
        row = self.graph.num_entities + len(self.new_keys)
        self.new_keys.append(key)
        self.new_ids.append(ident)
        self.new_key_rows[key] = row
        return row

    def relation(self, source: str, label: str, create: bool) -> int:
        """The id of relation ``source`` (its IRI or TSV text), appended when ``create``; -1 when absent."""
        if source in self.source_index:
            return self.source_index[source]
        graph = self.graph
        base = graph.iri_base
        local = source[len(base):] if base and source.startswith(base) else None
        index = graph.relation_index
        if local is not None and local in index:
            return index[local]
        if source in index and "://" not in source:  # a TSV relation named as the graph names it
            return index[source]
        if not create:
            return -1
        taken = set(graph.relations) | set(self.new_relations)
        name = relation_local_names([source], [label] if label else None)[0]
        base_name, k = name, 1
        while name in taken:
            k += 1
            name = f"{base_name}_{k}"
        rel = graph.num_relations + len(self.new_relations)
        self.new_relations.append(name)
        self.new_sources.append(source)
        self.new_labels.append(label)
        self.source_index[source] = rel
        return rel


def _order_of(graph: CSRGraph, field_name: str, order_name: str) -> np.ndarray | None:
    """A column's sort order: a mapped graph's stored one (absent: the column is sorted, as :meth:`CSRGraph.save`
    writes none then), else computed."""
    loaded = graph.__dict__.get("_orders")
    if loaded is not None:
        return loaded.get(order_name)
    from kgrag.graph.csr import _sort_order

    return _sort_order(getattr(graph, field_name))


def _given_names(arrays: TripleArrays) -> dict[int, str]:
    """Node → name for the names a file gives by a name triple (not the IRI-derived ones an import fills in)."""
    if not arrays.name_triples:
        return {}
    return {i: name for i, (key, name) in enumerate(zip(arrays.keys, arrays.names, strict=True))
            if name and name != iri_label(key)}


def graph_delta(graph: CSRGraph, add: TripleArrays | None, delete: TripleArrays | None, lang: str) -> GraphDelta:
    """The graph after deleting ``delete``'s triples and adding ``add``'s (see the module docstring)."""
    id_style = str(graph.meta.get("id_style") or (add.id_style if add is not None else "iri"))
    vocab = _Vocabulary(graph, id_style)
    n_old, r_old = graph.num_entities, graph.num_relations
    empty = np.zeros(0, dtype=np.int64)
    # ---- deletions, in old ids (an unknown node or relation: the triple is not there)
    d_h = d_r = d_t = empty
    delete_names: dict[int, str] = {}
    if delete is not None:
        rows, _ = vocab.rows(delete.keys, np.zeros(len(delete.keys), dtype=bool))
        rels = np.asarray([vocab.relation(s, "", False) for s in delete.relations], dtype=np.int64)
        d_h, d_t = rows[delete.head], rows[delete.tail]
        d_r = rels[delete.rel] if rels.size else empty
        for node, name in _given_names(delete).items():
            if rows[node] >= 0:
                delete_names[int(rows[node])] = name
    # ---- additions, appending new nodes and relations
    a_h = a_r = a_t = empty
    add_names: dict[int, str] = {}
    new_rows_names: dict[int, str] = {}
    literal_rows: dict[int, str] = {}
    alias_add: list[tuple[int, str]] = []
    if add is not None:
        used = np.zeros(len(add.keys), dtype=bool)
        used[add.head] = used[add.tail] = True
        named = np.fromiter((bool(n) for n in add.names), dtype=bool, count=len(add.names))
        rows, is_new = vocab.rows(add.keys, used | named)
        labels = add.relation_labels or [""] * len(add.relations)
        rels = np.asarray([vocab.relation(s, label, True) for s, label in zip(add.relations, labels, strict=True)],
                          dtype=np.int64)
        a_h, a_r, a_t = rows[add.head], rels[add.rel], rows[add.tail]
        given = _given_names(add)
        for node in np.flatnonzero(is_new).tolist():
            new_rows_names[int(rows[node])] = add.names[node]
        for node, name in given.items():
            if rows[node] >= 0 and not is_new[node]:
                add_names[int(rows[node])] = name
        if add.literal_types:
            node_of = {key: i for i, key in enumerate(add.keys) if key in add.literal_types}
            for key, node in node_of.items():
                if rows[node] >= 0:
                    literal_rows[int(rows[node])] = add.literal_types[key]
        for node, text in zip(np.asarray(add.alias_nodes).tolist(), add.alias_names, strict=True):
            alias_add.append((int(rows[node]), text))
    n_new, r_new = n_old + len(vocab.new_keys), r_old + len(vocab.new_relations)
    # ---- edges: kept old ones + added ones (int64 keys; the old graph is sorted by head, relation, tail)
    old_keys = edge_keys(graph.head, graph.rel, graph.tail, n_new, r_new)
    valid_d = (d_h >= 0) & (d_r >= 0) & (d_t >= 0)
    d_keys = np.unique(edge_keys(d_h[valid_d], d_r[valid_d], d_t[valid_d], n_new, r_new))
    if delete is not None:  # the distinct triples asked to be deleted that are not there
        asked = int(np.unique(np.stack([d_h, d_r, d_t]), axis=1).shape[1]) if d_h.size else 0
    else:
        asked = 0
    found = in_sorted(d_keys, old_keys) if d_keys.size else np.zeros(0, dtype=bool)
    d_keys = d_keys[found]
    gone_edge = in_sorted(old_keys, d_keys)
    a_keys, first = np.unique(edge_keys(a_h, a_r, a_t, n_new, r_new), return_index=True)
    kept_keys = old_keys[~gone_edge]
    present = in_sorted(a_keys, kept_keys)
    take = first[~present]
    at = np.searchsorted(kept_keys, a_keys[~present])  # the added edges merged in order: no re-sort

    def merged(old: np.ndarray, added: np.ndarray) -> np.ndarray:
        return np.insert(np.asarray(old)[~gone_edge].astype(np.int32), at, added.astype(np.int32))

    head, rel, tail = merged(graph.head, a_h[take]), merged(graph.rel, a_r[take]), merged(graph.tail, a_t[take])
    in_order = _merged_in_order(graph, gone_edge, at, head, rel, tail, n_new, r_new)
    # ---- gone nodes: in an edge before, in none after
    before = np.zeros(n_new, dtype=np.int64)
    before[:n_old] = np.bincount(graph.head, minlength=n_old) + np.bincount(graph.tail, minlength=n_old)
    after = np.bincount(head, minlength=n_new) + np.bincount(tail, minlength=n_new)
    gone = np.flatnonzero((before > 0) & (after == 0))
    # ---- names
    old_names = graph.entity_names
    changes: dict[int, str] = {}
    for row, name in delete_names.items():
        if old_names[row] == name:
            changes[row] = ""
    for row, name in add_names.items():
        if old_names[row] != name:
            changes[row] = name
        else:
            changes.pop(row, None)
    for row in gone.tolist():
        if old_names[row]:
            changes[row] = ""
    changes = {row: name for row, name in changes.items() if old_names[row] != name}
    changed_rows = np.asarray(sorted(changes), dtype=np.int64)
    extra_names = [new_rows_names.get(row, "") for row in range(n_old, n_new)]
    names = replace_strings(old_names, changed_rows, [changes[r] for r in changed_rows.tolist()], extra_names)
    keys = replace_strings(graph.entity_keys, empty, [], vocab.new_keys)
    ids = replace_strings(graph.entity_ids, empty, [], vocab.new_ids)
    meta = {k: v for k, v in graph.meta.items() if k not in ("names_sha256", "edges_sha256", "duplicates_dropped")}
    if vocab.new_relations:
        sources = list(meta.get("relation_sources") or [""] * r_old)
        meta["relation_sources"] = sources + vocab.new_sources
        if meta.get("relation_labels") or any(vocab.new_labels):
            meta["relation_labels"] = list(meta.get("relation_labels") or [""] * r_old) + vocab.new_labels
    meta["duplicates_dropped"] = int(graph.meta.get("duplicates_dropped", 0))
    new_graph = CSRGraph(name=graph.name, iri_base=graph.iri_base, entity_keys=keys, entity_ids=ids,
                         entity_names=names, relations=[*graph.relations, *vocab.new_relations], head=head, rel=rel,
                         tail=tail, meta=meta)  # sorted by (head, relation, tail) already: the merge kept the order
    new_graph.__dict__["_orders"] = {"key_order": vocab.keys.merged_order(vocab.new_keys, n_old),
                                     "id_order": vocab.ids.merged_order(vocab.new_ids, n_old)}
    new_graph.__dict__["in_order"] = in_order
    if vocab._key_hashes is not None:  # the key hashes follow the rows (the next update needs none computed)
        new_graph.__dict__["key_hashes"] = np.concatenate([vocab.column_hashes(), string_hashes(vocab.new_keys)])
    _carry_aliases(graph, new_graph, gone, alias_add)
    # ---- the store's changes
    store = TripleStoreChanges()
    base = graph.iri_base
    ent_old = graph.entity_ids
    rel_p = [f"<{base}{r}>" for r in new_graph.relations]

    def ent(row: int) -> str:
        return f"<{base}{ent_old[row] if row < n_old else vocab.new_ids[row - n_old]}>"

    for h, r, t in zip(np.asarray(graph.head)[gone_edge].tolist(), np.asarray(graph.rel)[gone_edge].tolist(),
                       np.asarray(graph.tail)[gone_edge].tolist(), strict=True):
        store.delete.append(f"{ent(h)} {rel_p[r]} {ent(t)} .\n")
    for h, r, t in zip(a_h[take].tolist(), a_r[take].tolist(), a_t[take].tolist(), strict=True):
        store.insert.append(f"{ent(h)} {rel_p[r]} {ent(t)} .\n")
    name_p = f"<{base}{NAME_PREDICATE}>"
    for row in changed_rows.tolist():
        if old_names[row]:
            store.delete.append(f'{ent(row)} {name_p} "{escape_string(old_names[row])}"@{lang} .\n')
        if changes[row]:
            store.insert.append(f'{ent(row)} {name_p} "{escape_string(changes[row])}"@{lang} .\n')
    for row, name in zip(range(n_old, n_new), extra_names, strict=True):
        if name:
            store.insert.append(f'{ent(row)} {name_p} "{escape_string(name)}"@{lang} .\n')
    store.drop_values = [ent(row) for row in gone.tolist()]
    value_p = f"<{base}{VALUE_PREDICATE}>"
    gone_set = set(gone.tolist())
    for row, xsd in sorted(literal_rows.items()):
        if row not in gone_set:
            value = names[row] or (vocab.new_keys[row - n_old] if row >= n_old else graph.entity_keys[row])
            store.insert_values.append(f'{ent(row)} {value_p} "{escape_string(value)}"^^<{XSD}{xsd}> .\n')
            store.value_subjects.append(ent(row))
    return GraphDelta(graph=new_graph, store=store, added=int(take.size), deleted=int(d_keys.size),
                      not_found=asked - int(d_keys.size), already_present=int(present.sum()),
                      names_changed=int(changed_rows.size), entities_new=n_new - n_old,
                      entities_gone=int(gone.size), relations_new=r_new - r_old)


def _merged_in_order(graph: CSRGraph, gone_edge: np.ndarray, at: np.ndarray, head: np.ndarray, rel: np.ndarray,
                     tail: np.ndarray, entities: int, relations: int) -> np.ndarray:
    """The new edges sorted by (tail, relation, head): the old order without the deleted edges, renumbered, with
    the added edges merged in (no re-sort of the graph)."""
    kept_index = np.cumsum(~gone_edge) - 1  # old edge id -> its rank among the kept edges
    added_new_ids = at + np.arange(at.size)  # where the merge put the added edges (``at`` ascending)
    old_order = np.asarray(graph.in_order, dtype=np.int64)
    old_order = old_order[~gone_edge[old_order]]
    rank = kept_index[old_order]
    kept_new_ids = rank + np.searchsorted(at, rank, side="right")
    in_keys = edge_keys(tail, rel, head, entities, relations)  # (tail, relation, head) order as one int64
    added_sorted = added_new_ids[np.argsort(in_keys[added_new_ids], kind="stable")]
    positions = np.searchsorted(in_keys[kept_new_ids], in_keys[added_sorted], side="left")
    merged = np.insert(kept_new_ids, positions, added_sorted)
    return merged.astype(np.int32 if merged.size < 2**31 else np.int64)


def _carry_aliases(old: CSRGraph, new: CSRGraph, gone: np.ndarray, added: list[tuple[int, str]]) -> None:
    """The old graph's other names without the gone nodes', plus the added ones (sorted by node, no repeats)."""
    rows = np.asarray(old.alias_rows, dtype=np.int64)
    if not rows.size and not added:
        return
    keep = ~np.isin(rows, gone) if rows.size else np.zeros(0, dtype=bool)
    if keep.all() and not added:
        new.alias_rows, new.alias_names = old.alias_rows, old.alias_names
        return
    pairs = [(r, old.alias_names[i]) for i, r in zip(np.flatnonzero(keep).tolist(), rows[keep].tolist(),
                                                       strict=True)]
    names = new.entity_names
    pairs += [(r, text) for r, text in added if r >= 0 and text and text != names[r]]
    pairs = sorted(dict.fromkeys(pairs), key=lambda p: p[0])
    new.alias_rows = np.asarray([p[0] for p in pairs], dtype=np.int32)
    new.alias_names = StringColumn.pack(p[1] for p in pairs)


def store_update_text(changes: TripleStoreChanges, value_predicate: str) -> str:
    """One SPARQL UPDATE (one transaction) for ``changes``: the lines are N-Triples the graph's own vocabulary
    minted (escaped IRIs and literals), never user text pasted raw."""
    parts = []
    if changes.delete:
        parts.append("DELETE DATA {\n" + "".join(changes.delete) + "}")
    parts += [f"DELETE WHERE {{ {iri} <{value_predicate}> ?v }}" for iri in changes.drop_values]
    if changes.insert or changes.insert_values:
        parts.append("INSERT DATA {\n" + "".join(changes.insert) + "".join(changes.insert_values) + "}")
    return " ;\n".join(parts)


def value_count_query(changes: TripleStoreChanges, value_predicate: str) -> str | None:
    """A SELECT counting the value triples of the nodes whose values the changes touch (None: none): asked before
    and after the update, it makes the store's new size exact without counting the whole store."""
    subjects = sorted(set(changes.drop_values) | set(changes.value_subjects))
    if not subjects:
        return None
    return (f"SELECT (COUNT(*) AS ?n) WHERE {{ VALUES ?s {{ {' '.join(subjects)} }} ?s <{value_predicate}> ?v }}")
