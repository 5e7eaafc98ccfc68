"""One triple graph behind SPARQL, as the agent uses it: the kg-tools client on its store (the embedded store, or
``KGRAG_SPARQL_ENDPOINT``, or the endpoint it was registered with), the entity linker over its stored names (by
SPARQL for a KG that lives only on an endpoint), the trained H-RAG reasoner when there is one,
and the KG sessions of the agent's threads (one :class:`~kgrag.tools.session.KGSession` per session id, held
here, never in the serialisable state).

    kg = TripleKG.open(get_settings(), "metaqa"); kg.link("who directed the films starring Tom Hanks")

Without trained checkpoints the KG still serves: schema recall ranks the topic's relations by BM25 and the
LLM-free plan ranks the topics' relation chains zero-shot (:attr:`TripleKG.zero_shot`, ``rank_chains``); :attr:`TripleKG.reasoner_note` says why
the reasoner is absent.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kgrag.agent.kg.sparql_linker import SparqlLinker
from kgrag.agent.kg.zero_shot import ZeroShotChainRanker
from kgrag.config import Settings
from kgrag.data.registry import dataset_spec
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError
from kgrag.graph.imported import opaque_relation_labels
from kgrag.graph.versions.stores import open_store
from kgrag.hrag.online.linker import EntityLinker
from kgrag.hrag.retrieval.chains import chain_text
from kgrag.hrag.retrieval.questions import masked_text
from kgrag.hrag.retrieval.stage_inputs import latest_checkpoint, load_graph
from kgrag.tools.config import KGToolsConfig
from kgrag.tools.factory import make_client, make_relation_filter
from kgrag.tools.relations import RelationFilters
from kgrag.tools.session import KGSession
from kgrag.tools.session_store import SessionStore

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.csr import CSRGraph
    from kgrag.hrag.online.reasoner import HRAGReasoner

log = logging.getLogger(__name__)

__all__ = ["EntityMatch", "TripleKG", "new_session_id"]


@dataclass(frozen=True)
class EntityMatch:
    """Words of the question matched to a stored KG entity, and how: its storage form (the stored name) and id
    (the linker's result, chosen or a candidate; its network counterpart is
    :class:`kgrag.agent.kn.linking.InstanceMatch`, what the KG planner starts from
    :class:`kgrag.query_graph.triple_planner.KGTopic`)."""

    keyword: str  # the user's words
    name: str  # the stored name
    entity_id: str
    row: int  # row in the in-memory graph
    match_type: str  # bracket | exact | normalised | alias | partial | fuzzy | history
    similarity: float = 1.0
    score: float | None = None  # a candidate's score in [0, 1] (:meth:`TripleKG.candidates`); None from link()
    is_class: bool = False  # the row is a class (type) node

    def as_dict(self) -> dict[str, Any]:
        out = {"keyword": self.keyword, "name": self.name, "entity_id": self.entity_id, "row": self.row,
               "match_type": self.match_type, "similarity": round(self.similarity, 4)}
        if self.score is not None:
            out.update(score=self.score, is_class=self.is_class)
        return out


def new_session_id() -> str:
    return uuid.uuid4().hex


class TripleKG:
    """A prepared triple graph (see the module docstring). Thread-safe: sessions are locked per id."""

    def __init__(self, settings: Settings, spec: DatasetSpec) -> None:
        self.spec = spec
        dataset = spec.name
        local = (settings.dataset_dir(dataset) / "graph.npz").is_file()
        remote_only = not local and self.spec.reader == "endpoint"
        if not local and not remote_only:
            raise KgragError(f"KG {dataset!r} is not prepared: run `kgrag prepare --dataset {dataset}`")
        self.dataset = dataset
        self.settings = settings
        self.config = KGToolsConfig(timeout=settings.sparql_timeout, seed=settings.seed)
        self.store = open_store(spec, settings)
        self.client = make_client(self.store, spec, self.config)
        self.filters = RelationFilters.from_data_dir(settings.data_dir)
        self.sessions = SessionStore()
        self._turns: dict[str, str] = {}  # session id -> the turn its per-question state belongs to
        self.reasoner: HRAGReasoner | None = None
        self._zero_shot: ZeroShotChainRanker | None = None
        self.reasoner_note = ""
        self.graph: CSRGraph | None = None
        self.sparql_linker: SparqlLinker | None = None
        if remote_only:  # on its endpoint only: names are looked up by SPARQL, no reasoner
            self.reasoner_note = f"{dataset} lives on {self.spec.describe()}: no local graph to reason over"
            self.sparql_linker = SparqlLinker(self.client)
            return
        try:
            latest_checkpoint(settings, dataset, "retriever")  # asked without torch: a one-shot question on a KG
            latest_checkpoint(settings, dataset, "gflownet")  # with no trained reasoner never imports it
            from kgrag.hrag.online.reasoner import loaded_reasoner

            self.reasoner = loaded_reasoner(dataset, settings)  # shared with answer_question in this process
        except KgragError as exc:  # no trained retriever / policy: the KG tools alone
            self.reasoner_note = str(exc)
        if self.reasoner is not None:
            self.graph = self.reasoner.graph
            self.linker = self.reasoner.linker
        else:
            self.graph = load_graph(settings, dataset)
            self.linker = EntityLinker.from_graph(self.graph)

    @property
    def zero_shot(self) -> ZeroShotChainRanker:
        """The zero-shot chain ranker over this KG's client (the LLM-free plan without a trained reasoner)."""
        if self._zero_shot is None:
            from kgrag.rank.sentence_embedder import Embedder

            self._zero_shot = ZeroShotChainRanker(self.client, Embedder.from_settings(self.settings),
                                                  skip=self.filters.is_meaningless,
                                                  relation_labels=self.relation_labels)
        return self._zero_shot

    @cached_property
    def relation_labels(self) -> dict[str, str]:
        """Labels of the relations that kept an opaque id (``P19`` → ``出生地``): the tools show them, the
        zero-shot ranker embeds them (:func:`kgrag.graph.imported.opaque_relation_labels`)."""
        return opaque_relation_labels(self.graph) if self.graph is not None else {}

    @classmethod
    def open(cls, settings: Settings, dataset: str) -> TripleKG:
        """The KG named ``dataset``: the agent's one resolution of a KG name (its state, the HTTP and MCP requests
        carry names) — a :class:`~kgrag.errors.KgragError` naming the known KGs when unknown."""
        return cls(settings, dataset_spec(dataset, settings))

    # ------------------------------------------------------------------ linking (contextual recall)
    def _link(self, row: int, keyword: str, match_type: str, similarity: float = 1.0) -> EntityMatch:
        assert self.graph is not None
        name = self.graph.entity_names[row] or self.graph.entity_ids[row]
        return EntityMatch(keyword, name, self.graph.entity_ids[row], row, match_type, similarity)

    def link(self, question: str, top: int = 3) -> tuple[list[EntityMatch], str]:
        """The question's topic links, the chosen one first, and the question with the chosen span in
        [brackets] (as the reasoner reads it); ``([], question)`` when nothing links. On an endpoint-only KG the
        names are looked up by SPARQL (:mod:`kgrag.agent.kg.sparql_linker`; ``row`` is -1)."""
        if self.sparql_linker is not None:
            found, linked = self.sparql_linker.link(question)
            return [EntityMatch(span, name, entity, -1, kind) for span, name, entity, kind in found], linked
        assert self.graph is not None
        rows, linked = self.linker.topics(question)
        links = [self._link(li.entity, question[li.start:li.end], li.match_type, li.similarity)
                 for li in self.linker.link(question, top=top)]
        chosen = [link for link in links if link.row in rows]
        for row in rows:  # brackets resolve per bracket; keep every chosen row first
            if not any(link.row == row for link in chosen):
                chosen.append(self._link(row, self.graph.entity_names[row], "bracket"))
        others = [link for link in links if link.row not in rows]
        return chosen + others, linked

    def candidates(self, question: str, top: int = 5) -> list[EntityMatch]:
        """Up to ``top`` candidate topics of the question, best score first, each with its ``score`` and
        ``is_class`` (:meth:`EntityLinker.candidates`): names, other names, partial names (a surname) and
        near-misses, for a planner that picks the topic jointly with its query graph. On an endpoint-only KG:
        :meth:`link`'s links, scored by their order."""
        if self.sparql_linker is not None:
            links, _ = self.link(question, top=top)
            return [replace(link, score=round(1.0 - 0.1 * k, 4)) for k, link in enumerate(links[:top])]
        assert self.graph is not None
        out = []
        for c in self.linker.candidates(question, top=top):
            link = self._link(c.link.entity, question[c.link.start:c.link.end], c.link.match_type,
                              c.link.similarity)
            out.append(replace(link, score=c.score, is_class=c.is_class))
        return out

    # ------------------------------------------------------------------ schema recall
    def ranked_chains(self, linked: str, max_chains: int = 3) -> list[dict[str, Any]]:
        """The relation chains the trained chain prior ranks for the question (``[]`` without one):
        ``{"chain": "starred_actors> <directed_by", "relations": [...], "p": 0.97}``."""
        reasoner = self.reasoner
        prior = reasoner.retriever.prior if reasoner is not None else None
        if reasoner is None or prior is None or self.graph is None:
            return []
        sentence, _ = reasoner.encode([linked])
        out = []
        for row, p in prior.top([masked_text(linked)], sentence, max_chains=max_chains)[0]:
            chain = [int(a) for a in prior.chains[row] if a >= 0]
            out.append({"chain": chain_text(chain, self.graph.relations),
                        "relations": [self.graph.relations[a // 2] for a in chain], "p": round(p, 4)})
        return out

    # ------------------------------------------------------------------ sessions
    def _new_session(self, question: str) -> KGSession:
        return KGSession(self.client, question=question, config=self.config, filters=self.filters,
                         relation_filter=make_relation_filter(self.settings, self.config),
                         relation_labels=self.relation_labels)

    @contextmanager
    def session(self, session_id: str, turn: str, question: str, topics: Sequence[EntityMatch] = (),
                max_calls: int | None = None) -> Iterator[KGSession]:
        """The session ``session_id`` (created when new or expired), locked while the caller uses it. A new
        ``turn`` starts a new question in it (entities named in earlier turns still resolve)."""
        entry, created = self.sessions.get_or_create(session_id, self.dataset, lambda: self._new_session(question))
        with entry.lock:
            session = entry.session
            if created or self._turns.get(session_id) != turn:
                session.new_question(question, {t.entity_id: t.name for t in topics})
                self._turns[session_id] = turn
            if max_calls is not None and session.config.max_calls != max_calls:
                session.config = session.config.model_copy(update={"max_calls": max_calls})
            yield session

    def close(self) -> None:
        self.store.close()
