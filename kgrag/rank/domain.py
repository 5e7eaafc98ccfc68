"""Domain word vectors (FastText over jieba tokens) with the surface of :class:`kgrag.rank.sentence_embedder.Embedder`.

    DomainEmbedder("work/models/embeddings/medical").similarity("心梗", ["心肌梗死", "感冒"])  # cosines

Contract: a folder written by :func:`kgrag.rank.train_domain.train_domain_embeddings` holds ``meta.json``
(vocabulary, ``min_n``/``max_n``/``bucket``/``dim``, training config, fingerprint, corpus stats) and
``vectors.npz`` (``vectors``: the trained word vectors, ``vectors_ngrams``: the n-gram bucket vectors,
``trained_buckets``: which buckets some vocabulary word's n-grams hashed into, ``fingerprint``: meta.json's,
so a reader racing a retrain notices a mismatched pair). Nothing is pickled and
gensim is only imported for its n-gram hash functions. A word's FastText vector is its row of ``vectors`` when
it is in the vocabulary, else the mean of the bucket vectors of its character n-grams — computed with gensim's
own ``ft_ngram_hashes``, so it equals gensim's ``model.wv[word]``. A word *gets a vector* when it is in the
vocabulary or at least one of its n-grams falls in a trained bucket (a word whose buckets were never trained
would get gensim's random initial values). A text's vector is the mean of the L2-normalised vectors of its
tokens (:func:`kgrag.rank.tokenize.tokenize`, with the stop-word setting the model was trained with) that get
a vector, L2-normalised; a text without such a token gets a zero row (:meth:`DomainEmbedder.representable`).

Encoding is vectorised: tokens map to row ids through dicts, rows are gathered with numpy and summed per text
with ``np.add.reduceat`` in bounded chunks; out-of-vocabulary word vectors are cached per embedder. Large
batches are tokenised over a process pool (:func:`tokenize_many`).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgrag.rank.sentence_embedder import EmbedderStats
from kgrag.rank.tokenize import join_blocks, segment_blocks, text_blocks, tokenize, tokenize_cache

__all__ = [
    "META_FILE",
    "PREFIX",
    "VECTORS_FILE",
    "DomainEmbedder",
    "model_name_for",
    "ngram_hashes",
    "tokenize_many",
]

PREFIX = "fasttext:"
META_FILE = "meta.json"
VECTORS_FILE = "vectors.npz"

#: below this many characters a batch is tokenised in this process (a pool costs ~0.1 s to start)
PARALLEL_MIN_CHARS = 400_000
#: token rows gathered at once while summing (bounds the temporary (rows, dim) matrix)
_GATHER_ROWS = 1 << 18

_hash_fn: Callable[[str, int, int, int], list[int]] | None = None


def ngram_hashes(word: str, min_n: int, max_n: int, bucket: int) -> list[int]:
    """Bucket ids of ``word``'s character n-grams (``<word>`` wrapped, lengths ``min_n..max_n``), exactly as
    FastText/gensim compute them (gensim's ``ft_ngram_hashes``)."""
    global _hash_fn
    if _hash_fn is None:
        # on use: gensim costs ~1 s at import, and only domain vectors need it
        from gensim.models.fasttext import ft_ngram_hashes

        _hash_fn = ft_ngram_hashes
    return _hash_fn(word, min_n, max_n, bucket)


def _default_processes() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _segment_chunk(blocks: list[str]) -> list[tuple[str, ...]]:
    return segment_blocks(blocks)


def _segment_pool(blocks: list[str], procs: int) -> list[tuple[str, ...]]:
    """:func:`kgrag.rank.tokenize.segment_blocks` of ``blocks`` over a forked pool of ``procs`` workers."""
    tokenize("中文分词")  # initialise jieba (and its HMM tables) before forking
    total = sum(map(len, blocks))
    target = max(20_000, total // (procs * 8))  # characters per chunk: ~8 chunks per worker
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for block in blocks:
        current.append(block)
        size += len(block)
        if size >= target:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    # close + join, not terminate: a SIGTERM would run the parent's inherited signal handlers in the workers
    # (Prefect installs one), which then print a traceback
    pool = mp.get_context("fork").Pool(min(procs, len(chunks)))
    try:
        parts = pool.map(_segment_chunk, chunks, chunksize=1)
    except BaseException:
        pool.terminate()
        raise
    else:
        pool.close()
    finally:
        pool.join()
    return [tokens for part in parts for tokens in part]


def tokenize_many(
    texts: Sequence[str], *, stopwords: bool = True, processes: int | None = None
) -> list[list[str]]:
    """``[tokenize(t, stopwords=stopwords) for t in texts]``, segmenting each distinct jieba block of the batch
    once (and none already in an active :func:`kgrag.rank.tokenize.tokenize_cache`, which keeps the new ones),
    over a forked process pool when those blocks have at least :data:`PARALLEL_MIN_CHARS` characters and more
    than one CPU is available (``processes`` defaults to the CPUs this process may use). jieba is initialised
    here first, so the workers inherit its dictionary, words added with :func:`kgrag.rank.tokenize.add_words`
    included. Where ``fork`` is unavailable the blocks are segmented in this process."""
    texts = list(texts)
    procs = _default_processes() if processes is None else max(1, processes)
    with tokenize_cache() as cache:
        plans = [text_blocks(text) for text in texts]  # None: no Chinese, tokenize() needs no jieba
        missing = list(dict.fromkeys(block for blocks in plans if blocks for block in blocks
                                     if block not in cache))
        if missing:
            if procs <= 1 or sum(map(len, missing)) < PARALLEL_MIN_CHARS or "fork" not in mp.get_all_start_methods():
                segmented = segment_blocks(missing)
            else:
                segmented = _segment_pool(missing, procs)
            cache.update(zip(missing, segmented, strict=True))
        return [tokenize(text, stopwords=stopwords) if blocks is None else join_blocks(blocks, cache, stopwords)
                for text, blocks in zip(texts, plans, strict=True)]


def model_name_for(folder: str | os.PathLike[str], fingerprint: str) -> str:
    """The model name of the weights in ``folder``: ``fasttext:<absolute folder>@<fingerprint[:12]>``."""
    return f"{PREFIX}{Path(folder).expanduser().resolve()}@{fingerprint[:12]}"


def _unit_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``matrix`` with L2-normalised rows (zero rows stay zero) and the original norms."""
    norms = np.linalg.norm(matrix, axis=1).astype(np.float32)
    safe = np.where(norms > 0, norms, 1.0).astype(np.float32)
    return (matrix / safe[:, None]).astype(np.float32, copy=False), norms


class DomainEmbedder:
    """Text vectors from domain FastText word vectors (see the module docstring); a drop-in for ``Embedder``.

    ``folder`` is a model folder written by ``train_domain_embeddings``. Thread-safe; encoding needs no disk
    cache (it is cheap), query vectors are kept in an in-memory LRU like ``Embedder.encode_query``.
    """

    #: query vectors kept in memory (see :meth:`encode_query`)
    QUERY_CACHE_SIZE = 8192

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser().resolve()
        meta_path = self.folder / META_FILE
        vectors_path = self.folder / VECTORS_FILE
        if not meta_path.is_file() or not vectors_path.is_file():
            raise FileNotFoundError(
                f"no domain embedding model in {self.folder} (expected {META_FILE} and {VECTORS_FILE}; "
                "train one with flows/train_embeddings.py)"
            )
        for attempt in range(3):  # a retrain may swap the folder between the two reads: read both again
            self.meta: dict[str, Any] = json.loads(meta_path.read_text(encoding="utf-8"))
            with np.load(vectors_path, allow_pickle=False) as npz:
                words = np.asarray(npz["vectors"], dtype=np.float32)
                self._ngrams = np.ascontiguousarray(npz["vectors_ngrams"], dtype=np.float32)
                self._trained = np.asarray(npz["trained_buckets"], dtype=bool)
                stored = str(npz["fingerprint"]) if "fingerprint" in npz.files else self.meta["fingerprint"]
            if stored == self.meta["fingerprint"]:
                break
            if attempt == 2:
                raise ValueError(f"{self.folder}: {VECTORS_FILE} ({stored[:12]}) and {META_FILE} "
                                 f"({self.meta['fingerprint'][:12]}) belong to different models")
        vocab: list[str] = self.meta["vocab"]
        dim, bucket = self.meta["dim"], self.meta["bucket"]
        if words.shape != (len(vocab), dim):
            raise ValueError(f"{vectors_path}: vectors {words.shape} do not match meta.json "
                             f"({len(vocab)} words, dim {dim})")
        if self._ngrams.shape != (bucket, dim) or self._trained.shape != (bucket,):
            raise ValueError(f"{vectors_path}: n-gram buckets do not match meta.json (bucket {bucket})")
        self._words, self._word_norms = _unit_rows(words)
        self.vocab: dict[str, int] = {word: i for i, word in enumerate(vocab)}
        self.min_n: int = int(self.meta["min_n"])
        self.max_n: int = int(self.meta["max_n"])
        self.bucket: int = int(self.meta["bucket"])
        self.stopwords: bool = bool(self.meta.get("stopwords", True))
        self.fingerprint: str = str(self.meta["fingerprint"])
        self.model_name: str = model_name_for(self.folder, self.fingerprint)
        self.stats = EmbedderStats()
        self._lock = threading.Lock()
        self._oov: dict[str, np.ndarray | None] = {}  # word -> unit vector, None when it gets no vector
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()

    def __repr__(self) -> str:
        return f"DomainEmbedder({self.model_name!r}, vocab={len(self.vocab)}, dim={self.dim})"

    @property
    def dim(self) -> int:
        """Vector width."""
        return int(self._words.shape[1])

    # ------------------------------------------------------------------ words
    def word_vector(self, word: str) -> np.ndarray | None:
        """``word``'s FastText vector as gensim's ``model.wv[word]`` gives it (not normalised): the trained
        word vector, or for an out-of-vocabulary word the mean of its n-gram buckets; ``None`` when it has no
        n-gram (a word shorter than ``min_n - 2`` characters)."""
        row = self.vocab.get(word)
        if row is not None:
            return self._words[row] * self._word_norms[row]
        hashes = ngram_hashes(word, self.min_n, self.max_n, self.bucket)
        if not hashes:
            return None
        return self._ngrams[hashes].sum(axis=0) / np.float32(len(hashes))

    def _oov_unit(self, word: str) -> np.ndarray | None:
        """Unit FastText vector of an out-of-vocabulary word, or ``None`` when it gets no vector (cached)."""
        try:
            return self._oov[word]
        except KeyError:
            pass
        hashes = ngram_hashes(word, self.min_n, self.max_n, self.bucket)
        unit: np.ndarray | None = None
        if hashes and self._trained[hashes].any():
            vector = self._ngrams[hashes].sum(axis=0) / np.float32(len(hashes))
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                unit = (vector / norm).astype(np.float32)
        if len(self._oov) >= 1_000_000:
            self._oov.clear()
        self._oov[word] = unit
        return unit

    def _token_table(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Unit vectors ``(len(tokens), dim)`` of distinct tokens, and whether each gets one (lock held)."""
        table = np.zeros((len(tokens), self.dim), dtype=np.float32)
        get = self.vocab.get
        rows = np.fromiter((get(token, -1) for token in tokens), dtype=np.int64, count=len(tokens))
        valid = rows >= 0
        table[valid] = self._words[rows[valid]]
        valid &= self._word_norms[np.maximum(rows, 0)] > 0
        for j in np.flatnonzero(rows < 0):
            unit = self._oov_unit(tokens[j])
            if unit is not None:
                table[j] = unit
                valid[j] = True
        return table, valid

    # ------------------------------------------------------------------ texts
    def _ids(self, token_lists: list[list[str]]) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Distinct tokens, the flat token-id array and each text's token count."""
        index: dict[str, int] = {}
        setdefault = index.setdefault
        flat: list[int] = []
        lengths = np.fromiter((len(tokens) for tokens in token_lists), dtype=np.int64, count=len(token_lists))
        for tokens in token_lists:
            flat.extend([setdefault(token, len(index)) for token in tokens])
        return list(index), np.asarray(flat, dtype=np.int64), lengths

    def _vectors(self, token_lists: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
        """Unit text vectors ``(len(token_lists), dim)`` and whether each text had a token with a vector."""
        n = len(token_lists)
        out = np.zeros((n, self.dim), dtype=np.float32)
        distinct, flat, lengths = self._ids(token_lists)
        with self._lock:
            table, valid = self._token_table(distinct)
        keep = valid[flat] if flat.size else np.zeros(0, dtype=bool)
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths)[keep]
        flat = flat[keep]
        counts = np.bincount(owner, minlength=n)
        ends = np.cumsum(counts)
        starts = ends - counts
        has = counts > 0
        texts_with = np.flatnonzero(has)
        ends_with = ends[texts_with]
        # sum the token rows per text (they are contiguous in `flat`), a bounded number of rows at a time
        i = 0
        while i < texts_with.size:
            first = texts_with[i]
            j = max(int(np.searchsorted(ends_with, starts[first] + _GATHER_ROWS, side="right")), i + 1)
            group = texts_with[i:j]
            lo, hi = starts[group[0]], ends[group[-1]]
            out[group] = np.add.reduceat(table[flat[lo:hi]], starts[group] - lo, axis=0)
            i = j
        norms = np.linalg.norm(out, axis=1)
        ok = norms > 0
        out[ok] /= norms[ok, None]
        return out, ok

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Vectors for ``texts`` in order: float32, shape ``(len(texts), dim)``, unit L2 norm (a zero row for
        a text with no token that gets a vector). ``batch_size`` is accepted for ``Embedder``'s sake."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of texts; wrap a single text in a list")
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        with self._lock:
            self.stats.texts_requested += len(texts)
            self.stats.texts_encoded += len(unique)
            self.stats.model_calls += 1 if unique else 0
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors, _ = self._vectors(tokenize_many(unique, stopwords=self.stopwords))
        if len(unique) == len(texts):
            return vectors
        where = {text: i for i, text in enumerate(unique)}
        return vectors[[where[text] for text in texts]]

    def encode_one(self, text: str) -> np.ndarray:
        """The vector of one text, shape ``(dim,)``."""
        return self.encode([text])[0]

    def encode_query(self, text: str) -> np.ndarray:
        """One query's vector, shape ``(dim,)``, from an in-memory LRU of :attr:`QUERY_CACHE_SIZE` queries."""
        with self._lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                self.stats.cache_hits += 1
                return cached
        vector = self.encode([text])[0]
        with self._lock:
            self._queries[text] = vector
            while len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vector

    def similarity(self, query: str, docs: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each of ``docs`` (float64, shape ``(len(docs),)``), row by row so
        equal docs get exactly equal scores; 0 for a text without a vector."""
        if not docs:
            return np.zeros(0, dtype=np.float64)
        vectors = self.encode(list(docs)).astype(np.float64)
        return (vectors * self.encode_query(query).astype(np.float64)).sum(axis=1)

    def representable(self, texts: Sequence[str]) -> list[bool]:
        """Whether each text has at least one token that gets a vector (else its vector is the zero row)."""
        if isinstance(texts, str):
            raise TypeError("representable() takes a sequence of texts; wrap a single text in a list")
        texts = list(texts)
        if not texts:
            return []
        unique = list(dict.fromkeys(texts))
        _, ok = self._vectors(tokenize_many(unique, stopwords=self.stopwords))
        known = dict(zip(unique, ok.tolist(), strict=True))
        return [known[text] for text in texts]

    def nearest_words(self, word: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` vocabulary words closest to ``word``'s vector (cosine), ``word`` itself excluded."""
        vector = self.word_vector(word)
        if vector is None or not np.any(vector):
            return []
        scores = self._words @ (vector / np.linalg.norm(vector))
        order = np.argsort(-scores, kind="stable")
        vocab = self.meta["vocab"]
        return [(vocab[i], float(scores[i])) for i in order[: k + 1] if vocab[i] != word][:k]

    def compact(self) -> None:
        """No-op (there is no disk cache); kept for ``Embedder`` compatibility."""
