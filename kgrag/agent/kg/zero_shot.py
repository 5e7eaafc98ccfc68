"""Zero-shot (LLM-free, untrained) answers over a triple KG: rank the topics' relation chains against the question
and answer the best chain's named ends.

    ZeroShotChainRanker(client, Embedder()).answer("who is Heidi Klum married to?", {"m.kg_heidi_klum": "Heidi Klum"})

Contract:
- Chains of a topic ``T`` (any dataset, through :class:`~kgrag.tools.client.KGClient`'s ``store`` and ``base``):
  one hop out and in (``T -r-> x``, ``x -r-> T``); two hops through an **unnamed** non-literal node (a CVT,
  whatever its id: ``T -r1-> m -r2-> x`` with every direction of each hop, the spec's flattening); and, from the
  best few one-hop chains to named nodes, two hops through those named nodes (compositions). Enumerated with
  three grouped SPARQL queries per topic (each bounded by LIMITs), never one query per neighbour.
- Score of a chain (deterministic): MiniLM cosine between the question with the topic names masked and the
  chain's relation words (``people.person.spouse_s > people.marriage.spouse`` → "person spouse marriage
  spouse"), plus the cosine to the words that describe the chain's end, BM25 over the chains' words (crude
  5-letter stems), and an answer-type term: what the question asks for (who → person, when / what year → date,
  where → place, how many → number) against the end's kind — the literal datatype of its ends, else the words
  of the relation's describing segment compared with short type descriptions. Chains without a named or
  literal end are dropped; a small penalty for fan-out and for the named two-hop.
- Answer: the best chain's named (and literal) ends, the topics excluded. With several topics, the best
  combination of each topic's top chains whose end sets intersect (by sum of scores) gives the intersection;
  none intersecting → the best single chain. The result says which chain(s) it used, their scores, the triples
  that reach the answers (names and ids) and whether the store holds each (one batched query).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kgrag.graph.iri import NAME_PREDICATE, RELATION_RE
from kgrag.graph.sparql import entity_term, literal, relation_term
from kgrag.query_graph.sparql import held_triples
from kgrag.rank.bm25 import BM25Index
from kgrag.search.keywords import STOPWORDS
from kgrag.text import CHAIN_KINDS, answer_kind
from kgrag.tools.client import Node

if TYPE_CHECKING:  # pragma: no cover
    from kgrag.graph.store import Row, Term
    from kgrag.rank.sentence_embedder import Embedder
    from kgrag.tools.client import KGClient

__all__ = ["Chain", "ZeroShotAnswer", "ZeroShotChainRanker", "asked_type", "chain_words", "end_words"]

#: short descriptions of the answer kinds, compared (MiniLM) with the words that describe a chain's end
TYPE_TEXT = {"person": "person people human name", "place": "place location country city region",
             "date": "date year time", "number": "number count amount quantity"}
#: the score's weights (generic features only; set once on the benchmark fixture, see bench/zero_shot_kg.py)
WEIGHTS = {"chain": 1.0, "end": 0.5, "bm25": 0.25, "type": 0.3, "fanout": 0.02, "cvt": -0.02, "named": -0.2,
           "last": 0.5, "stale": 0.3, "in_type": 0.0}
_DATE_TYPES = ("date", "gYear", "dateTime", "gYearMonth", "time")
_NUMBER_TYPES = ("integer", "int", "decimal", "double", "float", "long", "short", "nonNegativeInteger")
_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = STOPWORDS | {"s"}


def asked_type(question: str) -> str:
    """What the question asks for: ``date``, ``number``, ``place``, ``person`` or ``other``
    (:data:`kgrag.text.CHAIN_KINDS`)."""
    return answer_kind(question.lower(), CHAIN_KINDS, "other")


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _split(segment: str) -> list[str]:
    """``spouse_s`` → spouse s; ``birthPlace`` → birth place (camelCase names of DBpedia / schema.org style)."""
    return [w for part in segment.split("_") for w in _CAMEL.sub(" ", part).lower().split()]


def _relation_words(relation: str) -> list[str]:
    parts = relation.split(".")
    segments = parts[1:] if len(parts) > 2 else parts  # drop the domain of a domain.type.property name
    return [w for seg in segments for w in _split(seg) if len(w) > 1]


def chain_words(relations: Sequence[str], labels: Mapping[str, str] | None = None) -> str:
    """The words of a chain's relations: ``people.person.spouse_s > people.marriage.spouse`` → "person spouse
    marriage spouse"; a relation that kept an opaque id says its label instead (``labels``: ``P19`` → ``出生地``)."""
    labels = labels or {}
    return " ".join(w for r in relations for w in (
        [labels[r]] if r in labels else _relation_words(r)))


def end_words(relation: str, direction: str, labels: Mapping[str, str] | None = None) -> str:
    """The words that describe the end reached by the chain's last step: the property of an out-edge
    (``film.film.directed_by`` → "directed by"), the type of an in-edge (``film.director.film`` → "director");
    a relation's label where ``labels`` has one."""
    if labels and relation in labels:
        return labels[relation]
    parts = relation.split(".")
    if len(parts) > 2:
        segment = parts[-1] if direction == "out" else parts[-2]
        return " ".join(_split(segment))
    return " ".join(_split(parts[-1]))


def _stems(text: str) -> list[str]:
    return [t[:5] for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def _new_stems(question: str, relations: Sequence[str]) -> set[str]:
    """The question's word stems that the chain's last relation names and its earlier relations do not: a
    composition through a named node must add something the question asks for, else its first hop says it all."""
    asked = set(_stems(question))
    return (asked & set(_stems(chain_words(relations[-1:])))) - set(_stems(chain_words(relations[:-1])))


@dataclass(frozen=True)
class Step:
    relation: str
    direction: str  # "out": head is the previous node; "in": the previous node is the tail


@dataclass
class Chain:
    """A relation chain from a topic; counts are over its ends (bounded by the enumeration's LIMITs)."""

    topic: str
    steps: tuple[Step, ...]
    via: str  # "" (one hop) | "cvt" | "named"
    ends: int
    named: int
    literals: int
    datatype: str = ""
    score: float = 0.0

    @property
    def relations(self) -> list[str]:
        return [s.relation for s in self.steps]

    @property
    def words(self) -> str:
        return chain_words(self.relations)

    @property
    def text(self) -> str:
        """``people.person.spouse_s> (cvt) people.marriage.spouse>``; ``<`` marks an in-edge."""
        mid = {"cvt": " (cvt) ", "named": " (entity) ", "": ""}[self.via]
        return mid.join(f"<{s.relation}" if s.direction == "in" else f"{s.relation}>" for s in self.steps)

    def as_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "chain": self.text, "relations": self.relations,
                "directions": [s.direction for s in self.steps], "via": self.via, "score": round(self.score, 4),
                "ends": self.ends}


@dataclass
class ZeroShotAnswer:
    answers: list[Node]  # the chains' ends (a local id, a full foreign IRI or a literal's value)
    chains: list[Chain]  # the chains used (one per topic that contributed)
    #: per answer (the first 5): ``{"answer", "entity_id", "triples": [[head name, relation, tail name]…],
    #: "id_triples", "held": [bool…]}`` — the path that reaches it and whether the store holds each triple
    evidence: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[Chain] = field(default_factory=list)  # the best chains overall, for the trace
    note: str = ""

    @property
    def held(self) -> list[bool]:
        return [h for e in self.evidence for h in e["held"]]

    @property
    def verified(self) -> bool | None:
        return all(self.held) if self.held else None

    @property
    def chain(self) -> str:
        return " ∩ ".join(c.text for c in self.chains)

    @property
    def score(self) -> float:
        return float(sum(c.score for c in self.chains))


@dataclass
class _Fetched:
    ends: dict[str, Node]
    paths: dict[str, list[tuple[Term, str, Term]]]  # end id -> the triples of one path to it


class ZeroShotChainRanker:
    """Rank and answer chains (see the module docstring). ``skip(relation)`` drops metadata relations."""

    def __init__(self, client: KGClient, embedder: Embedder, skip: Callable[[str], bool] | None = None,
                 limit: int = 3000, end_limit: int = 200, beam: int = 3, top: int = 5,
                 relation_labels: Mapping[str, str] | None = None) -> None:
        self.client = client
        #: labels of relations that kept an opaque id (``P19`` → ``出生地``): embedded instead of the id
        self.relation_labels = dict(relation_labels or {})
        self.embedder = embedder
        self.skip = skip or (lambda relation: False)
        self.limit, self.end_limit, self.beam, self.top = limit, end_limit, beam, top
        self.base = client.base
        self._name = relation_term(client.base, NAME_PREDICATE)
        self._base = literal(client.base)
        self._type_vectors: np.ndarray | None = None
        self.weights = dict(WEIGHTS)

    # ------------------------------------------------------------------ SPARQL
    def _select(self, query: str) -> list[Row]:
        return self.client.store.select(query, timeout=self.client.timeout)

    def _local(self, term: Term) -> str:
        value = term.value
        return value[len(self.base):] if term.kind == "uri" and value.startswith(self.base) else value

    _AGG = ("(COUNT(DISTINCT ?x) AS ?n) (COUNT(DISTINCT ?nx) AS ?named) (COUNT(DISTINCT ?lx) AS ?lits) "
            "(MAX(?dt) AS ?datatype)")

    def _end_binds(self) -> str:
        return (f"OPTIONAL {{ ?x {self._name} ?xn }} BIND(IF(BOUND(?xn), ?x, ?nothing) AS ?nx) "
                "BIND(IF(isLiteral(?x), ?x, ?nothing) AS ?lx) BIND(IF(isLiteral(?x), STR(DATATYPE(?x)), \"\") AS ?dt)")

    def _hop(self, node: str, rel: str, other: str, dvar: str) -> str:
        base = f"FILTER(isIRI(?{rel}) && STRSTARTS(STR(?{rel}), {self._base}))"
        return (f"{{ {node} ?{rel} {other} . BIND(\"out\" AS ?{dvar}) }} UNION "
                f"{{ {other} ?{rel} {node} . BIND(\"in\" AS ?{dvar}) }} {base}")

    def _chain(self, topic: str, row: Row, steps: tuple[Step, ...], via: str) -> Chain:
        def count(var: str) -> int:
            return int(row[var].value) if var in row else 0

        datatype = row["datatype"].value.rsplit("#", 1)[-1] if "datatype" in row else ""
        return Chain(topic, steps, via, count("n"), count("named"), count("lits"), datatype)

    def _step(self, row: Row, rel: str, direction: str) -> Step | None:
        relation = self._local(row[rel]).replace("/", ".")
        if relation == NAME_PREDICATE or not RELATION_RE.match(relation) or self.skip(relation):
            return None
        return Step(relation, row[direction].value)

    def enumerate(self, topic: str) -> list[Chain]:
        """The topic's one-hop and CVT two-hop chains with named or literal ends."""
        t = entity_term(self.base, topic)
        one = self._select(
            f"SELECT ?r ?d {self._AGG} WHERE {{ {{ SELECT DISTINCT ?r ?d ?x WHERE {{ {self._hop(t, 'r', '?x', 'd')} }} "
            f"LIMIT {self.limit} }} {self._end_binds()} }} GROUP BY ?r ?d")
        two = self._select(
            f"SELECT ?r1 ?d1 ?r2 ?d2 {self._AGG} WHERE {{ "
            f"{{ SELECT DISTINCT ?r1 ?d1 ?m WHERE {{ {self._hop(t, 'r1', '?m', 'd1')} FILTER(isIRI(?m)) "
            f"FILTER NOT EXISTS {{ ?m {self._name} ?mn }} }} LIMIT {self.limit} }} "
            f"{self._hop('?m', 'r2', '?x', 'd2')} FILTER(!sameTerm(?x, {t})) {self._end_binds()} }} "
            f"GROUP BY ?r1 ?d1 ?r2 ?d2 LIMIT {self.limit}")
        chains = []
        for row in one:
            step = self._step(row, "r", "d")
            if step is not None:
                chains.append(self._chain(topic, row, (step,), ""))
        for row in two:
            first, second = self._step(row, "r1", "d1"), self._step(row, "r2", "d2")
            if first is not None and second is not None:
                chains.append(self._chain(topic, row, (first, second), "cvt"))
        return [c for c in chains if c.named or c.literals]

    def enumerate_named(self, topic: str, firsts: Sequence[Chain]) -> list[Chain]:
        """Two-hop chains through the named ends of the given one-hop chains (the beam)."""
        if not firsts:
            return []
        t = entity_term(self.base, topic)
        blocks = " UNION ".join(
            f"{{ SELECT ?m ({i} AS ?b) WHERE {{ {self._pattern(t, c.steps[:1], '?m')} "
            f"FILTER EXISTS {{ ?m {self._name} ?mn }} }} LIMIT 50 }}" for i, c in enumerate(firsts))
        rows = self._select(
            f"SELECT ?b ?r2 ?d2 {self._AGG} WHERE {{ {blocks} {self._hop('?m', 'r2', '?x', 'd2')} "
            f"FILTER(!sameTerm(?x, {t}) && !sameTerm(?x, ?m)) {self._end_binds()} }} GROUP BY ?b ?r2 ?d2 "
            f"LIMIT {self.limit}")
        chains = []
        for row in rows:
            step = self._step(row, "r2", "d2")
            first = firsts[int(row["b"].value)]
            if step is not None and step.relation != first.steps[0].relation:
                chains.append(self._chain(topic, row, (first.steps[0], step), "named"))
        return [c for c in chains if c.named or c.literals]

    def _pattern(self, t: str, steps: Sequence[Step], end: str, mid: str = "?m") -> str:
        nodes = [t, *([mid] if len(steps) == 2 else []), end]
        out = []
        for i, s in enumerate(steps):
            rel = relation_term(self.base, s.relation)
            a, b = nodes[i], nodes[i + 1]
            out.append(f"{a} {rel} {b} ." if s.direction == "out" else f"{b} {rel} {a} .")
        return " ".join(out)

    def fetch(self, chains: Sequence[Chain]) -> list[_Fetched]:
        """The named / literal ends of each chain with one path each (one query for all chains)."""
        if not chains:
            return []
        blocks = []
        for i, c in enumerate(chains):
            t = entity_term(self.base, c.topic)
            mid = ""
            if c.via == "cvt":
                mid = f"FILTER(isIRI(?m)) FILTER NOT EXISTS {{ ?m {self._name} ?mn }}"
            elif c.via == "named":
                mid = f"FILTER EXISTS {{ ?m {self._name} ?mn }}"
            blocks.append(
                f"{{ SELECT ?m ?x ({i} AS ?b) WHERE {{ {self._pattern(t, c.steps, '?x')} {mid} "
                f"FILTER(!sameTerm(?x, {t})) FILTER(isLiteral(?x) || EXISTS {{ ?x {self._name} ?xn }}) }} "
                f"LIMIT {self.end_limit} }}")
        rows = self._select(
            f"SELECT ?b ?m ?x ?ne ?na WHERE {{ {' UNION '.join(blocks)} "
            f"OPTIONAL {{ ?x {self._name} ?ne . FILTER(LANGMATCHES(LANG(?ne), {literal(self.client.lang)})) }} "
            f"OPTIONAL {{ ?x {self._name} ?na }} }}")
        out = [_Fetched({}, {}) for _ in chains]
        for row in rows:
            f, x = out[int(row["b"].value)], row["x"]
            key = x.value if x.kind == "literal" else self._local(x)
            name = (row.get("ne") or row.get("na") or x).value
            old = f.ends.get(key)
            if old is None or (old.name > name and "ne" not in row):
                f.ends[key] = Node(key, name, x.kind == "literal")
            if key not in f.paths:
                c = chains[int(row["b"].value)]
                nodes = [_uri(self.base + c.topic), *([row["m"]] if "m" in row else []), x]
                f.paths[key] = [(nodes[i], s.relation, nodes[i + 1]) if s.direction == "out" else
                                (nodes[i + 1], s.relation, nodes[i]) for i, s in enumerate(c.steps)]
        return out

    def held(self, triples: Sequence[tuple[Term, str, Term]]) -> list[bool]:
        """Whether the store holds each triple (one query)."""
        return held_triples(self.client, triples)

    # ------------------------------------------------------------------ scoring
    def score(self, question: str, chains: Sequence[Chain]) -> np.ndarray:
        """The chains' scores for the (topic-masked) question; also stored on each chain."""
        if not chains:
            return np.zeros(0)
        labels = self.relation_labels
        words = [chain_words(c.relations, labels) for c in chains]
        lasts = [chain_words(c.relations[-1:], labels) for c in chains]
        ends = [end_words(c.steps[-1].relation, c.steps[-1].direction, labels) for c in chains]
        texts = list(dict.fromkeys(words + lasts + ends))
        vectors = self.embedder.encode(texts)
        row = {text: i for i, text in enumerate(texts)}
        q = self.embedder.encode_query(question).astype(np.float64)
        sims = vectors.astype(np.float64) @ q
        w = self.weights
        mix = w["last"]  # a two-hop chain is judged on its whole words and, as much, on its last hop's words
        cos_chain = np.array([(1 - mix) * sims[row[a]] + mix * sims[row[b]] for a, b in zip(words, lasts, strict=True)])
        cos_end = np.array([sims[row[e]] for e in ends])
        bm25 = BM25Index(words, tokenizer=_stems).scores(question)
        bm25 = bm25 / bm25.max() if bm25.max() > 0 else bm25
        kind = asked_type(question)
        type_term = self._type_term(kind, chains, vectors[[row[e] for e in ends]].astype(np.float64))
        fanout = np.log1p([c.named + c.literals for c in chains])
        hop = np.array([{"": 0.0, "cvt": w["cvt"], "named": w["named"]}[c.via] for c in chains])
        stale = np.array([float(c.via == "named" and not _new_stems(question, c.relations)) for c in chains])
        scores = (w["chain"] * cos_chain + w["end"] * cos_end + w["bm25"] * bm25 + w["type"] * type_term
                  - w["fanout"] * fanout + hop - w["stale"] * stale)
        for c, s in zip(chains, scores, strict=True):
            c.score = float(s)
        return scores

    def _type_term(self, kind: str, chains: Sequence[Chain], end_vectors: np.ndarray) -> np.ndarray:
        if self._type_vectors is None:
            self._type_vectors = self.embedder.encode([TYPE_TEXT[k] for k in TYPE_TEXT]).astype(np.float64)
        affinity = end_vectors @ self._type_vectors.T  # (chains, kinds)
        kinds = list(TYPE_TEXT)
        out = np.zeros(len(chains))
        for i, c in enumerate(chains):
            literal_kind = ("date" if c.datatype in _DATE_TYPES else "number" if c.datatype in _NUMBER_TYPES
                            else "text") if c.literals and not c.named else ""
            if kind == "other":  # "what / which …" asks for a thing: a bare number or date is a poor answer
                out[i] = -0.3 if literal_kind else 0.0
            elif literal_kind:
                out[i] = 1.0 if literal_kind == kind else -0.6
            elif kind in ("date", "number"):
                out[i] = -0.6 + affinity[i, kinds.index(kind)]
            else:
                j = kinds.index(kind)
                out[i] = affinity[i, j] - float(np.mean(np.delete(affinity[i], j)))
        return out

    # ------------------------------------------------------------------ answering
    def ranked(self, question: str, topic: str) -> list[Chain]:
        """The topic's chains, best first (ties: chain text)."""
        chains = self.enumerate(topic)
        self.score(question, chains)
        firsts = sorted((c for c in chains if not c.via and c.named and c.named <= 50),
                        key=lambda c: (-c.score, c.text))[: self.beam]
        named = self.enumerate_named(topic, firsts)
        if named:
            self.score(question, chains + named)
            chains += named
        return sorted(chains, key=lambda c: (-c.score, c.text))

    def answer(self, question: str, topics: Mapping[str, str] | Sequence[str]) -> ZeroShotAnswer:
        """Answer from the topics' chains (``topics``: ids, or ids → names to mask in the question)."""
        names = dict(topics) if isinstance(topics, Mapping) else {t: "" for t in topics}
        for t in names:
            names[t] = names[t] or self.client.entity_name(t)
        masked = question
        for name in sorted(filter(None, names.values()), key=len, reverse=True):
            masked = re.sub(re.escape(name), " ", masked, flags=re.IGNORECASE)
        masked = re.sub(r"\s+", " ", masked).strip() or question
        per_topic: list[list[Chain]] = [self.ranked(masked, t)[: self.top] for t in names]
        fetched = [self.fetch(chains) for chains in per_topic]
        topic_ids = set(names)
        usable: list[list[tuple[Chain, _Fetched]]] = []
        for chains, got in zip(per_topic, fetched, strict=True):
            pairs = []
            for c, f in zip(chains, got, strict=True):
                f.ends = {k: v for k, v in f.ends.items() if k not in topic_ids}
                if f.ends:
                    pairs.append((c, f))
            if pairs:
                usable.append(pairs)
        candidates = sorted((c for chains in per_topic for c in chains), key=lambda c: (-c.score, c.text))
        if not usable:
            return ZeroShotAnswer([], [], candidates=candidates[: self.top], note="no chain with a named end")
        best: tuple[float, tuple[tuple[Chain, _Fetched], ...], set[str]] | None = None
        if len(usable) > 1:
            for combo in itertools.product(*usable):
                common = set.intersection(*(set(f.ends) for _, f in combo))
                total = sum(c.score for c, _ in combo)
                if common and (best is None or total > best[0]):
                    best = (total, combo, common)
        note = ""
        if best is None:
            single = max((p for pairs in usable for p in pairs), key=lambda p: (p[0].score, -len(p[0].text)))
            best = (single[0].score, (single,), set(single[1].ends))
            if len(usable) > 1:
                note = "the topics' chains share no answer: the best single chain"
        _, combo, common = best
        support: dict[str, float] = {}
        for pairs in usable:  # an end reached by more of the good chains ranks first
            for c, f in pairs:
                for key in f.ends:
                    support[key] = support.get(key, 0.0) + math.exp(c.score)
        first = combo[0][1]
        keys = sorted(common, key=lambda k: (-support.get(k, 0.0), first.ends[k].label, k))
        answers = [first.ends[k] for k in keys]
        paths = {k: list(dict.fromkeys(t for _, f in combo for t in f.paths.get(k, []))) for k in keys[:5]}
        shown = list(dict.fromkeys(t for k in keys[:5] for t in paths[k]))[:12]
        held = dict(zip(shown, self.held(shown), strict=True))
        label = {}
        for f in (f for _, f in combo):
            label.update({k: e.label for k, e in f.ends.items()})
        for c, _ in combo:
            label.setdefault(c.topic, names.get(c.topic) or c.topic)

        def local(term: Term) -> str:
            return term.value if term.kind == "literal" else self._local(term)

        # a named middle node (a two-hop chain through a named entity) is shown by its name, an unnamed one as (cvt)
        middles = list(dict.fromkeys(local(x) for tr in shown for x in (tr[0], tr[2])
                                     if x.kind == "uri" and local(x) not in label))[:12]
        for node in middles:
            try:
                label[node] = self.client.entity_name(node) or "(cvt)"
            except ValueError:  # not an id SPARQL can name
                label[node] = "(cvt)"

        def show(term: Term) -> str:
            return label.get(local(term), "(cvt)" if term.kind == "uri" else term.value)

        evidence = [{"answer": first.ends[k].label, "entity_id": k,
                     "triples": [[show(h), r, show(t)] for h, r, t in paths[k] if (h, r, t) in held],
                     "id_triples": [[local(h), r, local(t)] for h, r, t in paths[k] if (h, r, t) in held],
                     "held": [held[tr] for tr in paths[k] if tr in held]} for k in keys[:5]]
        return ZeroShotAnswer(answers, [c for c, _ in combo], evidence=evidence, candidates=candidates[: self.top],
                              note=note)


def _uri(value: str) -> Term:
    from kgrag.graph.store import Term

    return Term("uri", value)
