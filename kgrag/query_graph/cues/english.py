"""The structure words of an English question: the English tables and their reader (what
:func:`kgrag.query_graph.cues.read_cues` calls for a question without a CJK character).

    read("Which winners of the Nobel Prize in Physics were born before 1900?").comparison.op  # '<'

Contract: :func:`read` never raises and fills the same :class:`~kgrag.query_graph.cues.model.Cues` fields as
the Chinese reader (see :mod:`kgrag.query_graph.cues` for what each cue is); the answer kind of a bare wh-word
comes from :data:`kgrag.text.PLANNER_KINDS`.
"""

from __future__ import annotations

import re
from typing import Literal

from kgrag.query_graph.cues.model import YEAR, Comparison, Cues, Superlative, between, decade
from kgrag.text import PLANNER_KINDS, answer_kind

__all__ = ["read"]

_NUMBER = r"(\d+(?:[.,]\d+)?)(\s*(?:k|thousand|million|billion|m|km|kg|%))?"
_UNITS = {"k": 1e3, "thousand": 1e3, "million": 1e6, "billion": 1e9, "m": 1e6}

_DECADE = re.compile(r"\b(?:in|during|from)\s+the\s+(1[0-9]{2}0|20[0-9]0)s\b|\b(1[0-9]{2}0|20[0-9]0)s\b", re.I)
_BETWEEN_YEARS = re.compile(rf"\bbetween\s+{YEAR}\s+and\s+{YEAR}\b", re.I)
_YEAR_CMP = re.compile(rf"\b(before|after|since|until|till|prior to|earlier than|later than|by|in|during|from)\s+"
                       rf"(?:the\s+year\s+)?{YEAR}\b(?!\s*(?:pages|people|km|m\b|metres|meters|feet|kg))", re.I)
_NUM_CMP = re.compile(r"\b(more than|greater than|larger than|bigger than|higher than|longer than|taller than|"
                      r"over|above|at least|less than|fewer than|smaller than|lower than|shorter than|under|below|"
                      r"at most|no more than|exactly)\s+" + _NUMBER + r"(?:\s+([a-z]+(?:\s+[a-z]+)?))?", re.I)
_BETWEEN_NUM = re.compile(r"\bbetween\s+" + r"(\d+(?:\.\d+)?)\s+and\s+(\d+(?:\.\d+)?)(?:\s+([a-z]+))?", re.I)
_YEAR_OPS = {"before": "<", "prior to": "<", "earlier than": "<", "until": "<=", "till": "<=", "by": "<=",
             "after": ">", "later than": ">", "since": ">=", "from": ">=", "in": "=", "during": "="}
_NUM_OPS = {"more than": ">", "greater than": ">", "larger than": ">", "bigger than": ">", "higher than": ">",
            "longer than": ">", "taller than": ">", "over": ">", "above": ">", "at least": ">=",
            "less than": "<", "fewer than": "<", "smaller than": "<", "lower than": "<", "shorter than": "<",
            "under": "<", "below": "<", "at most": "<=", "no more than": "<=", "exactly": "="}
#: comparative words that name the property compared ("longer than 100 km" → length)
_COMPARATIVE_WORDS = {"longer": ("length", "long"), "taller": ("height", "tall"), "higher": ("height", "elevation"),
                      "larger": ("area", "size"), "bigger": ("size", "area")}

# superlative word -> (direction, kind, property words)
_SUPERLATIVES: dict[str, tuple[Literal["max", "min"], Literal["date", "number"], tuple[str, ...]]] = {
    "oldest": ("min", "date", ("birth", "born", "founded", "date", "year", "established", "published", "released")),
    "earliest": ("min", "date", ("date", "year", "start")),
    "first": ("min", "date", ("date", "year", "published", "released", "start")),
    "youngest": ("max", "date", ("birth", "born", "date", "year")),
    "newest": ("max", "date", ("date", "year", "published", "released", "founded")),
    "latest": ("max", "date", ("date", "year", "published", "released")),
    "last": ("max", "date", ("date", "year", "published", "released", "end")),
    "most recent": ("max", "date", ("date", "year", "published", "released")),
    "most recently": ("max", "date", ("date", "year", "published", "released")),
    "largest": ("max", "number", ("area", "size", "population", "large")),
    "biggest": ("max", "number", ("size", "area", "population", "big")),
    "longest": ("max", "number", ("length", "long", "pages", "duration", "runtime")),
    "highest": ("max", "number", ("height", "elevation", "high", "altitude")),
    "tallest": ("max", "number", ("height", "tall")),
    "deepest": ("max", "number", ("depth", "deep")),
    "heaviest": ("max", "number", ("weight", "mass")),
    "most populous": ("max", "number", ("population",)),
    "most populated": ("max", "number", ("population",)),
    "richest": ("max", "number", ("wealth", "worth", "revenue", "gdp")),
    "smallest": ("min", "number", ("area", "size", "population", "small")),
    "shortest": ("min", "number", ("length", "short", "pages", "duration", "runtime", "height")),
    "lowest": ("min", "number", ("height", "elevation", "low")),
    "least populous": ("min", "number", ("population",)),
    "lightest": ("min", "number", ("weight", "mass")),
}
_SUPERLATIVE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _SUPERLATIVES), key=len, reverse=True)) + r")\b",
                          re.I)
#: "the most prizes", "the fewest books": an argmax / argmin over a count
_MOST_COUNT = re.compile(r"\b(?:the\s+)?(most|fewest|least)\s+([a-z]+)\b", re.I)
_NOT_COUNTED = frozenset({"populous", "populated", "recent", "recently", "famous", "popular", "common", "important",
                          "of", "the", "a", "an"})

_HOW_MANY = re.compile(r"\b(?:how\s+many|the\s+number\s+of|number\s+of|count\s+of|count\s+the)\b(?:\s+([a-z]+))?",
                       re.I)
_HOW_VALUE = re.compile(r"\bhow\s+(long|tall|high|old|big|large|deep|heavy|far|much)\b", re.I)
_HOW_VALUE_WORDS = {"long": ("length", "long", "duration"), "tall": ("height", "tall"), "high": ("height", "elevation"),
                    "old": ("age", "birth", "born", "founded"), "big": ("size", "area"), "large": ("area", "size"),
                    "deep": ("depth",), "heavy": ("weight", "mass"), "far": ("distance",), "much": ("price", "cost")}
_WHICH = re.compile(r"\b(?:which|what|whose)\s+((?!is\b|are\b|was\b|were\b|did\b|does\b|do\b|has\b|have\b|had\b|"
                    r"can\b|could\b|will\b|would\b|of\b|the\b|a\b|an\b|kind\b|sort\b|type\b)[a-z]+"
                    r"(?:\s+(?!is\b|are\b|was\b|were\b|did\b|does\b|do\b|has\b|have\b|had\b|of\b|by\b|in\b|from\b|"
                    r"for\b|with\b|to\b|on\b|at\b|that\b|who\b)[a-z]+)?)", re.I)
_NOUN_AFTER = re.compile(r"\s+([a-z]+)", re.I)
_NOT_NOUNS = frozenset({"of", "in", "by", "from", "the", "one", "is", "was", "and", "or", "to", "among", "for"})
_KIND_OF = re.compile(r"\b(?:what|which)\s+(?:kind|sort|type)s?\s+of\s+([a-z]+)", re.I)
#: nouns after which / what that say a value kind, not a type
_VALUE_NOUNS = {"year": "year", "date": "date", "day": "date", "decade": "year", "century": "year", "age": "number",
                "population": "number", "height": "number", "length": "number", "number": "number"}


def _number(text: str, unit: str | None) -> float:
    value = float(text.replace(",", ""))
    return value * _UNITS.get((unit or "").strip().lower(), 1.0)


def _comparison(question: str) -> Comparison | None:
    m = _BETWEEN_YEARS.search(question)
    if m:
        return between(m, "year")
    m = _DECADE.search(question)
    if m:
        return decade(m, float(m.group(1) or m.group(2)))
    m = _BETWEEN_NUM.search(question)
    if m:
        return between(m, "number", (m.group(3).lower(),) if m.group(3) else ())
    m = _NUM_CMP.search(question)
    if m:
        op_text = m.group(1).lower()
        noun = (m.group(4) or "").lower()
        words = tuple(w for w in noun.split() if w not in ("the", "a", "an", "and", "or")) + tuple(
            _COMPARATIVE_WORDS.get(op_text.split()[0], ()))
        value = _number(m.group(2), m.group(3))
        is_year = re.fullmatch(YEAR, m.group(2)) is not None and not words
        return Comparison(_NUM_OPS[op_text], value, "year" if is_year else "number", m.group(0).strip(),
                          words=words, span=m.span())
    m = _YEAR_CMP.search(question)
    if m:
        return Comparison(_YEAR_OPS[m.group(1).lower()], float(m.group(2)), "year", m.group(0), span=m.span())
    return None


def _superlative(question: str) -> Superlative | None:
    for m in _MOST_COUNT.finditer(question):
        noun = m.group(2).lower()
        if noun not in _NOT_COUNTED and f"{m.group(1)} {noun}".lower() not in _SUPERLATIVES:
            direction: Literal["max", "min"] = "max" if m.group(1).lower() == "most" else "min"
            return Superlative(direction, "number", m.group(0), (noun,), m.span(), counts=True)
    m = _SUPERLATIVE.search(question)
    if m is None:
        return None
    direction, kind, words = _SUPERLATIVES[m.group(1).lower()]
    return Superlative(direction, kind, m.group(0), words, m.span())


def read(text: str) -> Cues:
    """The English question's structure words (see :mod:`kgrag.query_graph.cues`); never raises."""
    spans: list[tuple[int, int]] = []
    count_noun: str | None = None
    m = _HOW_MANY.search(text)
    if m:
        count_noun = (m.group(1) or "").lower()
        spans.append((m.start(), m.start(1) if m.group(1) else m.end()))
    comparison = _comparison(text)
    if comparison is not None:
        spans.append(comparison.span)
    superlative = _superlative(text)
    if superlative is not None:
        spans.append(superlative.span)
    answer_words: list[str] = []
    kind = ""
    value_words: tuple[str, ...] = ()
    how = _HOW_VALUE.search(text)
    if how is not None and count_noun is None:
        kind = "number"
        value_words = _HOW_VALUE_WORDS[how.group(1).lower()]
        spans.append(how.span())
    kind_of = _KIND_OF.search(text)
    which = kind_of or _WHICH.search(text)
    if which is not None and not kind:
        noun_phrase = which.group(1).lower()
        head = noun_phrase.split()[0]
        if head in _VALUE_NOUNS:
            kind = _VALUE_NOUNS[head]
        else:
            answer_words = noun_phrase.split()
    if not kind and not answer_words:
        kind = answer_kind(text, PLANNER_KINDS)
    if superlative is not None and not answer_words and not superlative.counts:
        after = _NOUN_AFTER.match(text, superlative.span[1])
        if after is not None and after.group(1).lower() not in _NOT_NOUNS:
            answer_words = [after.group(1).lower()]
    if count_noun:
        answer_words = answer_words or [count_noun]
    return Cues(text, count_noun, comparison, superlative, kind, answer_words, value_words, spans)
