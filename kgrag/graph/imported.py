"""An imported graph (:class:`~kgrag.data.triples.TripleArrays`) as a :class:`CSRGraph` in its own namespace.

    graph = imported_csr(read_triple_files(["kg.nt"]), "mykg", imported_namespace("mykg"), "en")

Keys and relations are sorted (so the same files give the same graph, and a TSV import of MetaQA's ``kb.txt``
gives exactly the built-in MetaQA graph); local ids follow the arrays' ``id_style`` (``iri``: the IRI's own id
when it is one, ``m.0abc``, else a slug + hash; ``slug``: the key's slug + hash). Two keys with the same local id
(``…/a/m.0abc`` and ``…/b/m.0abc``) both fall back to the slug of their whole key.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kgrag.data.triples import TripleArrays
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import local_id, slug_id

__all__ = ["imported_csr"]


def _sorted_vocabulary(values: list[str]) -> tuple[list[str], np.ndarray]:
    """The values sorted, and for each old index its new one."""
    order = sorted(range(len(values)), key=values.__getitem__)
    remap = np.empty(len(values), dtype=np.int32)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(values), dtype=np.int32)
    return [values[i] for i in order], remap


def imported_csr(arrays: TripleArrays, name: str, namespace: str, lang: str) -> CSRGraph:
    keys, node_map = _sorted_vocabulary(arrays.keys)
    names = [""] * len(keys)
    for old, text in enumerate(arrays.names):
        names[node_map[old]] = text
    relations, rel_map = _sorted_vocabulary(arrays.relations)
    sources = [""] * len(relations)
    for old, source in enumerate(arrays.relation_iris):
        sources[rel_map[old]] = source
    ids = [local_id(k, arrays.id_style) for k in keys]
    clashes = {i for i, n in Counter(ids).items() if n > 1}
    if clashes:
        ids = [slug_id(k) if i in clashes else i for k, i in zip(keys, ids, strict=True)]
    meta = {"id_style": arrays.id_style, "name_lang": lang, "relation_sources": sources}
    return CSRGraph.from_arrays(name, namespace, keys, ids, names, relations, node_map[arrays.head],
                                rel_map[arrays.rel], node_map[arrays.tail], meta=meta)
