"""Which approximate-nearest-neighbour (ANN) library for the knowledge-network vector search: chosen by measurement.

kgrag keeps one float32, L2-normalised, 384-d vector per (instance, field) and answers a knn query today by an exact
numpy scan (cosine = dot product) over every row of one (network, object type). The planned design keeps one ANN
index per (network version, object type, field), saved to disk, memory-mapped when opened, changed in place by adds
and removals. This bench measures the candidate libraries on the same vectors, queries and hardware, against that
exact scan:

* usearch (HNSW; f32, f16 and bf16 with metric "ip", i8 with metric "cos"), hnswlib (HNSW, space "ip"), faiss-cpu
  (IndexHNSWFlat and IndexHNSWSQ 8-bit, METRIC_INNER_PRODUCT) and sqlite-vec (vec0 virtual table: brute-force KNN
  over float32 or int8 vectors); numpy's exact scan (``matrix @ q`` then argpartition, as ``knn_scores`` does) is
  the baseline. A library that does not import is skipped with a message.
* HNSW graphs are built with M=16, ef_construction=128 on 2 threads, then searched one query at a time on one
  thread (as a request server would), with the search expansion ef swept over 16, 32, 64, 128.
* Per (library, variant): build seconds and vectors/s, index file size after saving, a capability probe on a small
  index (adds after the build, removals, and both again on the index as opened from disk). Per (library, variant,
  open mode), in a fresh process each: time to open the saved file (memory-mapped where the library can: usearch
  ``Index.restore(view=True)``, faiss ``read_index`` with ``IO_FLAG_MMAP_IFC`` and with ``IO_FLAG_MMAP``, SQLite's
  ``mmap_size``; hnswlib cannot map and loads into RAM), the process's RSS growth (anonymous and file-backed
  separately) from before the open to after all queries, the first query's latency, and per ef the single-query
  p50/p95 ms and recall@10 against the exact top-10.

Vectors: ``--vectors FILE.npy`` (float32, rows L2-normalised; the last ``--queries`` rows are held out as queries),
else a deterministic synthetic set shaped like sentence embeddings: a seeded mixture of ``--clusters`` (2,000)
clusters on the unit sphere, anisotropic (power-law spectrum under a random rotation), Zipf-like cluster sizes,
spreads from near-duplicate groups to diffuse topics. Queries are held-out rows (never indexed), perturbed slightly
and renormalised. The exact top-10 comes from a blocked float32 matrix product, timed too.

Command (under ``nice`` on the shared 2-core machine)::

    HF_HUB_OFFLINE=1 nice -n 10 .venv/bin/python -m bench.ann_libraries --sizes 100000,1000000 --queries 300

Reading the result: table "search" gives, per size, each variant's recall@10 and single-query p50/p95 per ef next
to the exact scan's (last column: how many times faster than the exact scan at p50). Table "index" gives build
cost, file size, open time and mode, RSS growth "anon+file" (file-backed pages of a mapped index are page cache the
kernel can drop; anonymous memory is what the process holds), the smallest ef reaching recall@10 >= 0.95 and its
p50, and the probe's answers (adds / removals on the built index; on the opened one). ``mapped`` is "yes" only when
the open mode maps the file *and* anonymous RSS grew by less than 16 MiB + a quarter of the file size. "recall
eps" is ann-benchmarks' tolerant recall (a returned row within 1e-3 of the exact 10th similarity counts), which
separates real misses from ties inside near-duplicate groups. The recommendation at the end is computed from the
largest size: among variants reaching the recall target that support adds and removals and open memory-mapped, the
fastest p50; within 25 % of it, the one with the smallest footprint (max of file size and RSS growth). Everything
is written to ``bench/results/ann_libraries.json`` (``figures``: every figure, versions, hardware, skipped variants;
``baseline``: the exact scan; ``ratio``: exact p50 / variant p50 at its smallest ef reaching the target).

Time on 2 shared cores: 100k vectors take about 3 minutes for everything; at 1M an HNSW build on 2 threads takes
10-16 minutes per variant under load, so all variants at 1M would take about an hour. To fit a budget: variants that
missed the recall target at the previous size are not built again (``--skip-below``), ``--only`` and
``--only-at-largest`` restrict the variants (e.g. ``--only-at-largest "usearch f32,usearch f16,sqlite-vec"``),
``--efs 16,32,64,128,256`` extends the sweep when 128 is not enough at 1M.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import ctypes.util
import gc
import importlib
import importlib.metadata
import json
import os
import platform
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles, write_result

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024.0 * 1024.0
MAPPING_MODES = {"view", "mmap_ifc", "mmap"}
PROBE_ROWS = 1200


# ---------------------------------------------------------------------------------------------------- adapters
class Adapter(ABC):
    """One variant measured: opened and searched (the exact baseline is only that; :class:`IndexAdapter` adds
    building and changing). Subclasses import their library lazily, so a worker process only loads the library it
    measures."""

    library = ""
    variant = ""
    module = ""  # what to import to check the library is there
    dist = ""  # its distribution, for the version
    suffix = ".idx"
    open_modes: tuple[str, ...] = ("load",)
    has_ef = True
    removal = ""

    @property
    def key(self) -> str:
        return f"{self.library} {self.variant}"

    def open_note(self, mode: str) -> str:
        return mode

    @abstractmethod
    def open(self, path: Path, mode: str, dim: int) -> Any:
        """Each library's own."""

    def set_ef(self, index: Any, ef: int) -> None:
        return None

    @abstractmethod
    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        """Each library's own."""

    def close(self, index: Any) -> None:
        return None


class IndexAdapter(Adapter):
    """An ANN library variant: it also builds, saves, adds to and removes from an index."""

    @abstractmethod
    def build(self, x: np.ndarray, threads: int, m: int, ef_construction: int, path: Path) -> Any:
        """Each library's own."""

    @abstractmethod
    def save(self, index: Any, path: Path) -> None:
        """Each library's own."""

    @abstractmethod
    def add(self, index: Any, ids: np.ndarray, x: np.ndarray) -> None:
        """Each library's own."""

    @abstractmethod
    def remove(self, index: Any, key: int) -> None:
        """Each library's own."""


class UsearchAdapter(IndexAdapter):
    library = "usearch"
    module = "usearch.index"
    dist = "usearch"
    suffix = ".usearch"
    open_modes = ("view", "load")
    removal = "Index.remove(key)"

    def __init__(self, dtype: str, metric: str) -> None:
        self.dtype, self.metric = dtype, metric
        self.variant = f"{dtype}/{metric}"

    def open_note(self, mode: str) -> str:
        return "Index.restore(view=True): mmap, read-only" if mode == "view" else "Index.restore(): loaded in RAM"

    def build(self, x: np.ndarray, threads: int, m: int, ef_construction: int, path: Path) -> Any:
        from usearch.index import Index

        index = Index(ndim=x.shape[1], metric=self.metric, dtype=self.dtype, connectivity=m,
                      expansion_add=ef_construction, expansion_search=64)
        index.add(np.arange(len(x), dtype=np.uint64), x, threads=threads, log=False)
        return index

    def save(self, index: Any, path: Path) -> None:
        index.save(str(path))

    def open(self, path: Path, mode: str, dim: int) -> Any:
        from usearch.index import Index

        index = Index.restore(str(path), view=mode == "view")
        if index is None:
            raise RuntimeError(f"usearch could not restore {path}")
        return index

    def set_ef(self, index: Any, ef: int) -> None:
        index.expansion_search = ef

    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(index.search(q, k, threads=1).keys, dtype=np.int64)

    def add(self, index: Any, ids: np.ndarray, x: np.ndarray) -> None:
        index.add(ids.astype(np.uint64), x, threads=1)

    def remove(self, index: Any, key: int) -> None:
        index.remove(key)


class HnswlibAdapter(IndexAdapter):
    library = "hnswlib"
    module = "hnswlib"
    dist = "hnswlib"
    suffix = ".hnsw"
    variant = "f32/ip"
    removal = "Index.mark_deleted(label) (tombstone)"

    def open_note(self, mode: str) -> str:
        return "load_index(): loaded in RAM (hnswlib cannot memory-map)"

    def build(self, x: np.ndarray, threads: int, m: int, ef_construction: int, path: Path) -> Any:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=x.shape[1])
        index.init_index(max_elements=len(x), ef_construction=ef_construction, M=m)
        index.set_num_threads(threads)
        index.add_items(x, np.arange(len(x)), num_threads=threads)
        return index

    def save(self, index: Any, path: Path) -> None:
        index.save_index(str(path))

    def open(self, path: Path, mode: str, dim: int) -> Any:
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.load_index(str(path))
        index.set_num_threads(1)
        return index

    def set_ef(self, index: Any, ef: int) -> None:
        index.set_ef(ef)

    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        labels, _ = index.knn_query(q.reshape(1, -1), k=k, num_threads=1)
        return labels[0].astype(np.int64)

    def add(self, index: Any, ids: np.ndarray, x: np.ndarray) -> None:
        need = index.get_current_count() + len(ids)
        if need > index.get_max_elements():
            index.resize_index(need)
        index.add_items(x, ids, num_threads=1)

    def remove(self, index: Any, key: int) -> None:
        index.mark_deleted(key)


class FaissAdapter(IndexAdapter):
    library = "faiss"
    module = "faiss"
    dist = "faiss-cpu"
    suffix = ".faiss"
    open_modes = ("mmap_ifc", "mmap")
    removal = "none (IndexHNSW.remove_ids is not implemented)"

    def __init__(self, sq8: bool) -> None:
        self.sq8 = sq8
        self.variant = "HNSWSQ8/ip" if sq8 else "HNSWFlat/ip"

    def open_note(self, mode: str) -> str:
        notes = {"mmap_ifc": "read_index(IO_FLAG_MMAP_IFC)", "mmap": "read_index(IO_FLAG_MMAP)"}
        return notes.get(mode, "read_index()")

    def build(self, x: np.ndarray, threads: int, m: int, ef_construction: int, path: Path) -> Any:
        import faiss

        faiss.omp_set_num_threads(threads)
        d = x.shape[1]
        if self.sq8:
            index = faiss.IndexHNSWSQ(d, faiss.ScalarQuantizer.QT_8bit, m, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexHNSWFlat(d, m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        if not index.is_trained:
            index.train(x)
        index.add(x)
        return index

    def save(self, index: Any, path: Path) -> None:
        import faiss

        faiss.write_index(index, str(path))

    def open(self, path: Path, mode: str, dim: int) -> Any:
        import faiss

        faiss.omp_set_num_threads(1)
        flags = {"mmap_ifc": getattr(faiss, "IO_FLAG_MMAP_IFC", None), "mmap": faiss.IO_FLAG_MMAP, "load": 0}
        flag = flags[mode]
        if flag is None:
            raise RuntimeError("this faiss has no IO_FLAG_MMAP_IFC")
        return faiss.read_index(str(path), flag)

    def set_ef(self, index: Any, ef: int) -> None:
        index.hnsw.efSearch = ef

    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        _, ids = index.search(q.reshape(1, -1), k)
        return ids[0].astype(np.int64)

    def add(self, index: Any, ids: np.ndarray, x: np.ndarray) -> None:
        index.add(x)  # faiss numbers rows sequentially; the probe adds ids ntotal.. so they agree

    def remove(self, index: Any, key: int) -> None:
        index.remove_ids(np.array([key], dtype=np.int64))


@dataclass
class _SqliteIndex:
    conn: sqlite3.Connection
    int8: bool
    scale: float
    extension_loading: str
    mmap_size: int = 0

    def blob(self, q: np.ndarray) -> bytes:
        if self.int8:
            return np.clip(np.rint(q * self.scale), -127, 127).astype(np.int8).tobytes()
        return np.ascontiguousarray(q, dtype=np.float32).tobytes()


def _enable_load_extension_ctypes(conn: sqlite3.Connection, path: Path) -> None:
    """pyenv-built Pythons often lack ``Connection.enable_load_extension``; call the C API on the connection's
    ``sqlite3*`` (the first field after PyObject_HEAD in CPython's pysqlite_Connection), after checking that the
    handle is the one that opened ``path`` (the module links the system libsqlite3 dynamically)."""
    name = ctypes.util.find_library("sqlite3")
    if name is None:
        raise RuntimeError("no libsqlite3 found for the ctypes fallback")
    lib = ctypes.CDLL(name)
    lib.sqlite3_db_filename.restype = ctypes.c_char_p
    lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.sqlite3_enable_load_extension.argtypes = [ctypes.c_void_p, ctypes.c_int]
    handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
    opened = lib.sqlite3_db_filename(handle, b"main") if handle else None
    if opened is None or os.path.realpath(os.fsdecode(opened)) != os.path.realpath(path):
        raise RuntimeError("this sqlite3 module cannot load extensions and the ctypes fallback did not apply")
    if lib.sqlite3_enable_load_extension(handle, 1) != 0:
        raise RuntimeError("sqlite3_enable_load_extension failed")


def _sqlite_connect(path: Path) -> tuple[sqlite3.Connection, str]:
    import sqlite_vec

    conn = sqlite3.connect(str(path))
    if hasattr(conn, "enable_load_extension"):
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
        return conn, "stdlib enable_load_extension"
    _enable_load_extension_ctypes(conn, path)
    conn.execute("SELECT load_extension(?)", (sqlite_vec.loadable_path(),))
    return conn, "ctypes sqlite3_enable_load_extension (this Python's sqlite3 lacks enable_load_extension)"


class SqliteVecAdapter(IndexAdapter):
    library = "sqlite-vec"
    module = "sqlite_vec"
    dist = "sqlite-vec"
    suffix = ".db"
    open_modes = ("mmap",)
    has_ef = False
    removal = "DELETE FROM the vec0 table"

    def __init__(self, int8: bool) -> None:
        self.int8 = int8
        self.variant = "vec0 int8 (exact)" if int8 else "vec0 f32 (exact)"

    def open_note(self, mode: str) -> str:
        return "sqlite3 + PRAGMA mmap_size"

    def _sql(self) -> str:
        match = "vec_int8(?)" if self.int8 else "?"
        return f"SELECT rowid FROM vectors WHERE embedding MATCH {match} AND k = ?"

    def build(self, x: np.ndarray, threads: int, m: int, ef_construction: int, path: Path) -> Any:
        if path.exists():
            path.unlink()
        conn, how = _sqlite_connect(path)
        conn.execute("PRAGMA journal_mode=OFF")  # a bulk load into a fresh file
        conn.execute("PRAGMA synchronous=OFF")
        kind = "int8" if self.int8 else "float"
        conn.execute(f"CREATE VIRTUAL TABLE vectors USING vec0(embedding {kind}[{x.shape[1]}])")
        # int8: one global scale (127 / the largest |component|), so no component clips and L2 order is kept
        scale = 127.0 / float(np.abs(x).max()) if self.int8 else 1.0
        conn.execute("CREATE TABLE meta(scale REAL)")
        conn.execute("INSERT INTO meta VALUES (?)", (scale,))
        index = _SqliteIndex(conn, self.int8, scale, how)
        value = "vec_int8(?)" if self.int8 else "?"
        sql = f"INSERT INTO vectors(rowid, embedding) VALUES (?, {value})"
        with conn:
            for start in range(0, len(x), 10_000):
                block = x[start:start + 10_000]
                conn.executemany(sql, ((start + i + 1, index.blob(v)) for i, v in enumerate(block)))
        return index

    def save(self, index: Any, path: Path) -> None:
        index.conn.commit()
        index.conn.close()

    def open(self, path: Path, mode: str, dim: int) -> Any:
        conn, how = _sqlite_connect(path)
        mmap_size = conn.execute(f"PRAGMA mmap_size={path.stat().st_size + (1 << 20)}").fetchone()[0]
        scale = float(conn.execute("SELECT scale FROM meta").fetchone()[0])
        return _SqliteIndex(conn, self.int8, scale, how, int(mmap_size))

    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        rows = index.conn.execute(self._sql(), (index.blob(q), k)).fetchall()
        return np.array([r[0] - 1 for r in rows], dtype=np.int64)

    def add(self, index: Any, ids: np.ndarray, x: np.ndarray) -> None:
        value = "vec_int8(?)" if self.int8 else "?"
        with index.conn:
            index.conn.executemany(f"INSERT INTO vectors(rowid, embedding) VALUES (?, {value})",
                                   ((int(i) + 1, index.blob(v)) for i, v in zip(ids, x, strict=True)))

    def remove(self, index: Any, key: int) -> None:
        with index.conn:
            index.conn.execute("DELETE FROM vectors WHERE rowid = ?", (key + 1,))

    def close(self, index: Any) -> None:
        with contextlib.suppress(sqlite3.ProgrammingError):
            index.conn.close()


class ExactAdapter(Adapter):
    """The baseline: kgrag's exact scan (``matrix @ q``, argpartition, ties by row) over the rows held in RAM."""

    library = "numpy"
    variant = "exact scan f32"
    module = "numpy"
    dist = "numpy"
    suffix = ".npy"
    has_ef = False

    def open_note(self, mode: str) -> str:
        return "np.load(): matrix in RAM"

    def open(self, path: Path, mode: str, dim: int) -> Any:
        return np.ascontiguousarray(np.load(path, mmap_mode="r"))

    def search(self, index: Any, q: np.ndarray, k: int) -> np.ndarray:
        sims = index @ q
        top = np.argpartition(-sims, k - 1)[:k]
        return top[np.lexsort((top, -sims[top]))].astype(np.int64)


def all_adapters() -> list[Adapter]:
    return [UsearchAdapter("f32", "ip"), UsearchAdapter("f16", "ip"), UsearchAdapter("bf16", "ip"),
            UsearchAdapter("i8", "cos"),
            HnswlibAdapter(), FaissAdapter(sq8=False), FaissAdapter(sq8=True),
            SqliteVecAdapter(int8=False), SqliteVecAdapter(int8=True)]


def _adapter(key: str) -> Adapter:
    exact = ExactAdapter()
    return next(a for a in [*all_adapters(), exact] if a.key == key)


# ---------------------------------------------------------------------------------------------------- workers
def _memory() -> dict[str, float]:
    """This process's resident memory in MiB: total, anonymous, file-backed, peak (Linux /proc)."""
    fields = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "peak"}
    out: dict[str, float] = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in fields:
                out[fields[key]] = int(value.split()[0]) / 1024.0
    except OSError:
        import resource

        out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: round(after[k] - before[k], 1) for k in ("rss", "anon", "file") if k in after and k in before}


def _load_rows(path: str, rows: int) -> np.ndarray:
    return np.ascontiguousarray(np.load(path, mmap_mode="r")[:rows], dtype=np.float32)


def _recall(found: list[np.ndarray], truth: np.ndarray, k: int) -> float:
    hits = [len(set(f[:k].tolist()) & set(t[:k].tolist())) for f, t in zip(found, truth, strict=True)]
    return round(float(np.mean(hits)) / k, 4)


def _build_job(adapter: Adapter, spec: dict, result: dict, flush: Callable[[], None]) -> None:
    x = _load_rows(spec["base"], spec["rows"])
    path = Path(spec["index"])
    gc.collect()
    before = _memory()
    start = time.perf_counter()
    index = adapter.build(x, spec["threads"], spec["m"], spec["ef_construction"], path)
    build_s = time.perf_counter() - start
    built = _memory()
    start = time.perf_counter()
    adapter.save(index, path)
    save_s = time.perf_counter() - start
    adapter.close(index)
    result.update(loadavg_1min=round(os.getloadavg()[0], 2), build_s=round(build_s, 3),
                  vectors_per_s=round(len(x) / build_s, 1), save_s=round(save_s, 3),
                  file_bytes=path.stat().st_size, file_mib=round(path.stat().st_size / MIB, 1),
                  build_rss_growth_mib=_delta(built, before), build_peak_rss_mib=round(_memory().get("peak", 0.0), 1))


def _query_job(adapter: Adapter, spec: dict, result: dict, flush: Callable[[], None]) -> None:
    queries = np.load(spec["queries"])
    truth = np.load(spec["truth"])
    k, mode, path = spec["k"], spec["open_mode"], Path(spec["index"])
    efs: list[int | None] = list(spec["efs"]) if adapter.has_ef else [None]
    gc.collect()
    before = _memory()
    start = time.perf_counter()
    index = adapter.open(path, mode, int(queries.shape[1]))
    open_s = time.perf_counter() - start
    opened = _memory()
    result.update(open_mode=mode, open_note=adapter.open_note(mode), open_ms=round(open_s * 1000.0, 3),
                  open_rss_growth_mib=_delta(opened, before), loadavg_1min=round(os.getloadavg()[0], 2))
    if hasattr(index, "hardware_acceleration"):
        result["hardware_acceleration"] = str(index.hardware_acceleration)
    if isinstance(index, _SqliteIndex):
        result.update(sqlite_mmap_size=index.mmap_size, extension_loading=index.extension_loading)
    top = max(e for e in efs if e is not None) if adapter.has_ef else None
    if top is not None:
        adapter.set_ef(index, top)
    start = time.perf_counter()
    adapter.search(index, queries[0], k)
    result["first_query_ms"] = round((time.perf_counter() - start) * 1000.0, 3)
    if adapter.has_ef:  # one untimed-for-the-table pass at the largest ef pages the mapped graph in
        seconds = []
        for q in queries:
            start = time.perf_counter()
            adapter.search(index, q, k)
            seconds.append(time.perf_counter() - start)
        result["first_pass"] = {"ef": top, **percentiles(seconds)}
    flush()
    runs = []
    for ef in efs:
        if ef is not None:
            adapter.set_ef(index, ef)
        seconds, found = [], []
        for q in queries:
            start = time.perf_counter()
            ids = adapter.search(index, q, k)
            seconds.append(time.perf_counter() - start)
            found.append(ids)
        runs.append({"ef": ef, **percentiles(seconds), "recall_at_k": _recall(found, truth, k),
                     "ids": [f.tolist() for f in found]})
        result["by_ef"] = runs
        flush()
    after = _memory()
    result.update(query_rss_growth_mib=_delta(after, before), rss_after_mib=round(after.get("rss", 0.0), 1),
                  peak_rss_mib=round(after.get("peak", 0.0), 1))
    adapter.close(index)


def _check(step: Callable[[], bool]) -> dict:
    try:
        ok = bool(step())
        return {"ok": ok, "note": "" if ok else "ran, but the result was wrong"}
    except Exception as exc:  # noqa: BLE001 - the probe records what each library refuses
        return {"ok": False, "note": f"{type(exc).__name__}: {str(exc).splitlines()[0][:160] if str(exc) else ''}"}


def _probe_job(adapter: Adapter, spec: dict, result: dict, flush: Callable[[], None]) -> None:
    """Capabilities on a small index (1,000 rows, then 100 added). Stage "build": add and remove on the index just
    built, then save it. Stage "open": one change (``step``: adds or removals) on a copy of that file opened in
    ``open_mode``. The parent runs each open step in its own process, since some libraries crash there (faiss
    aborts when adding to a mapped index; usearch 2.26 segfaults when adding to a view that holds a removal)."""
    x = _load_rows(spec["base"], PROBE_ROWS)
    path = Path(spec["index"])
    n0 = 1000

    def added(index: Any, lo: int, hi: int) -> bool:
        adapter.add(index, np.arange(lo, hi), x[lo:hi])
        return int(adapter.search(index, x[(lo + hi) // 2], 1)[0]) == (lo + hi) // 2

    def removed(index: Any, key: int) -> bool:
        adapter.remove(index, key)
        return key not in adapter.search(index, x[key], 10).tolist()

    if spec["stage"] == "build":
        index = adapter.build(x[:n0], 1, spec["m"], spec["ef_construction"], path)
        adapter.set_ef(index, 64)
        result["adds_after_build"] = _check(lambda: added(index, n0, n0 + 100))
        flush()
        result["removals"] = _check(lambda: removed(index, 7))
        flush()
        adapter.save(index, path)
        adapter.close(index)
        return
    opened = adapter.open(path, spec["open_mode"], x.shape[1])
    adapter.set_ef(opened, 64)
    if spec["step"] == "adds":
        result["adds"] = _check(lambda: added(opened, n0 + 100, PROBE_ROWS))
    else:
        result["removals"] = _check(lambda: removed(opened, 8))
    adapter.close(opened)


def _probe(adapter: Adapter, common: dict, data_path: Path, workdir: Path, timeout: float) -> dict:
    """Run the capability probe: the build stage, then each (open mode, step) in a fresh process on a fresh copy."""
    path = workdir / f"probe{adapter.suffix}"
    spec = {**common, "job": "probe", "adapter": adapter.key, "base": str(data_path)}
    built = _run_job({**spec, "stage": "build", "index": str(path)}, workdir, 1, timeout)
    out: dict = {step: built.get(step, {"ok": False, "note": f"not answered: {built.get('error', '')}"})
                 for step in ("adds_after_build", "removals")}
    out["opened"] = {}
    for mode in adapter.open_modes:
        answers: dict = {}
        out["opened"][mode] = answers
        for step in ("adds", "removals"):
            copy = workdir / f"probe-copy{adapter.suffix}"
            if not path.exists():
                answers[step] = {"ok": False, "note": "no probe index was saved"}
                continue
            shutil.copyfile(path, copy)
            got = _run_job({**spec, "stage": "open", "open_mode": mode, "step": step, "index": str(copy)},
                           workdir, 1, timeout)
            answers[step] = got.get(step, {"ok": False, "note": f"crashed: {got.get('error', '')}"})
            copy.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    return out


def _worker(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text())
    out = Path(spec["out"])
    result: dict = {}

    def flush() -> None:
        out.write_text(json.dumps(result))

    try:
        jobs = {"build": _build_job, "query": _query_job, "probe": _probe_job}
        jobs[spec["job"]](_adapter(spec["adapter"]), spec, result, flush)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which skips the variant
        result["error"] = f"{type(exc).__name__}: {exc}"
        result["traceback"] = traceback.format_exc(limit=6)
    flush()


def _run_job(spec: dict, workdir: Path, threads: int, timeout: float) -> dict:
    """Run one job in a fresh interpreter with ``threads`` BLAS/OpenMP threads; its result, or ``{"error": ...}``."""
    stem = f"{spec['job']}-{abs(hash((spec['adapter'], spec.get('open_mode'), spec.get('rows'), time.time())))}"
    spec_path, out, log = (workdir / f"{stem}.json", workdir / f"{stem}.out.json", workdir / f"{stem}.log")
    spec = {**spec, "out": str(out)}
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
        env[var] = str(threads)
    command = [sys.executable, "-m", "bench.ann_libraries", "--worker", str(spec_path)]
    try:
        with log.open("w") as handle:
            proc = subprocess.run(command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
                                  timeout=timeout, check=False)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        code = f"timed out after {timeout:.0f} s"
    result = json.loads(out.read_text()) if out.exists() else {}
    if code != 0 and "error" not in result:
        tail = " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:]) if log.exists() else ""
        if isinstance(code, int) and code < 0:
            with contextlib.suppress(ValueError):
                code = f"{code} ({signal.Signals(-code).name})"
        result["error"] = f"worker exit {code}" + (f": {tail}" if tail else "")
    for p in (spec_path, out, log):
        p.unlink(missing_ok=True)
    return result


# ---------------------------------------------------------------------------------------------------- data
def _normalise(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def synthetic_vectors(path: Path, rows: int, dim: int, clusters: int, seed: int) -> Path:
    """A deterministic sentence-embedding-like set of ``rows`` unit vectors written to ``path`` (a .npy).

    Cluster centres share an anisotropic covariance (power-law spectrum under a random rotation) and a common
    offset (one model's embeddings are not centred); cluster sizes are Zipf-like. A point is its centre plus
    ``spread`` times noise that lies mostly in a low-dimensional subspace of its cluster (8-48 directions drawn from
    a shared pool, plus 30 % isotropic noise), so neighbour similarities are graded as in real embeddings rather
    than all equal (which isotropic 384-d noise would give). Spread is log-uniform in [0.5, 2.0] (diffuse topics);
    10 % of clusters are near-duplicate groups with spread in [0.02, 0.1]. On 100k rows, held-out queries have a
    median exact top-1 cosine of about 0.82 and top-10 of about 0.72, and about 7 % have their top 10 within 0.01.
    """
    rng = np.random.default_rng(seed)
    spectrum = np.arange(1, dim + 1, dtype=np.float64) ** -0.6
    spectrum /= np.sqrt(np.mean(spectrum ** 2))
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    shape = (spectrum[:, None] * rotation).astype(np.float32)  # isotropic @ shape -> anisotropic, RMS 1 per dim
    offset = _normalise(rng.standard_normal((1, dim)))[0] * 0.35
    centres = _normalise(_normalise((rng.standard_normal((clusters, dim)) @ shape).astype(np.float32)) + offset)
    pool = _normalise((rng.standard_normal((1024, dim)) @ shape).astype(np.float32))
    local_dim = rng.integers(8, 49, clusters)
    bases = [pool[rng.choice(len(pool), int(d), replace=False)] for d in local_dim]
    weights = 1.0 / np.arange(1, clusters + 1) ** 0.8
    weights = rng.permutation(weights / weights.sum())
    spread = np.exp(rng.uniform(np.log(0.5), np.log(2.0), clusters))
    tight = rng.random(clusters) < 0.10
    spread[tight] = np.exp(rng.uniform(np.log(0.02), np.log(0.1), int(tight.sum())))
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, dim))
    chunk = 50_000
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        members = rng.choice(clusters, size=n, p=weights)
        noise = (rng.standard_normal((n, dim)).astype(np.float32) @ shape) * np.float32(0.3 / np.sqrt(dim))
        order = np.argsort(members, kind="stable")
        for group in np.split(order, np.flatnonzero(np.diff(members[order])) + 1):
            c = int(members[group[0]])
            z = rng.standard_normal((len(group), int(local_dim[c]))).astype(np.float32)
            noise[group] += (z @ bases[c]) / np.float32(np.sqrt(local_dim[c]))
        out[start:start + n] = _normalise(centres[members] + spread[members, None].astype(np.float32) * noise)
    out.flush()
    del out
    return path


def perturbed_queries(held_out: np.ndarray, seed: int, scale: float = 0.1) -> np.ndarray:
    """Held-out rows moved by isotropic noise of norm about ``scale`` (cosine ~0.995 to the row), renormalised."""
    rng = np.random.default_rng(seed + 1)
    noise = rng.standard_normal(held_out.shape).astype(np.float32) * np.float32(scale / np.sqrt(held_out.shape[1]))
    return _normalise(held_out + noise)


def exact_topk(base: np.ndarray, queries: np.ndarray, k: int, block: int = 65_536) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` rows by dot product and their similarities, best first, in float32 blocks of ``block`` rows."""
    nq = len(queries)
    best_s = np.full((nq, k), -np.inf, dtype=np.float32)
    best_i = np.zeros((nq, k), dtype=np.int64)
    for start in range(0, len(base), block):
        sims = queries @ np.ascontiguousarray(base[start:start + block]).T
        kk = min(k, sims.shape[1])
        part = np.argpartition(-sims, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(sims, part, axis=1)], axis=1)
        cand_i = np.concatenate([best_i, part + start], axis=1)
        keep = np.argsort(-cand_s, axis=1, kind="stable")[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, keep, axis=1), np.take_along_axis(cand_i, keep, axis=1)
    return best_i, best_s


def neighbour_stats(scores: np.ndarray, k: int) -> dict:
    """How hard the queries are: percentiles (5/50/95) of the exact top-1 and top-k similarity, of the gap between
    the k-th and (k+1)-th, and the share of queries whose top k lie within 0.01 (near-duplicate groups)."""
    def pct(v: np.ndarray) -> list[float]:
        return [round(float(p), 5) for p in np.percentile(v, [5, 50, 95])]

    return {"top1_cos_p5_p50_p95": pct(scores[:, 0]), f"top{k}_cos_p5_p50_p95": pct(scores[:, k - 1]),
            f"gap_{k}_{k + 1}_p5_p50_p95": pct(scores[:, k - 1] - scores[:, k]),
            f"share_top1_minus_top{k}_below_0.01": round(float(np.mean(scores[:, 0] - scores[:, k - 1] < 0.01)), 4)}


def tolerant_recall(found: list[list[int]], queries: np.ndarray, data: np.ndarray, kth: np.ndarray, k: int,
                    eps: float = 1e-3) -> float:
    """ann-benchmarks' recall: a returned row counts when its exact similarity is within ``eps`` of the k-th best
    (so a row tied with the true k-th, as in near-duplicate groups, is not a miss)."""
    hits = 0
    for q, ids, limit in zip(queries, found, kth, strict=True):
        rows = sorted({int(i) for i in ids[:k] if i >= 0})
        if rows:
            hits += int(np.sum(np.asarray(data[rows], dtype=np.float32) @ q >= limit - eps))
    return round(hits / (k * len(found)), 4)


# ---------------------------------------------------------------------------------------------------- report
def _versions(adapters: list[Adapter]) -> dict[str, str]:
    out = {"python": platform.python_version(), "numpy": np.__version__, "sqlite": sqlite3.sqlite_version}
    for a in adapters:
        try:
            out[a.dist] = importlib.metadata.version(a.dist)
        except importlib.metadata.PackageNotFoundError:
            out[a.dist] = "not installed"
    return out


def _hardware(note: str) -> dict:
    model = ""
    with contextlib.suppress(OSError):
        model = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                      if ln.startswith("model name")), "")
    mem = ""
    with contextlib.suppress(OSError, StopIteration):
        kb = next(ln for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal"))
        mem = f"{int(kb.split()[1]) / MIB:.1f} GiB"
    return {"note": note, "cpu_count": os.cpu_count(), "usable_cores": len(os.sched_getaffinity(0)),
            "cpu_model": model, "memory": mem, "machine": platform.machine(), "nice": os.nice(0),
            "loadavg_start": [round(v, 2) for v in os.getloadavg()]}


def _best_ef(entry: dict, target: float) -> dict | None:
    """The first (smallest-ef) run reaching the recall target."""
    return next((r for r in entry.get("by_ef", []) if r["recall_at_k"] >= target), None)


def _mapped(entry: dict, file_mib: float) -> bool:
    anon = entry.get("query_rss_growth_mib", {}).get("anon")
    return entry.get("open_mode") in MAPPING_MODES and anon is not None and anon < 16.0 + 0.25 * file_mib


def _footprint(entry: dict, file_mib: float) -> float:
    return max(file_mib, entry.get("query_rss_growth_mib", {}).get("rss", 0.0))


def _summaries(size_result: dict, target: float) -> list[dict]:
    """One row per (variant, open mode) with the figures the recommendation and the index table need."""
    exact_p50 = size_result.get("exact_scan", {}).get("by_ef", [{}])[0].get("p50_ms")
    rows = []
    for v in size_result["variants"]:
        if "error" in v.get("build", {}):
            continue
        caps = v.get("capabilities", {})
        for entry in v.get("open", []):
            if "error" in entry:
                continue
            best = _best_ef(entry, target)
            file_mib = v["build"]["file_mib"]
            rows.append({
                "key": v["key"], "library": v["library"], "variant": v["variant"], "open_mode": entry["open_mode"],
                "best": best, "file_mib": file_mib, "mapped": _mapped(entry, file_mib),
                "footprint_mib": _footprint(entry, file_mib),
                "adds": caps.get("adds_after_build", {}).get("ok", False),
                "removals": caps.get("removals", {}).get("ok", False),
                "opened_caps": caps.get("opened", {}).get(entry["open_mode"], {}),
                "speedup": round(exact_p50 / best["p50_ms"], 1) if best and exact_p50 else None,
                "entry": entry, "build": v["build"], "caps": caps,
            })
    return rows


def recommend(size_result: dict, n: int, target: float) -> dict:
    rows = _summaries(size_result, target)
    exact = size_result.get("exact_scan", {}).get("by_ef", [{}])[0]
    meeting = [r for r in rows if r["best"] is not None]
    eligible = [r for r in meeting if r["adds"] and r["removals"] and r["mapped"]]
    rule = (f"at {n:,} vectors: recall@10 >= {target} at some ef, adds and removals work, opened memory-mapped "
            "(anon RSS growth < 16 MiB + a quarter of the file); fastest p50, then within 1.25x of it the smallest "
            "footprint (max of file size and RSS growth)")
    if not meeting:
        return {"rule": rule, "chosen": None, "text": f"No variant reached recall@10 >= {target} at {n:,} vectors; "
                "raise ef (or M / ef_construction) and rerun."}
    pool, relaxed = (eligible, False) if eligible else (meeting, True)
    fastest = min(r["best"]["p50_ms"] for r in pool)
    near = [r for r in pool if r["best"]["p50_ms"] <= 1.25 * fastest]
    chosen = min(near, key=lambda r: (r["footprint_mib"], r["best"]["p50_ms"]))
    b, e = chosen["best"], chosen["entry"]
    ef_text = f"ef={b['ef']}" if b["ef"] is not None else "exact"
    oc = chosen["opened_caps"]
    opened_changes = oc.get("adds", {}).get("ok") and oc.get("removals", {}).get("ok")
    text = (
        f"At {n:,} vectors on this machine, choose {chosen['key']} opened as {e['open_note']} with {ef_text}: "
        f"recall@10 {b['recall_at_k']:.3f}, single-query p50 {b['p50_ms']:.2f} ms / p95 {b['p95_ms']:.2f} ms against "
        f"{exact.get('p50_ms', float('nan')):.1f} ms for the exact numpy scan ({chosen['speedup']}x); build "
        f"{chosen['build']['build_s']:.0f} s ({chosen['build']['vectors_per_s']:,.0f} vectors/s on 2 threads), file "
        f"{chosen['file_mib']:,.0f} MiB, open {e['open_ms']:.1f} ms, RSS growth after the queries "
        f"{e['query_rss_growth_mib'].get('anon', 0):,.0f} MiB anonymous + "
        f"{e['query_rss_growth_mib'].get('file', 0):,.0f} MiB file-backed. Adds and removals work on the built index"
        + ("" if opened_changes else f" but not on the index as opened {e['open_mode']} (so incremental changes "
           "go to a loaded copy or a rebuild, then a save and reopen)") + ". ")
    if relaxed:
        text += ("No variant met every condition (recall, adds, removals, memory-mapped open), so this is the best "
                 "on speed and memory among those reaching the recall target. ")
    others = []
    for r in rows:
        if r["key"] == chosen["key"] or r["open_mode"] != _primary_mode(r):
            continue
        why = []
        if r["best"] is None:
            top = max((x["recall_at_k"] for x in r["entry"].get("by_ef", [])), default=0.0)
            why.append(f"recall@10 at most {top:.3f}")
        else:
            why.append(f"p50 {r['best']['p50_ms']:.2f} ms at ef {r['best']['ef'] or 'exact'}, footprint "
                       f"{r['footprint_mib']:,.0f} MiB")
        if not r["mapped"]:
            why.append("not memory-mapped")
        if not r["removals"]:
            why.append("no removals")
        if not r["adds"]:
            why.append("no adds")
        others.append(f"{r['key']} ({', '.join(why)})")
    if others:
        text += "Others: " + "; ".join(others) + "."
    return {"rule": rule, "chosen": {"key": chosen["key"], "open_mode": chosen["open_mode"], "ef": b["ef"],
                                     "recall_at_k": b["recall_at_k"], "p50_ms": b["p50_ms"], "p95_ms": b["p95_ms"],
                                     "footprint_mib": chosen["footprint_mib"]},
            "relaxed": relaxed, "text": text}


def _primary_mode(row: dict) -> str:
    return _adapter(row["key"]).open_modes[0]


def print_tables(figures: dict, target: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=200)
    for size, res in figures["sizes"].items():
        n = int(size)
        exact = res.get("exact_scan", {})
        exact_run = exact.get("by_ef", [{}])[0]
        exact_p50 = exact_run.get("p50_ms")
        search = Table(title=f"search - {n:,} vectors x {figures['data']['dim']}-d, {figures['params']['queries']} "
                             f"queries, one at a time on 1 thread (exact top-10 by blocked matmul: "
                             f"{res['ground_truth']['seconds']:.1f} s)")
        for col in ("library", "variant", "open", "ef", "recall@10", "recall eps", "p50 ms", "p95 ms", "x exact p50"):
            search.add_column(col, justify="right" if col not in ("library", "variant", "open") else "left")
        if exact_run:
            search.add_row("numpy", "exact scan f32", "RAM", "-", f"{exact_run['recall_at_k']:.3f}",
                           f"{exact_run.get('recall_at_k_eps', float('nan')):.3f}", f"{exact_run['p50_ms']:.2f}",
                           f"{exact_run['p95_ms']:.2f}", "1.0")
        for v in res["variants"]:
            if "error" in v.get("build", {}):
                search.add_row(v["library"], v["variant"], "-", "-", "build failed", "", "", "", "")
                continue
            primary = next((e for e in v.get("open", []) if e.get("open_mode") == v["open_modes"][0]), None)
            if primary is None or "error" in primary:
                search.add_row(v["library"], v["variant"], v["open_modes"][0], "-", "open/query failed", "", "", "",
                               "")
                continue
            for r in primary.get("by_ef", []):
                ok = r["recall_at_k"] >= target
                search.add_row(v["library"], v["variant"], primary["open_mode"], str(r["ef"] or "exact"),
                               f"[{'green' if ok else 'red'}]{r['recall_at_k']:.3f}[/]",
                               f"{r.get('recall_at_k_eps', float('nan')):.3f}", f"{r['p50_ms']:.3f}",
                               f"{r['p95_ms']:.3f}", f"{exact_p50 / r['p50_ms']:.1f}" if exact_p50 else "")
        hard = res["ground_truth"].get("neighbours", {})
        if hard:
            k = figures["params"]["k"]
            console.print(f"queries at {n:,}: exact top-1 cosine p5/p50/p95 {hard['top1_cos_p5_p50_p95']}, "
                          f"top-{k} {hard[f'top{k}_cos_p5_p50_p95']}, gap {k}th-{k + 1}th "
                          f"{hard[f'gap_{k}_{k + 1}_p5_p50_p95']}, share with top-1 - top-{k} < 0.01: "
                          f"{hard[f'share_top1_minus_top{k}_below_0.01']}")
        console.print(search)
        index = Table(title=f"index - {n:,} vectors (M=16, ef_construction=128, build on 2 threads; RSS growth "
                            f"from before the open to after all queries, anon+file MiB; p50 at the smallest ef "
                            f"with recall@10 >= {target})")
        for col in ("library", "variant", "build s", "vec/s", "file MiB", "open", "open ms", "RSS growth",
                    "1st query ms", "ef*", "p50 ms @ef*", "mapped", "adds", "removals", "adds/rm opened"):
            index.add_column(col, justify="left" if col in ("library", "variant", "open") else "right")
        if exact:
            g = exact.get("query_rss_growth_mib", {})
            index.add_row("numpy", "exact scan f32", "-", "-", f"{res['data_mib']:.0f}", "np.load (RAM)",
                          f"{exact.get('open_ms', 0):.0f}", f"{g.get('anon', 0):.0f}+{g.get('file', 0):.0f}",
                          f"{exact.get('first_query_ms', 0):.1f}", "-", f"{exact_p50:.2f}" if exact_p50 else "",
                          "no", "-", "-", "-")
        for row in _summaries(res, target):
            e, b, caps = row["entry"], row["best"], row["caps"]
            g = e.get("query_rss_growth_mib", {})

            def yn(name: str, caps: dict = caps) -> str:
                return "yes" if caps.get(name, {}).get("ok") else "no"

            index.add_row(row["library"], row["variant"], f"{row['build']['build_s']:.1f}",
                          f"{row['build']['vectors_per_s']:,.0f}", f"{row['file_mib']:.0f}", e["open_note"],
                          f"{e['open_ms']:.1f}", f"{g.get('anon', 0):.0f}+{g.get('file', 0):.0f}",
                          f"{e.get('first_query_ms', 0):.1f}", str(b["ef"] or "exact") if b else "none",
                          f"{b['p50_ms']:.3f}" if b else "-", "yes" if row["mapped"] else "no",
                          yn("adds_after_build"), yn("removals"),
                          f"{yn('adds', row['opened_caps'])}/{yn('removals', row['opened_caps'])}")
        console.print(index)
        failed = [(v["key"], v["build"]["error"]) for v in res["variants"] if "error" in v.get("build", {})]
        failed += [(f"{v['key']} [{e.get('open_mode')}]", e["error"]) for v in res["variants"]
                   for e in v.get("open", []) if "error" in e]
        for key, err in failed:
            console.print(f"[red]failed[/] {key}: {err}")
    for line in figures.get("skipped", []):
        console.print(f"[yellow]skipped[/] {line}")
    console.print()
    console.print("[bold]Recommendation[/] " + figures["recommendation"]["text"])


# ---------------------------------------------------------------------------------------------------- main
def _log(message: str, t0: float) -> None:
    print(f"[{time.perf_counter() - t0:7.1f} s] {message}", flush=True)


def _prepare_vectors(args: argparse.Namespace, workdir: Path, rows: int, t0: float) -> tuple[Path, dict]:
    """The .npy the workers read (first ``rows`` rows indexable, the next ``--queries`` rows held out)."""
    if args.vectors:
        src = Path(args.vectors)
        data = np.load(src, mmap_mode="r")
        if data.ndim != 2 or len(data) < rows + args.queries:
            raise SystemExit(f"{src}: need a 2-d array with >= {rows + args.queries:,} rows, got {data.shape}")
        sample = np.asarray(data[: min(len(data), 10_000)], dtype=np.float32)
        unit = bool(np.allclose(np.linalg.norm(sample, axis=1), 1.0, atol=1e-3))
        info = {"source": str(src), "rows_in_file": int(len(data)), "dim": int(data.shape[1]),
                "held_out": f"the last {args.queries} rows", "rows_were_unit": unit}
        if data.dtype == np.float32 and unit and data.flags.c_contiguous:
            path = src
        else:  # a float32, normalised copy of what the bench needs
            path = workdir / "vectors.npy"
            out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows + args.queries,
                                                                                      data.shape[1]))
            out[:rows] = _normalise(np.asarray(data[:rows], dtype=np.float32))
            out[rows:] = _normalise(np.asarray(data[len(data) - args.queries:], dtype=np.float32))
            out.flush()
            del out
            info["held_out"] = f"the last {args.queries} rows (copied after the first {rows:,})"
        return path, info
    path = workdir / f"synthetic-{rows + args.queries}-{args.dim}-{args.clusters}-{args.seed}.npy"
    start = time.perf_counter()
    if not path.exists():
        _log(f"generating {rows + args.queries:,} synthetic {args.dim}-d vectors ({args.clusters} clusters)", t0)
        synthetic_vectors(path, rows + args.queries, args.dim, args.clusters, args.seed)
    info = {"source": "synthetic", "seed": args.seed, "clusters": args.clusters, "dim": args.dim,
            "generate_s": round(time.perf_counter() - start, 1), "description": synthetic_vectors.__doc__.split(
                "\n")[0] + " (see synthetic_vectors)", "held_out": f"rows {rows:,}..{rows + args.queries - 1:,}"}
    return path, info


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated index sizes")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--vectors", help="float32 .npy of L2-normalised rows (default: synthetic)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--efs", default="16,32,64,128", help="search expansions to sweep")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--ef-construction", type=int, default=128)
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--recall-target", type=float, default=0.95)
    parser.add_argument("--dim", type=int, default=384, help="synthetic vectors' dimension")
    parser.add_argument("--clusters", type=int, default=2000, help="synthetic vectors' clusters")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="comma-separated substrings of 'library variant' to keep")
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "kgrag-ann-bench"))
    parser.add_argument("--keep-files", action="store_true", help="keep vectors and index files in --workdir")
    parser.add_argument("--job-timeout", type=float, default=3600.0, help="seconds per worker process")
    parser.add_argument("--skip-below", type=float, default=None,
                        help="at each larger size, skip variants whose best recall@10 at the previous size was below "
                             "this (default: the recall target; 0 keeps all)")
    parser.add_argument("--only-at-largest", default="",
                        help="comma-separated substrings of 'library variant' to keep at the largest size only "
                             "(to fit a time budget; the others are recorded as skipped there)")
    parser.add_argument("--hardware-note", default="2 CPU cores shared with other work; run under nice -n 10")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(Path(args.worker))
        return

    t0 = time.perf_counter()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    efs = [int(e) for e in args.efs.split(",") if e.strip()]
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    adapters = all_adapters()
    if args.only:
        wanted = [w.strip().lower() for w in args.only.split(",") if w.strip()]
        adapters = [a for a in adapters if any(w in a.key.lower() for w in wanted)]
    skipped: list[str] = []
    usable: list[Adapter] = []
    for a in adapters:
        try:
            importlib.import_module(a.module)
            usable.append(a)
        except Exception as exc:  # noqa: BLE001 - any import failure means: skip this library
            skipped.append(f"{a.key}: import {a.module} failed ({type(exc).__name__}: {exc})")
            print(f"skipping {a.key}: cannot import {a.module}: {exc}", flush=True)

    n_max = sizes[-1]
    data_path, data_info = _prepare_vectors(args, workdir, n_max, t0)
    data = np.load(data_path, mmap_mode="r")
    dim = int(data.shape[1])
    held = np.asarray(data[len(data) - args.queries:] if args.vectors and data_path == Path(args.vectors)
                      else data[n_max:n_max + args.queries], dtype=np.float32)
    queries = perturbed_queries(held, args.seed)
    queries_path = workdir / "queries.npy"
    np.save(queries_path, queries)
    data_info["dim"] = dim
    figures: dict = {
        "versions": _versions([*usable, ExactAdapter()]),
        "hardware": _hardware(args.hardware_note),
        "params": {"sizes": sizes, "queries": args.queries, "k": args.k, "efs": efs, "M": args.m,
                   "ef_construction": args.ef_construction, "build_threads": args.build_threads,
                   "query_threads": 1, "recall_target": args.recall_target,
                   "faiss_ids": "faiss HNSW numbers rows sequentially; arbitrary ids need IndexIDMap",
                   "sqlite_int8_scale": "one global scale 127 / max|component| over the indexed rows",
                   "query_timing": "time.perf_counter around each single search call, Python wrapper included"},
        "data": data_info,
        "skipped": skipped,
        "sizes": {},
    }
    probes: dict[str, dict] = {}
    skip_below = args.recall_target if args.skip_below is None else args.skip_below
    best_recall: dict[str, float] = {}  # per variant, over its open modes and efs, at the last size it ran
    partial = workdir / "partial.json"
    for n in sizes:
        res: dict = {"n": n, "data_mib": round(n * dim * 4 / MIB, 1), "variants": []}
        figures["sizes"][str(n)] = res
        _log(f"{n:,} vectors: exact top-{args.k} for {args.queries} queries (blocked float32 matmul)", t0)
        start = time.perf_counter()
        truth, scores = exact_topk(data[:n], queries, args.k + 1)
        truth = truth[:, :args.k]
        gt_s = time.perf_counter() - start
        res["ground_truth"] = {"seconds": round(gt_s, 2), "ms_per_query_batched": round(gt_s * 1000 / len(queries), 2),
                               "neighbours": neighbour_stats(scores, args.k)}
        kth = scores[:, args.k - 1]

        def with_tolerant_recall(result: dict, n: int = n, kth: np.ndarray = kth) -> dict:
            for run in result.get("by_ef", []):
                found = run.pop("ids", None)
                if found is not None:
                    run["recall_at_k_eps"] = tolerant_recall(found, queries, data[:n], kth, args.k)
            return result
        truth_path = workdir / f"truth-{n}.npy"
        np.save(truth_path, truth)
        base_path = workdir / f"base-{n}.npy"  # the exact scan opens exactly the n indexed rows
        np.save(base_path, np.asarray(data[:n], dtype=np.float32))
        common = {"k": args.k, "efs": efs, "m": args.m, "ef_construction": args.ef_construction,
                  "queries": str(queries_path), "truth": str(truth_path)}
        _log(f"{n:,}: exact numpy scan, single queries", t0)
        exact = ExactAdapter()
        res["exact_scan"] = with_tolerant_recall(_run_job({**common, "job": "query", "adapter": exact.key,
                                                           "open_mode": "load", "index": str(base_path)},
                                                          workdir, 1, args.job_timeout))
        if not args.keep_files:
            base_path.unlink(missing_ok=True)
        for a in usable:
            keep_largest = [w.strip().lower() for w in args.only_at_largest.split(",") if w.strip()]
            if n == n_max and keep_largest and not any(w in a.key.lower() for w in keep_largest):
                note = f"{a.key}: not run at {n:,}: left out by --only-at-largest"
                figures["skipped"].append(note)
                _log(note, t0)
                continue
            if a.key in best_recall and best_recall[a.key] < skip_below:
                note = (f"{a.key}: not run at {n:,}: its best recall@10 at the previous size was "
                        f"{best_recall[a.key]:.3f} < {skip_below} (recall only falls as the index grows)")
                figures["skipped"].append(note)
                _log(note, t0)
                continue
            entry: dict = {"key": a.key, "library": a.library, "variant": a.variant, "open_modes": list(a.open_modes),
                           "removal": a.removal, "open": []}
            res["variants"].append(entry)
            index_path = workdir / f"{a.key.replace(' ', '_').replace('/', '-').replace('(', '').replace(')', '')}" \
                                   f"-{n}{a.suffix}"
            if a.key not in probes:
                probes[a.key] = _probe(a, common, data_path, workdir, args.job_timeout)
            entry["capabilities"] = probes[a.key]
            _log(f"{n:,}: build {a.key}", t0)
            entry["build"] = _run_job({**common, "job": "build", "adapter": a.key, "base": str(data_path), "rows": n,
                                       "index": str(index_path), "threads": args.build_threads},
                                      workdir, args.build_threads, args.job_timeout)
            if "error" in entry["build"]:
                _log(f"  build failed: {entry['build']['error']}", t0)
                index_path.unlink(missing_ok=True)
                continue
            _log(f"  built in {entry['build']['build_s']:.1f} s, {entry['build']['file_mib']:.0f} MiB", t0)
            for mode in a.open_modes:
                result = with_tolerant_recall(_run_job({**common, "job": "query", "adapter": a.key,
                                                        "open_mode": mode, "index": str(index_path)},
                                                       workdir, 1, args.job_timeout))
                entry["open"].append({"open_mode": mode, **result})
                if "error" in result:
                    _log(f"  open {mode} failed: {result['error']}", t0)
                else:
                    runs = ", ".join(f"ef {r['ef'] or 'exact'}: R {r['recall_at_k']:.3f} p50 {r['p50_ms']:.2f} ms"
                                     for r in result.get("by_ef", []))
                    _log(f"  open {mode} {result['open_ms']:.0f} ms; {runs}", t0)
            if not args.keep_files:
                index_path.unlink(missing_ok=True)
            best_recall[a.key] = max((r["recall_at_k"] for e in entry["open"] for r in e.get("by_ef", [])),
                                     default=0.0)
            partial.write_text(json.dumps(figures, indent=1))  # survives a run stopped part-way
    figures["hardware"]["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    figures["seconds_total"] = round(time.perf_counter() - t0, 1)
    figures["recommendation"] = recommend(figures["sizes"][str(n_max)], n_max, args.recall_target)
    not_run = [line.split(": ", 1)[0] + " (" + line.split(": ")[-1] + ")" for line in figures["skipped"]
               if f"not run at {n_max:,}" in line]
    if not_run:
        text = figures["recommendation"]["text"].rstrip()
        figures["recommendation"]["text"] = text + f" Not run at {n_max:,}: " + "; ".join(not_run) + "."
    baseline = {size: {"exact_scan": {k: v for k, v in res.get("exact_scan", {}).items() if k != "traceback"},
                       "ground_truth": res["ground_truth"]} for size, res in figures["sizes"].items()}
    ratio = {size: {f"{r['key']} [{r['open_mode']}] ef={r['best']['ef']}": r["speedup"]
                    for r in _summaries(res, args.recall_target) if r["best"] and r["speedup"]}
             for size, res in figures["sizes"].items()}
    write_result("ann_libraries", figures, baseline, ratio, split=data_info["source"], n=n_max)
    print_tables(figures, args.recall_target)
    if not args.keep_files and not args.vectors:
        shutil.rmtree(workdir, ignore_errors=True)
    elif not args.keep_files:
        for p in (queries_path, *workdir.glob("truth-*.npy"), workdir / "vectors.npy"):
            p.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
