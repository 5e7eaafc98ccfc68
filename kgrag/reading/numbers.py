"""Numbers as people write them, in pure Python (no spaCy): ``find_quantities(text)`` and
``parse_number(span)``.

Contract: ``find_quantities`` returns the numbers of ``text`` in order of appearance, non-overlapping, each a
frozen ``Quantity`` whose ``start``/``end`` are char offsets into ``text`` and ``text == text[start:end]``
(the number with its scale word, currency sign and unit; the comparison words before it are *not* part of the
span, except that "between 5 and 10" spans "5 and 10"):

- ``value`` (float) and, for ranges ("between 5 and 10 million", "from 1990 to 2000"), ``value2``; a scale
  word after the second number applies to both ("between 5 and 10 million" -> 5e6, 1e7);
- ``op``: "<", "<=", ">", ">=", "=", "between" or None, read from the words before the number ("more than",
  "at least", "under", "no more than", "older than", "after", "since" ...) or after it ("or more", "or less");
  "<adjective>er than" is a comparison: "<" for the words in ``SMALLER`` (younger, lighter, cheaper ...), ">"
  for every other one;
- ``kind``: "date" for ISO dates and "March 3, 2005" / "3 March 2005" (``value`` = the year, ``iso`` = the ISO
  date), "year" for a bare integer 1000-2100 with no unit or scale (unless a content word follows it, as in
  "2000 people", and no time preposition -- before/after/in/since/until/from/during/by -- precedes it),
  "number" otherwise;
- ``unit``: as written, not converted ("km²", "kg", "dollars", "years", "%" for "15%", "$" for "$5").

Forms read: digits with thousands commas and decimals ("20,000", "1.5"), negatives ("-5"), scale words and
suffixes ("200 million", "1.5 billion", "a million", "half a million", "a dozen", "3k", "$2m"), written
numbers ("twenty", "twenty-five", "one hundred and five"; "one" after a determiner -- "which one", "the one"
-- is not a number), percentages, currency signs.

    find_quantities("between 5 and 10 million dogs")[0].value2  # 10000000.0
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["Quantity", "find_quantities", "parse_number", "SMALLER"]


@dataclass(frozen=True)
class Quantity:
    """One number found in a text; see the module docstring for the meaning of each field."""

    value: float
    value2: float | None
    op: str | None
    kind: str
    unit: str
    text: str
    start: int
    end: int
    iso: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# --- word tables --------------------------------------------------------------------------------------------

UNITS_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
TENS_WORDS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
}
SCALE_WORDS = {"hundred": 100.0, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
SUFFIX_SCALES = {"k": 1e3, "K": 1e3, "M": 1e6, "mn": 1e6, "B": 1e9, "bn": 1e9}
CURRENCY_SIGNS = {"$", "€", "£", "¥"}

# comparatives meaning "smaller" ("<adjective>er than" -> "<"); every other "-er than" means ">"
SMALLER = frozenset(
    {
        "younger",
        "lighter",
        "shorter",
        "smaller",
        "lower",
        "fewer",
        "less",
        "cheaper",
        "earlier",
        "thinner",
        "narrower",
    }
)
_NOT_COMPARATIVE = frozenset(
    {
        "other",
        "rather",
        "whether",
        "either",
        "neither",
        "number",
        "order",
        "member",
        "under",
        "over",
        "after",
        "never",
        "ever",
    }
)

_UNITS = [
    # longest first within each multi-word group; matched case-insensitively, kept as written
    "square kilometers",
    "square kilometres",
    "square miles",
    "square meters",
    "square metres",
    "sq km",
    "sq mi",
    "per cent",
    "percentage points",
    "km/h",
    "km²",
    "km2",
    "m²",
    "m2",
    "mi²",
    "sq",
    "%",
    "percent",
    "mm",
    "cm",
    "m",
    "km",
    "mi",
    "mile",
    "miles",
    "meter",
    "meters",
    "metre",
    "metres",
    "kilometer",
    "kilometers",
    "kilometre",
    "kilometres",
    "centimeter",
    "centimeters",
    "foot",
    "feet",
    "ft",
    "inch",
    "inches",
    "yard",
    "yards",
    "mg",
    "g",
    "kg",
    "t",
    "ton",
    "tons",
    "tonne",
    "tonnes",
    "lb",
    "lbs",
    "pound",
    "pounds",
    "ounce",
    "ounces",
    "oz",
    "gram",
    "grams",
    "kilogram",
    "kilograms",
    "year",
    "years",
    "yr",
    "yrs",
    "month",
    "months",
    "week",
    "weeks",
    "day",
    "days",
    "hour",
    "hours",
    "hr",
    "hrs",
    "h",
    "minute",
    "minutes",
    "min",
    "mins",
    "second",
    "seconds",
    "sec",
    "secs",
    "ms",
    "dollar",
    "dollars",
    "usd",
    "euro",
    "euros",
    "eur",
    "yen",
    "yuan",
    "rmb",
    "cent",
    "cents",
    "gbp",
    "°c",
    "°f",
    "°",
    "degree",
    "degrees",
    "celsius",
    "fahrenheit",
    "kph",
    "mph",
    "kmh",
    "kw",
    "mw",
    "gw",
    "kwh",
    "mwh",
    "w",
    "watt",
    "watts",
    "v",
    "volt",
    "volts",
    "hz",
    "khz",
    "mhz",
    "ghz",
    "kb",
    "mb",
    "gb",
    "tb",
    "byte",
    "bytes",
    "l",
    "liter",
    "liters",
    "litre",
    "litres",
    "ml",
]
_UNIT_RE = re.compile(
    r"\s?(" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + r")(?![\w²/])",
    re.IGNORECASE,
)


# words after a bare 1000-2100 integer that keep it a year; any other word ("2000 people") makes it a count
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_YEAR_FOLLOWERS = _wordset(
    "and or to by in on at of for with when where which who that were was is are have has had the a an until "
    "till through than as but nor from after before since during onwards onward ad bc bce ce season census "
    "election olympics edition 年"
)
_TIME_PREPS = re.compile(r"\b(before|after|in|since|until|till|from|during|by|year|years)\s*$", re.IGNORECASE)

_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MONTH_RE = r"(?P<{n}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_RES = [
    re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})\b"),
    re.compile(
        r"\b" + _MONTH_RE.format(n="mon") + r"\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?,?\s+(?P<y>\d{4})\b",
        re.IGNORECASE,
    ),
    re.compile(
        r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_RE.format(n="mon") + r",?\s+(?P<y>\d{4})\b",
        re.IGNORECASE,
    ),
]

# comparison phrases ending right before a number, most specific first (matched against the preceding text)
_W = r"(?:\w+\s+){0,2}"  # up to two words between a comparative and "than": "a greater weight than 10"
_BEFORE_OPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(p + r"\s*$", re.IGNORECASE), op)
    for p, op in [
        (r"(?:greater|more|higher|larger|bigger)\s+than\s+or\s+equal(?:s)?\s+to", ">="),
        (r"(?:less|fewer|smaller|lower)\s+than\s+or\s+equal(?:s)?\s+to", "<="),
        (r"(?:>=|≥|=>)", ">="),
        (r"(?:<=|≤|=<)", "<="),
        (r"(?<![<>=])>", ">"),
        (r"(?<![<>=])<", "<"),
        (r"(?<![<>=!])==?", "="),
        (
            r"\b(?:at\s+least|no\s+less\s+than|not\s+less\s+than|no\s+fewer\s+than|not\s+fewer\s+than|"
            r"(?:a\s+)?minimum\s+of|since|from|starting\s+(?:from|in|at))",
            ">=",
        ),
        (
            r"\b(?:at\s+most|no\s+more\s+than|not\s+more\s+than|not\s+over|up\s+to|"
            r"(?:a\s+)?maximum\s+of|within|until|till|through)",
            "<=",
        ),
        (r"\b(?:more|greater|higher|larger|bigger)\s+" + _W + r"than", ">"),
        (r"\b(?:less|fewer|smaller|lower)\s+" + _W + r"than", "<"),
        (r"\b(?:over|above|exceeding|exceeds?|after|later\s+than|beyond)", ">"),
        (r"\b(?:under|below|before|earlier\s+than|prior\s+to|beneath)", "<"),
        (r"\b(?P<cmp>[a-z]+er)\s+" + _W + r"than", "cmp"),
        (r"\b(?:equal(?:s)?(?:\s+to)?|exactly|precisely|of|is|are|was|were)", "="),
    ]
]
_AFTER_OPS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^\s*" + p + r"\b", re.IGNORECASE), op)
    for p, op in [
        (r"(?:or|and)\s+(?:more|greater|above|higher|over|older|later|up|after|beyond)", ">="),
        (r"(?:or|and)\s+(?:less|fewer|below|lower|under|younger|earlier|before)", "<="),
    ]
] + [(re.compile(r"^\+"), ">=")]

_TOKEN_RE = re.compile(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+|[^\W\d_]+\d*[²³]?|\S")
_DETERMINERS_BEFORE_ONE = frozenset(
    {
        "the",
        "which",
        "each",
        "every",
        "any",
        "no",
        "this",
        "that",
        "another",
        "what",
        "a",
        "an",
        "some",
        "only",
        "last",
        "first",
        "same",
    }
)


@dataclass
class _Tok:
    text: str
    start: int
    end: int

    @property
    def low(self) -> str:
        return self.text.lower()


@dataclass
class _Num:
    value: float
    i: int  # first token
    j: int  # one past the last token
    scale: float  # the multiplier of the scale words / suffix (1.0 when none)
    plain_int: bool  # bare digits, no comma/decimal/sign/currency
    currency: str


def _is_digits(t: str) -> bool:
    return t[:1].isdigit() or (t[:1] == "." and t[1:2].isdigit())


def _word_number(toks: list[_Tok], i: int) -> tuple[float, int] | None:
    """A written number starting at token i ("twenty-five", "one hundred and five", "a dozen", "half a
    million")."""
    n = len(toks)
    low = toks[i].low
    if low == "half" and i + 2 < n and toks[i + 1].low == "a" and toks[i + 2].low in SCALE_WORDS:
        return 0.5 * SCALE_WORDS[toks[i + 2].low], i + 3
    if low in ("a", "an") and i + 1 < n:
        nxt = toks[i + 1].low
        if nxt == "dozen":
            return 12.0, i + 2
        if nxt in SCALE_WORDS:
            return _words_from(toks, i + 1, 1.0, 0.0)
        return None
    if low == "dozen":
        return 12.0, i + 1
    if low in UNITS_WORDS or low in TENS_WORDS:
        return _words_from(toks, i, 0.0, 0.0)
    return None


def _words_from(toks: list[_Tok], i: int, current: float, total: float) -> tuple[float, int]:
    n = len(toks)
    j = i
    last_ok = i
    saw = False
    while j < n:
        low = toks[j].low
        if low in UNITS_WORDS:
            current += UNITS_WORDS[low]
        elif low in TENS_WORDS:
            current += TENS_WORDS[low]
            # "twenty-five" / "twenty five"
            if j + 2 < n and toks[j + 1].text == "-" and toks[j + 2].low in UNITS_WORDS:
                current += UNITS_WORDS[toks[j + 2].low]
                j += 2
        elif low == "hundred":
            current = (current or 1.0) * 100
        elif low in SCALE_WORDS:
            total += (current or 1.0) * SCALE_WORDS[low]
            current = 0.0
        elif (
            low == "and"
            and saw
            and toks[j - 1].low in SCALE_WORDS
            and j + 1 < n
            and (toks[j + 1].low in UNITS_WORDS or toks[j + 1].low in TENS_WORDS)
        ):
            j += 1
            continue
        else:
            break
        saw = True
        j += 1
        last_ok = j
    return total + current, last_ok


def _apply_scales(toks: list[_Tok], j: int, value: float) -> tuple[float, int, float]:
    """Scale words after a number: "1.5 billion", "two hundred thousand", "3 dozen"."""
    scale = 1.0
    n = len(toks)
    while j < n and (toks[j].low in SCALE_WORDS or toks[j].low == "dozen"):
        scale *= 12.0 if toks[j].low == "dozen" else SCALE_WORDS[toks[j].low]
        j += 1
    return value * scale, j, scale


def _number_at(toks: list[_Tok], i: int, text: str) -> _Num | None:
    n = len(toks)
    t = toks[i]
    neg = False
    currency = ""
    k = i
    if (
        t.text in ("-", "−", "–")
        and k + 1 < n
        and toks[k + 1].start == t.end
        and _is_digits(toks[k + 1].text)
    ):
        before = text[t.start - 1] if t.start > 0 else " "
        if before.isalnum() or before in ".,":
            return None
        neg = True
        k += 1
    if toks[k].text in CURRENCY_SIGNS and k + 1 < n and _is_digits(toks[k + 1].text):
        currency = toks[k].text
        k += 1
    tk = toks[k]
    if _is_digits(tk.text):
        value = float(tk.text.replace(",", ""))
        plain = not neg and not currency and tk.text.isdigit()
        j = k + 1
        scale = 1.0
        # attached suffix scales: 3k, 5M, 2bn, $2m
        if (
            j < n
            and toks[j].start == tk.end
            and (toks[j].text in SUFFIX_SCALES or (currency and toks[j].text == "m"))
        ):
            scale = SUFFIX_SCALES.get(toks[j].text, 1e6)
            j += 1
        value, j, more = _apply_scales(toks, j, value * scale)
        scale *= more
        return _Num(-value if neg else value, i, j, scale, plain and scale == 1.0, currency)
    if neg or currency:
        return None
    low = tk.low
    if low == "one" and i > 0 and toks[i - 1].low in _DETERMINERS_BEFORE_ONE:
        return None
    got = _word_number(toks, i)
    if got is None:
        return None
    value, j = got
    value, j, scale = _apply_scales(toks, j, value)
    # the trailing scale words of a written number ("ten million" -> 1e6) carry over to a range's first number
    last = toks[j - 1].low
    if scale == 1.0 and j - 1 > i and last in SCALE_WORDS and last != "hundred":
        scale = SCALE_WORDS[last]
    return _Num(value, i, j, scale, False, "")


def _unit_after(text: str, pos: int, currency: str) -> tuple[str, int]:
    m = _UNIT_RE.match(text, pos)
    if m:
        return m.group(1), m.end()
    return currency, pos


def _op_before(text: str, start: int) -> str | None:
    before = text[max(0, start - 60) : start]
    for rx, op in _BEFORE_OPS:
        m = rx.search(before)
        if m:
            if op == "cmp":
                word = m.group("cmp").lower()
                if word in _NOT_COMPARATIVE:
                    continue
                return "<" if word in SMALLER else ">"
            return op
    return None


def _op_after(text: str, end: int) -> tuple[str | None, int]:
    after = text[end : end + 30]
    for rx, op in _AFTER_OPS:
        m = rx.match(after)
        if m:
            return op, end + m.end()
    return None, end


def _dates(text: str) -> list[tuple[int, int, int, str]]:
    out: list[tuple[int, int, int, str]] = []
    for rx in _DATE_RES:
        for m in rx.finditer(text):
            y, d = int(m.group("y")), int(m.group("d"))
            mon = (
                _MONTHS[m.group("mon").lower()]
                if "mon" in m.groupdict() and m.group("mon")
                else int(m.group("m"))
            )
            if not (1 <= mon <= 12 and 1 <= d <= 31):
                continue
            if any(s < m.end() and m.start() < e for s, e, _, _ in out):
                continue
            out.append((m.start(), m.end(), y, f"{y:04d}-{mon:02d}-{d:02d}"))
    return sorted(out)


def _is_year(text: str, num: _Num, toks: list[_Tok], unit: str) -> bool:
    if not num.plain_int or unit or not (1000 <= num.value <= 2100):
        return False
    if _TIME_PREPS.search(text[: toks[num.i].start]):
        return True
    if num.j < len(toks):
        nxt = toks[num.j].low
        if nxt[:1].isalpha() and nxt not in _YEAR_FOLLOWERS:
            return False
    return True


@lru_cache(maxsize=4096)
def _find(text: str) -> tuple[Quantity, ...]:
    dates = _dates(text)
    toks = [_Tok(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
    out: list[Quantity] = []
    events: list[tuple[int, Any]] = [(s, ("date", s, e, y, iso)) for s, e, y, iso in dates]
    n = len(toks)
    i = 0
    while i < n:
        if any(s <= toks[i].start < e for s, e, _, _ in dates):
            i += 1
            continue
        num = _number_at(toks, i, text)
        if num is None:
            i += 1
            continue
        start, end = toks[num.i].start, toks[num.j - 1].end
        unit, end = _unit_after(text, end, num.currency)
        op = _op_before(text, start)
        value2: float | None = None
        kind = "year" if _is_year(text, num, toks, unit) else "number"
        value = num.value
        j = num.j
        while j < n and toks[j].end <= end:
            j += 1
        # ranges: "between 5 and 10 million", "from 1990 to 2000"
        pre = text[max(0, start - 40) : start]
        rng = re.search(r"\b(between|from)\s+(?:the\s+)?(?:(?:years?|ages?|dates?)\s+)?$", pre, re.IGNORECASE)
        dash = (
            j + 1 < n
            and toks[j].text in ("-", "–")
            and toks[j].start == end
            and toks[j + 1].start == toks[j].end
        )  # "5-10", "1990–2000"
        joiner = j + 1 < n and toks[j].low in ("and", "to", "-", "–", "through", "until")
        if joiner and (
            dash or (rng is not None and (rng.group(1).lower() == "between" or toks[j].low != "and"))
        ):
            num2 = _number_at(toks, j + 1, text)
            if num2 is not None:
                end2 = toks[num2.j - 1].end
                unit2, end2 = _unit_after(text, end2, num2.currency)
                value2 = num2.value
                if num2.scale != 1.0 and num.scale == 1.0:
                    value *= num2.scale
                unit = unit or unit2
                if kind == "year" and not _is_year(text, num2, toks, unit2):
                    kind = "number"
                op = "between"
                end = end2
                j = num2.j
                while j < n and toks[j].end <= end:
                    j += 1
        if op != "between":
            op_after, end_after = _op_after(text, end)
            if op_after:
                op = op_after
        events.append((start, (kind, value, value2, op, unit, start, end)))
        i = j
    for _, ev in sorted(events, key=lambda e: e[0]):
        if ev[0] == "date":
            _, s, e, y, iso = ev
            out.append(Quantity(float(y), None, _op_before(text, s), "date", "", text[s:e], s, e, iso))
        else:
            kind, value, value2, op, unit, s, e = ev
            out.append(Quantity(float(value), value2, op, kind, unit, text[s:e], s, e))
    return tuple(out)


def find_quantities(text: str) -> list[Quantity]:
    """Every number of ``text`` in order of appearance (non-overlapping, char offsets into ``text``)."""
    return list(_find(text))


def parse_number(text: str) -> float | None:
    """The value of one span such as "2.5 million", "twenty", "20,000" or "$3k"; None if it is not one
    number."""
    span = text.strip().rstrip(".?!")
    found = _find(span)
    if len(found) != 1:
        return None
    q = found[0]
    if q.start != 0 or q.end != len(span):
        return None
    return q.value
