"""The best rows of a full-text query without ranking every row that holds a common term (big text indexes).

    staged_rows(SqliteText(conn), scopes, ["order", "0021130"], fetch=40)  # ([TextRow, …], exact)

FTS5's ``bm25()`` ranks every row a query matches, and first counts the rows of every phrase of the query (the
scope phrases too): over a million-row network a query holding one common word ("order", "review") ranks
hundreds of thousands of rows for its 40 best (86 of one query's 87 ms). Here, with FTS5's own formula
(:func:`bm25`: k1 = 1.2, b = 0.75, IDF and average length over the whole index, a row's length counting its scope
token):

1. each query term's row count and the index's row and token totals come from :meth:`TextSource.stats`;
2. the rows holding any of the rarest terms — as many terms as together hold at most ``rare_rows`` rows — are read
   unranked (:meth:`TextSource.rows`) and scored over every query term they hold;
3. a row holding only the other (common) terms scores at most their IDF sum times the bm25 factor of the shortest
   possible row (one term and the scope token): when the ``fetch``-th best row of step 2 scores above that bound,
   step 2's best rows are the answer, exactly;
4. otherwise the rows holding any common term are read too, up to ``sample_rows`` (at least twice ``fetch``) in
   index order: when that read was not cut, the best of all read rows are exactly FTS5's; when it was, the rows
   holding every common term (the best of the rows that hold only common terms) are read as well, up to as many,
   and the best of all read rows answer — the best of a sample (``exact`` False).

:func:`staged_many` answers many requests (scope sets) of one query: the statistics and the rare terms' rows are
read once for all of them.

A read of the rows holding any common term, cut at ``sample`` rows in index order, is the merge of the first
``sample`` rows of each (scope, term) — a common term recurs across queries by definition, so
:class:`SqliteText` keeps those per-(scope, term) lists (:class:`RowSamples`, bounded, the caller's for as long as
the index does not change) and merges them instead of reading again: the same rows as one read.

Ties are broken by row id, as FTS5's ``ORDER BY rank, rowid``. Terms are the query's index tokens, as FTS5
reads them: a decimal (``23.50``) is the phrase of its digit runs (:func:`fts_terms`) — its rows counted by a
match, its frequency by adjacent runs. :class:`SqliteText` reads the FTS5
index (term counts from an ``fts5vocab`` table, totals from the index's own averages record).
"""

from __future__ import annotations

import heapq
import math
import sys
import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

from sqlalchemy import Connection

from kgrag.network.store.core import driver_rows
from kgrag.network.store.text_layout import TextLayout

__all__ = ["K1", "B", "RowSamples", "TextRow", "TextSource", "TextStats", "SqliteText", "bm25", "sqlite_totals",
           "staged_many", "staged_rows"]

#: the caller's key of one request of :func:`staged_many`
Key = TypeVar("Key", bound=Hashable)

#: FTS5's bm25() constants
K1, B = 1.2, 0.75

#: step 2 reads the rows of the rarest terms while together they hold at most this many rows
RARE_ROWS = 2_000

#: step 4 reads at most this many rows of the common terms per read
SAMPLE_ROWS = 200


class TextRow(NamedTuple):
    """One text row; ``rank`` is minus its bm25 (FTS5's sign: smaller is better)."""

    id: int
    item_id: str
    field: str
    text: str
    rank: float


@dataclass(frozen=True)
class TextStats:
    """What bm25 needs of the index: its rows, its tokens (every column) and each term's row count."""

    rows: int
    tokens: int
    term_rows: dict[str, int]

    def idf(self, term: str) -> float:
        hits = self.term_rows.get(term, 0)
        value = math.log((self.rows - hits + 0.5) / (hits + 0.5)) if self.rows else 0.0
        return value if value > 0.0 else 1e-6

    @property
    def avgdl(self) -> float:
        return self.tokens / self.rows if self.rows else 1.0


class TextSource(Protocol):
    """Where the rows and their statistics come from (one connection, one dialect)."""

    def stats(self, terms: Sequence[str]) -> TextStats: ...

    def rows(self, scopes: Sequence[str], terms: Sequence[str], every: bool, limit: int | None) -> list[tuple]:
        """``(id, item_id, field, text, scope)`` of the rows of ``scopes`` holding every (or any) of ``terms``, in id
        order, at most ``limit`` (None: all — asked only of rare terms, whose rows the source may read whole)."""
        ...


def fts_terms(text_value: str) -> list[str]:
    """The terms FTS5's ``unicode61`` tokenizer makes of an index text (space-joined index tokens): split on
    spaces and on the ``.`` of decimals — the same split as PostgreSQL's
    ``string_to_array(translate(text, '.', ' '), ' ')``."""
    return [term for term in text_value.replace(".", " ").split(" ") if term]


def bm25(row_terms: Sequence[str], terms: Sequence[str], stats: TextStats) -> float:
    """FTS5's ``bm25()`` of a row (its text's terms) for the query ``terms`` (summed in their order)."""
    return _Scorer(terms, stats).score(row_terms)


class _Scorer:
    """bm25 of rows for one query: the terms' IDFs computed once."""

    def __init__(self, terms: Sequence[str], stats: TextStats) -> None:
        self.weighted = [(tuple(fts_terms(term)), stats.idf(term)) for term in terms]
        self.avgdl = stats.avgdl

    def score(self, row_terms: Sequence[str], row_text: str | None = None) -> float:
        """bm25 of a row's terms, summed in the query's order; given the row's ``row_text``, a term it does not
        hold at all (not even inside another word) is passed over without counting."""
        norm = K1 * (1 - B + B * (len(row_terms) + 1) / self.avgdl)  # + the scope column's one token
        score = 0.0
        for phrase, idf in self.weighted:
            if row_text is not None and phrase[0] not in row_text:
                continue
            freq = row_terms.count(phrase[0]) if len(phrase) == 1 else _occurrences(row_terms, phrase)
            if freq:
                score += idf * (freq * (K1 + 1.0)) / (freq + norm)
        return score

    def rows(self, raw: Iterable[tuple]) -> list[TextRow]:
        """``(id, item_id, field, text, …)`` read rows as ranked :class:`TextRow`."""
        return [TextRow(r[0], r[1], r[2], r[3], -self.score(_split(r[3]), r[3])) for r in raw]


def _split(row_text: str) -> list[str]:
    """A stored row's terms (:func:`fts_terms` of a text without empty tokens)."""
    return (row_text.replace(".", " ") if "." in row_text else row_text).split()


def _occurrences(row_terms: Sequence[str], phrase: tuple[str, ...]) -> int:
    """How often ``phrase`` (a decimal's digit runs, FTS5's phrase) occurs in the row's terms, as FTS5 counts it."""
    size = len(phrase)
    if not size:
        return 0
    return sum(1 for i in range(len(row_terms) - size + 1) if tuple(row_terms[i:i + size]) == phrase)


def _bound(terms: Sequence[str], stats: TextStats) -> float:
    """The most a row holding only ``terms`` (once each) can score: the shortest row (one term + scope)."""
    norm = K1 * (1 - B + B * 2 / stats.avgdl)
    return sum(stats.idf(term) for term in terms) * (K1 + 1.0) / (1.0 + norm)


def _score_new(found: dict[int, TextRow], scorer: _Scorer, raw: list[tuple]) -> list[tuple]:
    """Score the read rows ``found`` does not hold yet into it; returns ``raw``."""
    found.update((row.id, row) for row in scorer.rows([r for r in raw if r[0] not in found]))
    return raw


def _ranked(rows: Iterable[TextRow], fetch: int) -> list[TextRow]:
    return sorted(rows, key=lambda r: (r.rank, r.id))[:fetch]


def staged_rows(source: TextSource, scopes: Sequence[str], terms: Sequence[str], fetch: int,
                rare_rows: int = RARE_ROWS, sample_rows: int = SAMPLE_ROWS) -> tuple[list[TextRow], bool]:
    """The best ``fetch`` rows of ``scopes`` holding any of ``terms`` by bm25, best first, and whether they are
    exactly FTS5's (module docstring)."""
    return staged_many(source, {0: scopes}, terms, fetch, rare_rows, sample_rows)[0]


def staged_many(source: TextSource, requests: Mapping[Key, Sequence[str]], terms: Sequence[str], fetch: int,
                rare_rows: int = RARE_ROWS, sample_rows: int = SAMPLE_ROWS) -> dict[Key, tuple[list[TextRow], bool]]:
    """:func:`staged_rows` of many ``{key: scopes}`` for one query: the statistics and the rare terms' rows are
    read once for all (one statement over every scope), the common terms' rows per request that needs them."""
    terms = list(dict.fromkeys(terms))
    out: dict[Key, tuple[list[TextRow], bool]] = {key: ([], True) for key in requests}
    if fetch <= 0 or not terms:
        return out
    stats = source.stats(terms)
    present = sorted((term for term in terms if stats.term_rows.get(term)), key=lambda x: (stats.term_rows[x], x))
    asked = {key: list(scopes) for key, scopes in requests.items() if scopes}
    if not present or not asked:
        return out
    rare: list[str] = []
    held = 0
    for term in present:
        if held + stats.term_rows[term] > rare_rows:
            break
        rare.append(term)
        held += stats.term_rows[term]
    common = present[len(rare):]
    scorer = _Scorer(terms, stats)
    by_scope: dict[str, list[TextRow]] = {}
    if rare:
        every_scope = list(dict.fromkeys(scope for scopes in asked.values() for scope in scopes))
        raw = source.rows(every_scope, rare, False, None)
        for row, scope in zip(scorer.rows(raw), (r[4] for r in raw), strict=True):
            by_scope.setdefault(scope, []).append(row)
    bound = _bound(common, stats) if common else 0.0
    sample = max(sample_rows, 2 * fetch)
    for key, scopes in asked.items():
        found = {row.id: row for scope in scopes for row in by_scope.get(scope, ())}
        best = _ranked(found.values(), fetch)
        if not common or (len(best) == fetch and -best[-1].rank > bound):
            out[key] = (best, True)
            continue
        read = len(_score_new(found, scorer, source.rows(scopes, common, False, sample)))
        exact = read < sample  # not cut: every row holding a common term was read
        if not exact and len(common) > 1:
            _score_new(found, scorer, source.rows(scopes, common, True, sample))
        out[key] = (_ranked(found.values(), fetch), exact)
    return out


def _varints(blob: bytes, count: int) -> list[int]:
    """The first ``count`` SQLite varints of ``blob`` (FTS5's averages record: rows, then tokens per column)."""
    out: list[int] = []
    i = 0
    while len(out) < count and i < len(blob):
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def sqlite_totals(conn: Connection) -> tuple[int, int]:
    """``(rows, tokens over every column)`` of the FTS5 index ``kn_text``, from its averages record (FTS5's own
    figures)."""
    blob = conn.exec_driver_sql("SELECT block FROM kn_text_data WHERE id = 1").scalar()
    if not blob:
        return 0, 0
    values = _varints(bytes(blob), 3)
    return (values[0], sum(values[1:])) if values else (0, 0)


class RowSamples:
    """The first rows (in index order) of (scope, term) pairs, as read, at most ``max_rows`` rows in all (the least
    recently used pairs go first); thread-safe. ``get`` answers a pair read with at least ``limit`` rows or read
    whole (fewer rows than its read asked for)."""

    #: rows kept by default (their texts and item ids; fields and scopes interned) — on the 1M shop network 9.4 of a
    #: query's 19.6 (scope, term) lookups missed with 100,000 rows, 4.1 with 300,000 (the process's max RSS +40 MB)
    MAX_ROWS = 300_000

    def __init__(self, max_rows: int = MAX_ROWS) -> None:
        self.max_rows = max_rows
        self._lists: OrderedDict[tuple[str, str], tuple[int, list[tuple]]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def get(self, scope: str, term: str, limit: int) -> list[tuple] | None:
        with self._lock:
            found = self._lists.get((scope, term))
            if found is None or (found[0] < limit and len(found[1]) >= found[0]):
                return None
            self._lists.move_to_end((scope, term))
            return found[1][:limit]

    def put(self, scope: str, term: str, asked: int, rows: list[tuple]) -> None:
        if len(rows) > self.max_rows:
            return
        with self._lock:
            old = self._lists.pop((scope, term), None)
            self._held += len(rows) - (len(old[1]) if old else 0)
            self._lists[(scope, term)] = (asked, rows)
            while self._held > self.max_rows:
                _, (_, dropped) = self._lists.popitem(last=False)
                self._held -= len(dropped)


class SqliteText:
    """:class:`TextSource` over the FTS5 table ``kn_text`` (columns text, scope) and its rows ``kn_text_rows``.

    ``totals`` (:func:`sqlite_totals`), ``term_rows`` (a cache of term row counts), ``samples`` (the first rows
    of (scope, term) pairs: :class:`RowSamples`) and ``layout`` (where each scope's rows lie:
    :class:`~kgrag.network.store.text_layout.TextLayout`) are the caller's, kept for as long as the index does not
    change (a common term's count walks its whole doclist: ~7 ms for 400,000 rows). With a layout, the scopes of a
    read are its id ranges instead of a scope phrase (the same rows)."""

    #: a term row count at least this large is worth keeping in the caller's cache
    CACHE_MIN_ROWS = 2_000

    def __init__(self, conn: Connection, totals: tuple[int, int] | None = None,
                 term_rows: dict[str, int] | None = None, samples: RowSamples | None = None,
                 layout: TextLayout | None = None) -> None:
        self.conn = conn
        self.totals = totals if totals is not None else sqlite_totals(conn)
        self.term_rows = term_rows if term_rows is not None else {}
        self.samples = samples
        self.layout = layout

    def stats(self, terms: Sequence[str]) -> TextStats:
        rows, tokens = self.totals
        counts = {term: self.term_rows[term] for term in terms if term in self.term_rows}
        missing = [term for term in terms if term not in counts]
        if missing:
            self.conn.exec_driver_sql(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.kn_text_vocab USING fts5vocab(main, kn_text, row)")
            for term in missing:
                if "." in term:  # a decimal: FTS5's phrase of its digit runs, its rows counted by a match
                    found = driver_rows(self.conn, "SELECT count(*) FROM kn_text WHERE kn_text MATCH :q",
                                        {"q": f'text : ("{term}")'}) if fts_terms(term) else []
                else:
                    found = driver_rows(self.conn, "SELECT doc FROM temp.kn_text_vocab WHERE term = :t", {"t": term})
                counts[term] = int(found[0][0] or 0) if found else 0
                if counts[term] >= self.CACHE_MIN_ROWS:
                    self.term_rows[term] = counts[term]
        return TextStats(rows, tokens, counts)

    def rows(self, scopes: Sequence[str], terms: Sequence[str], every: bool, limit: int | None) -> list[tuple]:
        if self.samples is None or every or limit is None:
            return self._read(scopes, terms, every, limit)
        # the first ``limit`` rows holding any term: the merge of each (scope, term)'s first ``limit`` (module doc)
        lists = []
        for scope in dict.fromkeys(scopes):
            for term in dict.fromkeys(terms):
                found = self.samples.get(scope, term, limit)
                if found is None:  # kept as plain tuples, the strings every row of the pair repeats interned
                    found = [(r[0], r[1], sys.intern(r[2]), r[3], sys.intern(r[4]))
                             for r in self._read([scope], [term], False, limit)]
                    self.samples.put(scope, term, limit, found)
                lists.append(found)
        out: list[tuple] = []
        seen: set[int] = set()
        for row in heapq.merge(*lists, key=lambda r: r[0]):
            if row[0] not in seen:
                seen.add(row[0])
                out.append(row)
                if len(out) >= limit:
                    break
        return out

    def _read(self, scopes: Sequence[str], terms: Sequence[str], every: bool, limit: int | None) -> list[tuple]:
        def quoted(values: Sequence[str], joiner: str) -> str:
            return joiner.join('"' + v.replace('"', '""') + '"' for v in values)

        terms_query = f"text : ({quoted(terms, ' AND ' if every else ' OR ')})"
        matched = ("SELECT r.id, r.item_id, r.field, r.text, r.scope FROM kn_text AS k JOIN kn_text_rows AS r "
                   "ON r.id = k.rowid WHERE kn_text MATCH :q")
        if limit is None:
            # every row of the terms (the rare terms' read: a few thousand rows at most), their scopes kept here —
            # FTS5's AND with the scopes' long doclists took twice as long (the 1M shop network: 6.9 → 3.4 ms)
            wanted = set(scopes)
            rows = driver_rows(self.conn, matched + " ORDER BY k.rowid", {"q": terms_query})
            return [row for row in rows if row[4] in wanted]
        ranges = self.layout.ranges(scopes) if self.layout is not None else None
        if ranges is None:
            query = f"scope : ({quoted(scopes, ' OR ')}) AND {terms_query}"
            return driver_rows(self.conn, matched + " ORDER BY k.rowid LIMIT :n", {"q": query, "n": limit})
        # the scopes' id ranges hold their rows and no other (text_layout): FTS5 seeks to them, no scope doclist
        ranged = matched + " AND k.rowid BETWEEN :lo AND :hi ORDER BY k.rowid LIMIT :n"
        out: list[tuple] = []
        for lo, hi in ranges:
            if len(out) >= limit:
                break
            out += driver_rows(self.conn, ranged, {"q": terms_query, "lo": lo, "hi": hi, "n": limit - len(out)})
        return out
