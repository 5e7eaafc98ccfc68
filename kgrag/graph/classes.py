"""Which nodes of a graph are classes (types): the objects of its type relations — ``rdf:type``, Freebase's
``type.object.type`` (under any namespace) and ``common.topic.notable_types``, Wikidata's ``wdt:P31`` (instance
of).

    rows = class_rows(CSRGraph.load("work/mykg/graph.npz"))   # sorted int64 rows of the class nodes

A type relation is recognised by the predicate IRI an import kept (``meta["relation_sources"]``) or, for a graph
built without sources (the built-in readers), by the relation's own name. One vectorised pass over the triples.
"""

from __future__ import annotations

import numpy as np

from kgrag.graph.csr import CSRGraph

__all__ = ["TYPE_PREDICATES", "class_rows", "type_relations"]

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
#: type predicates recognised by their whole IRI
TYPE_IRIS = frozenset({RDF_TYPE, "http://www.wikidata.org/prop/direct/P31"})
#: the last part of a type predicate's IRI, or a relation name, that says "is an instance of"
TYPE_PREDICATES = ("type.object.type", "common.topic.notable_types")


def _is_type(name: str) -> bool:
    return name in TYPE_IRIS or any(name == p or name.endswith(f"/{p}") or name.endswith(f".{p}")
                                   for p in TYPE_PREDICATES)


def type_relations(graph: CSRGraph) -> list[int]:
    """The relation ids whose edges say "head is an instance of tail"."""
    sources = graph.meta.get("relation_sources") or []
    if len(sources) != graph.num_relations:
        sources = [""] * graph.num_relations
    return [i for i, (name, source) in enumerate(zip(graph.relations, sources, strict=True))
            if _is_type(source or name)]


def class_rows(graph: CSRGraph) -> np.ndarray:
    """The sorted rows that are the object of a type relation (empty when the graph has none)."""
    rels = type_relations(graph)
    if not rels or not graph.num_triples:
        return np.zeros(0, dtype=np.int64)
    mask = np.isin(np.asarray(graph.rel), np.asarray(rels, dtype=np.int64))
    return np.unique(np.asarray(graph.tail)[mask]).astype(np.int64)
