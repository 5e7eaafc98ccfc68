"""H-RAG over a KG that lives only on a SPARQL endpoint: each question's G_global is its topics' bounded
neighbourhood, fetched by SPARQL, and the trained chain (retriever + chain prior + reasoner) runs on it as on a
local graph.

    remote = EndpointReasoner(HRAGReasoner.load(settings, "metaqa"), RemoteStore(url), namespace)
    answer = remote.answer("who directed [Blade Runner]", ["e.blade_runner_1a2b3c4d"])   # topics: ids or IRIs

Per question: :func:`~kgrag.hrag.online.sparql_neighbourhood.expand_neighbourhood` (k hops, capped triples per hop and
per node, CVT nodes one hop further, names in batches) → a small :class:`~kgrag.graph.csr.CSRGraph` whose relation
ids are the trained graph's (relations the model never saw are appended, their vectors encoded) → its entity name
vectors, encoded only for the rows the retriever and reasoner read (the embedder's content-keyed cache:
neighbourhoods overlap) → :meth:`HRAGReasoner.on_graph` answers on it. An
endpoint that fails or times out ends the answer with a note saying so (no exception).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from kgrag.errors import SparqlError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.store import GraphStore
from kgrag.hrag.online.reasoner import Answer, HRAGReasoner
from kgrag.hrag.online.sparql_neighbourhood import ExpansionLimits, Neighbourhood, expand_neighbourhood
from kgrag.hrag.retrieval.text import TextEmbeddings, relation_text

__all__ = ["EndpointReasoner"]

class EndpointReasoner:
    """The trained chain of ``reasoner`` over neighbourhoods fetched from ``store`` (see the module docstring)."""

    def __init__(self, reasoner: HRAGReasoner, store: GraphStore, namespace: str,
                 limits: ExpansionLimits | None = None, lang: str = "en") -> None:
        self.reasoner = reasoner
        self.store = store
        self.namespace = namespace
        self.limits = limits or ExpansionLimits()
        self.lang = lang
        text = reasoner.retriever.text
        self._embedder = text.embedder
        self._relations = list(reasoner.graph.relations)
        self._relation_index = {r: i for i, r in enumerate(self._relations)}
        self._relation_vectors = np.asarray(text.relations, dtype=np.float32)
        self.last_stats: dict = {}  # the last expansion's figures (hops, triples, queries, truncated, ms)

    # ------------------------------------------------------------------ the local view
    def _in_vocabulary(self, sub: CSRGraph) -> CSRGraph:
        """``sub`` with relation ids of the trained vocabulary (unknown relations appended, vectors encoded)."""
        new = [r for r in sub.relations if r not in self._relation_index]
        if new:
            vectors = self._embedder.encode([relation_text(r) for r in new])
            for r in new:
                self._relation_index[r] = len(self._relations)
                self._relations.append(r)
            self._relation_vectors = np.concatenate([self._relation_vectors, np.asarray(vectors, np.float32)])
        remap = np.array([self._relation_index[r] for r in sub.relations], dtype=np.int32)
        return CSRGraph(sub.name, sub.iri_base, sub.entity_keys, sub.entity_ids, sub.entity_names,
                        list(self._relations), sub.head, remap[sub.rel], sub.tail,
                        meta=sub.meta)

    def vectors_of(self, names: Sequence[str]) -> np.ndarray:
        """Unit float16 vectors of ``names`` (zeros for ""), through the embedder's content-keyed cache (on disk,
        shared by processes): a name is encoded once, whichever question's neighbourhood met it first."""
        out = np.zeros((len(names), self._relation_vectors.shape[1]), dtype=np.float16)
        named = [i for i, name in enumerate(names) if name]
        if named:
            out[named] = self._embedder.encode([names[i] for i in named])
        return out

    def neighbourhood(self, topics: Sequence[str]) -> tuple[Neighbourhood, HRAGReasoner]:
        """The topics' neighbourhood and the trained chain on it."""
        found = expand_neighbourhood(self.store, topics, self.namespace, self.limits, lang=self.lang)
        self.last_stats = found.stats
        graph = self._in_vocabulary(found.graph)
        text = TextEmbeddings(_LazyVectors(graph, self), self._relation_vectors, self._embedder)
        return found, self.reasoner.on_graph(graph, text)

    # ------------------------------------------------------------------ answering
    def answer(self, question: str, topics: Sequence[str], *, k: int = 10) -> Answer:
        """One question whose topic entities are given (ids under the namespace, or IRIs)."""
        start = time.perf_counter()
        self.last_stats = {}
        if not topics:
            return Answer(question, question, [], [], [], note="no topic entity given for the endpoint's graph")
        try:
            found, view = self.neighbourhood(topics)
        except SparqlError as exc:
            return Answer(question, question, list(topics), [], [], {"expand": 1000 * (time.perf_counter() - start)},
                          note=f"the SPARQL endpoint failed while fetching the question's neighbourhood: {exc}")
        expand_ms = 1000 * (time.perf_counter() - start)
        answer = view.answer(question, found.topics, k=k)
        answer.ms = {"expand": expand_ms, **answer.ms, "total": 1000 * (time.perf_counter() - start)}
        if found.stats.get("truncated") and not answer.answers:
            answer.note += " (the neighbourhood was capped: raise the expansion limits)"
        return answer


class _LazyVectors:
    """A neighbourhood's entity vectors, indexed like an array: only the rows the retriever and the reasoner read
    (G_retrieval's and g_agent's nodes, not the whole expansion) are looked up or encoded."""

    def __init__(self, graph: CSRGraph, owner: EndpointReasoner) -> None:
        self.graph = graph
        self.owner = owner

    @property
    def shape(self) -> tuple[int, int]:
        return (self.graph.num_entities, int(self.owner._relation_vectors.shape[1]))

    def __len__(self) -> int:
        return self.graph.num_entities

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        unique, inverse = np.unique(rows.ravel(), return_inverse=True)
        vectors = self.owner.vectors_of(self.graph.names_of(unique))
        return vectors[inverse].reshape(*rows.shape, vectors.shape[1])
