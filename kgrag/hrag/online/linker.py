"""Entity linking over plain text: which graph entity a question is about, with or without ``[brackets]``.

Contract. :meth:`EntityLinker.from_graph` indexes every named entity once (about a second on MetaQA's 43k
names); :meth:`EntityLinker.link` then answers from dict and array lookups (no per-call index building) and
never raises: empty, whitespace, very long, control-character or query-language text gives ``[]`` or the names
it really contains. :meth:`EntityLinker.topics` gives the rows and the text with the chosen span bracketed.

* **Bracketed text** (``what movies did [Temuera Morrison] act in``): only the ``[spans]`` are resolved — the
  stored name exactly (``match_type="bracket"``), else its normalised form (``"normalised"``), else the
  closest name (``"fuzzy"``); the rest of the text is not searched; an unresolvable bracket gives nothing.
* **Plain text**: every token n-gram (up to the longest name's token count, at most :data:`MAX_SPAN_TOKENS`)
  whose normalised form is a stored normalised name is a candidate span (``"exact"`` when the stored name is
  written in the text character for character, else ``"normalised"``). Spans rank, best first, by:

  1. the text with the span replaced by a placeholder is a known template — one of the normalised
     ``template_texts`` (masked training questions, ``X`` in place of the topic: ``what movies did X act in``);
  2. the span is not made only of template words — words in at least two ``template_texts`` (``movies``,
     ``directed``, ``who``, ``the``…; a tiny built-in list when no texts are given), so an entity called
     ``Movies`` or ``director`` does not beat the real topic;
  3. the fit of the masked text to the templates' word-bigram model (log-probability, add-one unigram
     back-off): a word left outside the span that templates do not use costs much, a template word inside it
     (``in``) is missed outside — ``appear in Darkness`` gives ``Darkness``, not ``In Darkness``;
     ``directed Alien Nation`` gives ``Alien Nation``, not ``Alien`` — so unseen phrasings rank well too;
  4. more characters (so a longer name beats the shorter one inside it; the only length rule when no
     ``template_texts`` are given); 5. fewer graph rows sharing the normalised name; 6. leftmost.

  Rows sharing a normalised name are ordered: stored name written in the text exactly (the link's span then
  covers it, ``Jr.`` / ``Tokyo!`` included), then equal but for case, then more edges, then lower row.
* **Near-misses**: when no span passes rule 1 or 2, spans that are not only template words (at least
  :data:`MIN_FUZZY_CHARS` letters/digits) are matched through a character-trigram inverted index of the
  normalised names; a name counts when :func:`kgrag.search.storage_forms.similarity` of the normalised span and
  name is at least :data:`FUZZY_SIMILARITY`; ranked by rule 1, similarity, then length. Only the first
  :data:`MAX_FUZZY_TOKENS` tokens of a text are searched this way.

Normalisation (names and text alike, :func:`normalise`): Unicode compatibility forms, casefold, accents dropped
(``Amélie`` = ``Amelie``; ``ø æ œ ł đ ð þ`` spelled in ASCII), curly quotes and backticks as ``'``. A token is
a run of letters/digits that may hold ``'`` or ``.`` between two letters/digits; those are dropped without a
space: ``Ocean's Eleven`` = ``Oceans Eleven``, ``L.A. Confidential`` = ``LA Confidential``; ``Se7en`` stays
``se7en``. ``&`` is the word ``and`` (``Mr. & Mrs. Smith`` = ``Mr and Mrs Smith``). Every other character
separates tokens: ``Lock, Stock and Two Smoking Barrels``, ``2001: A Space Odyssey``, ``Spider-Man`` =
``Spider Man``, ``WALL·E`` = ``WALL E`` (``Spiderman`` / ``WALLE`` are near-misses found at similarity 1, as
``similarity`` ignores spaces). A span's last token may drop a possessive ``'s`` (``Heat's`` finds ``Heat``).
Names with no letter or digit (``$``) are found only by an exact bracket.

    .venv/bin/python -c 'from kgrag.graph.csr import CSRGraph; from kgrag.hrag.online.linker import EntityLinker; print(EntityLinker.from_graph(CSRGraph.load("work/metaqa/graph.npz")).topics("what movies did Temuera Morrison act in"))'
"""  # noqa: E501 - the runnable line

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.graph.csr import CSRGraph
from kgrag.search.storage_forms import similarity

__all__ = ["FUZZY_SIMILARITY", "MAX_FUZZY_TOKENS", "MAX_SPAN_TOKENS", "MIN_FUZZY_CHARS", "EntityLinker",
           "Link", "normalise", "tokens"]

#: a near-miss counts when :func:`similarity` of its normalised span and name is at least this
FUZZY_SIMILARITY = 0.85
#: longest candidate span, in tokens
MAX_SPAN_TOKENS = 15
#: only the first this many tokens of a text are searched for near-misses
MAX_FUZZY_TOKENS = 64
#: a fuzzy span needs at least this many letters/digits
MIN_FUZZY_CHARS = 4
#: template words when no template texts are given
FALLBACK_TEMPLATE_WORDS = frozenset({
    "a", "an", "the", "of", "in", "on", "by", "to", "for", "and", "or", "is", "are", "was", "were", "be",
    "did", "does", "do", "what", "which", "who", "whom", "whose", "when", "where", "how", "movie", "movies",
    "film", "films"})
_PLACEHOLDER = "x"  # masked_text's X, normalised
_START, _END = "<s>", "</s>"  # sentence edges for the template bigram model
_LM_SMOOTHING = 1.0  # weight of the unigram back-off in the template bigram model
_FUZZY_CANDIDATES = 128  # names whose trigrams best cover the text, compared span by span
_TRIGRAM_DICE = 0.45  # span / name trigram overlap below which similarity() is not computed

# combining marks, so decomposed text (e + U+0301) stays one token
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_APOSTROPHES = "'’‘`´ʼ′"
_WORD = rf"(?:[^\W_]|[{_MARKS}])+"
_TOKEN = re.compile(rf"{_WORD}(?:[{_APOSTROPHES}.]{_WORD})*|&")
_JOINERS = re.compile(rf"[{_APOSTROPHES}.]")
_SPELLED = str.maketrans({"ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"})
_TOKEN_CACHE: dict[str, str] = {}
_TOKEN_CACHE_SIZE = 200_000


@dataclass(frozen=True)
class Link:
    entity: int  # graph row
    name: str  # the stored name (the storage form, not the user's spelling)
    start: int  # character span in the input text
    end: int
    match_type: str  # "bracket" | "exact" | "normalised" | "fuzzy"
    similarity: float  # 1.0 unless fuzzy


def _norm_token(raw: str) -> str:
    cached = _TOKEN_CACHE.get(raw)
    if cached is not None:
        return cached
    if raw == "&":
        out = "and"
    else:
        text = unicodedata.normalize("NFKD", _JOINERS.sub("", raw).casefold())
        out = "".join(c for c in text if not unicodedata.combining(c)).translate(_SPELLED)
        out = "".join(c for c in out if c.isalnum())  # NFKD may leave separators (½ -> 1⁄2)
    if len(_TOKEN_CACHE) < _TOKEN_CACHE_SIZE:
        _TOKEN_CACHE[raw] = out
    return out


def tokens(text: str) -> list[tuple[str, int, int]]:
    """(normalised token, start, end) for each token of ``text`` (see the module docstring)."""
    out = []
    for m in _TOKEN.finditer(text):
        norm = _norm_token(m.group())
        if norm:
            out.append((norm, m.start(), m.end()))
    return out


def normalise(text: str) -> str:
    """The normalised form of a name or text: its normalised tokens joined by single spaces."""
    return " ".join(t for t, _, _ in tokens(text))


def _possessive(text: str, end: int) -> bool:
    """The token ending at ``end`` ends with a possessive ``'s``."""
    return end >= 3 and text[end - 1] in "sS" and text[end - 2] in _APOSTROPHES


def _trigrams(compact: str) -> set[str]:
    padded = f" {compact} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def _cover(text: str, start: int, end: int, name: str) -> tuple[int, int] | None:
    """Where ``name`` is written in ``text`` over ``[start, end)``, widened by punctuation only; else None."""
    pos = text.find(name, max(0, end - len(name)), start + len(name))
    while pos != -1 and pos <= start:
        stop = pos + len(name)
        if stop >= end and not any(c.isalnum() for c in text[pos:start] + text[end:stop]):
            return pos, stop
        pos = text.find(name, pos + 1, start + len(name))
    return None


@dataclass
class _Span:
    i: int  # first token
    j: int  # one past the last token
    start: int  # characters
    end: int
    rows: tuple[int, ...]  # the rows sharing the matched normalised name
    template: bool  # rule 1: the masked text is a known template
    template_only: bool  # every token is a template word
    fit: float = 0.0  # rule 3: log-probability of the masked text under the template bigram model
    similarity: float = 1.0
    fuzzy: bool = False

    def rank(self) -> tuple:
        length = self.end - self.start
        return (not self.template, self.template_only, -self.fit, -length, len(self.rows), self.start)

    def fuzzy_rank(self) -> tuple:
        return (not self.template, -self.similarity, -(self.end - self.start), len(self.rows), self.start)


class EntityLinker:
    """Links spans of a text to graph rows; see the module docstring."""

    def __init__(self, names: Sequence[str], degree: np.ndarray, template_texts: Sequence[str] = ()) -> None:
        self.names = list(names)
        self.degree = np.asarray(degree)
        by_key: dict[str, list[int]] = defaultdict(list)
        self.raw_index: dict[str, list[int]] = defaultdict(list)
        longest = 1
        for row, name in enumerate(self.names):
            if not name:
                continue
            self.raw_index[name].append(row)
            key = normalise(name)
            if key:
                by_key[key].append(row)
                longest = max(longest, key.count(" ") + 1)
        deg = self.degree
        self.index: dict[str, tuple[int, ...]] = {
            k: tuple(sorted(v, key=lambda r: (-int(deg[r]), r))) for k, v in by_key.items()}
        self.max_tokens = min(MAX_SPAN_TOKENS, longest)
        self.prefixes: set[str] = set()  # the keys' proper token prefixes: a span stops growing outside them
        for key in self.index:
            parts = key.split(" ")
            self.prefixes.update(" ".join(parts[:n]) for n in range(1, len(parts)))
        self._build_templates(template_texts)
        self._build_trigrams()

    @classmethod
    def from_graph(cls, graph: CSRGraph, template_texts: Sequence[str] = ()) -> EntityLinker:
        n = graph.num_entities
        degree = np.bincount(graph.head, minlength=n) + np.bincount(graph.tail, minlength=n)
        return cls(graph.entity_names, degree, template_texts)

    # ------------------------------------------------------------------ building
    def _build_templates(self, template_texts: Sequence[str]) -> None:
        doc_freq: Counter[str] = Counter()
        templates: set[tuple[str, ...]] = set()
        unigrams: Counter[str] = Counter()
        bigrams: Counter[tuple[str, str]] = Counter()
        for text in template_texts:
            toks = tuple(t for t, _, _ in tokens(text))
            if not toks:
                continue
            doc_freq.update(set(toks))
            if _PLACEHOLDER in toks:
                templates.add(toks)
            seq = (_START, *toks, _END)
            unigrams.update(seq[1:])
            bigrams.update(zip(seq, seq[1:], strict=False))
        words = {w for w, c in doc_freq.items() if c >= 2} - {_PLACEHOLDER}
        self.template_words = frozenset(words) if words else FALLBACK_TEMPLATE_WORDS
        self.templates = frozenset(templates)
        self.unigrams = unigrams
        self.bigrams = bigrams
        self.contexts: Counter[str] = Counter()  # how often each word is followed by another
        for (a, _), c in bigrams.items():
            self.contexts[a] += c
        self._unigram_total = sum(unigrams.values()) + len(unigrams) + 1

    def _logp(self, prev: str, word: str) -> float:
        """log P(word | prev) in the template bigram model, backed off to add-one unigrams."""
        back_off = (self.unigrams.get(word, 0) + 1) / self._unigram_total
        return math.log((self.bigrams.get((prev, word), 0) + _LM_SMOOTHING * back_off)
                        / (self.contexts.get(prev, 0) + _LM_SMOOTHING))

    def _build_trigrams(self) -> None:
        self.keys = list(self.index)
        gram_ids: dict[str, int] = {}
        postings: list[list[int]] = []
        self.key_lengths = np.zeros(len(self.keys), dtype=np.int32)
        self.key_grams = np.zeros(len(self.keys), dtype=np.int32)
        for k, key in enumerate(self.keys):
            compact = key.replace(" ", "")
            grams = _trigrams(compact)
            self.key_lengths[k], self.key_grams[k] = len(compact), len(grams)
            for g in grams:
                gid = gram_ids.get(g)
                if gid is None:
                    gid = gram_ids[g] = len(postings)
                    postings.append([])
                postings[gid].append(k)
        self.gram_ids = gram_ids
        self.postings = [np.asarray(p, dtype=np.int32) for p in postings]

    # ------------------------------------------------------------------ public
    def link(self, text: str, top: int = 1) -> list[Link]:
        """The best ``top`` links, best first (see the module docstring); [] when nothing matches."""
        if not isinstance(text, str) or not text.strip() or top < 1:
            return []
        per_bracket = self._link_brackets(text)
        if per_bracket is not None:
            return [link for links in per_bracket for link in links][:top]
        return self._link_plain(text, top)

    def topics(self, text: str) -> tuple[list[int], str]:
        """(entity rows, the text with the chosen span put in [brackets]). Bracketed text: the best row of
        each resolved bracket and the text as given; plain text: the best link's row and span; ([], text) when
        nothing matches."""
        if not isinstance(text, str) or not text.strip():
            return [], text
        per_bracket = self._link_brackets(text)
        if per_bracket is not None:
            rows: list[int] = []
            for links in per_bracket:
                if links and links[0].entity not in rows:
                    rows.append(links[0].entity)
            return rows, text
        links = self._link_plain(text, 1)
        if not links:
            return [], text
        best = links[0]
        return [best.entity], f"{text[: best.start]}[{text[best.start : best.end]}]{text[best.end :]}"

    # ------------------------------------------------------------------ brackets
    def _link_brackets(self, text: str) -> list[list[Link]] | None:
        """The links of each [bracket] (exact, else normalised, else fuzzy); None when the text has none."""
        brackets = [m for m in TOPIC_SPAN.finditer(text) if m.group(1).strip()]
        if not brackets:
            return None
        out: list[list[Link]] = []
        for m in brackets:
            inner = m.group(1)
            span = inner.strip()
            start = m.start(1) + len(inner) - len(inner.lstrip())
            end = start + len(span)
            exact = self.raw_index.get(span)
            if exact:
                rows = sorted(exact, key=lambda r: (-int(self.degree[r]), r))
                out.append([Link(r, self.names[r], start, end, "bracket", 1.0) for r in rows])
                continue
            toks = tokens(span)
            if not toks:
                out.append([])
                continue
            norm = [t for t, _, _ in toks]
            found = self.index.get(" ".join(norm))
            if found is None and _possessive(span, len(span)):
                found = self.index.get(" ".join(norm)[:-1])
            if found:
                out.append([Link(r, self.names[r], s, e, "normalised", 1.0)
                            for r, s, e, _ in self._order(found, text, start, end)])
                continue
            fuzzy = self._fuzzy([(t, s + start, e + start) for t, s, e in toks], [], whole_only=True)
            out.append([Link(r, self.names[r], start, end, "fuzzy", fuzzy[0].similarity)
                        for r, _, _, _ in self._order(fuzzy[0].rows, text, start, end)] if fuzzy else [])
        return out

    # ------------------------------------------------------------------ plain text
    def _link_plain(self, text: str, top: int) -> list[Link]:
        toks = tokens(text)
        if not toks:
            return []
        norm = [t for t, _, _ in toks]
        spans = self._exact_spans(text, toks, norm)
        if not any(s.template or not s.template_only for s in spans):
            spans = self._fuzzy(toks[:MAX_FUZZY_TOKENS], norm[:MAX_FUZZY_TOKENS]) + spans
        out: list[Link] = []
        seen: set[int] = set()
        for span in spans:
            for r, start, end, verbatim in self._order(span.rows, text, span.start, span.end):
                if r in seen:
                    continue
                seen.add(r)
                if span.fuzzy:
                    link = Link(r, self.names[r], span.start, span.end, "fuzzy", span.similarity)
                else:
                    link = Link(r, self.names[r], start, end, "exact" if verbatim else "normalised", 1.0)
                out.append(link)
                if len(out) >= top:
                    return out
        return out

    def _is_template(self, norm: Sequence[str], i: int, j: int) -> bool:
        """Rule 1: the text with tokens ``[i, j)`` masked is a known template."""
        return bool(self.templates) and (*norm[:i], _PLACEHOLDER, *norm[j:]) in self.templates

    def _fit(self, spans: list[_Span], norm: Sequence[str]) -> None:
        """Rule 3: each span's ``fit``, the template bigram log-probability of the text with the span masked
        (words left outside the span that templates never use cost much)."""
        if len(spans) < 2 or not self.bigrams:
            return
        seq = [_START, *norm, _END]
        cum = [0.0] * len(seq)  # cum[k]: log P(seq[1..k])
        for k in range(1, len(seq)):
            cum[k] = cum[k - 1] + self._logp(seq[k - 1], seq[k])
        for s in spans:
            s.fit = (cum[s.i] + self._logp(seq[s.i], _PLACEHOLDER) + self._logp(_PLACEHOLDER, seq[s.j + 1])
                     + cum[-1] - cum[s.j + 1])

    def _exact_spans(self, text: str, toks: list[tuple[str, int, int]], norm: list[str]) -> list[_Span]:
        index, prefixes, words = self.index, self.prefixes, self.template_words
        found: list[_Span] = []
        n = len(toks)
        for i in range(n):
            key = ""
            for j in range(i, min(n, i + self.max_tokens)):
                key = f"{key} {norm[j]}" if key else norm[j]
                end = toks[j][2]
                rows = index.get(key)
                if rows is None and _possessive(text, end):
                    rows = index.get(key[:-1])  # Heat's -> Heat
                    end -= 2
                if rows is not None:
                    found.append(_Span(i, j + 1, toks[i][1], end, rows, self._is_template(norm, i, j + 1),
                                       all(t in words for t in norm[i : j + 1])))
                if key not in prefixes:
                    break
        self._fit(found, norm)
        found.sort(key=_Span.rank)
        return found

    def _order(self, rows: Sequence[int], text: str, start: int,
               end: int) -> list[tuple[int, int, int, bool]]:
        """Rows sharing a normalised name as (row, start, end, verbatim), best first: the stored name written
        in the text exactly (the span widened to cover it), then equal but for case, then more edges, then
        row."""
        names = self.names
        lowered: str | None = None
        ranked = []
        for r in rows:
            name = names[r]
            cover = _cover(text, start, end, name)
            verbatim = cover is not None
            if cover is None:
                if lowered is None:
                    lowered = text.lower()
                if len(lowered) == len(text):  # lower() kept the offsets
                    cover = _cover(lowered, start, end, name.lower())
            s, e = cover or (start, end)
            ranked.append(((not verbatim, cover is None, -int(self.degree[r]), r), (r, s, e, verbatim)))
        ranked.sort()
        return [item for _, item in ranked]

    # ------------------------------------------------------------------ near-misses
    def _fuzzy(self, toks: list[tuple[str, int, int]], norm: Sequence[str],
               whole_only: bool = False) -> list[_Span]:
        """Near-miss spans, best first: candidate spans → names sharing trigrams → :func:`similarity`.
        ``whole_only``: the tokens are one span (a bracket), template words allowed."""
        if not toks or not self.keys:
            return []
        words = self.template_words
        token_norm = [t for t, _, _ in toks]
        n = len(toks)
        ranges = [(0, n)] if whole_only else [
            (i, j) for i in range(n) for j in range(i + 1, min(n, i + self.max_tokens) + 1)]
        spans: list[tuple[int, int, str, set[str]]] = []
        for i, j in ranges:
            part = token_norm[i:j]
            if not whole_only and all(t in words for t in part):
                continue
            compact = "".join(part)
            if len(compact) >= MIN_FUZZY_CHARS:
                spans.append((i, j, compact, _trigrams(compact)))
        if not spans:
            return []
        gids = (self.gram_ids.get(g) for g in set().union(*(s[3] for s in spans)))
        lists = [self.postings[g] for g in gids if g is not None]
        if not lists:
            return []
        # names most of whose trigrams occur somewhere in the candidate spans
        shared = np.bincount(np.concatenate(lists), minlength=len(self.keys))
        cover = shared / np.maximum(self.key_grams, 1)
        candidates = np.flatnonzero(cover >= 0.5)
        if len(candidates) > _FUZZY_CANDIDATES:
            order = np.lexsort((-shared[candidates], -cover[candidates]))
            candidates = candidates[order[:_FUZZY_CANDIDATES]]
        best: dict[tuple[int, int], _Span] = {}
        for k in candidates.tolist():
            key = self.keys[k]
            klen = int(self.key_lengths[k])
            kgrams: set[str] | None = None
            for i, j, compact, sgrams in spans:
                if not 0.7 * klen <= len(compact) <= klen / 0.7:
                    continue
                if kgrams is None:
                    kgrams = _trigrams(key.replace(" ", ""))
                if 2 * len(sgrams & kgrams) / (len(sgrams) + len(kgrams)) < _TRIGRAM_DICE:
                    continue
                sim = similarity(" ".join(token_norm[i:j]), key)
                if sim < FUZZY_SIMILARITY:
                    continue
                rows = self.index[key]
                prev = best.get((i, j))
                if prev is None or (sim, -len(rows)) > (prev.similarity, -len(prev.rows)):
                    template = bool(norm) and self._is_template(norm, i, j)
                    best[(i, j)] = _Span(i, j, toks[i][1], toks[j - 1][2], rows, template, False,
                                         similarity=sim, fuzzy=True)
        return sorted(best.values(), key=_Span.fuzzy_rank)
