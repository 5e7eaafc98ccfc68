"""Entity name vectors computed lazily: only the entities a question's subgraph touches are ever encoded, kept in a
memory-mapped file keyed by content (model + the graph's names) that every process on the machine shares.

    vectors = EntityVectors(graph, Path("work/metaqa/hrag"), Embedder.from_settings())
    vectors[np.array([12, 40, 7])]          # (3, dim) float16 unit vectors; unnamed entities (CVTs) are zeros

Files (in ``folder``): ``entity_vectors_<model>_<fingerprint>.f16`` — ``(entities, dim)`` float16, created sparse
(pages never written cost no disk) — and ``….done``, one byte per entity (1 = computed). Indexing computes the
missing rows' vectors in one model call, writes them into the map and marks them done; every later lookup, in this
process or another, is a read of mapped pages. Two processes that compute one row write identical bytes. The
fingerprint is the graph's :attr:`~kgrag.graph.csr.CSRGraph.names_fingerprint` (stored at import) with the model
name, so a changed graph or model gets a new file. :meth:`fill` computes every missing row (what a small graph's
training does at once, as tasks: :meth:`missing` then :meth:`store`).
"""

from __future__ import annotations

import hashlib
import mmap
import re
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kgrag.graph.csr import CSRGraph

__all__ = ["EntityVectors", "vectors_file"]

Encoder = Callable[[list[str]], np.ndarray]

#: rows read between two releases of the map's pages: a read maps the page-cache pages around each row (~18 KB a
#: row, measured on a 2.5M-entity map), so this bounds what a reader holds to ~1 GB, and rows read again soon (a
#: question's neighbours, the next question's) cost no page fault (10M haystack, 500 questions' scoring: 1.1 s of
#: faults and releases with a release after every read)
RELEASE_ROWS = 1 << 16


def vectors_file(graph: CSRGraph, folder: Path, model_name: str) -> Path:
    """The map of ``graph``'s entity vectors by ``model_name`` (its ``.done`` flags sit beside it)."""
    digest = hashlib.sha256(f"{model_name}\n{graph.names_fingerprint}".encode()).hexdigest()[:16]
    return Path(folder) / f"entity_vectors_{re.sub(r'[^A-Za-z0-9]+', '-', model_name)}_{digest}.f16"


def _sized(path: Path, size: int) -> None:
    """Create ``path`` as a sparse file of ``size`` bytes unless it already has that size."""
    if path.is_file() and path.stat().st_size == size:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as fh:
        fh.truncate(size)


class EntityVectors:
    """Lazy unit float16 name vectors of a graph's entities (see the module docstring); index it like an array."""

    def __init__(self, graph: CSRGraph, folder: Path, model_name: str, dim: int, encode: Encoder) -> None:
        self.graph = graph
        self.dim = dim
        self.encode = encode
        self.path = vectors_file(graph, folder, model_name)
        self.done_path = self.path.with_suffix(".done")
        n = graph.num_entities
        self._lock = threading.Lock()
        self._unreleased = 0  # rows read since the map's pages were last released
        if n == 0:
            self._vectors = np.zeros((0, dim), dtype=np.float16)
            self._done = np.zeros(0, dtype=np.uint8)
            return
        _sized(self.path, n * dim * 2)
        _sized(self.done_path, n)
        self._vectors = np.memmap(self.path, dtype=np.float16, mode="r+", shape=(n, dim))
        self._done = np.memmap(self.done_path, dtype=np.uint8, mode="r+", shape=(n,))

    @property
    def shape(self) -> tuple[int, int]:
        return (self.graph.num_entities, self.dim)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(np.float16)

    def __len__(self) -> int:
        return self.graph.num_entities

    def computed(self) -> int:
        """How many rows are computed (in any process)."""
        return int(np.count_nonzero(self._done))

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        self.ensure(rows.ravel())
        out = np.array(self._vectors[rows])
        self._unreleased += rows.size
        if self._unreleased >= RELEASE_ROWS:
            self._release()
        return out

    def _release(self) -> None:
        """Unmap the pages read so far (``MADV_DONTNEED`` on a shared file map: the page cache keeps them for every
        process, this one holds none): the kernel maps the cached pages around each scattered row read, so a
        reader would otherwise hold most of the map after a few hundred questions."""
        self._unreleased = 0
        handle = getattr(self._vectors, "_mmap", None)
        if handle is not None and hasattr(mmap, "MADV_DONTNEED"):
            handle.madvise(mmap.MADV_DONTNEED)

    def ensure(self, rows: np.ndarray) -> int:
        """Compute the missing vectors of ``rows``; returns how many names were encoded."""
        rows = np.asarray(rows, dtype=np.int64)
        if not rows.size:
            return 0
        with self._lock:
            missing = np.unique(rows[self._done[rows] == 0])
            if not missing.size:
                return 0
            names = self.graph.names_of(missing)
            named = np.array([bool(n) for n in names], dtype=bool)
            if named.any():
                vectors = self.encode([n for n in names if n])
                self._vectors[missing[named]] = np.asarray(vectors, dtype=np.float16)
            self._done[missing] = 1
            return int(named.sum())

    def missing(self) -> np.ndarray:
        """Rows not computed yet (what a flow that fills the whole map encodes, as tasks)."""
        return np.flatnonzero(self._done[:] == 0) if len(self) else np.zeros(0, dtype=np.int64)

    def store(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Write vectors computed elsewhere (a task's result) for ``rows`` and mark them done."""
        rows = np.asarray(rows, dtype=np.int64)
        with self._lock:
            self._vectors[rows] = np.asarray(vectors, dtype=np.float16)
            self._done[rows] = 1

    def flush(self) -> None:
        if isinstance(self._vectors, np.memmap):
            self._vectors.flush()
            self._done.flush()
