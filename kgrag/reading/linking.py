"""Schema linking and value linking: which words of a question name an object type or a property, and which say a
**stored value** (the evidence a plan's filters come from, not a node).

    links = value_links(read_question("List the pets of type dog"), view)   # [ValueLink('dog', 'Pets', 'pet_type')]
    schema_fit(element_words("pet_type"), read_question("which pets are dogs"))   # 0.5

Contract: :func:`element_words` turns an id or a name (``snake_case``, ``camelCase``, spaces) into lemmas through
the question reader (:mod:`kgrag.reading.reader`, the one home for word forms); :func:`schema_fit` is the share of
an element's words the question holds (a word matches by lemma, or by sharing its first five letters with a
long word: "publication" / "published"); :func:`value_links` matches the question's n-grams and quoted parts
against every text property's lower-cased stored values (exact, case-insensitive, or with a last plural noun
in its singular — "dogs" says the stored "dog"; a quoted part also as a substring), and its numbers against number properties holding that value. Each link says where it is in the
question, how many rows hold it and how it was found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from kgrag.reading.reader import Reading, Token, lemma
from kgrag.reading.tables import TableView

__all__ = ["ValueLink", "element_words", "explained", "schema_fit", "similar", "value_links", "words_near"]

#: longest n-gram (tokens) compared with stored values
MAX_NGRAM = 6
#: stored values shorter than this (characters) link only when quoted or a number
MIN_VALUE_CHARS = 2
_GENERIC = frozenset({"id", "code", "number", "no", "num", "type", "name", "detail", "details", "info", "value",
                      "the", "of", "a", "an", "and", "or", "in", "to", "for", "by", "is"})


#: "contains ROY", "starts with Mar", "with the word Functional": the word after it is a part of a stored value
_PART_CUE = re.compile(r"\b(?:(?:contains?|containing|includes?|including|(?:starts?|starting|begins?|beginning|"
                       r"ends?|ending) with)(?: the (?:word|substring|phrase|letters?|string))?|(?:with|has|have) "
                       r"the (?:word|substring|phrase|letters?|string))\s+"
                       r"(?!(?:the|a|an|of|in|to|and|or|is|are|that|which)\b)([A-Za-z0-9][\w-]*)")


@dataclass(frozen=True)
class ValueLink:
    """A question span that says a stored value of ``type_id.prop`` (or, ``kind="contains"``, a part of some)."""

    start: int
    end: int
    text: str
    type_id: str
    prop: str
    #: the stored value as written (the first row's)
    value: str
    rows: int
    kind: str  # "exact" | "quoted" | "contains" | "number"
    tokens: int
    #: the span is capitalised / a proper noun / quoted
    named: bool


@lru_cache(maxsize=65536)
def element_words(name: str) -> tuple[str, ...]:
    """The lemmas of a schema element's id or name ("Customer_Orders" → ("customer", "order"))."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name.split("@")[0].rsplit(".", 1)[-1])
    words = re.findall(r"[^\W\d_]+|\d+", spaced.replace("_", " ").lower())
    return tuple(lemma(w) for w in words)


def similar(a: str, b: str) -> bool:
    """The same lemma, or two long words sharing their first five letters."""
    return a == b or (len(a) >= 5 and len(b) >= 5 and a[:5] == b[:5])


def schema_fit(words: Sequence[str], reading: Reading, skip: Iterable[tuple[int, int]] = ()) -> float:
    """The share of ``words`` (generic ones like "id" / "name" weigh a quarter) the question's lemmas hold,
    outside the ``skip`` character spans (the value links a plan uses)."""
    if not words:
        return 0.0
    spans = list(skip)
    lemmas = [t.lemma.lower() for t in reading.tokens
              if not any(s <= t.start < e for s, e in spans) and not t.is_stop]
    total = found = 0.0
    for w in words:
        weight = 0.25 if w in _GENERIC else 1.0
        total += weight
        if any(similar(w, q) for q in lemmas):
            found += weight
    return found / total if total else 0.0


def explained(token: Token, spans: Sequence[tuple[int, int]], words: Sequence[str]) -> bool:
    """Whether a plan explains a question token: it lies in a span the plan uses (a value, a number) or its lemma is
    one of the plan's schema words."""
    return any(s <= token.start < e for s, e in spans) or any(similar(token.lemma.lower(), w) for w in words)


def words_near(reading: Reading, start: int, end: int, window: int = 4) -> list[str]:
    """The content lemmas within ``window`` tokens before and after a character span."""
    idx = [t.i for t in reading.tokens if start <= t.start < end]
    if not idx:
        return []
    lo, hi = max(0, idx[0] - window), min(len(reading.tokens), idx[-1] + window + 1)
    words = [t.lemma.lower() for t in reading.tokens[lo:hi]
             if t.i not in idx and not t.is_stop and t.pos not in ("PUNCT", "NUM")]
    words += [t.lower for t in reading.tokens[lo:hi] if t.i not in idx and t.lower in MEASURES]
    return words + [m for w in words for m in MEASURES.get(w, ())]


#: what a comparative / superlative word measures (English): the property words it stands for ("older" → age)
MEASURES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("old", "older", "oldest", "young", "younger", "youngest"), ("age", "year", "birth")),
    **dict.fromkeys(("tall", "taller", "tallest", "short", "shorter", "shortest", "high", "higher", "highest"),
                    ("height",)),
    **dict.fromkeys(("heavy", "heavier", "heaviest", "light", "lighter", "lightest", "weigh"), ("weight",)),
    **dict.fromkeys(("long", "longer", "longest", "last", "lasting"), ("length", "duration", "time")),
    **dict.fromkeys(("big", "bigger", "biggest", "large", "larger", "largest", "small", "smaller", "smallest"),
                    ("size", "area", "capacity", "population")),
    **dict.fromkeys(("cheap", "cheaper", "cheapest", "expensive", "cost", "costly", "pay", "paid"),
                    ("price", "cost", "amount", "fee")),
    **dict.fromkeys(("rich", "richer", "richest", "earn", "earning"), ("money", "earnings", "income", "wealth")),
    **dict.fromkeys(("early", "earlier", "earliest", "late", "later", "latest", "recent", "recently", "new",
                     "newer", "newest"), ("date", "year", "time")),
    **dict.fromkeys(("many", "most", "few", "fewer", "fewest"), ("number", "count")),
    **dict.fromkeys(("people", "live", "inhabitant", "populous"), ("population",)),
}


def _spans(reading: Reading) -> list[tuple[int, int, str, int, bool]]:
    """``(start, end, text, tokens, named)`` of each n-gram the reader offers."""
    out = []
    for start, end, text in reading.ngrams(MAX_NGRAM):
        toks = [t for t in reading.tokens if start <= t.start < end]
        named = any(t.pos == "PROPN" or t.text[:1].isupper() and t.i > 0 for t in toks)
        out.append((start, end, text, len(toks), named))
    return out


def _singular_keys(reading: Reading, spans: Sequence[tuple[int, int, str, int, bool]]) -> dict[tuple[int, int], str]:
    """(span start, end) → the span's lower-cased text with its last word, a plural noun, as its lemma ("dogs" → "dog",
    "golden retrievers" → "golden retriever"): how a stored singular value is said in the plural."""
    plural = {t.end: t for t in reading.tokens if t.tag in ("NNS", "NNPS") and t.lemma.lower() != t.lower}
    out = {}
    for start, end, text, _, _ in spans:
        last = plural.get(end)
        if last is not None:
            out[(start, end)] = " ".join(text.lower().split())[: -len(last.text)] + last.lemma.lower()
    return out


def value_links(reading: Reading, view: TableView) -> list[ValueLink]:
    """Every stored value the question says (see the module docstring), longest spans first."""
    out: list[ValueLink] = []
    spans = _spans(reading)
    quoted = [(m.start(1), m.end(1), m.group(1)) for m in re.finditer(r"[\"“'‘]([^\"”'’]{1,80})[\"”'’]", reading.text)
              if m.group(1).strip()]
    quoted += [(m.start(1), m.end(1), m.group(1)) for m in _PART_CUE.finditer(reading.text)
               if not any(s <= m.start(1) < e for s, e, _ in quoted)]
    quoted_texts = {q[2].strip().lower() for q in quoted}
    singular = _singular_keys(reading, spans)
    for type_id, table in view.types.items():
        for prop in table.properties:
            if table.is_numeric(prop):
                continue
            index = table.value_index(prop)
            if not index:
                continue
            for start, end, text, ntok, named in spans:
                key = " ".join(text.lower().split())
                rows = index.get(key)
                if not rows and key not in quoted_texts and (start, end) in singular:
                    rows = index.get(singular[(start, end)])
                if not rows or (len(key) < MIN_VALUE_CHARS and key not in quoted_texts):
                    continue
                kind = "quoted" if key in quoted_texts else "exact"
                out.append(ValueLink(start, end, text, type_id, prop, table.column(prop)[rows[0]], len(rows), kind,
                                     ntok, named or kind == "quoted"))
            lower = table.lower(prop)
            for start, end, text in quoted:
                key = " ".join(text.lower().split())
                if key in index or len(key) < 2:
                    continue
                hits = sum(key in v for v in lower)
                if hits:
                    out.append(ValueLink(start, end, text, type_id, prop, text, hits, "contains",
                                         len(text.split()), True))
    for q in reading.quantities:
        if q.op not in (None, "=") or q.kind == "date":
            continue
        for type_id, table in view.types.items():
            for prop in table.properties:
                if not table.is_numeric(prop):
                    continue
                hits = int((table.numbers(prop) == q.value).sum())
                if hits:
                    out.append(ValueLink(q.start, q.end, q.text, type_id, prop, q.text, hits, "number", 1, False))
    out.sort(key=lambda v: (-(v.end - v.start), v.start))
    return out
