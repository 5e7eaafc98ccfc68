"""What both query-graph planners do alike — the triple KG's (:mod:`kgrag.query_graph.triple_planner`) and the
network's (:mod:`kgrag.query_graph.network_planner`): drop the cues a topic's name holds, attach the
comparison / superlative / count as a plan's literal constraint / aggregation, measure how much of the
question a plan's words say, and account for the cues a plan leaves unused (which parts, and the coverage its
confidence is scaled by).

    parts = structure_parts(read_cues("how many books did Orwell write before 1950"), "books")
    # ['how many', 'before 1950', 'books'];  coverage(1, len(parts)) == 2 / 3

Contract. A question's **structure parts** (:func:`structure_parts`) are, in this order: ``"how many"``
(:data:`COUNT_TEXT`) for a count, the comparison's words, the superlative's words and the asked type word —
the parts a plan should apply, in the question's words; a plan's ``unused`` names those it does not (and, per
planner, its unused names). :func:`coverage` is the share of the parts a plan uses, in [0, 1] (1 with no
part). The builders make the plan parts from a cue and the relation / property a planner picked for it (the
cue's words kept as the part's ``text``, cut to 200 characters). :func:`said` / :func:`share_said` count the
asked words some plan word is alike to, by the planner's own likeness. Everything here is pure: how a planner
picks a relation and scores a plan stays its own (their scores differ, see each module).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from typing import Literal

from kgrag.query_graph.cues import Comparison, Cues, Superlative
from kgrag.query_graph.plan import Aggregation, LiteralConstraint

__all__ = ["COUNT_TEXT", "comparison_constraint", "count_aggregation", "coverage", "drop_cues", "order_op",
           "said", "share_said", "structure_parts", "superlative_aggregation", "unused_parts", "within"]

#: the words a count is named by in a plan (its aggregation's ``text``, its ``unused`` entry)
COUNT_TEXT = "how many"
#: the longest cue text a plan part keeps (:class:`~kgrag.query_graph.plan.LiteralConstraint`'s ``text``)
_MAX_TEXT = 200


# ---- topics and cues ---------------------------------------------------------------------------------------

def within(inner: tuple[int, int], outer: tuple[int, int]) -> bool:
    """Whether the character span ``inner`` lies inside ``outer`` (ends included)."""
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def drop_cues(cues: Cues, drop: Collection[Comparison | Superlative], answer_words: list[str] | None = None
              ) -> Cues:
    """The cues less the comparison / superlative in ``drop`` (their spans no longer masked) — a cue a topic's
    name holds names the thing, it asks nothing; ``answer_words`` replaces the asked words when given."""
    if not drop:
        return cues
    gone = {c.span for c in drop}
    return replace(cues, answer_words=cues.answer_words if answer_words is None else answer_words,
                   comparison=None if cues.comparison in drop else cues.comparison,
                   superlative=None if cues.superlative in drop else cues.superlative,
                   spans=[sp for sp in cues.spans if sp not in gone])


# ---- the plan parts a cue becomes --------------------------------------------------------------------------

def order_op(superlative: Superlative) -> Literal["argmax", "argmin"]:
    """``argmax`` for a superlative of the most (``direction="max"``), ``argmin`` for one of the least."""
    return "argmax" if superlative.direction == "max" else "argmin"


def comparison_constraint(comparison: Comparison, relation: str, label: str, direction: str = "out",
                          kind: Literal["year", "date", "number"] = "number",
                          on: Literal["answer", "middle"] = "answer") -> LiteralConstraint:
    """The comparison as a literal constraint on ``relation`` (walked ``direction`` from the answer, or from
    the middle node with ``on="middle"``), its values read as ``kind``."""
    return LiteralConstraint(relation=relation, label=label, direction="in" if direction == "in" else "out",
                             op=comparison.op, value=comparison.value, value2=comparison.value2, kind=kind,
                             on=on, text=comparison.text[:_MAX_TEXT])


def superlative_aggregation(superlative: Superlative, relation: str, label: str, direction: str = "out",
                            kind: Literal["year", "date", "number"] | None = None, counts: bool = False
                            ) -> Aggregation:
    """The superlative as an ``argmax`` / ``argmin`` over ``relation``'s values (``counts``: over how many
    links of it each answer has)."""
    return Aggregation(op=order_op(superlative), relation=relation, label=label,
                       direction="in" if direction == "in" else "out", kind=kind, counts=counts,
                       text=superlative.text[:_MAX_TEXT])


def count_aggregation() -> Aggregation:
    """"how many": the answer is the number of answers."""
    return Aggregation(op="count", text=COUNT_TEXT)


# ---- words said --------------------------------------------------------------------------------------------

def said(asked: Iterable[str], named: Iterable[str], alike: Callable[[str, str], bool]) -> int:
    """How many distinct ``asked`` words some ``named`` word is ``alike`` to."""
    pool = list(named)
    return sum(any(alike(a, n) for n in pool) for a in dict.fromkeys(asked))


def share_said(asked: Sequence[str] | Collection[str], named: Iterable[str], alike: Callable[[str, str], bool]
               ) -> float:
    """:func:`said` as a share of the distinct asked words (0 with none)."""
    return said(asked, named, alike) / max(len(set(asked)), 1)


# ---- unused cues -------------------------------------------------------------------------------------------

def structure_parts(cues: Cues, type_word: str = "") -> list[str]:
    """The question's structure parts a plan should apply, in the question's words (see the module docstring);
    ``type_word``: the asked type word the planner counts ("" for none)."""
    out = []
    if cues.is_count:
        out.append(COUNT_TEXT)
    if cues.comparison is not None:
        out.append(cues.comparison.text)
    if cues.superlative is not None:
        out.append(cues.superlative.text)
    if type_word:
        out.append(type_word)
    return out


def unused_parts(wanted: Iterable[str], used: Collection[str]) -> list[str]:
    """The wanted parts a plan did not use, in the question's order."""
    return [w for w in wanted if w not in used]


def coverage(unused: int, wanted: int) -> float:
    """The share of a question's ``wanted`` parts a plan uses when it leaves ``unused`` of them (or of its
    other parts) out, in [0, 1]; 1 when nothing is wanted."""
    return 1.0 if wanted == 0 else max(0.0, (wanted - unused) / wanted)
