"""The zero-shot schema ranker: which property or relation a question asks for, with no labelled question.

    ranker = ZeroShotSchemaRanker(profile, store.embedder_for("demo"))
    ranker.rank("where was Jonas Okafor born?", mask="Jonas Okafor", topic_types=["Person"])
    # [("rel:people.person.place_of_birth", 0.71), ("rel:people.person.nationality", 0.12), …]

Only the candidates that start at the topic's object type are ranked (:mod:`kgrag.agent.kn.schema_candidates`;
all of them when no topic type is known). The question (its topic's words removed) is scored against each
candidate by three signals, every one read from the network:

1. **meaning**: the cosine of the question's vector and the candidate's vector, by the network's own embedder
   (MiniLM for English, the network's domain vectors for Chinese): for a property its words and comment, for a
   relation the sum of its own vector and its answer type's;
2. **words**: BM25 of the question's tokens (light suffix stemming for English) over the candidates' texts, idf
   from the whole network's candidate texts, divided by the best score (0–1);
3. **answer type**: what kind of answer the question asks for, from its question words (:data:`CUES`: where →
   a place, when / what year → a time, how many → a number, who → a person, what kind → a category, how → a
   manner), matched against each candidate's answer: its stored values (years and dates, numbers) and its answer
   type's text against the class's prototype words, by the same embedder; "which / 哪些" asks for a set (a
   relation's instances or short values, not a passage of text).

A property whose stored values are passages of text (descriptions) loses :data:`PASSAGE` (questions ask for
values first), a two-step path through an unnamed node :data:`PATH` (they name a direct relation first).

``score = meaning + WORDS·words + ANSWER_TYPE·Σ wanted(class)·affinity(candidate, class)`` (+ ``LEARNED·`` the
cosine to the candidate's centroid of synthesised questions when a self-supervised ranker is given:
:mod:`kgrag.agent.kn.self_ranker`); probabilities are a softmax of the scores at temperature :data:`TEMPERATURE`.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

from kgrag.agent.kn.schema_candidates import CandidateProfile
from kgrag.rank.tokenize import tokenize
from kgrag.reading.words import suffix_stems
from kgrag.text import SCHEMA_CLASSES, answer_kinds

__all__ = ["CUES", "ZeroShotSchemaRanker", "answer_classes"]

WORDS = 0.35
ANSWER_TYPE = 0.45
#: the weight of a relation candidate's answer type in its vector (its own words weigh 1)
ANSWER_VECTOR = 0.5
#: what a property whose values are passages of text loses: a question asks for values first, a passage second
PASSAGE = 0.15
#: what a two-step path through an unnamed node loses against one step (a question names a direct relation first)
PATH = 0.1
#: the weight of a self-supervised ranker's centroid cosine (:mod:`kgrag.agent.kn.self_ranker`), when one is given
LEARNED = 0.6
TEMPERATURE = 0.08

#: question words → the kind of answer asked for (English and Chinese; general question words, no network's words:
#: :data:`kgrag.text.SCHEMA_CLASSES`)
CUES: dict[str, re.Pattern[str]] = dict(SCHEMA_CLASSES)
#: what an answer of each class is, in words (matched against the candidates' answer texts by the embedder)
PROTOTYPES: dict[str, tuple[str, str]] = {
    "place": ("place location city country region area address", "地点 地方 城市 国家 地区 位置"),
    "person": ("person people human individual", "人 人物 人群 患者"),
    "category": ("kind type category class genre sort", "类型 种类 类别 分类"),
    "list": ("items list set", "列表 项目"),
    "manner": ("way method approach means procedure", "方式 方法 办法 措施"),
    "time": ("time date year period", "时间 日期 年份 周期"),
    "number": ("number amount count quantity", "数量 数目 比例 费用"),
}
def answer_classes(question: str) -> dict[str, float]:
    """The answer classes the question's words ask for (each 1.0; "how many/much/long" is a number, not a
    manner)."""
    found = dict.fromkeys(answer_kinds(question.lower(), SCHEMA_CLASSES), 1.0)
    if "number" in found:
        found.pop("manner", None)
    return found


def _words(text: str) -> list[str]:
    """BM25 terms: tokens, stemmed; numbers (a value, not a schema word) and single Latin letters (the s of 's)
    left out."""
    return suffix_stems(t for t in tokenize(text)
                       if not t.replace(".", "").isdigit() and not (len(t) == 1 and t.isascii()))


class ZeroShotSchemaRanker:
    """Ranks a network's candidates for a question (see the module docstring); thread-safe, vectors made once."""

    def __init__(self, profile: CandidateProfile, embedder: object, learned: object | None = None) -> None:
        self.profile = profile
        self.embedder = embedder
        self.learned = learned  # a SelfRanker: its similarities join the score
        cands = profile.candidates
        self.labels = [c.label for c in cands]
        self.chinese = profile.chinese
        # what a candidate loses whatever the question: a property of passages, a two-step path
        self._penalty = np.array([PASSAGE * c.kinds.get("long_text", 0.0) + PATH * bool(c.via_text) for c in cands])
        # the self-supervised ranker's row of each candidate (-1: a label it was not trained on)
        self._learned_rows = learned.rows(self.labels) if learned is not None else None
        self._lock = threading.Lock()
        self._vectors: np.ndarray | None = None
        # BM25 postings over the candidates' texts (their names count twice: the name is what a question says)
        docs = [Counter(_words(f"{c.name} {c.text}")) for c in cands]
        lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
        self._avg = float(lengths.mean()) if len(lengths) else 1.0
        self._lengths = lengths
        df: Counter[str] = Counter(t for d in docs for t in d)
        n = max(len(docs), 1)
        self._idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, d in enumerate(docs):
            for t, tf in d.items():
                postings[t].append((i, tf))
        # term -> (candidate indices, term frequencies): one vectorised update per question term
        self._postings = {t: (np.array([i for i, _ in p]), np.array([f for _, f in p], dtype=np.float64))
                          for t, p in postings.items()}
        self._affinity: np.ndarray | None = None  # (candidates, classes)

    # ---- vectors (made on first use) ---------------------------------------------------------------------
    def _ensure_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        with self._lock:
            if self._vectors is None or self._affinity is None:
                cands = self.profile.candidates
                # distinct strings only; a relation type's and a type's are the strings the store embedded at load
                # time, so the embedder's content cache has them (a 6,000-relation network costs seconds, not minutes)
                answers = sorted({c.answer_text for c in cands})
                strings = sorted({c.element_text for c in cands} | {c.via_text for c in cands if c.via_text}
                                 | set(answers))
                protos = [PROTOTYPES[k][1 if self.chinese else 0] for k in CUES]
                encoded = self._encode([*strings, *protos])
                at = {text: i for i, text in enumerate(strings)}
                vectors = encoded[[at[c.element_text] for c in cands]]
                # a relation candidate: its relation's vector plus its answer type's (rel and rel_in differ by it)
                has_answer = np.array([bool(c.answer_type) for c in cands])
                if has_answer.any():
                    vectors[has_answer] += ANSWER_VECTOR * encoded[[at[c.answer_text] for c in cands if c.answer_type]]
                via = np.array([bool(c.via_text) for c in cands])
                if via.any():  # a path's first step counts too
                    vectors[via] += encoded[[at[c.via_text] for c in cands if c.via_text]]
                vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
                answer_vec = encoded[[at[a] for a in answers]]
                proto_vec = encoded[len(strings):]
                sims = answer_vec @ proto_vec.T  # (answers, classes)
                # a class's affinity: how much more the answer text is like this class than like the others,
                # relative to the network's most distinctive answer of the class (0–1)
                k = sims.shape[1]
                distinct = sims - (sims.sum(axis=1, keepdims=True) - sims) / max(k - 1, 1)
                top = distinct.max(axis=0, initial=0.0) if len(answers) else np.zeros(k)
                aff = np.clip(distinct / np.maximum(top, 1e-6), 0.0, 1.0)
                row = {a: i for i, a in enumerate(answers)}
                classes = list(CUES)
                affinity = np.zeros((len(cands), len(CUES)), dtype=np.float32)
                manner = classes.index("manner")
                for i, c in enumerate(cands):
                    affinity[i] = aff[row[c.answer_text]]
                    if c.answer_type:  # a relation answers with instances, never a way of doing something
                        affinity[i, manner] = 0.0
                    for k in ("time", "number"):  # stored values decide these when they say something
                        j = classes.index(k)
                        affinity[i, j] = max(c.kinds.get(k, 0.0), 0.5 * affinity[i, j])
                    # a set of values: instances of a relation, or short values (not passages of text)
                    affinity[i, classes.index("list")] = 1.0 if c.answer_type else 1.0 - c.kinds.get("long_text", 0.0)
                self._vectors, self._affinity = vectors, affinity
            return self._vectors, self._affinity

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        vecs = np.asarray(self.embedder.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-9)

    def _query_vector(self, text: str) -> np.ndarray:
        """The question's unit vector through the embedder's query path (an in-memory LRU; never written to the
        disk cache, which is for the network's own texts)."""
        vec = np.asarray(self.embedder.encode_query(text), dtype=np.float32)
        return vec / max(float(np.linalg.norm(vec)), 1e-9)

    def warm(self) -> None:
        self._ensure_vectors()

    def affinities(self) -> np.ndarray:
        """``(candidates, classes)``: how much each candidate's answer is of each class of :data:`CUES` (0–1)."""
        return self._ensure_vectors()[1]

    # ---- scoring ------------------------------------------------------------------------------------------
    def _bm25(self, question: str, idx: np.ndarray) -> np.ndarray:
        """BM25 of each candidate of ``idx`` for the question's terms, divided by the best one's (0–1)."""
        k1, b = 1.2, 0.75
        out = np.zeros(len(self.labels), dtype=np.float64)
        for t in set(_words(question)):
            idf = self._idf.get(t)
            if idf is None:
                continue
            docs, tf = self._postings[t]
            out[docs] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * self._lengths[docs] / self._avg))
        out = out[idx]
        return out / out.max() if out.max() > 0 else out

    def scores(self, question: str, mask: str | None = None, topic_types: Iterable[str] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """``(candidate indices, scores)`` of the candidates for ``topic_types``; ``mask``: the topic's words, taken
        out of the question (they say what it is about, not what it asks)."""
        idx = np.asarray(self.profile.for_types(topic_types), dtype=np.int64)
        if idx.size == 0:
            return idx, np.zeros(0)
        text = question.replace(mask, " ") if mask else question
        vectors, affinity = self._ensure_vectors()
        q = self._query_vector(text)
        meaning = vectors[idx] @ q if q.shape[0] == vectors.shape[1] else np.zeros(len(idx))
        words = self._bm25(text, idx)
        wanted = answer_classes(text)
        typed = np.zeros(len(idx))
        if wanted:
            w = np.array([wanted.get(k, 0.0) for k in CUES], dtype=np.float32)
            typed = affinity[idx] @ w / max(1.0, float(w.sum()))
        score = meaning + WORDS * words + ANSWER_TYPE * typed - self._penalty[idx]
        if self.learned is not None:
            rows = self._learned_rows[idx]
            learned = np.append(self.learned.label_scores(question, mask), 0.0)[rows]  # row -1: the appended 0
            score = score + LEARNED * learned
        return idx, score

    def rank(self, question: str, mask: str | None = None, topic_types: Iterable[str] | None = None,
             top: int | None = None) -> list[tuple[str, float]]:
        """``(label, probability)`` best first over the candidates of ``topic_types``."""
        idx, s = self.scores(question, mask, topic_types)
        if idx.size == 0:
            return []
        z = (s - s.max()) / TEMPERATURE
        p = np.exp(z)
        p /= p.sum()
        order = np.argsort(-p, kind="stable")[: top or len(p)]
        # one label may be a candidate of several topic types: keep its best
        out: dict[str, float] = {}
        for j in order:
            out.setdefault(self.labels[idx[j]], float(p[j]))
        return list(out.items())
