"""An imported graph (:class:`~kgrag.data.triples.TripleArrays`) as a :class:`CSRGraph` in its own namespace.

    graph = imported_csr(read_triple_files(["kg.nt"]), "mykg", imported_namespace("mykg"), "en")

Keys and relations are sorted (so the same files give the same graph, and a TSV import of MetaQA's ``kb.txt``
gives exactly the built-in MetaQA graph). Relation names are minted here (:func:`relation_local_name`; two sources
with the same local part get ``_2``, ``_3``): an opaque predicate id is replaced by its property's label when the
source gives one (``wdt:P19`` labelled "place of birth" → ``place_of_birth``, so the store, the tools, the agent
and the console all say it), a readable one is kept (``people.person.place_of_birth``, ``birthPlace``);
``meta["relation_labels"]`` keeps every label as written, ``meta["relation_sources"]`` the IRI. An unlabelled
``P19`` stays ``P19``; a label with no ASCII letter keeps the id, its label in the meta; local ids follow the arrays' ``id_style`` (``iri``: the IRI's own id
when it is one, ``m.0abc``, else a slug + hash; ``slug``: the key's slug + hash). Two keys with the same local id
(``…/a/m.0abc`` and ``…/b/m.0abc``) both fall back to the slug of their whole key. The nodes' other names
(``arrays.alias_nodes`` / ``alias_names``) follow their nodes into the graph's ``alias_rows`` / ``alias_names``.
"""

from __future__ import annotations

import re

import numpy as np

from kgrag.data.triples import TripleArrays
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import FREEBASE_NS, RELATION_RE, local_id, slug_id
from kgrag.graph.mapped import StringColumn, string_hashes

_NOT_RELATION = re.compile(r"[^A-Za-z0-9_.]+")

#: a relation name that is an opaque id (Wikidata's ``P19``, digits, hashes, Freebase ``m.`` ids): named by its label
_OPAQUE_RELATION = re.compile(r"^(?:[A-Z]\d+|r_\d+|[mg]\.[0-9a-z_]+|[0-9a-f_]{16,}|relation)$")

__all__ = ["imported_csr", "label_local_name", "opaque_relation_labels", "relation_local_name", "relation_local_names"]


def _sorted_vocabulary(values: list[str]) -> tuple[list[str], np.ndarray]:
    """The values sorted, and for each old index its new one."""
    order = sorted(range(len(values)), key=values.__getitem__)
    remap = np.empty(len(values), dtype=np.int32)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(values), dtype=np.int32)
    return [values[i] for i in order], remap


def relation_local_name(source: str) -> str:
    """A dotted identifier SPARQL accepts (:data:`RELATION_RE`) for a predicate IRI or a TSV relation text: the
    whole local part in Freebase's namespace (``people.person.spouse_s``), else the last path segment
    (``…/birthPlace`` → ``birthPlace``); other characters become ``_``, a part starting with a digit gets ``r_``."""
    if source.startswith(FREEBASE_NS):
        local = source[len(FREEBASE_NS):]
    elif "://" in source or source.startswith("urn:"):
        local = re.split(r"[/#:]", source.rstrip("/#"))[-1]
    else:
        local = source
    local = _NOT_RELATION.sub("_", local.strip()).strip("._")
    local = re.sub(r"\.{2,}", ".", local)
    local = ".".join(part if part and not part[0].isdigit() else f"r_{part}" for part in local.split(".")[:9])
    return local if RELATION_RE.match(local) else "relation"


def label_local_name(label: str) -> str:
    """A relation name (:data:`RELATION_RE`) from a property's label: ``place of birth`` → ``place_of_birth``,
    ``ISBN-13`` → ``ISBN_13``; "" when the label has no ASCII letter (the IRI's name is kept then)."""
    local = re.sub(r"[^A-Za-z0-9]+", "_", label.strip()).strip("_")
    if not re.search(r"[A-Za-z]", local):
        return ""
    local = local if not local[0].isdigit() else f"r_{local}"
    return local if RELATION_RE.match(local) else ""


def relation_local_names(sources: list[str], labels: list[str] | None = None) -> list[str]:
    """:func:`relation_local_name` of each source — :func:`label_local_name` of its label instead where that is an
    opaque id (``P19``, digits, a hash) and a label is given — in order; a name already taken gets ``_2``,
    ``_3``. A readable predicate keeps its own name (``people.person.place_of_birth``, ``birthPlace``)."""
    taken: set[str] = set()
    out = []
    for k, source in enumerate(sources):
        local = base = relation_local_name(source)
        if labels and labels[k] and _OPAQUE_RELATION.match(local):
            local = base = label_local_name(labels[k]) or local
        n = 1
        while local in taken:
            n += 1
            local = f"{base}_{n}"
        taken.add(local)
        out.append(local)
    return out


def opaque_relation_labels(graph: CSRGraph) -> dict[str, str]:
    """``{relation: label}`` for the relations that kept an opaque id although their property has a label — a
    label with no ASCII letter (``P19`` labelled ``出生地``): what the tools show and the rankers embed beside or
    instead of the id. Empty for graphs without labels."""
    labels = graph.meta.get("relation_labels") or []
    if len(labels) != len(graph.relations):
        return {}
    return {rel: label for rel, label in zip(graph.relations, labels, strict=True)
            if label and label != rel and (_OPAQUE_RELATION.match(rel) or not label_local_name(label))}


def _clashing(ids: StringColumn) -> set[str]:
    """The ids that occur more than once, found by their hashes (no set or Counter of every id)."""
    hashes = np.fromiter((hash(i) for i in ids), dtype=np.int64, count=len(ids))
    values, counts = np.unique(hashes, return_counts=True)
    suspects = np.flatnonzero(np.isin(hashes, values[counts > 1]))
    seen: dict[str, int] = {}
    for row in suspects.tolist():
        seen[ids[row]] = seen.get(ids[row], 0) + 1
    return {i for i, n in seen.items() if n > 1}


def imported_csr(arrays: TripleArrays, name: str, namespace: str, lang: str) -> CSRGraph:
    """The imported arrays as a graph; its vocabularies are packed string columns (what ``save`` writes), so the
    import holds each key, id and name once, as bytes."""
    keys, node_map = _sorted_vocabulary(arrays.keys)
    arrays.keys = []  # the sorted list holds the same strings
    names = StringColumn.pack(arrays.names[i] for i in np.argsort(node_map, kind="stable").tolist())
    arrays.names = []  # the packed column holds them as bytes now
    relations, rel_map = _sorted_vocabulary(relation_local_names(arrays.relations, arrays.relation_labels))
    sources = [""] * len(relations)
    labels = [""] * len(relations)
    given = arrays.relation_labels or [""] * len(arrays.relations)
    for old, source in enumerate(arrays.relations):
        sources[rel_map[old]] = source
        labels[rel_map[old]] = given[old]
    ids = StringColumn.pack(local_id(k, arrays.id_style) for k in keys)
    clashes = _clashing(ids)
    if clashes:
        ids = StringColumn.pack(slug_id(k) if i in clashes else i for k, i in zip(keys, ids, strict=True))
    meta = {"id_style": arrays.id_style, "name_lang": lang, "relation_sources": sources}
    if any(labels):
        meta["relation_labels"] = labels
    key_column = StringColumn.pack(keys)
    graph = CSRGraph.from_arrays(name, namespace, key_column, ids, names, relations,
                                 node_map[arrays.head], rel_map[arrays.rel], node_map[arrays.tail], meta=meta)
    graph.__dict__["key_hashes"] = string_hashes(key_column)  # saved: a later `kgrag kg update` finds nodes by them
    if len(arrays.alias_names):
        rows = node_map[arrays.alias_nodes]
        order = np.argsort(rows, kind="stable")
        graph.alias_rows = rows[order].astype(np.int32)
        graph.alias_names = StringColumn.pack(arrays.alias_names[i] for i in order.tolist())
    return graph
