"""The store's text and vector indexes: ``match`` and ``knn`` scores, representability, type search.

    StoreIndex(StoreCore("sqlite://")).match_scores("medical", "instance", "Disease", ["name"], "感冒", 10)  # {}

Contract: :meth:`StoreIndex.match_scores` ranks FTS5 rows (jieba tokens of :func:`index_tokens`, ORed) and
scores them in (0, 1]; on PostgreSQL it computes the same ranking — FTS5's ``bm25()`` (k1 = 1.2, b = 0.75, IDF
and average length over the whole text index, the row's length counting its scope token) in SQL, over a GIN
index of the stored tokens and the term statistics of ``kn_text_terms`` — so both backends return the same
items and scores (ties broken by row id on both). A SQLite index of at least ``KGRAG_KN_TEXT_STAGED_ROWS``
rows ranks in stages instead (:mod:`kgrag.network.store.text_rank`: the rare terms' rows first, the common terms'
rows only when they could rank — the same bm25 and the same rows, exact unless a sample of common-term rows had
to be cut). Index tokens hold letters and digits, plus the ``.`` of decimals
(``3.5``), which FTS5's tokenizer splits: PostgreSQL splits them too (:func:`fts_terms`), so document lengths,
term frequencies and document frequencies are FTS5's. One difference remains: a decimal in the *query* is the
phrase ``"3 5"`` for FTS5 and its two terms ORed on PostgreSQL. :meth:`StoreIndex.knn_scores` is
exact cosine with numpy over the float32 vectors of one (network, kind, type), loaded lazily and cached per
network version (on PostgreSQL too: ``bytea`` blobs, no pgvector — it is not packaged for Debian bookworm); :meth:`StoreIndex.representable` says which
texts the embedder can embed (others get no vector, and a knn query made of them returns nothing). Type search
(:meth:`StoreIndex.search_object_types`, :meth:`StoreIndex.search_relation_types`) combines the two per type
with a noisy-OR. The index also holds the embedders: :attr:`StoreIndex.embedder` (the store's own, created on
first need) and :meth:`StoreIndex.embedder_for` (the model a network's vectors were made with, so queries land in
the same space); its caches are per network version and :meth:`StoreIndex.forget` drops a reloaded network's;
after an incremental change an object type's vector index is moved forward by re-reading only the touched
instances' vectors (:meth:`~kgrag.network.store.core.StoreCore.touched_since`).
Everything here reads; the rows are written by :mod:`kgrag.network.store.load`.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import Float, Text, any_, bindparam, case, cast, func, literal, literal_column, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.engine import Connection

from kgrag.config import get_settings
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import fields_with
from kgrag.network.store.ann import AnnFiles
from kgrag.network.store.ann_search import TypeIndex, open_type_index, sample_vectors
from kgrag.network.store.core import StoreCore, driver_rows
from kgrag.network.store.text_layout import TextLayout, read_layout
from kgrag.network.store.text_rank import (
    RowSamples,
    SqliteText,
    fts_terms,
    sqlite_totals,
    staged_many,
    staged_rows,
)
from kgrag.rank.embedder_factory import TextEmbedder, make_embedder
from kgrag.rank.sentence_embedder import Embedder
from kgrag.rank.tokenize import tokenize

__all__ = ["MAX_UNKNOWN_FRACTION", "Key", "StoreIndex", "fts_query", "index_tokens"]

#: the caller's key of one request of :meth:`StoreIndex.match_scores_many`
Key = TypeVar("Key", bound=Hashable)

#: a text with more unknown model tokens than this fraction gets no embedding (see NetworkStore.representable)
MAX_UNKNOWN_FRACTION = 0.34


@dataclass
class _VectorIndex:
    ids: np.ndarray  # object array of item ids, one per row
    fields: np.ndarray  # object array of field names
    matrix: np.ndarray  # float32 (rows, dim)
    _by_fields: dict[tuple[str, ...] | None, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)

    def rows_for(self, fields: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
        """``(row numbers, their vectors as one contiguous matrix)`` of the rows of ``fields`` (None: all),
        computed once per field set: a knn query then multiplies a ready matrix instead of copying the rows
        out of the whole index (``matrix[rows]``) on every call."""
        key = None if fields is None else tuple(sorted(set(fields)))
        cached = self._by_fields.get(key)
        if cached is None:
            if key is None:
                cached = (np.arange(len(self.ids)), self.matrix)
            else:
                rows = np.flatnonzero(np.isin(self.fields, list(key)))
                cached = (rows, np.ascontiguousarray(self.matrix[rows]))
            self._by_fields[key] = cached  # a benign race: two threads may both compute the same entry
        return cached


#: FTS5 ranking over the index only, then the best rows joined back (see kgrag.network.schema.tables)
_FTS_MATCH = text(
    "SELECT r.item_id AS item_id, r.field AS field, r.text AS text, m.rank AS rank FROM "
    "(SELECT rowid AS rid, bm25(kn_text, 1.0, 0.0) AS rank FROM kn_text WHERE kn_text MATCH :q "
    "ORDER BY rank, rid LIMIT :n) AS m JOIN kn_text_rows AS r ON r.id = m.rid ORDER BY m.rank, m.rid"
)

#: FTS5 queries one statement of :meth:`StoreIndex.match_scores_many` runs (SQLite allows 500 compound terms)
_MATCHES_PER_STATEMENT = 200


@lru_cache(maxsize=_MATCHES_PER_STATEMENT)
def _fts_match_union(n: int) -> Any:
    """:data:`_FTS_MATCH` for ``n`` queries ``:q0 … :q{n-1}`` in one statement (``UNION ALL``), each ranked and
    limited on its own; each row carries its query's number as ``request``, in (request, rank, rowid) order."""
    parts = " UNION ALL ".join(
        f"SELECT * FROM (SELECT {i} AS request, rowid AS rid, bm25(kn_text, 1.0, 0.0) AS rank FROM kn_text "
        f"WHERE kn_text MATCH :q{i} ORDER BY rank, rid LIMIT :n)" for i in range(n))
    return text(
        "SELECT m.request AS request, r.item_id AS item_id, r.field AS field, r.text AS text, m.rank AS rank "
        f"FROM ({parts}) AS m JOIN kn_text_rows AS r ON r.id = m.rid ORDER BY m.request, m.rank, m.rid")


#: an object type's knn search runs on the knn threads beside the text read (:meth:`StoreIndex.prefetched_matches`)
#: when it answers from ANN bases or has at least this many instances: the exact scan of the 1M shop network's
#: 10,000 suppliers took ~1.6 ms of the query's one thread; a tiny type's is shorter than the hand-off
KNN_THREAD_MIN_ROWS = 5_000

#: :meth:`StoreIndex.prefetched_matches`' answers for the running thread or task
_MATCH_MEMO: ContextVar[dict[tuple, dict[str, float]] | None] = ContextVar("kgrag_match_memo", default=None)
#: its knn answers searched on the knn threads, by (network, kind, type, fields, query, limit, version)
_KNN_MEMO: ContextVar[dict[tuple, dict[str, float]] | None] = ContextVar("kgrag_knn_memo", default=None)


class _Searches:
    """How many :meth:`StoreIndex.prefetched_matches` blocks this process is inside right now: a search that finds
    others running reads its ANN types where it is (a busy server's cores are taken; handing every search's reads
    to the pool only queued them: 8 clients at 1M, 17.3-19.5 req/s against 20.7-22.0 inline)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0

    @contextmanager
    def entered(self) -> Iterator[int]:
        """Inside: how many other blocks were running when this one entered."""
        with self.lock:
            others = self.running
            self.running += 1
        try:
            yield others
        finally:
            with self.lock:
                self.running -= 1


_SEARCHES = _Searches()


@lru_cache(maxsize=4)
def _knn_pool(threads: int) -> ThreadPoolExecutor:
    """The threads a query's ANN searches run on (usearch lets go of the GIL while it searches):
    ``KGRAG_KN_KNN_THREADS``."""
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kgrag-knn")

#: FTS5's bm25() constants
_K1, _B = 1.2, 0.75


#: a new version's layout read starts only this many times the last read's duration after that read began: the
#: reads take at most a quarter of a core however often the networks change (reads meanwhile name their scopes)
_LAYOUT_SHARE = 4.0


def _epoch(conn: Connection) -> tuple[Any, ...]:
    """Every network's (id, version): what the text index's cached figures are valid for (SQLite: read by the
    driver, 4 µs, where SQLAlchemy's execution took ~60 µs of every staged query)."""
    return tuple(driver_rows(conn, f"SELECT kn_id, version FROM {t.networks.name} ORDER BY kn_id", ()))


@dataclass
class _TextCache:
    """What the staged text ranking keeps at one ``epoch`` (:func:`_epoch`): FTS5's totals, the common terms'
    row counts, (scope, term) row samples, and the index's layout once read (``layout_done``)."""

    epoch: tuple[Any, ...]
    totals: tuple[int, int]
    term_rows: dict[str, int] = field(default_factory=dict)
    samples: RowSamples = field(default_factory=RowSamples)
    layout: TextLayout | None = None
    layout_started: threading.Event = field(default_factory=threading.Event)
    layout_done: threading.Event = field(default_factory=threading.Event)


def _float(value: float) -> Any:
    """A bound double-precision parameter (PostgreSQL would read a plain literal as ``numeric``)."""
    return literal(value, Float(precision=53))


def _scores_of_rows(rows: Sequence[Any], tokens: list[str], limit: int) -> dict[str, float]:
    """:meth:`StoreIndex.match_scores`' scores of its ranked rows (``item_id``, ``text``, ``rank``)."""
    if not rows:
        return {}
    best = max(-r.rank for r in rows) or 1.0
    query_set = set(tokens)
    scores: dict[str, float] = {}
    for r in rows:
        padded = f" {r.text} "  # token lookups, not a split of a possibly long field text
        coverage = sum(f" {tok} " in padded for tok in query_set) / len(query_set)
        coverage = max(coverage, 0.5 / len(query_set))
        rel = max(-r.rank, 0.0) / best if best > 0 else 1.0
        score = min(1.0, coverage * (0.5 + 0.5 * rel))
        if score > scores.get(r.item_id, 0.0):
            scores[r.item_id] = score
    return dict(sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit])


def _terms(tokens: Sequence[str]) -> list[str]:
    """The index terms of query tokens (a decimal's digit runs), each once, in order."""
    return list(dict.fromkeys(term for tok in tokens for term in fts_terms(tok)))


def fts_query(tokens: Sequence[str]) -> str:
    """An FTS5 query ORing the tokens, each a quoted string (so no token is read as FTS syntax)."""
    return " OR ".join('"' + tok.replace('"', '""') + '"' for tok in tokens)


_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{3,}")


def index_tokens(text_value: str) -> list[str]:
    """Tokens for the text index and for match queries: ``kgrag.rank.tokenize`` (jieba for Chinese) plus the
    character bigrams of every Chinese token of 3+ characters, so that words jieba segments differently in a
    query and a document (常用药 / 常用药品) still share tokens. Order kept, duplicates dropped."""
    out: dict[str, None] = {}
    for tok in tokenize(text_value):
        out.setdefault(tok, None)
        if _CJK_RUN.fullmatch(tok):
            for i in range(len(tok) - 1):
                out.setdefault(tok[i : i + 2], None)
    return list(out)


#: a word no vocabulary holds (warming an embedder's out-of-vocabulary path)
_UNSEEN_WORD = "kgrag-warm-qzxv"


class StoreIndex:
    """``match``/``knn`` scorers and type search over the indexes of ``core``'s database, and the embedders
    that make and query the vectors (see the module docstring).

    ``embedder`` defaults to ``Embedder.from_settings()`` (created on first need: loading or a knn query).
    """

    def __init__(self, core: StoreCore, embedder: Embedder | None = None) -> None:
        self.core = core
        self._embedder = embedder
        self._embedders: dict[str, tuple[str, TextEmbedder]] = {}  # kn_id -> (version, its vectors' model)
        self._representable: dict[tuple[str, str], bool] = {}  # (model, query) -> representable (bounded)
        self._vectors: dict[tuple[str, str, str], tuple[str, _VectorIndex]] = {}
        self._ann: dict[tuple[str, str], TypeIndex] = {}  # (kn_id, object type) -> its ANN knn at a version
        self._ann_locks: dict[tuple[str, str], threading.Lock] = {}
        #: (kn_id, least instances) -> (version, its knn types that large: :meth:`_knn_types`)
        self._knn_types_of: dict[tuple[str, int], tuple[str, dict[str, list[str]]]] = {}
        self._pending: dict[str, tuple[str, bool]] = {}  # kn_id -> (version, instance vectors deferred)
        #: what the staged text ranking keeps while no network of the database changes (by their versions)
        self._text_cache: _TextCache | None = None
        #: (when the last layout read began, how long it took): the next waits _LAYOUT_SHARE times as long
        self._layout_clock: tuple[float, float] = (-math.inf, 0.0)
        #: kn_id -> (version, the queries its ANN bases are calibrated on)
        self._calibration_queries: dict[str, tuple[str, np.ndarray]] = {}

    def forget(self, kn_id: str) -> None:
        """Drop ``kn_id``'s cached vector indexes and embedder (after a load)."""
        with self.core.lock:
            for key in [k for k in self._vectors if k[0] == kn_id]:
                del self._vectors[key]
            for key in [k for k in self._ann if k[0] == kn_id]:
                del self._ann[key]
            self._embedders.pop(kn_id, None)
            self._calibration_queries.pop(kn_id, None)

    def vectors_pending(self, kn_id: str) -> bool:
        """Whether ``kn_id``'s instance vectors are deferred and not all made yet (``kn load --defer-vectors``,
        :mod:`kgrag.network.store.fill`): knn over its instances then answers nothing and no vector index is
        built from a part of them. Cached per version (the fill ends by setting a new one)."""
        version = self.core.schema(kn_id)[0]
        cached = self._pending.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        pending = self.core.vectors_pending(kn_id) is not None
        with self.core.lock:
            self._pending[kn_id] = (version, pending)
        return pending

    # ------------------------------------------------------------------ ANN (big object types)
    @property
    def ann_files(self) -> AnnFiles:
        """Where this database's ANN bases live (:class:`kgrag.network.store.ann.AnnFiles`)."""
        return AnnFiles.for_database(self.core.engine.url.render_as_string(hide_password=False),
                                     get_settings().work_dir)

    def ann_types(self, kn_id: str) -> dict[str, list[str]]:
        """The object types of ``kn_id`` that answer knn from ANN bases, with their ``knn`` fields: those with at
        least ``KGRAG_KN_ANN_MIN_ROWS`` instances (none when it is 0)."""
        min_rows = get_settings().kn_ann_min_rows
        return self._knn_types(kn_id, min_rows) if min_rows > 0 else {}

    def _knn_types(self, kn_id: str, min_rows: int) -> dict[str, list[str]]:
        """The object types of ``kn_id`` with ``knn`` fields and at least ``min_rows`` instances (as its last load
        or change counted them), with those fields, the largest type first; kept per network version."""
        version, network, _ = self.core.schema(kn_id)
        cached = self._knn_types_of.get((kn_id, min_rows))
        if cached is not None and cached[0] == version:
            return cached[1]
        by_type = self.core.network_stats(kn_id).get("instances_by_type") or {}
        found = {type_id: fields for type_id, fields in sorted(fields_with(network, "knn").items(),
                                                              key=lambda kv: -by_type.get(kv[0], 0))
                 if fields and by_type.get(type_id, 0) >= min_rows}
        self._knn_types_of[(kn_id, min_rows)] = (version, found)
        return found

    def _ann_index(self, kn_id: str, version: str, type_id: str, fields: list[str]) -> TypeIndex:
        key = (kn_id, type_id)
        cached = self._ann.get(key)
        if cached is not None and cached.version == version:
            return cached
        with self.core.lock:
            lock = self._ann_locks.setdefault(key, threading.Lock())
        with lock:  # one build or catch-up per type at a time; other types go on
            cached = self._ann.get(key)
            if cached is not None and cached.version == version:
                return cached
            typed = open_type_index(self.core.engine, self.ann_files, kn_id, type_id, fields, version,
                                    self.core.recorded_embedder(kn_id), lambda: self._calibration(kn_id, version))
            with self.core.lock:
                self._ann[key] = typed
            return typed

    def _calibration(self, kn_id: str, version: str) -> np.ndarray:
        """The queries an ANN base of ``kn_id`` at ``version`` is calibrated on: a draw from the vectors of every
        knn field of the network (:func:`~kgrag.network.store.ann_search.sample_vectors`, reading each field's
        ids: ~4 s at 1M), made once per version for all the bases built at it."""
        cached = self._calibration_queries.get(kn_id)
        if cached is None or cached[0] != version:
            knn_fields = [(tid, name) for tid, names in fields_with(self.core.schema(kn_id)[1], "knn").items()
                          for name in names]
            cached = (version, sample_vectors(self.core.engine, kn_id, knn_fields))
            with self.core.lock:
                self._calibration_queries[kn_id] = cached
        return cached[1]

    def build_ann(self, kn_id: str, progress: Callable[[str, int, int], None] | None = None) -> int:
        """Open (building where missing or stale) the ANN bases of every big object type of ``kn_id``: what a load
        does after its commit, so the first query does not; returns the rows they answer for. ``progress("ann",
        types done, types)`` hears each type."""
        version = self.core.schema(kn_id)[0]
        big = {} if self.vectors_pending(kn_id) else self.ann_types(kn_id)
        rows = 0
        for done, (type_id, fields) in enumerate(big.items(), 1):
            rows += self._ann_index(kn_id, version, type_id, fields).rows
            if progress is not None:
                progress("ann", done, len(big))
        return rows

    # ------------------------------------------------------------------ embedders
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder.from_settings()
        return self._embedder

    def embedder_for(self, kn_id: str) -> TextEmbedder:
        """The embedder that made ``kn_id``'s vectors (its recorded ``embedder`` name), so queries land in the
        same space: the store's own embedder when the names agree or none was recorded, else
        :func:`kgrag.rank.embedder_factory.make_embedder` of the recorded name (e.g. ``fasttext:…`` domain vectors)."""
        version = self.core.schema(kn_id)[0]
        cached = self._embedders.get(kn_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        name = self.core.recorded_embedder(kn_id)
        own_name = self._embedder.model_name if self._embedder is not None else get_settings().embedder
        embedder: TextEmbedder
        if not name or name == own_name:
            embedder = self.embedder
        else:
            embedder = make_embedder(name, get_settings().cache_dir)
        with self.core.lock:
            self._embedders[kn_id] = (version, embedder)
        return embedder

    # ------------------------------------------------------------------ scorers
    def match_scores(
        self, kn_id: str, kind: str, type_id: str, fields: list[str] | None, query: str, limit: int
    ) -> dict[str, float]:
        """Full-text candidates ``{item id: score}`` for ``query`` (:func:`index_tokens` ORed).

        Score of a (item, field) row = ``coverage * (0.5 + 0.5 * bm25 / best_bm25)``, where coverage is the
        fraction of the query's distinct tokens present in the field's tokens and best_bm25 the best bm25 among
        the matching rows (bm25 sign flipped so larger is better): in (0, 1], 1 for the best row containing every
        query token. An item's score is the max over its fields. At most ``limit`` items, best first.
        """
        memo = _MATCH_MEMO.get()
        if memo is not None and fields is not None:
            found = memo.get((kn_id, kind, type_id, tuple(fields), query, limit))
            if found is not None:
                return dict(found)
        tokens = index_tokens(query)
        if not tokens:
            return {}
        scopes = [t.scope_token(kn_id, kind, type_id, f) for f in (fields if fields is not None else ["*"])]
        if not scopes:
            return {}
        fetch = max(limit, 1) * 4
        if self.core.dialect == "sqlite":
            with self.core.engine.connect() as conn:
                source = self._staged_source(conn)
                if source is not None:
                    rows: list[Any] = staged_rows(source, scopes, tokens, fetch)[0]
                else:  # the index alone ranks (rowid + bm25); only the best ``fetch`` rows are read back
                    rows = list(conn.execute(_FTS_MATCH.bindparams(
                        q=f"scope : ({fts_query(scopes)}) AND text : ({fts_query(tokens)})", n=fetch)))
        else:
            rows = self._bm25_rows(scopes, tokens, fetch)
        return _scores_of_rows(rows, tokens, limit)

    def match_scores_many(
        self, kn_id: str, kind: str, requests: dict[Key, tuple[str, list[str]]], query: str, limit: int
    ) -> dict[Key, dict[str, float]]:
        """:meth:`match_scores` of many ``{key: (type id, fields)}`` for one ``query``. On SQLite one FTS5
        statement ranks the rows of every requested scope (the scope column weighs 0 in ``bm25``, so a row's rank
        does not depend on which scopes the query names); each request keeps the first ``4 × limit`` rows of its
        own scopes in (rank, rowid) order, as its own query would — the same scores. Elsewhere, or for one
        request: one :meth:`match_scores` each."""
        tokens = index_tokens(query)
        if self.core.dialect != "sqlite" or len(requests) <= 1 or not tokens:
            return {key: self.match_scores(kn_id, kind, tid, fields, query, limit)
                    for key, (tid, fields) in requests.items()}
        fetch = max(limit, 1) * 4
        keys = list(requests)
        rows_of: dict[Key, list[Any]] = {key: [] for key in keys}
        with self.core.engine.connect() as conn:
            source = self._staged_source(conn)
            if source is not None:  # a big index: ranked in stages, the rare terms' rows read once for all
                scopes = {key: [t.scope_token(kn_id, kind, requests[key][0], f) for f in requests[key][1]]
                          for key in keys}
                staged = staged_many(source, scopes, tokens, fetch)
                return {key: _scores_of_rows(staged[key][0], tokens, limit) for key in keys}
            for start in range(0, len(keys), _MATCHES_PER_STATEMENT):
                chunk = keys[start:start + _MATCHES_PER_STATEMENT]
                params: dict[str, Any] = {"n": fetch}
                for i, key in enumerate(chunk):
                    tid, fields = requests[key]
                    scopes = [t.scope_token(kn_id, kind, tid, f) for f in fields]
                    params[f"q{i}"] = f"scope : ({fts_query(scopes)}) AND text : ({fts_query(tokens)})"
                for r in conn.execute(_fts_match_union(len(chunk)), params):
                    rows_of[chunk[r.request]].append(r)
        return {key: _scores_of_rows(rows, tokens, limit) for key, rows in rows_of.items()}

    @contextmanager
    def prefetched_matches(self, kn_id: str, kind: str, requests: list[tuple[str, list[str]]], query: str,
                           limit: int, knn: Sequence[tuple[str, list[str], int]] = ()) -> Iterator[None]:
        """Within the block (this thread or task), :meth:`match_scores` of any ``(type id, fields)`` in
        ``requests`` for ``query`` and ``limit`` is answered from one :meth:`match_scores_many` read on entry
        (kn_search's instance recall: one text statement for all its types instead of one per type), and
        :meth:`knn_scores` of any ``(type id, fields, limit)`` of ``knn`` whose type answers from ANN bases or
        has at least :data:`KNN_THREAD_MIN_ROWS` instances from searches made on entry on :func:`_knn_pool`'s
        threads while the text is read (``KGRAG_KN_KNN_THREADS``; only when no other search of the process is
        running: :class:`_Searches`) (the same scores: they are :meth:`knn_scores`' own); any other call runs as
        usual."""
        with _SEARCHES.entered() as others:
            searches = self._knn_searches(kn_id, kind, knn, query) if not others else {}
            try:
                found = self.match_scores_many(kn_id, kind, {(tid, tuple(f)): (tid, f) for tid, f in requests},
                                               query, limit)
            finally:
                wait(searches.values())  # nothing left running past the block, whatever the text read did
            memo = {(kn_id, kind, key[0], key[1], query, limit): scores for key, scores in found.items()}
            knn_memo = {key: future.result() for key, future in searches.items()}
            tokens = _MATCH_MEMO.set(memo), _KNN_MEMO.set(knn_memo)
            try:
                yield
            finally:
                _MATCH_MEMO.reset(tokens[0])
                _KNN_MEMO.reset(tokens[1])

    def _knn_searches(self, kn_id: str, kind: str, knn: Sequence[tuple[str, list[str], int]], query: str
                      ) -> dict[tuple, Any]:
        """The futures of :meth:`knn_scores` of the ``knn`` requests on types worth a thread (ANN bases, or at
        least :data:`KNN_THREAD_MIN_ROWS` instances), by their memo key."""
        threads = get_settings().kn_knn_threads
        ready = threads and kind == "instance" and knn and query.strip() and not self.vectors_pending(kn_id)
        # an ANN search, or an exact scan long enough to be worth a thread (not a tiny type's)
        ann_rows = get_settings().kn_ann_min_rows
        least = min(KNN_THREAD_MIN_ROWS, ann_rows) if ann_rows > 0 else KNN_THREAD_MIN_ROWS
        # the largest type first: its search is the longest (the threads finish closer together)
        order = {tid: i for i, tid in enumerate(self._knn_types(kn_id, least) if ready else ())}
        wanted = sorted(dict.fromkeys((tid, tuple(fields), limit) for tid, fields, limit in knn if tid in order),
                        key=lambda w: order[w[0]])
        if not wanted:
            return {}
        version = self.core.schema(kn_id)[0]
        embedder = self.embedder_for(kn_id)
        if self._query_representable(query, embedder):
            embedder.encode_query(query)  # once, here: the searches find it in the embedder's query cache
        pool = _knn_pool(threads)
        return {(kn_id, kind, tid, fields, query, limit, version):
                pool.submit(self.knn_scores, kn_id, kind, tid, list(fields), query, limit, version)
                for tid, fields, limit in wanted}

    def _staged_source(self, conn: Connection) -> SqliteText | None:
        """The FTS5 index as a :class:`~kgrag.network.store.text_rank.TextSource` when it holds at least
        ``KGRAG_KN_TEXT_STAGED_ROWS`` rows (its queries are then ranked in stages), else None (FTS5's bm25).
        The first such query of a version starts reading the index's layout on another thread
        (:meth:`_read_text_layout`); until it is read, reads name their scopes by phrase (the same rows)."""
        epoch = _epoch(conn)
        cached = self._text_cache
        if cached is None or cached.epoch != epoch:
            cached = _TextCache(epoch, sqlite_totals(conn))
            with self.core.lock:
                self._text_cache = cached
        if cached.totals[0] < get_settings().kn_text_staged_rows:
            return None
        if not get_settings().kn_text_ranges:
            return SqliteText(conn, cached.totals, cached.term_rows, cached.samples)
        if not cached.layout_started.is_set():
            with self.core.lock:  # one read at a time, and at most a quarter of a core's time (frequent writes)
                last_start, last_took = self._layout_clock
                start = (not cached.layout_started.is_set()
                         and time.monotonic() - last_start >= _LAYOUT_SHARE * last_took)
                if start:
                    cached.layout_started.set()
                    self._layout_clock = (time.monotonic(), math.inf)
            if start:
                threading.Thread(target=self._read_text_layout, args=(cached,), name="kgrag-text-layout",
                                 daemon=True).start()
        return SqliteText(conn, cached.totals, cached.term_rows, cached.samples, cached.layout)

    def _read_text_layout(self, cached: _TextCache) -> None:
        """Read the text index's layout (:func:`~kgrag.network.store.text_layout.read_layout`: ~1 s at a million
        instances, SQLite's own time) into ``cached`` if the index is still at its version; never raises (the
        reads then keep naming their scopes by phrase)."""
        began = time.monotonic()
        try:
            with self.core.engine.connect() as conn:  # one read transaction: the versions and the rows agree
                if _epoch(conn) == cached.epoch:
                    cached.layout = read_layout(conn)
        except Exception:  # noqa: BLE001 - an optimisation: its failure leaves the exact scope-phrase reads
            cached.layout = None
        finally:
            with self.core.lock:
                self._layout_clock = (began, time.monotonic() - began)
            cached.layout_done.set()

    def _bm25_rows(self, scopes: list[str], tokens: list[str], fetch: int) -> list[Any]:
        """The best ``fetch`` text rows of ``scopes`` holding any of ``tokens``, ranked as FTS5's ``bm25()``
        ranks them (PostgreSQL; see the module docstring): ``(item_id, field, text, rank)``, rank ascending."""
        tt, ti = t.text_terms, t.text_index
        # one snapshot for the statistics and the rows (a concurrent load commits before or after both)
        with self.core.engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
            tokens = _terms(tokens)
            stats = {r.token: (int(r.rows), int(r.tokens)) for r in conn.execute(
                select(tt.c.token, func.sum(tt.c.rows).label("rows"), func.sum(tt.c.tokens).label("tokens"))
                .where(tt.c.token.in_(["", *tokens])).group_by(tt.c.token))}
            n_rows, n_tokens = stats.get("", (0, 0))
            present = [tok for tok in tokens if tok in stats]
            if not n_rows or not present:
                return []
            avgdl = float(n_tokens + n_rows) / float(n_rows)  # FTS5 counts each row's scope token too
            split = func.translate(ti.c.text, literal_column("'.'"), literal_column("' '"))
            arr = func.string_to_array(split, literal_column("' '"), type_=ARRAY(Text))
            rows = (
                select(ti.c.id, ti.c.item_id, ti.c.field, ti.c.text, arr.label("arr"))
                .where(ti.c.scope.in_(scopes), arr.overlap(bindparam("tokens", present, type_=ARRAY(Text))))
                .offset(0)  # not flattened: the token array is split once per row
                .subquery()
            )
            length = func.cardinality(rows.c.arr) + 1
            norm = _float(_K1) * (_float(1 - _B) + (_float(_B) * length) / _float(avgdl))
            score: Any = _float(0.0)
            for tok in tokens:  # the query's order, as FTS5 sums its phrases
                if tok not in stats:
                    continue
                hits = stats[tok][0]
                idf = math.log((n_rows - hits + 0.5) / (hits + 0.5))
                idf = idf if idf > 0.0 else 1e-6
                if tok.isdigit():  # FTS5's aFreq: a digit run may recur in a row (the parts of decimals)
                    freq: Any = cast(func.cardinality(func.array_positions(rows.c.arr, literal(tok, Text))),
                                     Float(precision=53))
                else:  # index tokens are unique per row and only decimals split: once, when present
                    freq = _float(1.0)
                score = score + case((literal(tok, Text) == any_(rows.c.arr),
                                      _float(idf) * ((freq * _float(_K1 + 1.0)) / (freq + norm))),
                                     else_=_float(0.0))
            rank = (_float(-1.0) * score).label("rank")
            stmt = (select(rows.c.item_id, rows.c.field, rows.c.text, rank)
                    .order_by(rank, rows.c.id).limit(fetch))
            return list(conn.execute(stmt).all())

    def representable(self, texts: Sequence[str], embedder: TextEmbedder | None = None) -> list[bool]:
        """Whether the embedder can represent each text: at most :data:`MAX_UNKNOWN_FRACTION` of its model tokens
        are the tokenizer's unknown token. The default MiniLM has no vocabulary for most Chinese characters
        (``感冒`` → ``[UNK] [UNK]``), so such texts would all get the same vector and bogus cosines near 1;
        they get no vector (knn skips them, match still finds them) and a knn query made of them returns nothing.
        With a multilingual embedder (``KGRAG_EMBEDDER``) everything passes. True for all when the embedder
        has no inspectable tokenizer; an embedder with its own ``representable`` (domain vectors) answers itself.
        ``embedder`` defaults to the store's."""
        if not texts:
            return []
        embedder = embedder or self.embedder
        own = getattr(embedder, "representable", None)
        if own is not None:
            return list(own(texts))
        counter = getattr(embedder, "unknown_token_counts", None)
        counts = counter(texts) if counter is not None else None
        if counts is not None:  # the model folder's tokenizer alone: no model load (a load's texts by the 100k)
            return [total > 0 and unknown <= MAX_UNKNOWN_FRACTION * total for unknown, total in counts]
        try:
            tokenizer = embedder.model.tokenizer  # type: ignore[union-attr]
            unk = tokenizer.unk_token
        except Exception:  # noqa: BLE001 - an embedder without a HF tokenizer: trust it
            return [True] * len(texts)
        if unk is None:
            return [True] * len(texts)
        out = []
        for text_value in texts:
            pieces = tokenizer.tokenize(text_value)
            unknown = sum(1 for p in pieces if p == unk)
            out.append(bool(pieces) and unknown <= MAX_UNKNOWN_FRACTION * len(pieces))
        return out

    def _query_representable(self, query: str, embedder: TextEmbedder) -> bool:
        """:meth:`representable` for one query text, memoised per model (a search asks once per object type)."""
        key = (embedder.model_name, query)
        known = self._representable.get(key)
        if known is None:
            if len(self._representable) > 4096:
                self._representable.clear()
            known = self._representable[key] = self.representable([query], embedder)[0]
        return known

    def _vector_index(self, kn_id: str, version: str, kind: str, type_id: str) -> _VectorIndex:
        key = (kn_id, kind, type_id)
        cached = self._vectors.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        if cached is not None and kind == "instance":
            moved = self._moved_forward(kn_id, version, type_id, cached)
            if moved is not None:
                with self.core.lock:
                    self._vectors[key] = (version, moved)
                return moved
        v = t.vectors
        with self.core.engine.connect() as conn:
            rows = conn.execute(
                select(v.c.item_id, v.c.field, v.c.vector).where(
                    v.c.kn_id == kn_id, v.c.kind == kind, v.c.type_id == type_id
                )
            ).all()
        if rows:
            matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), -1)
        else:
            matrix = np.zeros((0, 1), np.float32)
        index = _VectorIndex(
            np.array([r.item_id for r in rows], dtype=object),
            np.array([r.field for r in rows], dtype=object),
            matrix,
        )
        with self.core.lock:
            self._vectors[key] = (version, index)
        return index

    def _moved_forward(self, kn_id: str, version: str, type_id: str, cached: tuple[str, _VectorIndex]
                       ) -> _VectorIndex | None:
        """The cached index of an object type's instance vectors moved to ``version`` by the one change that led
        there (:meth:`StoreCore.touched_since`): the touched instances' rows dropped and their current vectors
        read back — a few rows instead of the type's whole matrix. None when no such change leads there."""
        touched = self.core.touched_since(kn_id, cached[0], version)
        if touched is None:
            return None
        ids = sorted({item_id for tid, item_id in touched if tid == type_id})
        old = cached[1]
        if not ids:
            return old
        v = t.vectors
        with self.core.engine.connect() as conn:
            rows = [r for start in range(0, len(ids), 500) for r in conn.execute(
                select(v.c.item_id, v.c.field, v.c.vector).where(
                    v.c.kn_id == kn_id, v.c.kind == "instance", v.c.type_id == type_id,
                    v.c.item_id.in_(ids[start:start + 500])))]
            if self.core._version(conn, kn_id) != version:  # another change committed meanwhile
                return None
        keep = ~np.isin(old.ids.astype(str), np.array(ids, dtype=str)) if len(old.ids) else np.zeros(0, bool)
        dim = old.matrix.shape[1] if len(old.ids) else (len(rows[0].vector) // 4 if rows else 1)
        if rows and len(rows[0].vector) != 4 * dim:
            return None
        added = (np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), dim)
                 if rows else np.zeros((0, dim), np.float32))
        return _VectorIndex(
            np.concatenate([old.ids[keep], np.array([r.item_id for r in rows], dtype=object)]),
            np.concatenate([old.fields[keep], np.array([r.field for r in rows], dtype=object)]),
            np.concatenate([old.matrix[keep] if len(old.ids) else np.zeros((0, dim), np.float32), added]),
        )

    def warm_vector_indexes(self, kn_id: str) -> int:
        """Load the instance vector index of every object type of ``kn_id`` (what a first knn query would read) and
        ask the network's embedder about a word no vocabulary holds (a domain embedder's out-of-vocabulary path
        loads its n-gram hashing on first use: 1.5 s of a first question otherwise); returns the rows now in
        memory."""
        version, network, _ = self.core.schema(kn_id)
        self.representable([_UNSEEN_WORD], self.embedder_for(kn_id))
        if self.vectors_pending(kn_id):
            return 0
        big = self.ann_types(kn_id)
        return sum(self._ann_index(kn_id, version, ot.id, big[ot.id]).rows if ot.id in big
                   else len(self._vector_index(kn_id, version, "instance", ot.id).ids)
                   for ot in network.object_types)

    def knn_scores(
        self,
        kn_id: str,
        kind: str,
        type_id: str,
        fields: list[str] | None,
        query: str,
        limit: int,
        version: str | None = None,
    ) -> dict[str, float]:
        """Exact cosine neighbours ``{item id: score}`` of ``query``: top ``limit`` items (max over their
        fields), scores clipped to [0, 1]; a big type's from its ANN bases; none over the instances of a network
        whose vectors are deferred and not all made (:meth:`vectors_pending`)."""
        if version is None:
            version = self.core.schema(kn_id)[0]
        if kind == "instance" and self.vectors_pending(kn_id):
            return {}  # deferred vectors not all made: none of a part of them
        memo = _KNN_MEMO.get()
        if memo is not None and fields is not None:  # searched on the knn threads by prefetched_matches
            found_before = memo.get((kn_id, kind, type_id, tuple(fields), query, limit, version))
            if found_before is not None:
                return dict(found_before)
        big = self.ann_types(kn_id).get(type_id) if kind == "instance" else None
        if big:  # a big type: its ANN bases (approximate; bench/big_network.py measures recall@10)
            if not query.strip():
                return {}
            typed = self._ann_index(kn_id, version, type_id, big)
            embedder = self.embedder_for(kn_id)
            if not typed.rows or not self._query_representable(query, embedder):
                return {}
            found = typed.knn(embedder.encode_query(query), fields, max(limit, 1))
            return {item: float(min(1.0, max(0.0, sim))) for item, sim in found}
        index = self._vector_index(kn_id, version, kind, type_id)
        if not len(index.ids) or not query.strip():
            return {}
        embedder = self.embedder_for(kn_id)
        if not self._query_representable(query, embedder):
            return {}
        q = embedder.encode_query(query)
        rows, matrix = index.rows_for(fields)
        if not len(rows):
            return {}
        sims = matrix @ q
        # an item has at most one row per field, so the best ``limit * fields`` rows hold the best ``limit`` items
        need = max(limit, 1) * len(fields) if fields is not None else len(sims)
        if need < len(sims):
            top = np.argpartition(-sims, need - 1)[:need]
            order = top[np.lexsort((top, -sims[top]))]  # by similarity desc, ties by row (as a stable sort)
        else:
            order = np.argsort(-sims, kind="stable")
        out: dict[str, float] = {}
        for pos in order:
            item = index.ids[rows[pos]]
            if item not in out:
                out[item] = float(min(1.0, max(0.0, sims[pos])))
                if len(out) >= limit:
                    break
        return out

    # ------------------------------------------------------------------ type search
    def _search_types(self, kn_id: str, kind: str, query: str, limit: int) -> list[tuple[str, float]]:
        version = self.core.schema(kn_id)[0]
        if limit <= 0 or not query.strip():
            return []
        pool = max(limit, 50)
        cosine = self.knn_scores(kn_id, kind, "", None, query, pool, version=version)
        matched = self.match_scores(kn_id, kind, "", None, query, pool)
        scores = {
            item: 1.0 - (1.0 - cosine.get(item, 0.0)) * (1.0 - matched.get(item, 0.0))
            for item in cosine.keys() | matched.keys()
        }
        return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]

    def search_object_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """``knn(*, query) OR match(*, query)`` over object types, ``(id, score)`` by score desc.

        score = ``1 - (1 - cosine) * (1 - match)`` (a noisy-OR of the clipped cosine and the normalised match
        score of :meth:`match_scores`): either signal alone gives at least its own value (so it is never below
        ``max(cosine, match)``), and a type supported by both ranks above one supported by a single signal —
        which matters because the default MiniLM embedder is weak on Chinese, where match carries the signal.
        """
        return self._search_types(kn_id, "object_type", query, limit)

    def search_relation_types(self, kn_id: str, query: str, limit: int) -> list[tuple[str, float]]:
        """Same as :meth:`search_object_types` over relation types."""
        return self._search_types(kn_id, "relation_type", query, limit)
