"""The LLM-free query-graph planner of a triple KG: staged generation (Yih et al. 2015) over the zero-shot chain
ranker's enumeration and scores, the question's cues (:mod:`kgrag.query_graph.cues`) and a few grouped SPARQL
queries; the best plan is run by :class:`~kgrag.query_graph.sparql.QueryExecutor`.

    TriplePlanner(kg.zero_shot).plan("In which country was Marie Curie born?", [KGTopic("e.curie_1", "Marie Curie")])
    # Planned(best=QueryGraph(... path=[bornIn, locatedIn], answer_type="Country"), candidates=[…], reason="")

Stages (every topic candidate, jointly scored):

0. **topics and cues**: a candidate linked from a cue's words (the year of "released after 2002") is no topic; one
   linked from words inside another candidate's longer name ("Chemistry" in "Aster Prize for Chemistry") neither;
   a superlative / comparison inside a topic's name ("The Last Cartographer") asks nothing; the word before a
   comparison / superlative ("born" before 1900) names its relation, not the path (masked for the path);
1. **core path**: the topic's chains from the chain ranker (``ranked``: one hop either way, two hops through a
   CVT, two through a named node), its score kept as the meaning / words feature (MiniLM + BM25 + its answer
   kind) on the question with the cue words and the topic's words masked;
2. **answer type**: what the question asks (``which country`` → ``country``; who → person; where → place; when /
   what year → a date; ``how tall`` → a number) against each chain's ends: their classes (the type edges of the
   ends, one grouped query), the words of the relation that reaches them, a sample of their names, their value
   kind (a literal's XSD type, or kgrag's ``kgrag.value``). A chain whose ends fit worse than the nodes one hop
   further is **extended** by that hop (born in → City, City -located in-> Country), where the extension's class
   fits the asked type and its relation the question's remaining words; a chain whose ends fit stays (the winners,
   not their cities). One hop, or two then one only through a CVT, may be extended (3 hops at most); a bare
   "where" extends only ends that are no place (a university is one: it is located in a city), a bare "who" none;
3. **entity constraint**: a second topic (another span of the question) whose chain reaches some of the same
   ends: the intersection;
4. **literal constraint** / **aggregation**: the literal-valued relations of the ends (and of a CVT / middle node),
   one grouped query for all chains; the comparison or superlative goes to the relation whose words fit its
   words and the question best and whose values are of its kind (a year ↔ date values; a number ↔ numbers); "how
   many" → ``count`` unless the chain's ends are numbers themselves ("how many pages"); "the most prizes" →
   ``argmax`` of the number of a relation's values;
5. **plans over a class** (no topic): with a comparison or superlative, the class the asked words name (by stem,
   else MiniLM ≥ 0.8; or a class linked from the question) ranges over its instances ("which scientists were born
   before 1880", "the oldest university"), the constraint on their own literal relations (read on a sample of
   40); it competes as a chain of score 1.0 would, less 0.7 per name of the question it ignores.

Score of a plan = chain score + 0.6 × answer-type fit (0.05 on a plain question: no count, comparison,
superlative, type noun, value kind or second name; there the chain's meaning decides, the type breaks near-ties)
+ 0.5 × the fit of a constraint's / superlative's relation + 0.3 × a second topic's chain − 0.35 per cue the plan leaves unused (a comparison, a superlative, "how
many", a type word that fits no end, a second name: the other names of a plan from any topic) − 0.35 for a
two-hop chain that walks through another topic of the question − 0.6 for a class node as topic − 0.3 × (1 − link
similarity) + 0.5 × the share of the question's words its relations say (words alike by stem and length).

``confidence`` (documented for ``KGRAG_AGENT_MIN_CONFIDENCE``) = coverage × (0.4 + 0.6 × (1 − e^(−margin / 0.15))),
where coverage = used cues / all cues (1 when the question has none) and margin = the plan's score minus the best
score of a rival: a plan with other answers (with ``answers_of``, the best four plans are run to tell; beyond them,
or without it, a plan with another core path); a lone plan has margin 0.6. A plan that cannot be built says why
(``reason``: one line).

What both planners do alike (cues a name holds dropped, the constraint / aggregation a cue becomes, the question's
structure parts and a plan's coverage of them, the share of words said) is :mod:`kgrag.query_graph.stages`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from kgrag.graph.iri import ENTITY_ID_RE, NAME_PREDICATE, RELATION_RE, VALUE_PREDICATE
from kgrag.graph.sparql import literal, relation_term
from kgrag.query_graph.cues import Cues, read_cues
from kgrag.query_graph.plan import Aggregation, EntityConstraint, Hop, LiteralConstraint, QueryGraph, Topic
from kgrag.query_graph.sparql import TYPE_RELATIONS, node_term
from kgrag.query_graph.stages import (
    COUNT_TEXT,
    comparison_constraint,
    count_aggregation,
    coverage,
    drop_cues,
    share_said,
    structure_parts,
    superlative_aggregation,
    within,
)
from kgrag.reading.words import noun_stem
from kgrag.search.keywords import STOPWORDS

__all__ = ["ChainSource", "KGTopic", "Planned", "TriplePlanner", "relation_words"]

WEIGHTS = {"fit": 0.6, "ext_rel": 0.5, "ext": 0.08, "constraint": 0.5, "second": 0.3, "unused": 0.35,
           "class": 0.6, "link": 0.3, "count_value": 0.5, "words": 0.5, "typed_unused": 0.7, "plain_fit": 0.05}
_DATE_TYPES = ("date", "gYear", "dateTime", "gYearMonth", "dateTimeStamp")
_NUMBER_TYPES = ("integer", "int", "decimal", "double", "float", "long", "short", "nonNegativeInteger",
                 "positiveInteger", "nonPositiveInteger", "negativeInteger", "unsignedInt", "unsignedLong")
#: short descriptions of the wh-kinds, compared with a chain end's words
KIND_TEXT = {"person": "person people human", "place": "place location city country region"}
#: the fit of ends that are located in a place, for a bare "where"
_PLACED = 0.8
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_TOKEN = re.compile(r"[a-z0-9]+")
_CHAINS_PER_TOPIC = 6
_ENDS_PER_CHAIN = 25
#: plans run to tell rivals (other answers) from equivalents (the same answers) for the confidence
_RUN_FOR_MARGIN = 4
#: texts whose vectors the planner keeps (relation words, class labels, names samples)
_MAX_CACHED = 50_000
#: instances of a class whose relations are read for a plan over the class
_INSTANCES_SAMPLED = 40
#: the least likeness of a class's name to the asked type words for a plan over the class
_CLASS_FIT = 0.8
#: a plan over a class competes as a chain of this score would (it has no chain score of its own)
_TYPED_BASE = 1.0
#: English plurals that no suffix rule undoes
def _split(segment: str) -> list[str]:
    return [w for part in segment.split("_") for w in _CAMEL.sub(" ", part).lower().split()]


def relation_words(relation: str) -> str:
    """``people.person.place_of_birth`` → "person place of birth"; ``birthDate`` → "birth date"."""
    parts = relation.split(".")
    segments = parts[1:] if len(parts) > 2 else parts
    return " ".join(w for seg in segments for w in _split(seg) if len(w) > 1)


def _end_words(relation: str, direction: str) -> str:
    """What the end reached by ``relation`` is: the property of an out-edge, the type of a Freebase in-edge."""
    parts = relation.split(".")
    if len(parts) > 2:
        return " ".join(_split(parts[-1] if direction == "out" else parts[-2]))
    return " ".join(_split(parts[-1]))


def _words(text: str) -> set[str]:
    """A text's content words, lowercase."""
    return {t for t in _TOKEN.findall(text.lower()) if t not in STOPWORDS and len(t) > 1}


def _alike(a: str, b: str) -> bool:
    """Two words of one stem: the same first five letters (as the chain ranker's BM25 cuts them), and neither much
    longer than the other ("founded" ~ "founder"; "birthplace" is not "birth")."""
    return a[:5] == b[:5] and min(len(a), len(b)) >= 0.6 * max(len(a), len(b))


def _head(words: str) -> str:
    """The head noun of a relation's end words: "place of birth" → place; "official language" → language."""
    tokens = words.split()
    if "of" in tokens[1:]:
        return tokens[tokens.index("of") - 1] if tokens.index("of") > 0 else tokens[-1]
    return tokens[-1] if tokens else ""


_PLACE_STEMS = frozenset(noun_stem(w) for w in KIND_TEXT["place"].split())


def _placed(rels: Sequence[_Rel]) -> bool:
    """Whether a chain's ends are located somewhere: an out-relation of theirs reaches a place class (City,
    Country, …), so a "where" question may end on them."""
    return any(r.on == "answer" and r.direction == "out" and not r.kind and
               any(c.split() and noun_stem(c.split()[-1]) in _PLACE_STEMS for c in r.classes) for r in rels)


def _names_a_cue(topic: KGTopic, cues: Cues) -> bool:
    """Whether the topic was linked from a cue's words (the year of "released after 2002"): not a topic."""
    mention = (topic.mention or "").strip()
    if not mention:
        return False
    pattern = re.compile(rf"(?<!\w){re.escape(mention)}(?!\w)", re.IGNORECASE)
    return any(pattern.search(cues.question[a:b]) for a, b in cues.spans)


def _without_cues_in_names(cues: Cues, topics: Sequence[KGTopic]) -> Cues:
    """The cues less a comparison / superlative whose words lie inside a topic's name ("Last" in "The Last
    Cartographer", "1984" in "Nineteen … 1984"): they name the thing, they ask nothing."""
    spans = []
    for t in topics:
        if t.mention and t.score >= 0.9:
            spans += [m.span() for m in re.finditer(re.escape(t.mention), cues.question, flags=re.IGNORECASE)]

    def inside(span: tuple[int, int]) -> bool:  # inside a longer name
        return any(within(span, (a, b)) and (b - a) > (span[1] - span[0]) for a, b in spans)

    drop = [c for c in (cues.comparison, cues.superlative) if c is not None and inside(c.span)]
    if not drop:
        return cues
    answer_words = cues.answer_words
    if cues.superlative in drop:  # the noun after it ("Cartographer") was read as the asked type: it is not
        after = re.match(r"\s+([A-Za-z]+)", cues.question[cues.superlative.span[1]:])
        if after is not None and answer_words == [after.group(1).lower()]:
            answer_words = []
    return drop_cues(cues, drop, answer_words)


def _nested(topic: KGTopic, topics: Sequence[KGTopic]) -> bool:
    """Whether the topic was linked from words inside another topic's longer words ("Chemistry" in "Aster Prize for
    Chemistry"), as well linked: the longer name is the topic."""
    mine = topic.mention.lower().strip()
    return bool(mine) and any(mine != t.mention.lower().strip() and re.search(rf"(?<!\w){re.escape(mine)}(?!\w)",
                                                                            t.mention.lower())
                              and t.score >= topic.score for t in topics)


def _structured(cues: Cues, topics: Sequence[KGTopic]) -> bool:
    """Whether the question asks more than a look-up along one chain: a count, comparison, superlative, an
    explicit type noun ("which country"), a value kind (when / how tall) or a second well-linked name. A plain question ("who are X's parents")
    trusts the chain's meaning score and lets the answer type only break near-ties (``plain_fit``): relation
    words that merely say the asked kind (a nationality read backwards for "who") would beat the right chain."""
    return bool(structure_parts(cues, " ".join(cues.answer_words))  # a count, comparison, superlative, type noun
                or cues.answer_kind in ("year", "date", "number")  # a value kind: told by the values, not words
                or len({(t.mention or t.name).lower() for t in topics if t.score >= 0.9}) > 1)


_LAST_WORD = re.compile(r"([A-Za-z]+)\s*$")


def _cue_verb(question: str, span: tuple[int, int]) -> tuple[str, tuple[int, int]] | None:
    """The content word just before a cue ("born" in "born before 1900", "released" in "released first"): it says
    which relation the comparison / superlative is on, not the path (its text and span)."""
    m = _LAST_WORD.search(question[: span[0]])
    if m is None or m.group(1).lower() in STOPWORDS or len(m.group(1)) < 3:
        return None
    return m.group(1), m.span(1)


def _cue_verbs(cues: Cues) -> list[tuple[str, tuple[int, int]]]:
    return [v for cue in (cues.comparison, cues.superlative) if cue is not None
            and (v := _cue_verb(cues.question, cue.span)) is not None]


def _cue_words(cues: Cues) -> str:
    """The words before the comparison / superlative ("born"), said by the constraint's relation."""
    return " ".join(w for w, _ in _cue_verbs(cues))


def _with_cue_verbs(cues: Cues) -> Cues:
    """The cues with the words before the comparison / superlative masked too (the constraint says them)."""
    found = _cue_verbs(cues)
    return replace(cues, spans=[*cues.spans, *(span for _, span in found)]) if found else cues


def _value_kind(datatype: str) -> str:
    local = datatype.rsplit("#", 1)[-1]
    return "date" if local in _DATE_TYPES else "number" if local in _NUMBER_TYPES else ""


class ChainLike(Protocol):
    topic: str
    via: str
    score: float
    datatype: str
    literals: int
    named: int

    @property
    def steps(self) -> Sequence[Any]: ...


class ChainSource(Protocol):
    """What the planner reuses of the zero-shot chain ranker (:class:`kgrag.agent.kg.zero_shot.ZeroShotChainRanker`)."""

    client: Any
    embedder: Any
    skip: Callable[[str], bool]

    def ranked(self, question: str, topic: str) -> list[Any]: ...

    def fetch(self, chains: Sequence[Any]) -> list[Any]: ...


@dataclass(frozen=True)
class KGTopic:
    """A KG node the plan may start from (a topic of the question, as the planner sees it): its id, stored name,
    the question's words for it, how well they match (1 = exactly) and whether it is a class (a node that things
    are typed with). Made from the agent's :class:`kgrag.agent.kg.triple_kg.EntityMatch`; a chosen one becomes the
    plan's :class:`kgrag.query_graph.plan.Topic`."""

    id: str
    name: str
    mention: str = ""
    score: float = 1.0
    is_class: bool | None = None


@dataclass
class Planned:
    best: QueryGraph | None
    candidates: list[QueryGraph] = field(default_factory=list)
    cues: Cues | None = None
    #: why no plan could be built (one line), "" when one was
    reason: str = ""


@dataclass
class _Ends:
    """What the planner knows of one chain's ends."""

    ids: list[str]
    names: list[str]
    literal_kind: str = ""  # date | number | "" (the ends' value kind, when most of them are values)
    classes: list[str] = field(default_factory=list)
    middles: list[str] = field(default_factory=list)
    #: the chain also reaches another topic of the question (it walks through the answers to that name)
    other_topic: bool = False


@dataclass
class _Rel:
    """A relation of a chain's ends (``on="answer"``) or middles (``on="middle"``) seen in the grouped query."""

    relation: str
    direction: str
    on: str
    kind: str  # date | number | "" (entity-valued)
    nodes: int
    classes: list[str]
    names: list[str]


class TriplePlanner:
    """Plan query graphs on one triple KG (see the module docstring)."""

    def __init__(self, chains: ChainSource, keep: int = 5) -> None:
        self.chains = chains
        self.client = chains.client
        self.base = chains.client.base
        self.keep = keep
        self.weights = dict(WEIGHTS)
        self._name = relation_term(self.base, NAME_PREDICATE)
        self._value = relation_term(self.base, VALUE_PREDICATE)
        self._types = " ".join(relation_term(self.base, r) for r in TYPE_RELATIONS if RELATION_RE.match(r))
        self._vectors: dict[str, np.ndarray] = {}
        self._classes: list[tuple[str, str]] | None = None

    # ------------------------------------------------------------------ embeddings
    def _vec(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing and len(self._vectors) > _MAX_CACHED:  # names samples vary per question: bounded, not a leak
            self._vectors.clear()
        if missing:
            for text, vector in zip(missing, self.chains.embedder.encode(missing), strict=True):
                self._vectors[text] = np.asarray(vector, dtype=np.float64)
        return {t: self._vectors[t] for t in texts}

    def _cos(self, a: str, b: str) -> float:
        if not a.strip() or not b.strip():
            return 0.0
        v = self._vec([a, b])
        return float(v[a] @ v[b])

    # ------------------------------------------------------------------ SPARQL
    def _select(self, query: str) -> list[Any]:
        return self.client.store.select(query, timeout=self.client.timeout)

    def _local(self, value: str) -> str:
        return value[len(self.base):] if value.startswith(self.base) else value

    def _is_type(self, relation: str) -> bool:
        return relation in TYPE_RELATIONS

    def _classes_of_topics(self, topics: Sequence[KGTopic]) -> set[str]:
        """The topics that are classes (objects of a type edge): one query."""
        todo = [t for t in topics if t.is_class is None]
        known = {t.id for t in topics if t.is_class}
        if not todo or not self._types:
            return known
        values = " ".join(node_term(self.base, t.id) for t in todo)
        rows = self._select(f"SELECT DISTINCT ?t WHERE {{ VALUES ?t {{ {values} }} VALUES ?r {{ {self._types} }} "
                            "?s ?r ?t }")
        return known | {self._local(r["t"].value) for r in rows}

    def _describe(self, ends: list[_Ends]) -> dict[int, list[_Rel]]:
        """Classes of each chain's ends and the relations of its ends and middles (one grouped query each)."""
        pairs = []
        for i, e in enumerate(ends):
            for node in e.ids[:_ENDS_PER_CHAIN]:
                pairs.append((f"e{i}", node))
            for node in e.middles[:_ENDS_PER_CHAIN]:
                pairs.append((f"m{i}", node))
        if not pairs:
            return {}
        values = " ".join(f"({literal(b)} {node_term(self.base, n)})" for b, n in pairs)
        if self._types:
            rows = self._select(
                f"SELECT ?b ?cl (COUNT(DISTINCT ?x) AS ?n) WHERE {{ VALUES (?b ?x) {{ {values} }} "
                f"VALUES ?tr {{ {self._types} }} ?x ?tr ?c . ?c {self._name} ?cl }} GROUP BY ?b ?cl")
            counts: dict[str, list[tuple[int, str]]] = {}
            for row in rows:
                counts.setdefault(row["b"].value, []).append((int(row["n"].value), row["cl"].value))
            for i, e in enumerate(ends):
                e.classes = [c for _, c in sorted(counts.get(f"e{i}", []), key=lambda p: (-p[0], p[1]))][:3]
        rows = self._select(
            f"SELECT ?b (COUNT(DISTINCT ?x) AS ?n) (MAX(STR(DATATYPE(?v))) AS ?dt) WHERE {{ VALUES (?b ?x) "
            f"{{ {values} }} ?x {self._value} ?v }} GROUP BY ?b")
        for row in rows:
            block = row["b"].value
            if block[0] == "e" and "dt" in row:
                e = ends[int(block[1:])]
                if not e.literal_kind and int(row["n"].value) * 2 >= len(e.ids[:_ENDS_PER_CHAIN]):
                    e.literal_kind = _value_kind(row["dt"].value)
        base = literal(self.base)
        rows = self._select(
            f"SELECT ?b ?r ?d (COUNT(DISTINCT ?y) AS ?n) (MAX(?dt) AS ?datatype) (SAMPLE(?yn) AS ?name) "
            f"(SAMPLE(?cl) AS ?cls) WHERE {{ VALUES (?b ?x) {{ {values} }} "
            f"{{ ?x ?r ?y . BIND(\"out\" AS ?d) }} UNION {{ ?y ?r ?x . BIND(\"in\" AS ?d) }} "
            f"FILTER(isIRI(?r) && STRSTARTS(STR(?r), {base})) "
            f"FILTER(?r != {self._name} && ?r != {self._value}) "
            f"OPTIONAL {{ ?y {self._value} ?yv }} "
            f"BIND(IF(isLiteral(?y), STR(DATATYPE(?y)), IF(BOUND(?yv), STR(DATATYPE(?yv)), \"\")) AS ?dt) "
            f"OPTIONAL {{ ?y {self._name} ?yn }} "
            + (f"OPTIONAL {{ VALUES ?tr {{ {self._types} }} ?y ?tr ?yc . ?yc {self._name} ?cl }} " if self._types
               else "")
            + "} GROUP BY ?b ?r ?d LIMIT 5000")
        rels: dict[int, list[_Rel]] = {}
        for row in rows:
            block = row["b"].value
            relation = self._local(row["r"].value).replace("/", ".")
            if not RELATION_RE.match(relation) or self.chains.skip(relation):
                continue
            kind = _value_kind(row["datatype"].value) if "datatype" in row else ""
            rels.setdefault(int(block[1:]), []).append(_Rel(
                relation, row["d"].value, "answer" if block[0] == "e" else "middle", kind, int(row["n"].value),
                [row["cls"].value] if "cls" in row else [], [row["name"].value] if "name" in row else []))
        return rels

    # ------------------------------------------------------------------ fit
    def _asked(self, cues: Cues) -> str:
        """The asked type as text ("country"; "person people human"), or "" (or a value kind: date / number)."""
        if cues.answer_words:
            return " ".join(cues.answer_words)
        return KIND_TEXT.get(cues.answer_kind, "")

    def _fit(self, cues: Cues, asked: str, classes: list[str], end_words: str, names: list[str],
             value_kind: str) -> float:
        """How well nodes fit the asked type, in [0, 1] (see the module docstring)."""
        kind = cues.answer_kind
        if kind in ("year", "date") and not cues.answer_words:
            return 1.0 if value_kind == "date" else 0.0
        if kind == "number" and not cues.answer_words:
            return 1.0 if value_kind == "number" else 0.0
        if not asked:
            return 0.5 if not value_kind else 0.3  # "what is …": a thing rather than a bare value
        if value_kind:
            return 0.1
        asked_stems = {noun_stem(w) for w in asked.split()}
        # the relation's end words name the type by their head ("place of birth") or, in a property name that
        # starts with its plural noun ("languages spoken", "countries spoken in"), by any of their words
        heads = {noun_stem(c.split()[-1]) for c in classes if c.split()} | {noun_stem(w) for w in end_words.split()}
        if asked_stems & heads:
            return 1.0
        # a known class that is not the asked one counts less than its likeness; its names then say nothing more
        scores = [0.7 * self._cos(asked, c) for c in classes[:2]]
        scores.append(0.9 * self._cos(asked, end_words))
        if names and not classes:
            scores.append(0.9 * self._cos(asked, ", ".join(names[:3])))
        return max(0.0, min(1.0, max(scores)))

    # ------------------------------------------------------------------ planning
    def plan(self, question: str, topics: Sequence[KGTopic],
             answers_of: Callable[[QueryGraph], frozenset[str]] | None = None) -> Planned:
        """The scored plans for the question from the topic candidates (best first); ``best`` None with a reason
        when none can be built. ``answers_of`` (a plan's answer ids, e.g. by the executor) sharpens the confidence:
        the best few plans are run, and plans with the same answers are not rivals."""
        cues = read_cues(question)
        cues = _with_cue_verbs(_without_cues_in_names(cues, topics))
        topics = [t for t in dict.fromkeys(topics) if not _names_a_cue(t, cues)]
        topics = [t for t in topics if not _nested(t, topics)][:4]
        classes = self._classes_of_topics(topics) if topics else set()
        typed = self._typed_plans(question, cues, topics, classes)
        if not topics and not typed:
            return Planned(None, [], cues, "no topic: the question names no node of the graph")
        masked = cues.masked()
        per_topic: dict[str, list[Any]] = {}
        for t in topics:
            rest = masked
            for words in sorted({t.mention, t.name} - {""}, key=len, reverse=True):
                rest = re.sub(re.escape(words), " ", rest, flags=re.IGNORECASE)
            rest = " ".join(rest.split()) or masked
            chains = [c for c in self.chains.ranked(rest, t.id)
                      if not any(self._is_type(s.relation) for s in c.steps)]
            per_topic[t.id] = chains[:_CHAINS_PER_TOPIC]
        flat = [c for t in topics for c in per_topic[t.id]]
        if not flat and not typed:
            return Planned(None, [], cues, "no relation of " + ", ".join(t.name for t in topics[:2])
                           + " leads to a named node or a value")
        plans = self._topic_plans(question, cues, topics, classes, flat) if flat else []
        plans += typed
        if not plans:
            return Planned(None, [], cues, "no chain of the linked topic reaches a named node or a value")
        plans.sort(key=lambda p: -p.score)
        self._calibrate(cues, plans, answers_of)
        return Planned(plans[0], plans[1: 1 + self.keep], cues, "")

    def _class_catalogue(self) -> list[tuple[str, str]]:
        """The graph's classes (objects of a type edge) with their names: one query, kept."""
        if self._classes is None:
            rows = self._select(f"SELECT DISTINCT ?c ?l WHERE {{ VALUES ?tr {{ {self._types} }} ?s ?tr ?c . "
                                f"?c {self._name} ?l }} LIMIT 3000") if self._types else []
            self._classes = [(self._local(r["c"].value), r["l"].value) for r in rows]
        return self._classes

    def _asked_classes(self, asked: str) -> list[tuple[str, str, float]]:
        """The classes whose names fit the asked type words (id, name, fit), best first, at most two."""
        catalogue = self._class_catalogue()
        asked_stems = {noun_stem(w) for w in asked.split()}
        found = []
        for cid, label in catalogue:
            words = label.split()
            if words and noun_stem(words[-1]) in asked_stems:
                found.append((cid, label, 1.0))
            elif len(catalogue) <= 500:
                fit = self._cos(asked, label)
                if fit >= _CLASS_FIT:
                    found.append((cid, label, fit))
        found.sort(key=lambda f: (-f[2], f[1], f[0]))
        return list(dict.fromkeys(found))[:2]

    def _typed_plans(self, question: str, cues: Cues, topics: list[KGTopic],
                     classes: set[str]) -> list[QueryGraph]:
        """Plans over a class as a whole ("which scientists were born before 1880", "the oldest university"): the
        nodes typed with the class the asked words name, with the comparison / superlative / count on their own
        literal relations (read on a sample of them)."""
        # the asked type words, else the words a class was linked from ("list the scientists born before 1940")
        asked = " ".join(cues.answer_words) or " ".join(dict.fromkeys(t.mention.lower() for t in topics
                                                                      if t.id in classes and t.mention))
        if (cues.comparison is None and cues.superlative is None) or not asked or not self._types:
            return []
        plans: list[QueryGraph] = []
        for cid, label, fit in self._asked_classes(asked):
            if not ENTITY_ID_RE.match(cid):
                continue
            rows = self._select(f"SELECT DISTINCT ?x WHERE {{ VALUES ?tr {{ {self._types} }} "
                                f"?x ?tr {node_term(self.base, cid)} }} LIMIT {_INSTANCES_SAMPLED}")
            ids = [self._local(r["x"].value) for r in rows]
            if not ids:
                continue
            ends = _Ends(ids, [label] * len(ids), classes=[label])
            label_stems = {noun_stem(w) for w in label.split()}
            # the names the question says that are not this class's own name ("Ostrander Prize", not "university")
            named = {(t.mention or t.name).lower(): t.name for t in topics if t.score >= 0.9 and t.id not in classes
                     and not {noun_stem(w) for w in (t.mention or t.name).split()} <= label_stems}
            rels = self._describe([ends]).get(0, [])
            for plan in self._with_structure(question, cues, None, [], _TYPED_BASE + self.weights["fit"] * fit,
                                             fit, label, rels, ends, asked, type_id=cid):
                if plan.literal_constraint is not None or (plan.aggregation is not None
                                                           and plan.aggregation.op != "count"):
                    # a plan over a whole class that ignores a name the question says is a weak one
                    plan.unused = [*plan.unused, *dict.fromkeys(named.values())]
                    plan.score = round(plan.score - self.weights["typed_unused"] * len(named), 4)
                    plans.append(plan)
        return plans

    def _topic_plans(self, question: str, cues: Cues, topics: list[KGTopic], classes: set[str],
                     flat: list[Any]) -> list[QueryGraph]:
        """The plans along the topics' chains: their ends read (one fetch, grouped queries), then scored."""
        fetched = self.chains.fetch(flat)
        ends: list[_Ends] = []
        topic_ids = {t.id for t in topics}
        for c, f in zip(flat, fetched, strict=True):
            keys = [k for k in f.ends if k not in topic_ids]
            middles: list[str] = []
            if len(c.steps) == 2:
                for k in keys[:_ENDS_PER_CHAIN]:
                    triples = f.paths.get(k) or []
                    if triples:
                        h, _, t = triples[0]
                        mid = t if c.steps[0].direction == "out" else h
                        middles.append(self._local(mid.value))
            literal_ends = sum(1 for k in keys if f.ends[k].is_literal)
            kind = (_value_kind(c.datatype) if literal_ends and literal_ends >= len(keys) / 2 else "")
            ends.append(_Ends([k for k in keys if not f.ends[k].is_literal], [f.ends[k].label for k in keys],
                              kind, middles=list(dict.fromkeys(middles)),
                              other_topic=any(k in topic_ids and k != c.topic for k in f.ends)))
        rels = self._describe(ends)
        return self._candidates(question, cues, topics, classes, flat, ends, rels)

    def _candidates(self, question: str, cues: Cues, topics: list[KGTopic], classes: set[str],
                    flat: list[Any], ends: list[_Ends], rels: dict[int, list[_Rel]]) -> list[QueryGraph]:
        w = self.weights
        asked = self._asked(cues)
        by_id = {t.id: t for t in topics}
        masked = cues.masked()
        structured = _structured(cues, topics)
        plans: list[QueryGraph] = []
        for i, (c, e) in enumerate(zip(flat, ends, strict=True)):
            if not e.names:
                continue
            t = by_id[c.topic]
            topic = Topic(name=t.name, id=t.id, mention=t.mention)
            path = [Hop(relation=s.relation, direction=s.direction, label=relation_words(s.relation) or s.relation)
                    for s in c.steps]
            last = c.steps[-1]
            fit = self._fit(cues, asked, e.classes, _end_words(last.relation, last.direction), e.names,
                            e.literal_kind)
            if cues.answer_kind == "place" and not cues.answer_words and fit < _PLACED and e.classes \
                    and self._cos(KIND_TEXT["person"], e.classes[0]) < 0.5 and _placed(rels.get(i, [])):
                fit = _PLACED  # "where did X study": the university (not a person) is a place in a city
            prior = -w["class"] * (t.id in classes) - w["link"] * (1.0 - max(0.0, min(1.0, t.score))) \
                - w["unused"] * (e.other_topic and len(c.steps) == 2)  # walks past another named topic
            base = c.score + prior
            w_fit = w["fit"] if structured else w["plain_fit"]
            variants: list[tuple[list[Hop], float, str, list[_Rel]]] = [(path, fit, e.classes[0] if e.classes
                                                                         else "", rels.get(i, []))]
            can_extend = len(c.steps) == 1 or (len(c.steps) == 2 and c.via == "cvt")
            # "which country": extend ends that are not countries; a bare "where": only ends that are no place at all
            # (the university one studied at is a place already); a bare "who" is not extended
            if can_extend and asked and fit < (0.9 if cues.answer_words else 0.5 if cues.answer_kind == "place" else 0):
                for r in rels.get(i, []):
                    if r.on != "answer" or r.kind or self._is_type(r.relation) or r.nodes == 0:
                        continue
                    if r.relation == last.relation and r.direction != last.direction:
                        continue
                    ext_fit = self._fit(cues, asked, r.classes, _end_words(r.relation, r.direction), r.names, "")
                    if ext_fit <= fit + (0.05 if e.classes else 0.15):  # a known, other class: easier to leave
                        continue
                    gain = w["ext_rel"] * self._cos(masked, relation_words(r.relation)) - w["ext"]
                    hop = Hop(relation=r.relation, direction=r.direction,  # type: ignore[arg-type]
                              label=relation_words(r.relation) or r.relation)
                    variants.append(([*path, hop], ext_fit + gain / w["fit"], r.classes[0] if r.classes else "", []))
            for hops, vfit, type_label, end_rels in variants:
                plans.extend(self._with_structure(question, cues, topic, hops, base + w_fit * vfit, vfit,
                                                  type_label, end_rels, e, asked))
        self._second_topics(cues, [t for t in topics if t.id not in classes], flat, ends, plans)
        return plans

    def _with_structure(self, question: str, cues: Cues, topic: Topic | None, hops: list[Hop], score: float,
                        fit: float, type_label: str, rels: list[_Rel], ends: _Ends, asked: str,
                        type_id: str = "") -> list[QueryGraph]:
        """The plan with its literal constraint / aggregation attached where the cues ask for them."""
        w = self.weights
        unused: list[str] = []
        used = 0.0
        lc: LiteralConstraint | None = None
        ag: Aggregation | None = None
        masked = cues.masked()
        if cues.comparison is not None:
            cmp_ = cues.comparison
            want = "number" if cmp_.kind == "number" else "date"
            hint = " ".join(cmp_.words) + " " + _cue_words(cues) + " " + masked
            best = self._best_rel(rels, want, hint, allow_middle=len(hops) == 2)
            if best is None and want == "number" and not cmp_.words:
                best = self._best_rel(rels, "date", hint, allow_middle=len(hops) == 2)
                want = "date" if best is not None else want
            if best is not None:
                r, fit_r = best
                lc = comparison_constraint(cmp_, r.relation, relation_words(r.relation) or r.relation, r.direction,
                                           "year" if want == "date" else "number",
                                           on="middle" if r.on == "middle" else "answer")
                used += w["constraint"] * fit_r
            else:
                unused.append(cmp_.text)
        sup = cues.superlative
        if sup is not None:
            if sup.counts:
                best = self._best_rel([r for r in rels if r.on == "answer" and not r.kind], "",
                                      " ".join(sup.words) + " " + _cue_words(cues) + " " + masked,
                                      allow_middle=False)
            else:
                best = self._best_rel([r for r in rels if r.on == "answer"], sup.kind,
                                      " ".join(sup.words) + " " + _cue_words(cues) + " " + masked,
                                      allow_middle=False)
            if best is not None:
                r, fit_r = best
                ag = superlative_aggregation(sup, r.relation, relation_words(r.relation) or r.relation, r.direction,
                                             None if sup.counts else ("date" if r.kind == "date" else "number"),
                                             counts=sup.counts)
                used += w["constraint"] * fit_r
            else:
                unused.append(sup.text)
        out = []
        if cues.is_count and ag is None:
            count = count_aggregation()
            value_answer = ends.literal_kind == "number"  # the chain's own ends are numbers ("how many pages")
            plans_for = [(count, 0.0 if not value_answer else -w["count_value"])]
            if value_answer:  # "how many pages": the number is the answer
                plans_for.append((None, 0.0))
            for agg, extra in plans_for:
                out.append(self._plan(cues, topic, hops, type_label, lc, agg, unused, score + used + extra, fit, asked,
                                      type_id))
        else:
            if cues.is_count:
                unused.append(COUNT_TEXT)
            out.append(self._plan(cues, topic, hops, type_label, lc, ag, unused, score + used, fit, asked, type_id))
        return out

    def _plan(self, cues: Cues, topic: Topic | None, hops: list[Hop], type_label: str,
              lc: LiteralConstraint | None, ag: Aggregation | None, unused: list[str], score: float, fit: float,
              asked: str, type_id: str = "") -> QueryGraph:
        unused = list(unused)
        if asked and fit < 0.35 and not asked.startswith(tuple(KIND_TEXT.values())):
            unused.append(asked)
        elif not asked and cues.answer_kind in ("year", "date", "number") and fit == 0.0:
            unused.append(f"a {cues.answer_kind}")  # "when …" answered by no date
        score -= self.weights["unused"] * len(unused)
        topic_words = {w[:5] for w in _words(f"{topic.name} {topic.mention}")} if topic else set()
        asked_words = {w for w in _words(cues.masked()) if w[:5] not in topic_words}
        if asked_words:  # words: how much of the question the plan's relations and type name
            named = _words(" ".join(_split(" ".join([*(h.relation for h in hops), type_label,
                                                     *(x.relation for x in (lc, ag) if x)]).replace(".", "_"))))
            score += self.weights["words"] * share_said(asked_words, named, _alike)
        return QueryGraph(topics=[topic] if topic else [], path=hops, answer_type=type_id or type_label,
                          answer_type_label=type_label,
                          literal_constraint=lc, aggregation=ag, unused=unused, score=round(score, 4))

    def _best_rel(self, rels: list[_Rel], want: str, hint: str, allow_middle: bool) -> tuple[_Rel, float] | None:
        """The relation whose values are of kind ``want`` ("" = entities) and whose words fit ``hint`` best."""
        pool = [r for r in rels if r.kind == want and (allow_middle or r.on == "answer")
                and not self._is_type(r.relation)]
        if not pool:
            return None
        scored = [(self._cos(hint, relation_words(r.relation)) - 0.05 * (r.on == "middle"), r) for r in pool]
        fit, best = max(scored, key=lambda p: (p[0], p[1].relation))
        return best, fit

    def _second_topics(self, cues: Cues, topics: list[KGTopic], flat: list[Any], ends: list[_Ends],
                       plans: list[QueryGraph]) -> None:
        """An entity constraint from a second topic named by other words, where its chains reach the same ends;
        a plan that leaves such a name unused says so."""
        by_id = {t.id: t for t in topics}

        def distinct(a: KGTopic, b: KGTopic) -> bool:
            x, y = a.mention.lower(), b.mention.lower()
            return bool(x and y and x not in y and y not in x)

        end_sets = [set(e.ids) | set(e.names) for e in ends]
        added = []
        for plan in plans:  # every plan, from whichever topic: the other names are its second topics
            first = by_id.get(plan.topics[0].id) if plan.topics else None
            if first is None:
                continue
            others = [t for t in topics if t.id != first.id and distinct(t, first) and t.score >= 0.9]
            if not others:
                continue
            names = list(dict.fromkeys(o.name for o in others))
            named = len({o.mention.lower() for o in others})  # a name is one unused part, however many nodes it fits
            mine = next((j for j, c in enumerate(flat) if c.topic == first.id and
                         [s.relation for s in c.steps] == [h.relation for h in plan.path]), None)
            best = None
            for other in others:
                for j, c in enumerate(flat):
                    if c.topic != other.id or mine is None or not (end_sets[mine] & end_sets[j]):
                        continue
                    if best is None or c.score > best[1].score:
                        best = (other, c)
            if best is None:
                plan.unused = [*plan.unused, *names]
                plan.score -= self.weights["unused"] * named
                continue
            other, c = best
            ec = EntityConstraint(topic=Topic(name=other.name, id=other.id, mention=other.mention),
                                  path=[Hop(relation=s.relation, direction=s.direction,
                                            label=relation_words(s.relation) or s.relation) for s in c.steps])
            added.append(plan.model_copy(update={"entity_constraint": ec, "unused": list(plan.unused),
                                                 "score": round(plan.score + self.weights["second"] * c.score, 4)}))
            plan.unused = [*plan.unused, *names]
            plan.score -= self.weights["unused"] * named
        plans.extend(added)

    def _calibrate(self, cues: Cues, plans: list[QueryGraph],
                   answers_of: Callable[[QueryGraph], frozenset[str]] | None) -> None:
        """Each plan's confidence (see the module docstring). With ``answers_of`` the best few plans are run and a
        rival is a plan with other answers (two paths to the same answers do not make the plan less sure)."""
        total = len(structure_parts(cues, " ".join(cues.answer_words)))
        known: dict[int, frozenset[str]] = {}
        if answers_of is not None:
            for i, plan in enumerate(plans[:_RUN_FOR_MARGIN]):
                known[i] = answers_of(plan)

        def same(i: int, j: int) -> bool:
            if i in known and j in known:
                return known[i] == known[j]
            return plans[i].describe().split(" · ")[0] == plans[j].describe().split(" · ")[0]

        for i, plan in enumerate(plans):
            rivals = [p.score for j, p in enumerate(plans) if j != i and not same(i, j)]
            margin = plan.score - max(rivals) if rivals else 0.6
            covered = coverage(len(plan.unused), total)
            plan.confidence = round(max(0.0, min(1.0, covered * (0.4 + 0.6 * (1 - math.exp(-max(0.0, margin)
                                                                                             / 0.15))))), 4)
