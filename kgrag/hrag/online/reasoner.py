"""H-RAG online: answer questions in memory with the trained chain, PPR → retriever (+ chain prior) → g_agent →
GFlowNet beam → ranked answers with the paths that reached them.

    answer = HRAGReasoner.load(get_settings(), "metaqa").answer("who directed the films starring Tom Hanks")

:class:`HRAGReasoner` maps the graph and loads the retriever and its chain prior, the policy and PPR once (the
entity linker on the first question that needs it). PPR is local (:class:`~kgrag.hrag.retrieval.local_ppr.LocalPPR`), so a
question costs the same in a graph of any size; a call writes to disk only the name vectors of entities no question
touched before (:class:`~kgrag.hrag.retrieval.entity_vectors.EntityVectors`); question vectors are kept in memory per masked
wording (MetaQA's questions share a few hundred). Topic entities come from ``[brackets]`` when the text has them, else from the
entity linker over the plain text (:mod:`kgrag.hrag.online.linker`). :meth:`HRAGReasoner.rank` answers many questions
at once and is what ``kgrag eval`` runs; :meth:`HRAGReasoner.answer` is the one-question view of the same path.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kgrag.config import Settings, get_settings
from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.graph.csr import CSRGraph
from kgrag.graph.versions.version_file import version_token
from kgrag.hrag.gflownet.answers import FoundPath, answer_questions, predicted_set
from kgrag.hrag.gflownet.data import QuestionGraph, agent_questions
from kgrag.hrag.gflownet.evaluate import TrainedPolicy, load_trained_policy, path_evidence
from kgrag.hrag.gflownet.llm_answer import PathEvidence, verbalise_path
from kgrag.hrag.online.linker import EntityLinker
from kgrag.hrag.retrieval.evaluate import Evaluation, TrainedRetriever, load_trained
from kgrag.hrag.retrieval.local_ppr import LocalPPR
from kgrag.hrag.retrieval.pipeline import available_splits
from kgrag.hrag.retrieval.questions import HragQuestion, masked_text, prepared_questions
from kgrag.hrag.retrieval.retriever import score_samples
from kgrag.hrag.retrieval.samples import build_samples
from kgrag.hrag.retrieval.text import MAX_QUESTION_TOKENS, QuestionTokens, TextEmbeddings
from kgrag.rank.sentence_embedder import Embedder
from kgrag.versioned import VersionedCache

__all__ = ["RankedAnswer", "Answer", "Ranking", "HRAGReasoner", "answer_question", "template_of", "path_ids", "loaded_reasoner"]

@dataclass(frozen=True)
class RankedAnswer:
    entity: int  # graph row
    name: str
    score: float
    paths: tuple[PathEvidence, ...]  # the most probable found paths ending at it (may be empty: chain completion)
    #: the same paths as stored ids, ``(head id, relation, tail id)`` per triple (what a SPARQL check needs)
    id_paths: tuple[tuple[tuple[str, str, str], ...], ...] = ()
    entity_id: str = ""


@dataclass
class Answer:
    question: str
    linked: str  # the question with its topic span(s) in [brackets]
    topics: list[str]
    answers: list[RankedAnswer]  # best first, at most k
    predicted: list[str]  # the answer set: every answer scoring at least threshold × the best
    ms: dict[str, float] = field(default_factory=dict)
    note: str = ""  # why there is no answer, when there is none

    def lines(self) -> list[str]:
        """Readable lines: question, answers (top 5), the best answer's paths."""
        floor = 1e-3 * self.answers[0].score if self.answers else 0.0  # what the beam found by a hair: not shown
        shown = [a for a in self.answers[:5] if a.score >= floor]
        out = [f"Question: {self.linked}", "Answers: " + (", ".join(f"{a.name} {a.score:.3f}" for a in shown)
                                                          or self.note)]
        for a in self.answers[:1]:
            out += [f"  path p={p.probability:.3f}: {verbalise_path(p)}" for p in a.paths[:3]]
        return out


@dataclass
class Ranking:
    """What :meth:`HRAGReasoner.rank` returns for many questions: per question the ranked ``(entity, score)``
    list and the found paths (``found[i]`` index the local nodes of ``graphs[i]``)."""

    ranked: list[list[tuple[int, float]]]
    found: list[list[FoundPath]]
    graphs: list[QuestionGraph]
    ms: dict[str, float]


class HRAGReasoner:
    """The trained H-RAG chain, loaded once (see the module docstring)."""

    def __init__(self, retriever: TrainedRetriever, policy: TrainedPolicy, linker: EntityLinker | None = None,
                 batch_size: int = 64, ppr_epsilon: float | None = None, templates: Sequence[str] = ()) -> None:
        self.retriever = retriever
        self.policy = policy
        self.graph = retriever.graph
        self.ppr = LocalPPR(self.graph, epsilon=ppr_epsilon or retriever.config.ppr_epsilon)
        self._linker = linker
        self._templates = list(templates)
        self.batch_size = batch_size
        model_name = retriever.text.embedder.model_name
        self._encoder = Embedder(model_name, cache_dir=None)  # no disk cache: a call writes nothing
        self._vectors: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # masked wording → (sentence, tokens)
        self.policy.policy.eval()

    @classmethod
    def load(cls, settings: Settings, dataset: str, retriever_checkpoint: Path | None = None,
             policy_checkpoint: Path | None = None) -> HRAGReasoner:
        retriever = load_trained(settings, dataset, retriever_checkpoint)
        policy = load_trained_policy(settings, dataset, policy_checkpoint)
        splits = available_splits(settings, dataset)  # the train questions' wordings (the demo KG: its one split)
        split = "train" if "train" in splits else splits[0]
        questions = prepared_questions(settings.dataset_dir(dataset), [split])
        templates = [template_of(q, retriever.graph) for q in questions]
        reasoner = cls(retriever, policy, templates=templates)
        trained = int(getattr(retriever.model, "config", {}).get("num_relations", retriever.graph.num_relations))
        if retriever.graph.num_relations > trained:  # `kgrag kg update` added relations the models never saw
            reasoner = reasoner.on_graph(known_relations(retriever.graph, trained),
                                         dataclasses.replace(retriever.text, relations=retriever.text.relations[:trained]))
        reasoner.warm(templates)
        return reasoner

    def warm(self, texts: Sequence[str]) -> None:
        """Encode the distinct wordings of ``texts`` now (the train questions' templates: seconds at load), so a
        question phrased like one of them costs no model call."""
        self.encode(list(dict.fromkeys(masked_text(t) for t in texts)))

    def on_graph(self, graph: CSRGraph, text: TextEmbeddings) -> HRAGReasoner:
        """The same trained chain over another graph in the trained relation vocabulary (relation ids the same;
        e.g. a question's neighbourhood fetched from a SPARQL endpoint) with that graph's name vectors; shares the
        models and the question-vector cache with this one."""
        view = copy.copy(self)
        view.retriever = dataclasses.replace(self.retriever, graph=graph, text=text, walker=None)
        view.graph = graph
        view.ppr = LocalPPR(graph, epsilon=self.ppr.epsilon)
        view._linker = None
        return view

    @property
    def linker(self) -> EntityLinker:
        """The entity linker over every name of the graph, built on the first question without known topics
        (a name index is whole-graph work: a process that only gets topics never pays it)."""
        if self._linker is None:
            self._linker = EntityLinker.from_graph(self.graph, self._templates)
        return self._linker

    # ------------------------------------------------------------------ encoding
    def encode(self, texts: Sequence[str]) -> tuple[np.ndarray, QuestionTokens]:
        """Sentence vectors (Q, D) and token vectors of the masked questions; each new wording is encoded once
        per process, in one model call for both."""
        masked = [masked_text(t) for t in texts]
        new = [t for t in dict.fromkeys(masked) if t not in self._vectors]
        if new:
            outputs = self._encoder.model.encode(new, output_value=None, batch_size=128, convert_to_numpy=False,
                                                 show_progress_bar=False)
            for text, out in zip(new, outputs, strict=True):
                sentence = out["sentence_embedding"].float().cpu().numpy()
                length = int(out["attention_mask"].sum())  # the batch pads every text to its longest
                tokens = out["token_embeddings"][: min(length, MAX_QUESTION_TOKENS)].float().cpu().numpy()
                self._vectors[text] = (sentence / max(float(np.linalg.norm(sentence)), 1e-12), tokens)
        dim = self.retriever.text.dim
        sentence = np.zeros((len(masked), dim), np.float32)
        vectors = np.zeros((len(masked), MAX_QUESTION_TOKENS, dim), np.float16)
        mask = np.zeros((len(masked), MAX_QUESTION_TOKENS), bool)
        for i, text in enumerate(masked):
            s, t = self._vectors[text]
            sentence[i], vectors[i, : len(t)], mask[i, : len(t)] = s, t, True
        return sentence, QuestionTokens(vectors, mask)

    # ------------------------------------------------------------------ the chain
    def rank(self, questions: Sequence[HragQuestion]) -> Ranking:
        """Ranked answers and found paths of ``questions`` (their ``topics`` set; ``answers`` are not read)."""
        ms: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            ms[name] = ms.get(name, 0.0) + 1000 * (now - clock)
            clock = now

        blind = [HragQuestion(q.qid, q.text, list(q.topics), [], q.hop, q.split) for q in questions]
        sentence, tokens = self.encode([q.text for q in blind])
        lap("encode")
        r, cfg = self.retriever, self.retriever.config
        samples = build_samples(self.graph, blind, cfg.top_n, cfg.max_triples, ppr=self.ppr,
                                focus=r.focus([q.text for q in blind], sentence), floor=cfg.ppr_focus_floor,
                                max_off_focus=cfg.max_off_focus_triples)
        lap("ppr")
        ptr, scores = score_samples(r.model, self.graph, r.text, samples, question_vec=sentence)
        lap("score")
        g_agent = r.g_agent(samples, Evaluation({}, ptr, scores, 0.0), oracle=False, meta={"split": "online"},
                            vectors=sentence)
        graphs = agent_questions(g_agent)
        lap("g_agent")
        p = self.policy
        ranked, found = answer_questions(p.policy, graphs, tokens, r.text.entities, p.config.beam_width,
                                         p.config.max_steps, p.config.exclude_topics, batch_size=self.batch_size,
                                         lookahead=p.config.beam_lookahead, complete=p.config.chain_completion,
                                         reasoner=p.config.reasoner)
        lap("reason")
        return Ranking(ranked, found, graphs, ms)

    def link(self, question: str, topics: Sequence[int] | None = None) -> tuple[list[int], str]:
        """Topic entities of ``question`` (given ones first, then [brackets], then the linker) and the text with
        them in brackets (given topics: their stored names bracketed where the text says them)."""
        if topics:  # mark the given topics' names in the text: the retriever and the prior read masked wordings
            text = question
            if not TOPIC_SPAN.search(text):
                for row in topics:
                    name = self.graph.entity_names[row]
                    if name:
                        text = re.sub(re.escape(name), lambda m: f"[{m.group(0)}]", text, count=1, flags=re.IGNORECASE)
            return list(topics), text
        return self.linker.topics(question)

    def answer(self, question: str, topics: Sequence[int] | None = None, *, k: int = 10) -> Answer:
        """One question: ranked answers (at most ``k``) with the paths that reached them, and the answer set."""
        start = time.perf_counter()
        rows, linked = self.link(question, topics)
        names = [self._name(e) for e in rows]
        if not rows:
            return Answer(question, question, [], [], [], {"link": 1000 * (time.perf_counter() - start)},
                          note="no topic entity found in the question: name one the graph stores, or put it in "
                               "[brackets]")
        link_ms = 1000 * (time.perf_counter() - start)
        ranking = self.rank([HragQuestion("q", linked, rows, [], 0, "online")])
        ranked, found, graph = ranking.ranked[0], ranking.found[0], ranking.graphs[0]
        by_end: dict[int, list[tuple[PathEvidence, tuple[tuple[str, str, str], ...]]]] = {}
        for path in found:
            entity = int(graph.node_ids[path.terminal])
            by_end.setdefault(entity, []).append((path_evidence(graph, path, self.graph),
                                                  path_ids(graph, path, self.graph)))
        answers = [RankedAnswer(e, self._name(e), s, tuple(p for p, _ in by_end.get(e, ())[:3]),
                                tuple(i for _, i in by_end.get(e, ())[:3]), self.graph.entity_ids[e])
                   for e, s in ranked[:k]]
        predicted = [self._name(e) for e in predicted_set(ranked, self.policy.threshold)]
        ms = {"link": link_ms, **ranking.ms, "total": 1000 * (time.perf_counter() - start)}
        note = "" if answers else "no path from the topic entity reached an answer inside g_agent"
        return Answer(question, linked, names, answers, predicted, ms, note)

    def _name(self, entity: int) -> str:
        return self.graph.entity_names[entity] or self.graph.entity_ids[entity]


def path_ids(question: QuestionGraph, path: FoundPath, graph: CSRGraph) -> tuple[tuple[str, str, str], ...]:
    """A found path as stored ids, ``(head id, relation, tail id)`` per triple, in walk order."""
    def ident(local: int) -> str:
        return graph.entity_ids[int(question.node_ids[local])]

    return tuple((ident(int(question.head[c // 2])), graph.relations[int(question.relation[c // 2])],
                  ident(int(question.tail[c // 2]))) for c in path.candidates)


def template_of(question: HragQuestion, graph: CSRGraph) -> str:
    """A question's wording with its topic masked (``X``): its [brackets], or else its topics' stored names."""
    if TOPIC_SPAN.search(question.text):
        return masked_text(question.text)
    text = question.text
    for entity in question.topics:
        name = graph.entity_names[entity]
        if name:
            text = re.sub(re.escape(name), "X", text, flags=re.IGNORECASE)
    return text


def answer_question(question: str, topics: Sequence[int] | None = None, *, k: int = 10,
                    reasoner: HRAGReasoner | None = None, dataset: str = "metaqa") -> Answer:
    """One question through a reasoner (loaded for ``dataset`` with the current settings when not given; pass one
    to reuse it across calls)."""
    reasoner = reasoner or loaded_reasoner(dataset, get_settings())
    return reasoner.answer(question, topics, k=k)


def known_relations(graph: CSRGraph, trained: int) -> CSRGraph:
    """``graph`` with only the relations a model was trained on (ids ``< trained``; an update appends new ones
    after them): the trained reasoner reasons over these edges, the KG tools and SPARQL see every edge. Entity rows
    are the same."""
    keep = np.asarray(graph.rel) < trained
    view = CSRGraph(graph.name, graph.iri_base, graph.entity_keys, graph.entity_ids, graph.entity_names,
                    list(graph.relations)[:trained], np.asarray(graph.head)[keep], np.asarray(graph.rel)[keep],
                    np.asarray(graph.tail)[keep], meta=dict(graph.meta))
    view.alias_rows, view.alias_names = graph.alias_rows, graph.alias_names
    view.__dict__["_orders"] = graph._orders  # the key / id lookups of the same columns
    if isinstance(view.meta.get("relation_labels"), list):
        view.meta["relation_labels"] = view.meta["relation_labels"][:trained]
    view.meta.pop("names_sha256", None)
    view.meta.pop("edges_sha256", None)
    return view


@dataclass(frozen=True)
class _ReasonerKey:
    """A dataset under one work dir (the settings ride along, not compared: they load it)."""

    dataset: str
    work_dir: str
    settings: Settings = field(compare=False, hash=False)


def _reasoner_token(key: _ReasonerKey) -> object:
    return version_token(key.settings.dataset_dir(key.dataset))


#: the process's reasoners, one per (dataset, work dir), reloaded when the KG has a new version (kgrag kg update)
_REASONERS: VersionedCache[_ReasonerKey, HRAGReasoner] = VersionedCache(
    _reasoner_token, lambda key: HRAGReasoner.load(key.settings, key.dataset))


def loaded_reasoner(dataset: str, settings: Settings) -> HRAGReasoner:
    """The process's reasoner for ``dataset`` under ``settings``' work dir, loaded on first use and again after
    each new version of the KG (the latest checkpoints then; :class:`kgrag.errors.KgragError` when there are
    none); one load per version even with concurrent callers (:class:`kgrag.versioned.VersionedCache`)."""
    return _REASONERS.get(_ReasonerKey(dataset, str(settings.work_dir), settings))
