"""Warm a search process before its first request: models loaded, every network's rerank documents encoded.

    warm_search(NetworkStore("sqlite:///work/kgrag.db"))  # {"medical": {"relation_documents": 9, …}, …}

A distinct kn_search on a cold process pays for what no later request pays again: loading the query embedders
(≈10 s on 2 cores), reading each object type's vector index, and encoding the rerank documents
(:func:`kgrag.search.relevance.relation_document`) of the relation types it ranks — on a 6,000-relation network
a new query meets dozens of never-encoded documents, so the first thousands of requests each ran the model on
them. :func:`warm_search` does all of it once, in one batched model call per network (the documents are a pure
function of the schema, so they are known before any query), and the server runs it in the background at start
(``GET /healthz`` says ``"warm": false`` until it is done). Only reads: safe beside running requests.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kgrag.network.schema.model import KnowledgeNetwork
from kgrag.rank.rerank import EmbeddingReranker, Reranker
from kgrag.search.contextual import lexicon_for
from kgrag.search.other_names import other_name_index
from kgrag.search.pipeline import SearchStore
from kgrag.search.recall import default_reranker
from kgrag.search.relevance import relation_document
from kgrag.search.storage_forms import alias_field, alias_values

log = logging.getLogger(__name__)

__all__ = ["relation_documents", "warm_other_names", "warm_search"]


def relation_documents(network: KnowledgeNetwork) -> list[str]:
    """The rerank document of every relation type of ``network``, in schema order."""
    names = {ot.id: ot.name for ot in network.object_types}
    return [relation_document(names.get(rel.source_object_type_id, ""), rel.name, rel.comment,
                              names.get(rel.target_object_type_id, ""))
            for rel in network.relation_types]


def warm_search(store: SearchStore, reranker: Reranker | None = None, kn_ids: list[str] | None = None
                ) -> dict[str, dict[str, Any]]:
    """Warm ``store`` for searches on ``kn_ids`` (default: every network), per network: run a type search (the
    query embedder of its vectors, the object/relation type vector indexes), load every object type's instance
    vector index and every list property's item index, and encode its relation documents with ``reranker``'s
    embedder (default: the process's
    default reranker, when it is the embedding one). Returns what was done per network; a network that fails
    is logged and reported with its ``error``, the others still warm."""
    if reranker is None:
        reranker = default_reranker()
    embedder = reranker.embedder if isinstance(reranker, EmbeddingReranker) else None
    report: dict[str, dict[str, Any]] = {}
    for kn_id in kn_ids if kn_ids is not None else [kn_id for kn_id, _ in store.list_networks()]:
        start = time.perf_counter()
        try:
            network = store.get_network(kn_id)
            store.search_object_types(kn_id, network.name or kn_id, 1)
            store.search_relation_types(kn_id, network.name or kn_id, 1)
            vectors = store.warm_vector_indexes(kn_id)
            list_fields = store.warm_list_members(kn_id)
            docs = relation_documents(network)
            if embedder is not None and docs:
                embedder.encode(docs)
                embedder.encode_query(network.name or kn_id)
            report[kn_id] = {"relation_documents": len(docs) if embedder is not None else 0,
                             "instance_vectors": vectors, "list_fields": list_fields,
                             "seconds": round(time.perf_counter() - start, 2)}
        except Exception as exc:  # noqa: BLE001 - warming is best effort: the request path still works cold
            log.warning("warming %s failed: %s: %s", kn_id, type(exc).__name__, exc)
            report[kn_id] = {"error": f"{type(exc).__name__}: {exc}"}
    return report


def warm_other_names(store: SearchStore, kn_ids: list[str] | None = None) -> dict[str, int]:
    """Build the other-name index (:func:`kgrag.search.other_names.other_name_index`) of every object type of
    ``kn_ids`` (default: every network), as contextual recall would on first meeting each type: seconds of CPU
    per network (≈8 s on the medical network) that the first questions otherwise paid; and its keyword lexicon and
    link cardinalities.
    Returns the number of types indexed per network."""
    done: dict[str, int] = {}
    for kn_id in kn_ids if kn_ids is not None else [kn_id for kn_id, _ in store.list_networks()]:
        lexicon_for(store, kn_id)  # the keyword dictionary of the network's names, built once per version too
        network = store.get_network(kn_id)
        if network.relation_types:  # every relation's link cardinality, read at once and kept per version
            store.link_cardinality(kn_id, network.relation_types[0].id)
        built = [other_name_index(store, kn_id, ot, ot.display_key, alias_field(ot), alias_values)
                 for ot in network.object_types]
        done[kn_id] = sum(index is not None for index in built)
    return done
