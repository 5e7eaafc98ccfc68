"""Deferred vectors: the instance vectors a load left out (``kn load --defer-vectors``) made after its commit,
while the network already answers from its text index and conditions.

    VectorFill(core, index, loader).fill("shop", progress)      # -> FillStats; a no-op when nothing is pending

Contract: a load with ``defer_vectors`` commits every row but the instances' ``knn`` vectors and records
``stats["vectors_pending"] = {"done": 0, "total": n}`` (:data:`~kgrag.network.store.core.VECTORS_PENDING`; ``n`` the
instances of object types with ``knn`` fields). While it is there the store's knn over the network's instances
answers nothing (:meth:`StoreIndex.vectors_pending`) and builds no index from a part of the vectors.
:meth:`VectorFill.fill` walks those types' instances by id, :data:`FILL_CHUNK` at a time, reads the ``knn`` texts
of the ones without vectors, embeds them with the network's recorded embedder (its on-disk cache: a resumed fill
re-embeds nothing) and writes their vectors and the progress in one transaction per chunk — a transaction that
first checks the network's version is still the one the chunk was read at (a change that committed meanwhile
wrote its own vectors: the chunk is read again). When every type is walked, one transaction removes the pending
entry and sets a new version (with no change record, so every per-version cache is rebuilt, not moved forward),
and the ANN bases of the big object types are built. An interrupted fill leaves the network searchable as before
and resumes where the vectors stop (instances that have theirs are skipped); ``kgrag kn load`` finishes it.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.engine import Connection

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import fields_with
from kgrag.network.store.core import VECTORS_PENDING, StoreCore, unmapped
from kgrag.network.store.index import StoreIndex
from kgrag.network.store.load import Progress, StoreLoader
from kgrag.network.store.rows import Embeddable, knn_texts
from kgrag.rank.embedder_factory import TextEmbedder

__all__ = ["FILL_CHUNK", "FillStats", "VectorFill"]

#: instances read, embedded and written per transaction of a fill
FILL_CHUNK = 20_000


@dataclass
class FillStats:
    """What one :meth:`VectorFill.fill` did (``version``: the network's version after; unchanged when nothing was
    pending)."""

    kn_id: str
    instances: int = 0  # instances walked
    vectors: int = 0  # vectors written
    seconds: float = 0.0
    version: str = ""
    filled: bool = False  # whether vectors were pending (and are now complete)


class _Moved(Exception):
    """The network's version moved between reading a chunk and writing its vectors."""


class VectorFill:
    """:meth:`fill` over ``core``'s database (see the module docstring)."""

    def __init__(self, core: StoreCore, index: StoreIndex, loader: StoreLoader) -> None:
        self.core = core
        self.index = index
        self.loader = loader

    def fill(self, kn_id: str, progress: Progress | None = None, chunk: int = FILL_CHUNK) -> FillStats:
        """Make ``kn_id``'s deferred instance vectors (see the module docstring); ``progress("vectors", done,
        total)`` hears each chunk, then ``progress("ann", …)`` the ANN bases."""
        start = time.perf_counter()
        say = progress or (lambda stage, done, total: None)
        out = FillStats(kn_id, version=self.core.network_version(kn_id))
        state = self.core.vectors_pending(kn_id)
        if state is None:
            return out
        total = int(state.get("total", 0))
        network = self.core.get_network(kn_id)
        embedder = self.index.embedder_for(kn_id)
        say("vectors", 0, total)
        for type_id, names in fields_with(network, "knn").items():
            if not names:
                continue
            after = ""
            while True:
                try:
                    walked, written, after = self._chunk(kn_id, type_id, names, after, chunk, embedder,
                                                         out.instances, total)
                except _Moved:
                    continue  # read again at the new version
                if not walked:
                    break
                out.instances += walked
                out.vectors += written
                say("vectors", min(out.instances, total), total)
        out.version = self._complete(kn_id)
        out.filled = True
        say("vectors", total, total)
        self.core.forget(kn_id)
        self.index.forget(kn_id)
        self.index.build_ann(kn_id, progress)
        out.seconds = time.perf_counter() - start
        return out

    def _chunk(self, kn_id: str, type_id: str, names: list[str], after: str, size: int, embedder: TextEmbedder,
               done: int, total: int) -> tuple[int, int, str]:
        """One chunk of a type after the ``done`` instances walked before it: ``(instances walked, vectors
        written, last id)``; :class:`_Moved` when the network changed between the read and the write."""
        ti, tv = t.instances, t.vectors
        with unmapped(self.core.engine) as conn:
            version = self.core._version(conn, kn_id)
            rows = conn.execute(select(ti.c.id, ti.c.properties)
                                .where(ti.c.kn_id == kn_id, ti.c.object_type_id == type_id, ti.c.id > after)
                                .order_by(ti.c.id).limit(size)).all()
            if not rows:
                return 0, 0, after
            last = rows[-1].id
            have = {(r.item_id, r.field) for r in conn.execute(
                select(tv.c.item_id, tv.c.field).where(tv.c.kn_id == kn_id, tv.c.kind == "instance",
                                                       tv.c.type_id == type_id, tv.c.item_id > after,
                                                       tv.c.item_id <= last))}
        pending = Embeddable()
        for row in rows:
            knn_texts(type_id, row.id, row.properties or {}, names, pending)
        keep = [i for i, key in enumerate(pending.keys) if (key[2], key[3]) not in have]
        todo = Embeddable([pending.keys[i] for i in keep], [pending.texts[i] for i in keep])
        vectors = self.loader.vector_rows(kn_id, todo, embedder) if todo.texts else []
        with self.core.engine.begin() as conn:
            if self.core._version(conn, kn_id) != version:
                raise _Moved
            self.loader._insert(conn, "vectors", vectors)
            self._progress(conn, kn_id, min(done + len(rows), total), total)
        return len(rows), len(vectors), last

    @staticmethod
    def _progress(conn: Connection, kn_id: str, done: int, total: int) -> None:
        stats = conn.execute(select(t.networks.c.stats).where(t.networks.c.kn_id == kn_id)).scalar() or {}
        if VECTORS_PENDING in stats:
            conn.execute(update(t.networks).where(t.networks.c.kn_id == kn_id)
                         .values(stats={**stats, VECTORS_PENDING: {"done": done, "total": total}}))

    def _complete(self, kn_id: str) -> str:
        """The pending entry removed, the vector count recounted and a new version set (no change record)."""
        tv = t.vectors
        with self.core.engine.begin() as conn:
            stats = dict(conn.execute(select(t.networks.c.stats).where(t.networks.c.kn_id == kn_id)).scalar() or {})
            stats.pop(VECTORS_PENDING, None)
            stats.pop("change", None)  # caches of the version before are rebuilt, not moved forward
            stats["vectors"] = conn.execute(select(func.count()).select_from(tv).where(tv.c.kn_id == kn_id)).scalar()
            version = uuid.uuid4().hex
            conn.execute(update(t.networks).where(t.networks.c.kn_id == kn_id)
                         .values(stats=stats, version=version, loaded_at=time.time()))
        return version
