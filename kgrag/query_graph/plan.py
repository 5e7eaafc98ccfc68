"""The query graph: what a question asks, as an explicit, JSON-able value both kinds of graph execute — a triple
KG as SPARQL (:mod:`kgrag.query_graph.sparql`), a knowledge network through its own query tools.

    QueryGraph(topics=[Topic(name="Marie Curie", id="m.1")], path=[Hop(relation="won", label="won")],
               aggregation=Aggregation(op="count")).describe()
    # 'Marie Curie -[won]-> ?answer; count'

Parts (staged query-graph generation, Yih et al. 2015; Lan & Jiang 2020):

- ``topics``: the named thing(s) the question starts from (the first one starts the core path); none when the
  question ranges over its answer type as a whole ("which is the oldest book": no topic, no path, the answer type
  and an aggregation or a literal constraint) — or over the things linked to the instances of ``start_type`` that
  meet a literal constraint on the middle ("which genres have books published before 1900": from the books
  before 1900, ``start_type`` book, along the path to their genres);
- ``path``: the core path, 1–3 :class:`Hop` s from the first topic to the answer, each ``out`` (topic -r-> x) or
  ``in`` (x -r-> topic); a middle node may be named or unnamed (a CVT);
- ``answer_type``: the type the question asks for (a class / object type id and its label, or a value kind
  ``year`` / ``date`` / ``number``) — where the path ends;
- ``entity_constraint``: a second topic the answers must reach by its own path (intersection);
- ``literal_constraint``: a comparison on a literal-valued relation / property of the answers (or of the middle
  node, ``on="middle"``): ``<``, ``<=``, ``>``, ``>=``, ``=``, ``between``; years, dates and numbers;
- ``aggregation``: ``count`` (the answer is the number of answers) or ``argmax`` / ``argmin`` over a literal
  relation / property of the answers (``limit`` answers kept, ties kept) — or, with ``counts``, over how many
  links of ``relation`` (walked ``direction`` from the answer) each answer has ("the author who wrote the most
  books").

A plan also says what of the question it did **not** use (``unused``: "before 1900", "how many", a type word, a
second name) and how sure it is (``confidence`` in [0, 1]); the answer repeats both (issue 44 §4).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Aggregation", "EntityConstraint", "Hop", "LiteralConstraint", "QueryGraph", "Topic"]

ComparisonOp = Literal["<", "<=", ">", ">=", "=", "between"]
ValueKind = Literal["year", "date", "number"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Topic(_Part):
    """A named start: the stored name and the id (an entity id on a triple KG; ``type:id`` on a network)."""

    name: str = Field(max_length=500)
    id: str = Field(max_length=500)
    #: the words of the question that named it
    mention: str = Field(default="", max_length=500)
    #: its type (a class / object type id) where known
    type: str = Field(default="", max_length=300)


class Hop(_Part):
    """One edge of a path: ``out`` follows ``relation`` from the previous node, ``in`` walks it backwards."""

    relation: str = Field(min_length=1, max_length=300)
    direction: Literal["out", "in"] = "out"
    #: the relation's readable name (a property label, else its id)
    label: str = Field(default="", max_length=300)

    def arrow(self) -> str:
        name = self.label or self.relation
        return f"-[{name}]->" if self.direction == "out" else f"<-[{name}]-"


class EntityConstraint(_Part):
    """The answers must also be reached from ``topic`` along ``path`` (answers = the intersection)."""

    topic: Topic
    path: list[Hop] = Field(min_length=1, max_length=3)


class LiteralConstraint(_Part):
    """``relation(answer) <op> value`` (``on="middle"``: of the core path's node before the answer)."""

    relation: str = Field(min_length=1, max_length=300)
    label: str = Field(default="", max_length=300)
    direction: Literal["out", "in"] = "out"
    op: ComparisonOp
    value: float
    #: the upper bound of ``between`` (inclusive)
    value2: float | None = None
    kind: ValueKind = "number"
    on: Literal["answer", "middle"] = "answer"
    #: the question's words it came from ("before 1900")
    text: str = Field(default="", max_length=200)


class Aggregation(_Part):
    """``count``, or ``argmax`` / ``argmin`` of ``relation`` over the answers (``limit`` best kept, ties kept);
    ``counts``: of the number of ``relation`` links each answer has (``direction`` walked from the answer)."""

    op: Literal["count", "argmax", "argmin"]
    relation: str = Field(default="", max_length=300)
    label: str = Field(default="", max_length=300)
    direction: Literal["out", "in"] = "out"
    kind: ValueKind | None = None
    limit: int = Field(default=1, ge=1, le=100)
    text: str = Field(default="", max_length=200)
    #: rank by the number of ``relation``'s values of each answer ("who won the most prizes"), not by a literal
    counts: bool = False

    @model_validator(mode="after")
    def _counts_a_relation(self) -> Aggregation:
        if self.counts and (self.op == "count" or not self.relation):
            raise ValueError("an argmax / argmin over counts needs the relation counted")
        return self


class QueryGraph(_Part):
    """A question's plan (see the module docstring)."""

    topics: list[Topic] = Field(max_length=3)
    path: list[Hop] = Field(max_length=3)
    answer_type: str = Field(default="", max_length=300)
    answer_type_label: str = Field(default="", max_length=300)
    #: a plan without a topic that walks a path: the type whose instances meeting the middle constraint start it
    start_type: str = Field(default="", max_length=300)
    entity_constraint: EntityConstraint | None = None
    literal_constraint: LiteralConstraint | None = None
    aggregation: Aggregation | None = None
    #: the parts of the question the plan does not use, in the question's words
    unused: list[str] = Field(default_factory=list, max_length=20)
    score: float = 0.0
    confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    #: who proposed it: the LLM-free planner ("rules") or the LLM ("llm")
    source: Literal["rules", "llm"] = "rules"

    @model_validator(mode="after")
    def _starts_somewhere(self) -> QueryGraph:
        if self.topics and not self.path:
            raise ValueError("a plan with a topic needs a path (1–3 hops)")
        if self.topics and self.start_type:
            raise ValueError("start_type is for a plan without a topic")
        if not self.topics and self.start_type:
            lc = self.literal_constraint
            if not self.path or not self.answer_type or lc is None or lc.on != "middle" \
                    or self.entity_constraint is not None:
                raise ValueError("a plan from start_type needs a path, answer_type and a literal constraint on the "
                                 "middle (the start), and no entity constraint")
        elif not self.topics and (self.path or not self.answer_type or self.entity_constraint is not None):
            raise ValueError("a plan without a topic ranges over its answer type: it needs answer_type, no path "
                             "and no entity constraint (or a start_type with its middle constraint)")
        return self

    def describe(self) -> str:
        """One line: ``Marie Curie -[won]-> ?answer (type: prize) · born before 1900 · count``."""
        first = self.topics[0].name if self.topics else f"?m ({self.start_type})" if self.start_type else ""
        middles = len(self.path) - 1
        hops = [h.arrow() + ((" ?m" if middles == 1 else f" ?m{i + 1}") if i < middles else "")
                for i, h in enumerate(self.path)]
        start = f"{first} {' '.join(hops)} " if first else ""
        parts = [start + "?answer"]
        if self.answer_type:
            parts[0] += f" (type: {self.answer_type_label or self.answer_type})"
        if self.entity_constraint is not None:
            ec = self.entity_constraint
            parts.append(f"and {ec.topic.name} " + " ".join(h.arrow() for h in ec.path) + " ?answer")
        if self.literal_constraint is not None:
            lc = self.literal_constraint
            bound = f"{_num(lc.value)}..{_num(lc.value2)}" if lc.op == "between" else f"{lc.op} {_num(lc.value)}"
            where = "?m" if lc.on == "middle" else "?answer"
            parts.append(f"{lc.label or lc.relation}({where}) {bound}")
        if self.aggregation is not None:
            ag = self.aggregation
            name = ag.label or ag.relation
            parts.append("count" if ag.op == "count" else f"{ag.op} count({name})" if ag.counts else f"{ag.op} {name}")
        return " · ".join(parts)


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
