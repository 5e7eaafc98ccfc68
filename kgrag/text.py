"""Text normalisation in one place: the forms kgrag compares text in, one function per meaning, and the
wh-word → answer-kind tables the planners and zero-shot rankers read a question with.

    name_key("Hitchhiker's  Guide!") == "hitchhiker s guide" and words_key("Mr. & Mrs.") == "mr and mrs"

Contract. Every function is pure, never raises on a ``str`` and imports nothing of kgrag (every layer may use
it). The forms differ on purpose; each is what its users' tests and benchmarks were measured with:

- **case** — :func:`fold_case`: stripped and casefolded, nothing else (kn_search's name / comment comparisons;
  Chinese unaffected; ``None`` is ``""``);
- **width** — :func:`fold_width`: NFKC (full-width letters, digits and punctuation become ASCII) and lower
  case (tokenisation); :func:`plain_text`: the same with whitespace runs made one space and the ends stripped
  (the intent classifier's input); :func:`answer_key`: NFKC, casefolded, single spaces, surrounding quotes and
  punctuation dropped (an answer name compared with a gold name);
- **names** (accents dropped: NFKD, combining marks removed) — :func:`name_key`: punctuation and ``_`` become
  word breaks (``Hitchhiker's`` → ``hitchhiker s``; entity resolution by name); :func:`words_key` /
  :func:`word_tokens`: a name's words as a reader says them (apostrophes and dots join a word: ``Mr.`` →
  ``mr``, ``Heidi's`` → ``heidis``; ``&`` is ``and``; ``ø`` / ``æ`` / ``ł`` … spelled out; the entity linker);
  :func:`stem_key`: lower case, no spaces or ``- _ ' . ’`` at all (``Hitchhiker's Guide`` →
  ``hitchhikersguide``; a lemma's key);
- **punctuation folds** (lower case, punctuation and spaces deleted; Chinese names): :func:`fold_punct` (a
  keyword against a stored form), :func:`fold_keyword` (also dashes, colons, semicolons and single quotes: the
  one-edit index), :func:`fold_alias` (also title brackets and corner quotes ``《》「」『』``: aliases read from
  text);
- **answer kinds** — :func:`answer_kind` / :func:`answer_kinds` over the tables below: the planners' kinds
  (:data:`PLANNER_KINDS` English, :data:`PLANNER_KINDS_ZH` Chinese: year / date / place / person, the first
  that matches), the chain ranker's coarse type (:data:`CHAIN_KINDS`: date / number / place / person) and the
  schema ranker's answer classes (:data:`SCHEMA_CLASSES`, English and Chinese, every one that matches). They
  are three readings of the same wh-words at three granularities (a planner wants "year" apart from "date",
  the chain ranker folds "what year" and "what age" into a date, the schema ranker counts "located" and "哪家"
  as a place and "which" as a list); merging them would change what each reader answers.

Speed: :func:`fold_case` and :func:`fold_width` are called per stored row / candidate (kn_search, ranking) and
do no more than the two string methods; :func:`stem_key` keeps an ``lru_cache`` and :func:`word_key` a bounded
dict cache, as their old homes did; every pattern is compiled once.
"""

from __future__ import annotations

import re
import string
import unicodedata
from functools import lru_cache

__all__ = ["APOSTROPHES", "CHAIN_KINDS", "NAME_PUNCTUATION", "PLANNER_KINDS", "PLANNER_KINDS_ZH",
           "SCHEMA_CLASSES", "KindTable", "answer_key", "answer_kind", "answer_kinds", "fold_alias",
           "fold_case", "fold_keyword", "fold_punct", "fold_width", "name_key", "plain_text", "stem_key",
           "word_key", "word_tokens", "words_key"]

KindTable = tuple[tuple[str, re.Pattern[str]], ...]


# ---- case and width ----------------------------------------------------------------------------------------

def fold_case(text: str | None) -> str:
    """``text`` stripped and casefolded (``None`` → ``""``): ``" Drug "`` → ``"drug"``; Chinese unchanged."""
    return (text or "").strip().casefold()


def fold_width(text: str) -> str:
    """NFKC-normalised and lower-cased: ``"ＡＢＣ１２３"`` → ``"abc123"``."""
    return unicodedata.normalize("NFKC", text).lower()


def plain_text(text: str) -> str:
    """NFKC (full-width → half-width), lower case, whitespace runs → one space, stripped."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


_SURROUNDING = string.whitespace + "\"'`“”‘’«»„.,;:!?"


def answer_key(name: str) -> str:
    """Casefolded, Unicode-NFKC, whitespace collapsed, surrounding quotes and punctuation dropped:
    ``"  “Kill   Bill: Vol. 1”  "`` → ``"kill bill: vol. 1"``."""
    text = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return text.strip(_SURROUNDING)


# ---- names: accents dropped --------------------------------------------------------------------------------

def _unmarked(decomposed: str) -> str:
    """An NFKD text without its combining marks (the accents it decomposed into)."""
    return "".join(c for c in decomposed if not unicodedata.combining(c))


_NON_WORD = re.compile(r"[\W_]+")


def name_key(name: str) -> str:
    """Case, accents and punctuation folded: ``"Hitchhiker's  Guide!"`` → ``"hitchhiker s guide"``."""
    folded = _unmarked(unicodedata.normalize("NFKD", name).casefold())
    return " ".join(_NON_WORD.sub(" ", folded).split())


_STEM_BREAKS = re.compile(r"[\s\-_'.’]+")


@lru_cache(maxsize=65536)
def stem_key(text: str) -> str:
    """Lower case, accents stripped, spaces and ``- _ ' . ’`` removed: ``"Café-Society"`` →
    ``"cafesociety"``; cached."""
    return _STEM_BREAKS.sub("", _unmarked(unicodedata.normalize("NFKD", text.lower())))


#: combining marks, so decomposed text (e + U+0301) stays one word
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
#: apostrophes a word may hold (``Heidi's``, ``O’Brien``)
APOSTROPHES = "'’‘`´ʼ′"
_WORD = rf"(?:[^\W_]|[{_MARKS}])+"
_TOKEN = re.compile(rf"{_WORD}(?:[{APOSTROPHES}.]{_WORD})*|&")
_JOINERS = re.compile(rf"[{APOSTROPHES}.]")
_SPELLED = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_WORD_CACHE: dict[str, str] = {}
_WORD_CACHE_SIZE = 200_000


def word_key(raw: str) -> str:
    """One word as :func:`words_key` compares it: ``"Mr."`` → ``"mr"``, ``"Zoë"`` → ``"zoe"``, ``"&"`` →
    ``"and"``, ``"½"`` → ``"12"``; cached (the first 200,000 distinct words)."""
    cached = _WORD_CACHE.get(raw)
    if cached is not None:
        return cached
    if raw == "&":
        out = "and"
    else:
        text = unicodedata.normalize("NFKD", _JOINERS.sub("", raw).casefold())
        out = _unmarked(text).translate(_SPELLED)
        out = "".join(c for c in out if c.isalnum())  # NFKD may leave separators (½ -> 1⁄2)
    if len(_WORD_CACHE) < _WORD_CACHE_SIZE:
        _WORD_CACHE[raw] = out
    return out


def word_tokens(text: str) -> list[tuple[str, int, int]]:
    """``(word key, start, end)`` for each word of ``text``: letters and digits (with their combining marks),
    joined by apostrophes and dots; ``&``; every other character separates words."""
    out = []
    for m in _TOKEN.finditer(text):
        norm = word_key(m.group())
        if norm:
            out.append((norm, m.start(), m.end()))
    return out


def words_key(text: str) -> str:
    """A name's word keys joined by single spaces: ``"Spider-Man"`` → ``"spider man"``, ``"Mr. & Mrs. Smith"``
    → ``"mr and mrs smith"``."""
    return " ".join(t for t, _, _ in word_tokens(text))


# ---- punctuation folds (Chinese names) ---------------------------------------------------------------------

#: what every punctuation fold deletes: Chinese and ASCII list / sentence punctuation, brackets, dots, dashes,
#: slashes, double quotes and spaces (full-width too)
NAME_PUNCTUATION = "、，,。.·・-_/()（）[]【】 　'\"“”"
_FOLD_PUNCT = str.maketrans("", "", NAME_PUNCTUATION)
_FOLD_KEYWORD = str.maketrans("", "", NAME_PUNCTUATION + "‘’－—–:：;；")
_FOLD_ALIAS = str.maketrans("", "", NAME_PUNCTUATION + "‘’「」『』《》:：")


def fold_punct(text: str) -> str:
    """Lower case without :data:`NAME_PUNCTUATION`: ``"上、下气道梗阻"`` → ``"上下气道梗阻"``."""
    return text.lower().translate(_FOLD_PUNCT)


def fold_keyword(text: str) -> str:
    """:func:`fold_punct`, and single quotes, long dashes, colons and semicolons deleted too: ``"α-地中海贫血"`` →
    ``"α地中海贫血"``, ``"Ⅱ型：糖尿病"`` → ``"ⅱ型糖尿病"``."""
    return text.lower().translate(_FOLD_KEYWORD)


def fold_alias(text: str) -> str:
    """:func:`fold_punct`, and single quotes, title brackets, corner quotes and colons deleted too:
    ``"《红楼梦》"`` → ``"红楼梦"``."""
    return text.lower().translate(_FOLD_ALIAS)


# ---- answer kinds ------------------------------------------------------------------------------------------

#: the planners' answer kind of an English question (matched case-blind on the question as written; the first
#: that matches): "in what year" / "when … born" a year, "when" / "what date" a date, "where" a place, "who" a
#: person
PLANNER_KINDS: KindTable = (
    ("year", re.compile(r"\b(what|which|in what)\s+year\b|"
                        r"\bwhen\b.*\b(born|founded|die|died|published|released)\b", re.I)),
    ("date", re.compile(r"\bwhen\b|\bwhat\s+(date|day|time)\b|\bwhich\s+date\b", re.I)),
    ("place", re.compile(r"\bwhere\b", re.I)),
    ("person", re.compile(r"\b(who|whom|whose)\b", re.I)),
)
#: the planners' answer kind of a Chinese question (the same kinds: 哪一年, 什么时候, 哪里, 谁)
PLANNER_KINDS_ZH: KindTable = (
    ("year", re.compile(r"哪一?年|什么年份|何年|哪个年份")),
    ("date", re.compile(r"什么时候|何时|哪一?天|什么日期|几月几")),
    ("place", re.compile(r"哪里|哪儿|在哪|什么地方|何地|何处")),
    ("person", re.compile(r"谁")),
)
#: the chain ranker's coarse answer type of an English question (matched on the lower-cased question; the
#: first that matches): a date (also "what year", "what age"), a number ("how many", "what population"), a
#: place ("where", "which country"), a person
CHAIN_KINDS: KindTable = (
    ("date", re.compile(r"\b(when|what (year|date|time|day|month|decade|century)|which year|since when|"
                        r"how long ago|in what year|what age)\b")),
    ("number", re.compile(r"\b(how (many|much|old|tall|big|large|long|far|high)|what (number|percentage|"
                          r"population|amount)|what is the (population|number|amount))\b")),
    ("place", re.compile(r"\b(where|what (country|city|state|place|continent|region|county|town|island|"
                         r"location|nation|province)|which (country|city|state|place|continent|region|county|"
                         r"town|island|nation|province))\b")),
    ("person", re.compile(r"\b(who|whom|whose)\b")),
)
#: the schema ranker's answer classes (English and Chinese, matched on the lower-cased question; every one
#: that matches): general question words only, no network's words
SCHEMA_CLASSES: KindTable = (
    ("time", re.compile(r"\bwhen\b|\bwhat (year|date|time|day|month)\b|\bwhich (year|date|day|month)\b|"
                        r"\byear\b|\bdate\b|什么时候|哪一?年|何时|哪天|年份|日期|几月|几号")),
    ("place", re.compile(r"\bwhere\b|\bwhat (place|location|town)\b|\bwhich (place|location|town)\b|"
                         r"\blocated\b|\bbased\b|\bhometown\b|哪里|哪儿|在哪|何处|何地|什么地方|哪个地方|位于|哪家|哪所")),
    ("number", re.compile(r"\bhow (many|much|long|old|big|large|tall|far)\b|\bnumber of\b|\bcount\b|多少|几个|"
                          r"多久|多长|多大|多高|几岁|比例|概率|几率")),
    ("person", re.compile(r"\bwho(m|se)?\b|\bwhich (person|people)\b|谁|哪位|什么人|哪些人")),
    ("category", re.compile(r"\bwhat (kind|type|sort|category|class)\b|\bwhich (kind|type|sort|category)\b|"
                            r"\bkinds? of\b|\btypes? of\b|什么类型|哪种|哪类|哪一类|什么样的?|类别|种类|属于")),
    ("list", re.compile(r"\bwhich\b|\bwhat are\b|\blist\b|\bname (the|all|some|every)\b|哪些|有什么|有哪几|都有")),
    ("manner", re.compile(r"\bhow (to|do|does|did|can|could|should|is|are)\b|\bwhat way\b|怎么|怎样|如何|咋|"
                          r"怎么办|方法|办法")),
)


def answer_kind(text: str, table: KindTable, default: str = "") -> str:
    """The first kind of ``table`` whose pattern occurs in ``text`` (``default`` when none does)."""
    return next((kind for kind, pattern in table if pattern.search(text)), default)


def answer_kinds(text: str, table: KindTable) -> list[str]:
    """Every kind of ``table`` whose pattern occurs in ``text``, in the table's order."""
    return [kind for kind, pattern in table if pattern.search(text)]
