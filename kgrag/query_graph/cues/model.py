"""What a question's structure words are read into (:func:`kgrag.query_graph.cues.read_cues`), whatever its
language: the values and the few builders both readers (:mod:`.english`, :mod:`.chinese`) share.

    Cues("how many books did Orwell write", "books", spans=[(0, 9)]).masked()  # 'books did Orwell write'

Contract: plain frozen dataclasses (``Cues`` itself is mutable only in its lists); ``spans`` are character
spans of ``question``; :meth:`Cues.masked` blanks them. :func:`between` orders its two bounds; :func:`decade`
is the ten years from its start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["YEAR", "Comparison", "Cues", "Superlative", "between", "decade"]

#: a year as a question writes it (1000–2099), one group
YEAR = r"(1[0-9]{3}|20[0-9]{2})"


@dataclass(frozen=True)
class Comparison:
    op: Literal["<", "<=", ">", ">=", "=", "between"]
    value: float
    kind: Literal["year", "date", "number"]
    text: str  # the question's words ("before 1900")
    value2: float | None = None
    words: tuple[str, ...] = ()  # the property words next to it ("pages" in "more than 300 pages")
    span: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class Superlative:
    direction: Literal["max", "min"]
    kind: Literal["date", "number"]
    text: str  # "oldest"
    words: tuple[str, ...] = ()  # property words it hints ("length", "long")
    span: tuple[int, int] = (0, 0)
    #: "most prizes": an argmax over the number of a relation's values, not over a literal
    counts: bool = False


@dataclass(frozen=True)
class Cues:
    question: str
    count_noun: str | None = None  # "books" in "how many books …"; "" when "how many" has no noun
    comparison: Comparison | None = None
    superlative: Superlative | None = None
    #: the answer kind asked: person, place, date, year, number, or "" (a noun in ``answer_words`` says more)
    answer_kind: str = ""
    #: the noun(s) after which / what ("country", "prize winners")
    answer_words: list[str] = field(default_factory=list)
    #: property words of a number question ("how tall" → height tall)
    value_words: tuple[str, ...] = ()
    spans: list[tuple[int, int]] = field(default_factory=list)

    @property
    def is_count(self) -> bool:
        return self.count_noun is not None

    def masked(self) -> str:
        """The question with the cue words blanked (what is left names relations and topics)."""
        text = self.question
        for start, end in sorted(self.spans, reverse=True):
            text = text[:start] + " " + text[end:]
        return " ".join(text.split())


def between(m: re.Match[str], kind: Literal["year", "number"], words: tuple[str, ...] = ()) -> Comparison:
    """``between`` the match's first two numbers, in either order (both readers)."""
    low, high = sorted((float(m.group(1)), float(m.group(2))))
    return Comparison("between", low, kind, m.group(0), value2=high, words=words, span=m.span())


def decade(m: re.Match[str], start: float) -> Comparison:
    """The ten years from ``start`` (the 1990s, 90年代)."""
    return Comparison("between", start, "year", m.group(0), value2=start + 9, span=m.span())
