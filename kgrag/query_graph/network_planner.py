"""Query graphs on a knowledge network, planned without an LLM: the question's structure words
(:mod:`kgrag.query_graph.cues`) and its linked topics, turned into scored :class:`~kgrag.query_graph.plan.QueryGraph`
candidates over the network's own schema (run by :mod:`kgrag.query_graph.network_executor`).

    plans = plan_network("how many books did George Orwell write", network,
                         [NetworkTopic("George Orwell", "Author", "a:orwell", "George Orwell", 17)], [("rel:wrote", .9)])
    plans[0].describe()   # 'George Orwell -[wrote]-> ?answer (type: book) · count'

Stages (staged query-graph generation, Yih et al. 2015):

1. **topics**: the linked instances (the agent's exact storage forms, in question order). A stored name said
   verbatim wins over a cue inside it ("The Last Cartographer" is a title, not a superlative) and over an equality
   on its value ("films from 2006" where 2006 is a stored instance: a topic, not ``year = 2006``); a topic inside
   an order comparison is the comparison's value ("before 1984": no topic);
2. **core path**: 1 to 3 relation types walked either way, **starting at the topic's object type** (a relation
   that neither starts nor ends there is never a candidate); a 2-hop path only ends at an asked answer type —
   or passes the node a **relational noun** names ("Where was the *director* of X born?", "X's *books*": the
   noun's type, or its relation's words) and goes on by a hop the rest of the question says ("born": place of
   birth) or to the asked type (3 hops where the noun's node is two away through a middle: "the *teams* of X"
   through a roster, or the asked type two beyond it); such a path gains ``CHAIN``, and a path that passes no
   such node leaves the noun in ``unused``;
3. **answer type**: the object type whose name / id words the question's type words name ("which genres", "how
   many books", "the youngest author"; its comment's words only when no type is named by its own); a path ending
   elsewhere loses. With no type word, the kind a wh-word asks ("where": a place, "when": a date) favours a path
   whose last relation or end type is called so ("place of birth", not "date of birth");
4. **entity constraint**: a second topic reaching the answer type in one hop (intersection: "fantasy books by X");
5. **literal constraint**: a comparison cue ("before 1900", "more than 300 pages") on a number or date data
   property of the answer type, the one whose words the cue and the question share best — or on the value of a
   linked **value node** (a type no relation starts from, holding one number / date: Film -release date->
   Year.value; the constraint's ``relation`` is then that relation type, read by the executor);
6. **aggregation**: ``count`` ("how many books"; "how many pages" names a number property instead: no count),
   ``argmax`` / ``argmin`` over a number or date property (own or a value node's) for a superlative ("the oldest
   book": ``year`` ascending, "the youngest author": ``birth_year`` descending, "the first film directed by X":
   its release year ascending; "the most pages": a number property the noun names, where no relation is counted).

A question that names an asked answer type and a superlative, comparison or count but no topic gets plans over
the whole answer type (no topic, no path). A comparison or superlative no number / date property of the answer
type can take is left in the plan's ``unused`` (the answer says it could not apply it), never silently dropped. Each candidate is scored:

``score = meaning + WORDS·words + TYPE·type fit − TYPE_MISS·(asked, not reached) + COVERAGE·coverage − HOP·(hops−1)
+ CHAIN·(passes a relational noun's node and goes on)``

- meaning: the schema-intent ranker's probability of the path's first hop (the agent's ``schema_recall``), or of
  the whole two-step ``path:`` label when it ranked one;
- words: the share of the question's content words (cues and topic words removed) that the path's relation names
  and comments and its answer type's words hold;
- coverage: the share of the question's structure parts (count, comparison, superlative, type word, each topic)
  the plan applies; those it does not are its ``unused`` (said in the answer).

``confidence`` = coverage · (0.5 + 0.5 · the best candidate's softmax share of all candidates' scores at
temperature :data:`TEMPERATURE`): a plan that leaves part of the question out, or barely beats another reading,
is less sure. :func:`has_structure` tells whether a question needs a query graph at all (today's one-relation
planners answer the rest).

What both planners do alike (cues a name holds dropped, the constraint / aggregation a cue becomes, the question's
structure parts and a plan's coverage of them, the share of words said) is :mod:`kgrag.query_graph.stages`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kgrag.network.schema.model import DataProperty, KnowledgeNetwork, ObjectType
from kgrag.query_graph.cues import Comparison, Cues, Superlative, read_cues
from kgrag.query_graph.network_executor import linked_value
from kgrag.query_graph.plan import Aggregation, EntityConstraint, Hop, LiteralConstraint, QueryGraph, Topic
from kgrag.query_graph.stages import (
    comparison_constraint,
    count_aggregation,
    coverage,
    drop_cues,
    said,
    share_said,
    structure_parts,
    superlative_aggregation,
    unused_parts,
    within,
)
from kgrag.reading.words import noun_stem

__all__ = ["NetworkTopic", "asked_types", "has_structure", "plan_network", "question_cues", "unapplicable_cues",
           "value_properties"]

WORDS = 0.35
TYPE = 0.6
TYPE_MISS = 0.6
COVERAGE = 0.5
HOP = 0.1
#: a path through the node a relational noun names ("the director of X") that goes on as the question does
#: (a noun the question relates the topic by is also a part coverage counts when more follows it)
CHAIN = 0.5
TEMPERATURE = 0.25
#: most candidates returned (best first)
MAX_CANDIDATES = 8
#: the most distinct mentions a plan reads as topics (the first starts the path, another constrains it)
MAX_MENTIONS = 3

_NUMERIC = frozenset({"integer", "int", "long", "short", "float", "double", "decimal", "number", "numeric"})
_DATES = frozenset({"date", "datetime", "timestamp", "year", "gyear", "date-time"})
#: words that name a time-valued property (English; what a year comparison's property is called)
_TIME_WORDS = ("year", "date", "born", "birth", "published", "publication", "founded", "released", "established",
               "start", "time", "day")
#: what the types and relations an answer kind asks for are called (English; "where" asks a place)
_KIND_WORDS = {"place": ("place", "location", "located", "city", "country", "town", "region", "area", "continent",
                         "site", "address", "based", "where"),
               "date": ("date", "year", "time", "day"), "year": ("date", "year", "time", "day")}
_STOP = frozenset(re.findall(r"\S+", """the a an of in on by to for with and or at as from into about is are was were be
been being did does do has have had how many much what which who whom whose when where there that this these those it its
their his her he she they them i you we me my your our any all some one ones number count"""))


@dataclass(frozen=True)
class NetworkTopic:
    """A network instance the plan may start from (a topic of the question, as the planner sees it): its stored
    name, object type and id, the words that named it and where. Made from the agent's chosen
    :class:`kgrag.agent.kn.linking.InstanceMatch`; a chosen one becomes the plan's
    :class:`kgrag.query_graph.plan.Topic`."""

    name: str
    object_type: str
    instance_id: str
    mention: str = ""
    start: int = -1


def _tokens(text: str) -> list[str]:
    """Stemmed word tokens (Latin letters as words, a CJK run as one token), stop words dropped."""
    return [noun_stem(t) for t in re.findall(r"[^\W\d_]+", text.lower().replace("_", " ")) if t not in _STOP]


def _id_words(identifier: str) -> str:
    tail = identifier.split("@")[0].rsplit(".", 1)[-1]
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", tail).replace("_", " ")


_CJK = re.compile("[\u4e00-\u9fff]")


def _similar(a: str, b: str) -> bool:
    """The same word, or two long words sharing their first five letters (publication / published); Chinese
    (no spaces between words): one starts with the other ("书" / "书籍") or holds it (two characters or more)."""
    if a == b or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5]):
        return True
    if a and b and _CJK.match(a) and _CJK.match(b):
        short, long = sorted((a, b), key=len)
        return long.startswith(short) or (len(short) >= 2 and short in long)
    return False


def _overlap(words: Iterable[str], text_words: Iterable[str]) -> int:
    """How many distinct ``words`` some of ``text_words`` is :func:`_similar` to."""
    return said(words, text_words, _similar)


def _type_words(ot: ObjectType) -> tuple[list[str], list[str]]:
    """(the type's own words: name and id, its comment's words)."""
    return _tokens(f"{ot.name} {_id_words(ot.id)}"), _tokens(ot.comment)


def asked_types(cues: Cues, network: KnowledgeNetwork) -> dict[str, float]:
    """``{object type: fit}`` of the types the question's type words name: 1.0 when a word is the type's name or
    id, 0.6 when only its comment says it (and no type is named by its own name: "which publishers published"
    names the publisher, not the book "a published book")."""
    words = [noun_stem(w) for w in [*cues.answer_words, *([cues.count_noun] if cues.count_noun else [])]
             if w and w.lower() not in _STOP]
    out: dict[str, float] = {}
    for ot in network.object_types:
        own, comment = _type_words(ot)
        if any(_similar(w, t) for w in words for t in own):
            out[ot.id] = 1.0
        elif any(w == t for w in words for t in comment):
            out[ot.id] = 0.6
    if any(fit >= 1.0 for fit in out.values()):
        return {t: fit for t, fit in out.items() if fit >= 1.0}
    return out


def value_properties(ot: ObjectType) -> list[DataProperty]:
    """The data properties of ``ot`` holding numbers or dates (what a comparison or a superlative orders)."""
    return [p for p in ot.data_properties
            if p.name != ot.display_key and (p.type.lower() in _NUMERIC or p.type.lower() in _DATES)]


def _prop_words(p: DataProperty) -> list[str]:
    return _tokens(f"{p.display_name} {_id_words(p.name)} {p.comment}")


@dataclass(frozen=True)
class _Value:
    """A number / date a comparison or a superlative can read: the answer's own property (``relation`` its name),
    or the value of a value node linked to it (``relation`` the relation type walked ``direction``)."""

    relation: str
    label: str
    type: str
    words: tuple[str, ...]
    direction: str = "out"


def _values(ot: ObjectType, network: KnowledgeNetwork | None, question_words: Sequence[str] = ()) -> list[_Value]:
    """The numbers / dates of ``ot``: its own properties, then those of the value nodes one step away
    (:func:`~kgrag.query_graph.network_executor.linked_value`: Film -release date-> Year.value) — except a type the
    question names ("cities that have *authors* born after 1900": a middle node, not a value of the city)."""
    out = [_Value(p.name, p.display_name or p.name, p.type, tuple(_prop_words(p))) for p in value_properties(ot)]
    if network is None:
        return out
    types = {o.id: o for o in network.object_types}
    for hop, far, text in _steps(network, ot.id):
        found = linked_value(network, ot.id, hop.relation, hop.direction)
        if found is None or _overlap(question_words, _type_words(types[far])[0]):
            continue
        prop = next(p for p in types[far].data_properties if p.name == found[1])
        words = _tokens(f"{text} {types[far].name} {_id_words(far)}") + _prop_words(prop)
        out.append(_Value(hop.relation, hop.label or hop.relation, prop.type, tuple(words), hop.direction))
    return out


def _pick_property(ot: ObjectType, hints: Sequence[str], question_words: Sequence[str], kind: str,
                   values: Sequence[_Value] | None = None) -> tuple[_Value, float] | None:
    """The number / date of ``ot`` a comparison or superlative is about, among ``values`` (:func:`_values`; its own
    properties when None): the one sharing most words with the cue's hints and the question; ``kind``
    year/date prefers a date or time-named one, number a number. The only candidate is taken (with a low fit)
    when nothing is said; None when ``ot`` has none."""
    props = list(values) if values is not None else _values(ot, None)
    if kind == "number":
        props = [p for p in props if p.type.lower() in _NUMERIC]
    if not props:
        return None
    best: tuple[_Value, float] | None = None
    for p in props:
        words = list(p.words)
        fit = _overlap([noun_stem(h) for h in hints], words) + 0.5 * _overlap(question_words, words)
        if kind in ("year", "date"):
            fit += 0.5 * (p.type.lower() in _DATES) + 0.5 * (_overlap(_TIME_WORDS, words) > 0)
        if best is None or fit > best[1]:
            best = (p, fit)
    if best is not None and best[1] <= 0 and len(props) > 1:
        return None
    return best


def _label(network: KnowledgeNetwork, rid: str) -> str:
    rt = next((r for r in network.relation_types if r.id == rid), None)
    return (rt.name or rid) if rt is not None else rid


def _steps(network: KnowledgeNetwork, type_id: str) -> list[tuple[Hop, str, str]]:
    """``(hop, the type it reaches, the relation's words)`` of every relation starting or ending at ``type_id``."""
    out: list[tuple[Hop, str, str]] = []
    for rt in network.relation_types:
        words = f"{rt.name} {_id_words(rt.id)} {rt.comment}"
        if rt.source_object_type_id == type_id:
            out.append((Hop(relation=rt.id, direction="out", label=rt.name or rt.id), rt.target_object_type_id, words))
        if rt.target_object_type_id == type_id:
            out.append((Hop(relation=rt.id, direction="in", label=rt.name or rt.id), rt.source_object_type_id, words))
    return out


def _intent(hop: Hop) -> str:
    return f"{'rel' if hop.direction == 'out' else 'rel_in'}:{hop.relation}"


@dataclass
class _Parts:
    """The question's structure parts (what coverage counts) and its content words."""

    cues: Cues
    asked: dict[str, float]
    words: list[str]
    type_word: str
    #: each answer type's numbers / dates (:func:`_values`), read once per question
    values: dict[str, list[_Value]] = field(default_factory=dict)

    def values_of(self, ot: ObjectType, network: KnowledgeNetwork) -> list[_Value]:
        if ot.id not in self.values:
            self.values[ot.id] = _values(ot, network, self.words)
        return self.values[ot.id]

    def rest(self, noun: str) -> list[str]:
        """The content words left besides a relational noun (what a hop after the noun's node must say)."""
        stem = noun_stem(noun) if noun else ""
        return [w for w in self.words if w not in _WH and not (stem and _similar(w, stem))]


def _parts(question: str, cues: Cues, network: KnowledgeNetwork, topics: Sequence[NetworkTopic]) -> _Parts:
    masked = cues.masked()
    for t in topics:
        if t.mention:
            masked = masked.replace(t.mention, " ")
    own_types = {t.object_type for t in topics}
    asked = {t: fit for t, fit in asked_types(cues, network).items() if t not in own_types}
    type_word = next((w for w in [*cues.answer_words, cues.count_noun or ""] if w and noun_stem(w) not in _STOP), "")
    words = [w for w in _tokens(masked) if not (type_word and _similar(w, noun_stem(type_word)))]
    return _Parts(cues, asked, words, type_word if asked else "")


def _inside(span: tuple[int, int], topic: NetworkTopic) -> bool:
    return topic.start >= 0 and within(span, (topic.start, topic.start + len(topic.mention)))


def _covers(span: tuple[int, int], topic: NetworkTopic) -> bool:
    return topic.start >= 0 and within((topic.start, topic.start + len(topic.mention)), span)


_OF_NOUN = re.compile(r"\b(?:the|a|an|its|his|her|their)\s+([a-z]+)\s+of\s+(?:the\s+)?$", re.I)
_POSSESSIVE = re.compile(r"^(?:'s|’s|'|’)\s+([a-z]+)", re.I)
#: question words left after the cues that name no relation ("where was … born": "born" does, "where" not)
_WH = frozenset({"where", "when", "why"})


def relational_noun(question: str, topic: NetworkTopic) -> str:
    """The noun the question reaches the topic's neighbour by: "the *director* of X", "X's *books*" ("" when
    the question says none, or the topic's place is unknown)."""
    if topic.start < 0 or not topic.mention:
        return ""
    before = _OF_NOUN.search(question[: topic.start])
    if before is not None:
        return before.group(1).lower()
    after = _POSSESSIVE.match(question[topic.start + len(topic.mention):])
    return after.group(1).lower() if after is not None else ""


def _noun_fit(noun: str, hop_words: str, reached: ObjectType | None) -> float:
    """How well ``noun`` names a step: 1 when it is the reached type's name, 0.5 when the relation's words hold it."""
    if not noun:
        return 0.0
    stem = noun_stem(noun)
    if reached is not None and _overlap([stem], _type_words(reached)[0]):
        return 1.0
    return 0.5 if _overlap([stem], _tokens(hop_words)) else 0.0


def question_cues(question: str, topics: Sequence[NetworkTopic]) -> Cues:
    """:func:`read_cues`, less the cues a linked topic's name holds (a title's "Last") and the equalities whose
    value is a linked instance ("in 2006" where 2006 is stored): the topic reading wins there."""
    cues = read_cues(question)
    drop: list[Comparison | Superlative] = []
    sup, comparison = cues.superlative, cues.comparison
    if sup is not None and any(_inside(sup.span, t) for t in topics):
        drop.append(sup)
    if comparison is not None and (any(_inside(comparison.span, t) for t in topics)
                                   or (comparison.op == "=" and any(_covers(comparison.span, t) for t in topics))):
        drop.append(comparison)
    return drop_cues(cues, drop)


def has_structure(question: str, network: KnowledgeNetwork, topics: Sequence[NetworkTopic],
                  best_intent: str | None) -> bool:
    """Whether the question asks more than one relation from one topic: a count of things, a comparison, a
    superlative, two topics, or an answer type (named by its type's own name, not the topic's type) the best
    one-relation intent does not reach."""
    cues = question_cues(question, topics)
    topics = _own_topics(cues, topics)
    own_types = {t.object_type for t in topics}
    asked = {t: fit for t, fit in asked_types(cues, network).items() if fit >= 1.0 and t not in own_types}
    if cues.is_count and not _counts_a_property(cues, network, topics, asked):
        return True
    applicable = set(unapplicable_cues(question, network, topics))
    if any(c is not None and c.text not in applicable for c in (cues.comparison, cues.superlative)):
        return True
    if len(_mentions(topics)) >= 2 and not (best_intent or "").startswith("prop:"):
        # two things named (not one name stored under two types); a property intent answers from one topic
        return True
    if asked and best_intent:
        reached = _intent_end(network, best_intent)
        if reached is not None and reached not in asked:
            return True
    return _chains_on(question, network, topics, cues)


def _intent_end(network: KnowledgeNetwork, intent: str) -> str | None:
    """The type a ``rel:`` / ``rel_in:`` / two-step ``path:`` intent reaches (None for a property or unknown)."""
    kind, _, element = intent.partition(":")
    steps = [tuple(s.split(":", 1)) for s in element.split("|")] if kind == "path" else [(kind, element)]
    reached = None
    for step in steps:
        rt = next((r for r in network.relation_types if r.id == step[-1]), None) \
            if len(step) == 2 and step[0] in ("rel", "rel_in") else None
        if rt is None:
            return None
        reached = rt.target_object_type_id if step[0] == "rel" else rt.source_object_type_id
    return reached


def _chains_on(question: str, network: KnowledgeNetwork, topics: Sequence[NetworkTopic], cues: Cues) -> bool:
    """"Where was the director of X born": a relational noun whose node a path passes, then goes on by a hop
    whose words the rest of the question says."""
    if not topics:
        return False
    main = topics[0]
    noun = relational_noun(question, main)
    if not noun:
        return False
    parts = _parts(question, cues, network, topics)
    rest = parts.rest(noun)
    if not rest:
        return False
    types = {o.id: o for o in network.object_types}
    return any(chain and _overlap(rest, _tokens(f"{_hop_text(network, path[-1])} {types[end].name}"))
               and _kind_suits(parts, _kind_fit(parts, network, path[-1], types[end]))
               for path, end, _text, chain in _paths(network, main.object_type, {}, noun) if end in types)


def unapplicable_cues(question: str, network: KnowledgeNetwork, topics: Sequence[NetworkTopic]) -> list[str]:
    """The comparison / superlative cues (their words) that no number or date property within two hops of the
    topics' types (of any type, without a topic) can take: no plan could apply them, so they do not call for a
    query graph — the one-relation answer says it could not apply them ("最新" on a network without dates)."""
    cues = question_cues(question, topics)
    wanted = [c for c in (cues.comparison, cues.superlative) if c is not None and not getattr(c, "counts", False)]
    if not wanted:
        return []
    reach = {t.object_type for t in _own_topics(cues, topics)}
    if reach:
        for _ in range(2):
            reach |= {end for type_id in list(reach) for _hop, end, _text in _steps(network, type_id)}
    types = [ot for ot in network.object_types if not reach or ot.id in reach]
    out = []
    for cue in wanted:
        number_only = getattr(cue, "kind", "") == "number"
        if not any(p.type.lower() in _NUMERIC or not number_only for ot in types for p in value_properties(ot)):
            out.append(cue.text)
    return out


def _counts_a_property(cues: Cues, network: KnowledgeNetwork, topics: Sequence[NetworkTopic],
                       asked: Mapping[str, float]) -> bool:
    """"how many pages does X have": the count noun names a number property of a topic's type, not a type."""
    if not cues.count_noun or asked:
        return False
    noun = noun_stem(cues.count_noun)
    types = {t.object_type for t in topics}
    return any(_similar(noun, w) for ot in network.object_types if ot.id in types
               for p in value_properties(ot) for w in _prop_words(p))


def _mention(t: NetworkTopic) -> tuple[int, str] | str:
    """What names the topic in the question: its words where known, else its instance (one mention may be
    stored under several types: "精索静脉曲张" a disease and a symptom — one topic read two ways)."""
    return (t.start, t.mention) if t.start >= 0 and t.mention else f"{t.object_type}:{t.instance_id}"


def _mentions(topics: Sequence[NetworkTopic]) -> list[tuple[int, str] | str]:
    return list(dict.fromkeys(_mention(t) for t in topics))


def _own_topics(cues: Cues, topics: Sequence[NetworkTopic]) -> list[NetworkTopic]:
    """Distinct topics (first mention first; every stored reading of the first :data:`MAX_MENTIONS` mentions)
    whose words are not a cue's ("1984" in "before 1984")."""
    out: list[NetworkTopic] = []
    for t in sorted(topics, key=lambda t: t.start if t.start >= 0 else 1 << 30):
        end = t.start + len(t.mention)
        if t.start >= 0 and any(a < end and t.start < b for a, b in cues.spans):
            continue
        if all((o.object_type, o.instance_id) != (t.object_type, t.instance_id) for o in out):
            out.append(t)
    kept = _mentions(out)[:MAX_MENTIONS]
    return [t for t in out if _mention(t) in kept]


def _topic(t: NetworkTopic) -> Topic:
    return Topic(name=t.name[:500], id=f"{t.object_type}:{t.instance_id}"[:500], mention=t.mention[:500],
                 type=t.object_type[:300])


def _literal(parts: _Parts, ot: ObjectType, network: KnowledgeNetwork | None = None
             ) -> tuple[LiteralConstraint | None, float]:
    comparison = parts.cues.comparison
    if comparison is None:
        return None, 0.0
    hints = list(comparison.words) + (list(_TIME_WORDS) if comparison.kind == "year" else [])
    picked = _pick_property(ot, hints, parts.words, comparison.kind,
                            parts.values_of(ot, network) if network is not None else None)
    if picked is None:
        return None, 0.0
    prop, fit = picked
    kind = "year" if comparison.kind == "year" else ("date" if prop.type.lower() in _DATES else "number")
    return comparison_constraint(comparison, prop.relation, prop.label, prop.direction, kind), fit


def _counted_step(network: KnowledgeNetwork, parts: _Parts, ot: ObjectType) -> tuple[Hop, float] | None:
    """The relation a "the most X" superlative counts from ``ot``: the step whose far type the counted noun names
    (fit 1), else whose relation words hold it (0.5), plus the share of the question's words the relation holds;
    None when no step of ``ot`` fits."""
    sup = parts.cues.superlative
    if sup is None:
        return None
    nouns = [noun_stem(w) for w in sup.words]
    types = {o.id: o for o in network.object_types}
    best: tuple[Hop, float] | None = None
    for hop, far, text in _steps(network, ot.id):
        far_type = types.get(far)
        own = _type_words(far_type)[0] if far_type is not None else []
        rel_words = _tokens(text)
        fit = 1.0 if _overlap(nouns, own) else 0.5 if _overlap(nouns, rel_words) else 0.0
        if not fit:
            continue
        fit += share_said(parts.words, rel_words, _similar)
        if best is None or fit > best[1]:
            best = (hop, fit)
    return best


def _aggregation(parts: _Parts, ot: ObjectType, network: KnowledgeNetwork) -> tuple[Aggregation | None, float]:
    cues = parts.cues
    sup = cues.superlative
    if sup is not None and sup.counts:
        counted = _counted_step(network, parts, ot)
        if counted is None:
            # "the most pages": the noun names a number property of the answers, not a relation to count
            named = [p for p in value_properties(ot) if p.type.lower() in _NUMERIC
                     and _overlap([noun_stem(w) for w in sup.words], _prop_words(p))]
            if not named:
                return None, 0.0
            return superlative_aggregation(sup, named[0].name, named[0].display_name or named[0].name,
                                           kind="number"), 1.0
        hop, fit = counted
        return superlative_aggregation(sup, hop.relation, hop.label, hop.direction, "number", counts=True), fit
    if sup is not None and not sup.counts:
        picked = _pick_property(ot, sup.words, parts.words, sup.kind, parts.values_of(ot, network))
        if picked is None:
            return None, 0.0
        prop, fit = picked
        # a date superlative on a year-valued number orders the numbers ("oldest": the smallest year)
        kind = "date" if prop.type.lower() in _DATES else ("year" if sup.kind == "date" else "number")
        return superlative_aggregation(sup, prop.relation, prop.label, prop.direction, kind), fit
    if cues.is_count:
        return count_aggregation(), 1.0
    return None, 0.0


def _structure(parts: _Parts, topics: Sequence[NetworkTopic]) -> list[str]:
    """The question's parts a plan should use, in the question's words: its structure parts
    (:func:`~kgrag.query_graph.stages.structure_parts`), then each topic's words."""
    return structure_parts(parts.cues, parts.type_word) + list(dict.fromkeys(t.mention or t.name for t in topics))


def _finish(plan: QueryGraph, parts: _Parts, topics: Sequence[NetworkTopic], used: set[str], meaning: float,
            words: float, type_fit: float, chain: float = 0.0, extra: Sequence[str] = ()) -> QueryGraph:
    wanted = _structure(parts, topics) + [w for w in extra if w]
    unused = unused_parts(wanted, used)
    covered = coverage(len(unused), len(wanted))
    miss = bool(parts.asked) and type_fit == 0.0
    score = (meaning + WORDS * words + TYPE * type_fit - TYPE_MISS * miss + COVERAGE * covered
             - HOP * max(len(plan.path) - 1, 0) + chain)
    return plan.model_copy(update={"unused": unused[:20], "score": round(score, 4),
                                   "confidence": round(covered, 4)})


def _apply_cues(parts: _Parts, ot: ObjectType, network: KnowledgeNetwork) -> tuple[dict, set[str]]:
    """The literal constraint and aggregation a plan ending at ``ot`` takes, and the parts they use."""
    update: dict = {}
    used: set[str] = set()
    lc, _ = _literal(parts, ot, network)
    if lc is not None:
        update["literal_constraint"] = lc
        used.add(lc.text)
    agg, _ = _aggregation(parts, ot, network)
    if agg is not None:
        update["aggregation"] = agg
        used.add(agg.text)
    return update, used


def plan_network(question: str, network: KnowledgeNetwork, topics: Sequence[NetworkTopic],
                 intents: Sequence[tuple[str, float]] = (), max_candidates: int = MAX_CANDIDATES
                 ) -> list[QueryGraph]:
    """The scored query-graph candidates of ``question`` on ``network``, best first (see the module docstring);
    ``intents``: the schema-intent ranker's ``(label, probability)`` for the topics' types. Empty when nothing
    can be planned (no topic and no asked answer type)."""
    cues = question_cues(question, topics)
    own = _own_topics(cues, topics)
    parts = _parts(question, cues, network, own)
    types = {ot.id: ot for ot in network.object_types}
    p = dict(intents)
    candidates: list[QueryGraph] = []
    mains = _mentions(own)[:2]
    for main in (t for t in own if _mention(t) in mains):
        others = [t for t in own if _mention(t) != _mention(main)]
        noun = relational_noun(question, main)
        rest = parts.rest(noun) if noun else []
        for path, end, text, chain in _paths(network, main.object_type, parts.asked, noun if rest else ""):
            ot = types.get(end)
            if ot is None:
                continue
            labels = [_intent(h) for h in path]
            meaning = _meaning(p, labels)
            path_words = _tokens(f"{text} {ot.name} {_id_words(ot.id)}")
            words = share_said(parts.words, path_words, _similar)
            # a path that goes on past the noun's node as the question does ("… of X born": to a birthplace)
            type_fit = parts.asked.get(end, 0.0) or _kind_fit(parts, network, path[-1], ot)
            goes_on = chain and (end in parts.asked or (_overlap(rest, _tokens(f"{_hop_text(network, path[-1])} "
                                                                                f"{ot.name}"))
                                                        and _kind_suits(parts, type_fit)))
            update, used = _apply_cues(parts, ot, network)
            if len(path) == 2 and "literal_constraint" not in update:
                middle = _on_middle(parts, types.get(_far(network, main.object_type, path[0])))
                if middle is not None:
                    update["literal_constraint"] = middle
                    used.add(middle.text)
            used.add(main.mention or main.name)
            if rest and (chain or _noun_fit(noun, _hop_text(network, path[-1]), ot)):
                used.add(noun)  # the path passes the noun's node, or ends there
            if type_fit and parts.type_word:
                used.add(parts.type_word)
            constraint = _entity_constraint(network, others, end, parts, p)
            if constraint is not None:
                update["entity_constraint"] = constraint[0]
                used.add(constraint[1])
            plan = QueryGraph(topics=[_topic(main)] + ([constraint[0].topic] if constraint else []), path=path,
                              answer_type=end, answer_type_label=ot.name or end, **update)
            candidates.append(_finish(plan, parts, own, used, meaning, words, type_fit, CHAIN if goes_on else 0.0,
                                      [noun] if rest else []))
    if parts.asked and (cues.superlative is not None or cues.comparison is not None or cues.is_count):
        for end, fit in parts.asked.items():
            ot = types[end]
            # a cue no property of the type can take stays in the plan's ``unused`` (said, never dropped)
            update, used = _apply_cues(parts, ot, network)
            used.add(parts.type_word)
            plan = QueryGraph(topics=[], path=[], answer_type=end, answer_type_label=ot.name or end, **update)
            candidates.append(_finish(plan, parts, own, used, 0.0, 0.0, fit))
            if cues.comparison is not None and "literal_constraint" not in update and not own:
                candidates += _middle_plans(network, parts, ot, fit)
    elif not own and cues.superlative is not None and cues.superlative.counts:
        candidates += _most_links_plans(network, parts)
    candidates.sort(key=lambda c: -c.score)
    return _with_confidence(candidates[:max_candidates])


def _kind_suits(parts: _Parts, kind_fit: float) -> bool:
    """Whether a path's end suits the kind a wh-word asks when no type is named ("when was the author of X born":
    not the birthplace), given its :func:`_kind_fit`; True when the question asks no such kind."""
    return bool(parts.asked) or parts.cues.answer_kind not in _KIND_WORDS or kind_fit > 0


def _kind_fit(parts: _Parts, network: KnowledgeNetwork, last: Hop, end: ObjectType) -> float:
    """With no type named: 0.5 when the answer kind a wh-word asks ("where": a place, "when": a date) is what the
    path's last relation or its end type is called ("place of birth", not "date of birth"), else 0."""
    if parts.asked:
        return 0.0
    hints = _KIND_WORDS.get(parts.cues.answer_kind)
    if not hints:
        return 0.0
    named = _tokens(f"{_hop_text(network, last)} {end.name} {_id_words(end.id)}")
    return 0.5 if _overlap([noun_stem(h) for h in hints], named) else 0.0


def _meaning(p: Mapping[str, float], labels: Sequence[str]) -> float:
    """The ranker's probability of a path: of its whole ``path:`` label where it ranked one, else of its first two
    steps' or its first step's (less for each step it did not rank)."""
    if len(labels) > 1 and "path:" + "|".join(labels) in p:
        return p["path:" + "|".join(labels)]
    two = p.get("path:" + "|".join(labels[:2]), 0.0) * (0.8 if len(labels) > 2 else 1.0) if len(labels) > 1 else 0.0
    return max(two, p.get(labels[0], 0.0) * (1.0 if len(labels) == 1 else 0.8))


def _hop_text(network: KnowledgeNetwork, hop: Hop) -> str:
    rt = next((r for r in network.relation_types if r.id == hop.relation), None)
    return f"{rt.name} {_id_words(rt.id)} {rt.comment}" if rt is not None else hop.relation


def _far(network: KnowledgeNetwork, type_id: str, hop: Hop) -> str:
    """The type ``hop`` reaches from ``type_id``."""
    rt = next((r for r in network.relation_types if r.id == hop.relation), None)
    if rt is None:
        return ""
    return rt.target_object_type_id if hop.direction == "out" else rt.source_object_type_id


def _on_middle(parts: _Parts, mid: ObjectType | None) -> LiteralConstraint | None:
    """The comparison as a constraint on a path's middle node of type ``mid`` — only when the question names that
    type ("genres that have *books* published before 1900"; "publishers founded before 1900" names no book) —
    None when it does not or no property of it takes the comparison."""
    if mid is None or not _overlap(parts.words, _type_words(mid)[0]):
        return None
    lc, _ = _literal(parts, mid)
    return lc.model_copy(update={"on": "middle"}) if lc is not None else None


def _middle_plans(network: KnowledgeNetwork, parts: _Parts, ot: ObjectType, fit: float) -> list[QueryGraph]:
    """"which genres have books published before 1900": no property of the asked type takes the comparison, a
    type one hop away does — a plan from its instances that meet it (``start_type``) to the asked type, scored
    by the words of the hop and of the middle type."""
    types = {o.id: o for o in network.object_types}
    out: list[QueryGraph] = []
    for hop_back, mid, text in _steps(network, ot.id):
        mid_type = types.get(mid)
        middle = _on_middle(parts, mid_type)
        if middle is None or mid_type is None or mid == ot.id:
            continue
        hop = hop_back.model_copy(update={"direction": "in" if hop_back.direction == "out" else "out"})
        agg, _ = _aggregation(parts, ot, network)
        used = {parts.type_word, middle.text} | ({agg.text} if agg is not None else set())
        words = share_said(parts.words, _tokens(f"{text} {mid_type.name} {_id_words(mid)}"), _similar)
        plan = QueryGraph(topics=[], path=[hop], answer_type=ot.id, answer_type_label=ot.name or ot.id,
                          start_type=mid, literal_constraint=middle, aggregation=agg)
        out.append(_finish(plan, parts, [], used, 0.0, words, fit))
    return out


def _most_links_plans(network: KnowledgeNetwork, parts: _Parts) -> list[QueryGraph]:
    """"who won the most prizes" (no topic, no type named): one plan per type at the other end of a relation
    whose far type (or name) the counted noun names, ranked by how many of those links each instance has; the
    relation's share of the question's words scores it."""
    out: list[QueryGraph] = []
    for ot in network.object_types:
        update, used = _apply_cues(parts, ot, network)
        agg = update.get("aggregation")
        if agg is None or not agg.counts:
            continue
        _hop, fit = _counted_step(network, parts, ot) or (None, 0.0)
        words = fit - (1.0 if fit >= 1.0 else 0.5)  # the relation's share of the question's words
        plan = QueryGraph(topics=[], path=[], answer_type=ot.id, answer_type_label=ot.name or ot.id, **update)
        out.append(_finish(plan, parts, [], used, 0.0, words, 0.0))
    return out


def _paths(network: KnowledgeNetwork, start: str, asked: Mapping[str, float], noun: str = ""
           ) -> list[tuple[list[Hop], str, str, float]]:
    """``(path, end, its words, chain)``: 1-hop paths from ``start`` (either way), 2-hop ones that end at an asked
    type — and with a relational noun ("the director of X", "X's teams"), the paths that go on past the node the
    noun names (reached in 1 hop, or in 2 through a middle when no type one hop away is named by it), one hop
    further (to an asked type where one is asked, or two to reach it). ``chain`` is the noun's fit of the node
    passed (0 for any other path)."""
    types = {o.id: o for o in network.object_types}
    index: dict[str, list[tuple[Hop, str, str]]] = {}
    for rt in network.relation_types:  # every type's steps, in one pass over the relation types
        words = f"{rt.name} {_id_words(rt.id)} {rt.comment}"
        index.setdefault(rt.source_object_type_id, []).append(
            (Hop(relation=rt.id, direction="out", label=rt.name or rt.id), rt.target_object_type_id, words))
        index.setdefault(rt.target_object_type_id, []).append(
            (Hop(relation=rt.id, direction="in", label=rt.name or rt.id), rt.source_object_type_id, words))
    out: dict[tuple, tuple[list[Hop], str, str, float]] = {}

    def add(path: list[Hop], end: str, text: str, chain: float) -> None:
        key = tuple((h.relation, h.direction) for h in path)
        if key not in out or out[key][3] < chain:
            out[key] = (path, end, text, chain)

    first = index.get(start, [])
    # a type the noun names exactly one hop away is the noun's node ("the films of Kenya": not films of its people)
    named_near = any(_noun_fit(noun, "", types.get(mid)) >= 1.0 for _hop, mid, _text in first)
    for hop, mid, text in first:
        add([hop], mid, text, 0.0)
        fit1 = _noun_fit(noun, text, types.get(mid))
        if not asked and not noun:
            continue
        for hop2, end, text2 in index.get(mid, []):
            if hop2.relation == hop.relation:
                continue
            if end in asked or (fit1 and not asked):
                add([hop, hop2], end, f"{text} {text2}", fit1)
            fit2 = 0.0 if named_near else _noun_fit(noun, text2, types.get(end))
            if not (fit2 or (fit1 and asked)):
                continue
            for hop3, end3, text3 in index.get(end, []):
                if hop3.relation in (hop.relation, hop2.relation) or (asked and end3 not in asked):
                    continue
                if fit2:  # the noun's node two hops on (through a middle), one hop further
                    add([hop, hop2, hop3], end3, f"{text} {text2} {text3}", fit2)
                elif fit1:  # the noun's node one hop on, the asked type two hops further
                    add([hop, hop2, hop3], end3, f"{text} {text2} {text3}", fit1)
    return list(out.values())


def _entity_constraint(network: KnowledgeNetwork, others: Sequence[NetworkTopic], end: str, parts: _Parts,
                       p: Mapping[str, float]) -> tuple[EntityConstraint, str] | None:
    """The best one-hop path from another topic to the answer type: ``(constraint, the words it uses)``."""
    best: tuple[float, EntityConstraint, str] | None = None
    for t in others:
        for hop, reached, text in _steps(network, t.object_type):
            if reached != end:
                continue
            score = p.get(_intent(hop), 0.0) + _overlap(parts.words, _tokens(text)) / max(len(parts.words), 1)
            if best is None or score > best[0]:
                best = (score, EntityConstraint(topic=_topic(t), path=[hop]), t.mention or t.name)
    return (best[1], best[2]) if best else None


def _with_confidence(candidates: list[QueryGraph]) -> list[QueryGraph]:
    """Each candidate's confidence: its coverage (set by :func:`_finish`) times 0.5 + 0.5 · its softmax share."""
    if not candidates:
        return candidates
    top = max(c.score for c in candidates)
    weights = [math.exp((c.score - top) / TEMPERATURE) for c in candidates]
    total = sum(weights)
    return [c.model_copy(update={"confidence": round(min(1.0, c.confidence * (0.5 + 0.5 * w / total)), 4)})
            for c, w in zip(candidates, weights, strict=True)]
