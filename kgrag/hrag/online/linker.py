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
  A span's normalised text is looked up as a name, then as a name without its leading article (``Beatles`` →
  ``The Beatles``), then as an **other name** the import read (``skos:altLabel`` …, the graph's ``alias_rows``;
  ``match_type="alias"``); its last word may be a possessive.
  Rows matched by their own name come before those matched otherwise. **Class nodes** (objects of ``rdf:type`` /
  ``type.object.type``: :func:`kgrag.graph.classes.class_rows`) rank after entities — a span naming only classes
  after every other span that passes rule 2, a class row after the entity rows of its span — so "what currency is
  used in italy" links Italy; a class is still linked when nothing else is.
* **Plurals**: a span whose last word made singular is a name (``Nobel Prizes`` → ``Nobel Prize``).
* **Partial names** (``"partial"``): the last words of a name (a surname: ``romney`` → ``Mitt Romney``), shared
  by at most :data:`MAX_PARTIAL_ROWS` names, most edges first (a popularity prior).
* **Near-misses**: when no span passes rule 1 or 2 (or only class spans do), plurals, partial names and
  near-misses come first (more of the text's words first; an exact surname before a near-miss of as many
  words). Spans that are not only template words (at least :data:`MIN_FUZZY_CHARS` letters/digits) are matched through a character-trigram inverted index of the
  normalised names; a name counts when :func:`kgrag.search.storage_forms.similarity` of the normalised span and
  name is at least :data:`FUZZY_SIMILARITY`; ranked by rule 1, similarity, then length. Only the first
  :data:`MAX_FUZZY_TOKENS` tokens of a text are searched this way.

:meth:`EntityLinker.candidates` lists every span's rows (partial names and near-misses included) with a score in
[0, 1] and an ``is_class`` flag, for a planner that chooses the topic jointly with its query graph. It also reads
**first words** of names (``nike`` → ``Nike, Inc.``, ``united states`` → ``United States of America``; a partial
name scores by the share of the name's words it says) and weighs what the words say: a degree (popularity) prior
(:data:`DEGREE_PRIOR`), one word of the graph's schema (its relation and class names) or a function word
(:data:`FUNCTION_WORDS`) ranked down unless capitalised in a text that capitalises names (``currency``,
``school``, ``us``), a capitalised name written in lower case in such a text ranked down (``speak`` is not
``Speak``), numbers (values to compare, not topics) and a span inside a longer one naming other rows (``martin``
in ``martin luther king``) ranked down. Measured by ``python -m bench.topic_linking`` (WebQSP / CWQ questions).

Normalisation (names and text alike, :func:`normalise`, which is :func:`kgrag.text.words_key`): Unicode
compatibility forms, casefold, accents dropped (``Amélie`` = ``Amelie``; ``ø æ œ ł đ ð þ`` spelled in ASCII),
curly quotes and backticks as ``'``. A token (:func:`kgrag.text.word_tokens`) is a run of letters/digits that
may hold ``'`` or ``.`` between two letters/digits; those are dropped without a space: ``Ocean's Eleven`` =
``Oceans Eleven``, ``L.A. Confidential`` = ``LA Confidential``; ``Se7en`` stays ``se7en``. ``&`` is the word
``and`` (``Mr. & Mrs. Smith`` = ``Mr and Mrs Smith``). Every other character separates tokens: ``Lock, Stock
and Two Smoking Barrels``, ``2001: A Space Odyssey``, ``Spider-Man`` = ``Spider Man``, ``WALL·E`` = ``WALL E``
(``Spiderman`` / ``WALLE`` are near-misses found at similarity 1, as ``similarity`` ignores spaces). A span's
last token may drop a possessive ``'s`` (``Heat's`` finds ``Heat``). Names with no letter or digit (``$``) are
found only by an exact bracket.

    .venv/bin/python -c 'from kgrag.graph.csr import CSRGraph; from kgrag.hrag.online.linker import EntityLinker; print(EntityLinker.from_graph(CSRGraph.load("work/metaqa/graph.npz")).topics("what movies did Temuera Morrison act in"))'
"""  # noqa: E501 - the runnable line

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kgrag.data.metaqa import TOPIC_SPAN
from kgrag.graph.classes import class_rows
from kgrag.graph.csr import CSRGraph
from kgrag.search.storage_forms import similarity
from kgrag.text import APOSTROPHES, word_tokens, words_key

__all__ = ["FUZZY_SIMILARITY", "MAX_FUZZY_TOKENS", "MAX_PARTIAL_ROWS", "MAX_SPAN_TOKENS", "MIN_FUZZY_CHARS",
           "Candidate", "EntityLinker", "Link", "normalise"]

#: a near-miss counts when :func:`similarity` of its normalised span and name is at least this
FUZZY_SIMILARITY = 0.85
#: longest candidate span, in tokens
MAX_SPAN_TOKENS = 15
#: only the first this many tokens of a text are searched for near-misses
MAX_FUZZY_TOKENS = 64
#: a fuzzy span needs at least this many letters/digits
MIN_FUZZY_CHARS = 4
#: a partial name (a name's last words: a surname) shared by more distinct names than this is a common word, not
#: indexed
MAX_PARTIAL_ROWS = 25
#: a partial name needs at least this many letters/digits
MIN_PARTIAL_CHARS = 3
#: leading articles a name may be written without (``the Beatles`` / ``Beatles``)
ARTICLES = ("the",)
#: candidates(): the degree prior's floor (a row with no edge); the best-connected row gets 1
DEGREE_PRIOR = 0.7
#: candidates(): a span inside a longer span that names something
NESTED_FACTOR = 0.85
#: candidates(): a span of numbers only
NUMBER_FACTOR = 0.5
#: candidates(): one word of the graph's schema or a function word, not capitalised in a text that capitalises names
COMMON_WORD_FACTOR = 0.6
#: candidates(): a capitalised name written in lower case in a text that capitalises names
LOWERED_FACTOR = 0.75
#: English function and question words: as a one-word span, a common word (:meth:`EntityLinker.candidates`)
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "of", "in", "on", "at", "by", "to", "for", "from", "with", "about", "into", "over", "under",
    "and", "or", "but", "not", "no", "yes", "if", "as", "than", "then", "so", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "done", "has", "have", "had", "can", "could", "will", "would",
    "shall", "should", "may", "might", "must", "what", "which", "who", "whom", "whose", "when", "where", "why",
    "how", "i", "me", "my", "we", "us", "our", "you", "your", "he", "him", "his", "she", "her", "it", "its",
    "they", "them", "their", "this", "that", "these", "those", "there", "here", "all", "any", "some", "each",
    "every", "most", "more", "less", "least", "many", "much", "few", "one", "first", "last", "other", "name",
    "named", "called", "kind", "type", "sort", "part", "get", "got", "go", "went", "make", "made", "use", "used",
    "also", "still", "ever", "now", "s"})
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


@dataclass(frozen=True)
class Link:
    entity: int  # graph row
    name: str  # the stored name (the storage form, not the user's spelling)
    start: int  # character span in the input text
    end: int
    match_type: str  # "bracket" | "exact" | "normalised" | "alias" | "partial" | "fuzzy"
    similarity: float  # 1.0 unless fuzzy


@dataclass(frozen=True)
class Candidate:
    """A candidate topic of :meth:`EntityLinker.candidates`: its link, a score in [0, 1] and whether the row is a
    class (type) node."""

    link: Link
    score: float
    is_class: bool


#: the normalised form of a name or text: its normalised tokens joined by single spaces (:func:`kgrag.text.words_key`)
normalise = words_key


def _is_cased(text: str, toks: Sequence[tuple[str, int, int]]) -> bool:
    """The text capitalises names: after its first word, some words start upper case and some lower case (not
    all lower case as many people type, not Title Case)."""
    upper = lower = False
    for _, start, _ in toks[1:]:
        first = text[start]
        upper |= first.isupper()
        lower |= first.islower()
        if upper and lower:
            return True
    return False


def span_lower(text: str, span: _Span) -> bool:
    """The span is written with no capital letter."""
    return not any(c.isupper() for c in text[span.start : span.end])


def _schema_words(names: Sequence[str]) -> frozenset[str]:
    """The normalised words of relation or class names (``people.person.place_of_birth``, ``placeOfBirth``,
    ``place of birth``)."""
    out: set[str] = set()
    for name in names:
        spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", re.sub(r"[._/#:]+", " ", name))
        out.update(normalise(spaced).split())
    return frozenset(out)


def _possessive(text: str, end: int) -> bool:
    """The token ending at ``end`` ends with a possessive ``'s``."""
    return end >= 3 and text[end - 1] in "sS" and text[end - 2] in APOSTROPHES


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


def _singulars(word: str) -> list[str]:
    """English singular forms of a plural word, most likely first (``prizes`` → prize, priz; ``cities`` → city)."""
    if len(word) < 4 or not word.endswith("s") or word.endswith("ss"):
        return []
    if word.endswith("ies"):
        return [f"{word[:-3]}y", word[:-1]]
    if word.endswith("es"):
        return [word[:-1], word[:-2]]
    return [word[:-1]]


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
    all_class: bool = False  # every row is a class (type) node: ranks after the entities
    alias: frozenset[int] = frozenset()  # rows matched by an other name only
    secondary: frozenset[int] = frozenset()  # rows not matched by their name while others are: ranked after them
    partial: bool = False  # the span is the last words of the rows' names (a surname)

    def rank(self) -> tuple:
        length = self.end - self.start
        return (not self.template, self.template_only, self.all_class, -self.fit, -length, len(self.rows),
                self.start)

    def fuzzy_rank(self) -> tuple:
        return (not self.template, self.all_class, -self.similarity, -(self.end - self.start), len(self.rows),
                self.start)

    def fallback_rank(self) -> tuple:
        """Partial names and near-misses together: more of the text's words first, an exact surname before a
        near-miss of as many words."""
        return (not self.template, self.all_class, -(self.j - self.i), self.fuzzy, -self.similarity,
                -(self.end - self.start), len(self.rows), self.start)


class EntityLinker:
    """Links spans of a text to graph rows; see the module docstring."""

    def __init__(self, names: Sequence[str], degree: np.ndarray, template_texts: Sequence[str] = (),
                 aliases: Sequence[tuple[int, str]] = (), classes: np.ndarray | Sequence[int] = (),
                 schema: Sequence[str] = ()) -> None:
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
        self._max_degree = float(self.degree.max()) if self.degree.size else 0.0
        self.is_class = np.zeros(len(self.names), dtype=bool)
        class_list = np.asarray(classes, dtype=np.int64)
        if class_list.size:
            self.is_class[class_list[(class_list >= 0) & (class_list < len(self.names))]] = True
        self._build_other_names(aliases)
        self._build_partial_names()
        #: words of the graph's relation and class names: one of them alone is a common word for candidates()
        self.schema_words = _schema_words([*schema, *(self.names[r] for r in np.flatnonzero(self.is_class).tolist())])

    @classmethod
    def from_graph(cls, graph: CSRGraph, template_texts: Sequence[str] = ()) -> EntityLinker:
        """The linker of ``graph``'s names, its other names read at import (``alias_rows`` / ``alias_names``), its
        class nodes (:func:`kgrag.graph.classes.class_rows`) and its relation names and labels (schema words)."""
        n = graph.num_entities
        degree = np.bincount(graph.head, minlength=n) + np.bincount(graph.tail, minlength=n)
        aliases = list(zip(np.asarray(graph.alias_rows).tolist(), graph.alias_names, strict=True))
        return cls(graph.entity_names, degree, template_texts, aliases, class_rows(graph),
                   [*graph.relations, *graph.relation_labels])

    # ------------------------------------------------------------------ building
    def _build_templates(self, template_texts: Sequence[str]) -> None:
        doc_freq: Counter[str] = Counter()
        templates: set[tuple[str, ...]] = set()
        unigrams: Counter[str] = Counter()
        bigrams: Counter[tuple[str, str]] = Counter()
        for text in template_texts:
            toks = tuple(t for t, _, _ in word_tokens(text))
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

    def _by_degree(self, rows: Sequence[int]) -> tuple[int, ...]:
        deg = self.degree
        return tuple(sorted(set(rows), key=lambda r: (-int(deg[r]), r)))

    def _add_prefixes(self, key: str, prefixes: set[str]) -> None:
        parts = key.split(" ")
        prefixes.update(" ".join(parts[:n]) for n in range(1, len(parts)))
        self.max_tokens = max(self.max_tokens, min(MAX_SPAN_TOKENS, len(parts)))

    def _build_other_names(self, aliases: Sequence[tuple[int, str]]) -> None:
        """Other keys of the rows: their other names (``alias_index``) and their names without a leading
        article (``article_index``: ``the beatles`` → ``beatles``); a span tries them after the names."""
        by_alias: dict[str, list[int]] = defaultdict(list)
        for row, name in aliases:
            key = normalise(name)
            if key and 0 <= row < len(self.names) and row not in self.index.get(key, ()):
                by_alias[key].append(row)
        by_article: dict[str, list[int]] = defaultdict(list)
        for key, rows in self.index.items():
            first, _, rest = key.partition(" ")
            if first in ARTICLES and rest:
                by_article[rest].extend(rows)
        self.alias_index = {k: self._by_degree(v) for k, v in by_alias.items()}
        self.article_index = {k: self._by_degree(v) for k, v in by_article.items()}
        for key in (*self.alias_index, *self.article_index):
            self._add_prefixes(key, self.prefixes)

    def _build_partial_names(self) -> None:
        """``partial_index`` (:meth:`link`'s): a name's last words (a surname: ``einstein`` of ``albert
        einstein``) → the rows named so, most edges first; not when those words are template words or digits
        only, shorter than :data:`MIN_PARTIAL_CHARS`, or shared by more than :data:`MAX_PARTIAL_ROWS` rows (a
        common word). :meth:`candidates` reads two more: ``suffix_index``, the last words again, starting with a
        word that is no template word or article (``united states`` of ``president of the united states``, not
        ``the united states``), and ``prefix_index``, a name's first words (``nike`` of ``nike inc``, ``united
        states`` of ``united states of america``), not ending with a template word or an article — both shared by
        at most :data:`MAX_PARTIAL_ROWS` distinct names (rows sharing one name are one name)."""
        words = self.template_words
        by_tail: dict[str, list[int]] = defaultdict(list)
        by_suffix: dict[str, list[int]] = defaultdict(list)
        by_prefix: dict[str, list[int]] = defaultdict(list)

        def usable(part: list[str], edge: str = "") -> bool:
            compact = "".join(part)
            return not (len(compact) < MIN_PARTIAL_CHARS or compact.isdigit() or edge in words or edge in ARTICLES
                        or all(t in words or t in ARTICLES for t in part))

        for key, rows in self.index.items():
            parts = key.split(" ")
            for n in range(1, len(parts)):
                tail, head = parts[n:], parts[:n]
                if usable(tail):
                    by_tail[" ".join(tail)].extend(rows)
                    if len(tail) == 1 or usable(tail, tail[0]):
                        by_suffix[" ".join(tail)].extend(rows)
                if usable(head, head[-1]):
                    by_prefix[" ".join(head)].extend(rows)
        names = self.names
        self.partial_index = {k: self._by_degree(v) for k, v in by_tail.items() if len(set(v)) <= MAX_PARTIAL_ROWS}
        self.suffix_index = {k: self._by_degree(v) for k, v in by_suffix.items()
                             if len({names[r] for r in v}) <= MAX_PARTIAL_ROWS}
        self.prefix_index = {k: self._by_degree(v) for k, v in by_prefix.items()
                             if len({names[r] for r in v}) <= MAX_PARTIAL_ROWS}
        self.partial_prefixes: set[str] = set()
        for key in self.partial_index:
            self._add_prefixes(key, self.partial_prefixes)
        self.suffix_prefixes: set[str] = set()
        for key in self.suffix_index:
            self._add_prefixes(key, self.suffix_prefixes)
        self.prefix_prefixes: set[str] = set()
        for key in self.prefix_index:
            self._add_prefixes(key, self.prefix_prefixes)

    def _lookup(self, key: str) -> tuple[tuple[int, ...], frozenset[int], frozenset[int]] | None:
        """The rows a normalised span names — by their name, then without its article, then by an other
        name —, which of them only an other name matched, and which not by their name (ranked after those
        that are); None for none."""
        rows = self.index.get(key, ())
        article = self.article_index.get(key, ())
        alias = self.alias_index.get(key, ())
        if not (article or alias):
            return (rows, frozenset(), frozenset()) if rows else None
        merged = tuple(dict.fromkeys((*rows, *article, *alias)))
        named = set(rows)
        return merged, frozenset(alias) - named - set(article), frozenset(merged[len(named):]) if named else \
            frozenset()

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

    def candidates(self, text: str, top: int = 5) -> list[Candidate]:
        """Up to ``top`` candidate topics, best score first, each row once: every span's rows (names, other
        names, partial names — a name's last or first words —, near-misses; a bracketed text: its brackets'
        only), scored in [0, 1] by :meth:`_score` and :meth:`_span_factor` — for a planner that chooses the topic
        jointly with its query; :meth:`link` is unchanged."""
        if not isinstance(text, str) or not text.strip() or top < 1:
            return []
        scored: dict[int, Candidate] = {}
        per_bracket = self._link_brackets(text)
        if per_bracket is not None:
            for links in per_bracket:
                for k, link in enumerate(links):
                    self._keep(scored, link, self._score(link, k, 1, template_only=False))
        else:
            toks = word_tokens(text)
            spans = self._plain_spans(text, toks, everything=True)
            cased = _is_cased(text, toks)
            for span in spans:
                factor = self._span_factor(span, spans, text, toks, cased)
                for k, link in enumerate(self._span_links(span, text)):
                    self._keep(scored, link, factor * self._score(link, k, span.j - span.i, span.template_only,
                                                                  span.template, cased and span_lower(text, span)))
        return sorted(scored.values(), key=lambda c: (-c.score, c.link.start, c.link.entity))[:top]

    def _keep(self, scored: dict[int, Candidate], link: Link, score: float) -> None:
        prev = scored.get(link.entity)
        if prev is None or score > prev.score:
            scored[link.entity] = Candidate(link, round(score, 4), bool(self.is_class[link.entity]))

    def _span_factor(self, span: _Span, spans: Sequence[_Span], text: str, toks: list[tuple[str, int, int]],
                     cased: bool) -> float:
        """What a span's words say of it as a topic, in (0, 1]: :data:`NESTED_FACTOR` inside a longer span that
        names other rows (``martin`` in ``martin luther king``); :data:`NUMBER_FACTOR` for a number (a value to
        compare, not a topic); :data:`COMMON_WORD_FACTOR` for one word of the graph's schema (its relation and
        class names) or of :data:`FUNCTION_WORDS` not capitalised in a text that capitalises names
        (``currency``, ``school``, ``us``)."""
        factor = 1.0
        width = span.j - span.i
        rows = set(span.rows)
        if any(o.i <= span.i and span.j <= o.j and o.j - o.i > width and not o.template_only and not o.all_class
               and not rows.issuperset(o.rows) for o in spans):
            factor *= NESTED_FACTOR
        words = [t for t, _, _ in toks[span.i : span.j]]
        if all(w.isdigit() for w in words):
            factor *= NUMBER_FACTOR
        elif width == 1 and (words[0] in self.schema_words or words[0] in FUNCTION_WORDS) \
                and not (cased and text[span.start].isupper() and span.i > 0):
            factor *= COMMON_WORD_FACTOR
        return factor

    def _score(self, link: Link, position: int, words: int, template_only: bool, template: bool = False,
               lowered: bool = False) -> float:
        """A candidate's score: how it matched (name 1, normalised .95, other name .9, a partial name .6 + .3 ×
        the share of the name's words it says, near-miss .7 × similarity) × how many words it covers (.7 for
        one … 1 for four) × .4 for template words only × .6 for a class node × .95 per row ranked before it on
        the same span × a degree prior (:data:`DEGREE_PRIOR` … 1) × :data:`LOWERED_FACTOR` where a text that
        capitalises names writes this capitalised name in lower case (``lowered``); a span that makes the text
        a known template is not discounted for its words."""
        if link.match_type == "partial":
            kind = 0.6 + 0.3 * min(1.0, max(words, 1) / max(1, len(word_tokens(link.name))))
        else:
            kind = {"bracket": 1.0, "exact": 1.0, "normalised": 0.95, "alias": 0.9,
                    "fuzzy": 0.7 * link.similarity}.get(link.match_type, 0.7)
        cover = 1.0 if template else 0.6 + 0.1 * min(max(words, 1), 4)
        deg = float(self.degree[link.entity]) if self.degree.size else 0.0
        prior = DEGREE_PRIOR + (1 - DEGREE_PRIOR) * math.log1p(deg) / math.log1p(max(self._max_degree, 1.0))
        score = kind * cover * prior * (0.95 ** min(position, 6))
        if template_only:
            score *= 0.4
        if self.is_class[link.entity]:
            score *= 0.6
        if lowered and link.name != link.name.lower():
            score *= LOWERED_FACTOR
        return min(1.0, score)

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
            toks = word_tokens(span)
            if not toks:
                out.append([])
                continue
            norm = [t for t, _, _ in toks]
            key = " ".join(norm)
            for mode in ("name", "plural", "partial"):
                hit = self._span_rows(key, norm[-1], span, len(span), mode)
                if hit is not None:
                    rows, alias, secondary, _ = hit
                    kind = "partial" if mode == "partial" else "normalised"
                    out.append([Link(r, self.names[r], s, e, "alias" if r in alias else kind, 1.0)
                                for r, s, e, _ in self._order(rows, text, start, end, secondary)])
                    break
            if hit is not None:
                continue
            fuzzy = self._fuzzy([(t, s + start, e + start) for t, s, e in toks], [], whole_only=True)
            out.append([Link(r, self.names[r], start, end, "fuzzy", fuzzy[0].similarity)
                        for r, _, _, _ in self._order(fuzzy[0].rows, text, start, end)] if fuzzy else [])
        return out

    # ------------------------------------------------------------------ plain text
    def _link_plain(self, text: str, top: int) -> list[Link]:
        toks = word_tokens(text)
        if not toks:
            return []
        out: list[Link] = []
        for span in self._plain_spans(text, toks):
            for link in self._span_links(span, text):
                if any(link.entity == o.entity for o in out):
                    continue
                out.append(link)
                if len(out) >= top:
                    return out
        return out

    def _plain_spans(self, text: str, toks: list[tuple[str, int, int]], everything: bool = False) -> list[_Span]:
        """The spans of plain text, best first: names (and other names); when none is a good one (rule 1 or 2,
        and not only class nodes) — or ``everything`` — the plurals, partial names and near-misses too, before
        them."""
        norm = [t for t, _, _ in toks]
        spans = self._exact_spans(text, toks, norm)
        if everything or not any((s.template or not s.template_only) and not s.all_class for s in spans):
            partial = self._exact_spans(text, toks, norm, "plural") + (
                self._exact_spans(text, toks, norm, "suffix") + self._exact_spans(text, toks, norm, "prefix")
                if everything else self._exact_spans(text, toks, norm, "partial"))
            fuzzy = self._fuzzy(toks[:MAX_FUZZY_TOKENS], norm[:MAX_FUZZY_TOKENS])
            extra = sorted(partial + fuzzy, key=_Span.fallback_rank) if partial else fuzzy
            if everything:
                return spans + extra
            spans = [s for s in extra if not s.all_class] + spans + [s for s in extra if s.all_class]
        return spans

    def _span_links(self, span: _Span, text: str) -> list[Link]:
        """The links of one span's rows, best first (:meth:`_order`)."""
        out = []
        for r, start, end, verbatim in self._order(span.rows, text, span.start, span.end, span.secondary):
            if span.fuzzy:
                out.append(Link(r, self.names[r], span.start, span.end, "fuzzy", span.similarity))
            elif r in span.alias or span.partial:
                out.append(Link(r, self.names[r], span.start, span.end, "alias" if r in span.alias else "partial",
                                1.0))
            else:
                out.append(Link(r, self.names[r], start, end, "exact" if verbatim else "normalised", 1.0))
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

    def _span_rows(self, key: str, last: str, text: str, end: int, mode: str = "name"
                   ) -> tuple[tuple[int, ...], frozenset[int], frozenset[int], int] | None:
        """(rows, rows matched by an other name only, rows not matched by their name while others are, span end)
        of a span's normalised ``key`` ending with token ``last`` at ``end``. ``mode`` ``name``: as written, else
        without a possessive ``'s`` (``Heat's``); ``plural``: only where that finds nothing, its last word
        singular (``Nobel Prizes``); ``partial``: as written or possessive, in the partial-name index
        (``suffix`` / ``prefix``: in the candidates' last-words / first-words indexes)."""
        index = {"partial": self.partial_index, "suffix": self.suffix_index, "prefix": self.prefix_index}.get(mode)
        lookup = (lambda k: (index[k], frozenset(), frozenset()) if k in index else None) \
            if index is not None else self._lookup
        found = lookup(key)
        if found is None and _possessive(text, end):
            found = lookup(key[:-1])  # Heat's -> Heat
            end -= 2
        if mode == "plural":
            if found is not None:
                return None
            stem = key[: len(key) - len(last)]
            for singular in _singulars(last):
                found = lookup(stem + singular)
                if found is not None:
                    break
        return None if found is None else (*found, end)

    def _all_class(self, rows: Sequence[int]) -> bool:
        return bool(self.is_class[list(rows)].all()) if rows else False

    def _exact_spans(self, text: str, toks: list[tuple[str, int, int]], norm: list[str],
                     mode: str = "name") -> list[_Span]:
        """Spans whose normalised text names rows, best first (:meth:`_Span.rank`); ``mode`` (see
        :meth:`_span_rows`): ``plural`` — named once the last word is singular, ``partial`` — the last words of
        names (:meth:`_build_partial_names`)."""
        partial = mode in ("partial", "suffix", "prefix")
        prefixes = {"partial": self.partial_prefixes, "suffix": self.suffix_prefixes,
                    "prefix": self.prefix_prefixes}.get(mode, self.prefixes)
        words = self.template_words
        found: list[_Span] = []
        n = len(toks)
        for i in range(n):
            key = ""
            for j in range(i, min(n, i + self.max_tokens)):
                key = f"{key} {norm[j]}" if key else norm[j]
                hit = self._span_rows(key, norm[j], text, toks[j][2], mode)
                if hit is not None:
                    rows, alias, secondary, end = hit
                    template_only = all(t in words for t in norm[i : j + 1])
                    if not (mode != "name" and template_only):
                        found.append(_Span(i, j + 1, toks[i][1], end, rows, self._is_template(norm, i, j + 1),
                                           template_only, all_class=self._all_class(rows), alias=alias,
                                           secondary=secondary, partial=partial))
                if key not in prefixes:
                    break
        self._fit(found, norm)
        found.sort(key=_Span.rank)
        return found

    def _order(self, rows: Sequence[int], text: str, start: int, end: int,
               secondary: frozenset[int] = frozenset()) -> list[tuple[int, int, int, bool]]:
        """Rows sharing a normalised name as (row, start, end, verbatim), best first: the stored name written
        in the text exactly (the span widened to cover it), then equal but for case, then entities before class
        nodes, rows matched by their name before the ``secondary`` ones (other names, a dropped article), then
        more edges, then row."""
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
            ranked.append(((not verbatim, cover is None, bool(self.is_class[r]), r in secondary, -int(self.degree[r]),
                            r), (r, s, e, verbatim)))
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
                                         similarity=sim, fuzzy=True, all_class=self._all_class(rows))
        return sorted(best.values(), key=_Span.fuzzy_rank)
