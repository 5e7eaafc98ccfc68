"""Incremental changes of a stored network: upserts and deletes of instances and links, or the difference to a
desired full state, applied in ONE transaction that bumps the network's version.

    store.apply_changes("library", NetworkChanges(delete_instances=[("Book", "b1")]))   # -> ChangeStats

Contract: :meth:`StoreChanges.apply_changes` validates the whole change against the stored network before
anything is written — an unknown object or relation type, an instance or link named twice (or both upserted and
deleted), a link whose endpoint is not an instance of the relation's source/target type once the change is
applied: ``ValueError`` naming the row, nothing applied; an unknown ``kn_id``: :class:`NetworkNotFound`. An
upserted instance whose properties hash (:func:`~kgrag.network.store.rows.content_hash`) equals the stored
one is left untouched; only inserted and changed instances are re-tokenised, re-embedded and re-chunked, and
exactly the derived rows of changed and deleted instances are removed (their text rows — out of the FTS5 index
first on SQLite —, vectors, chunks and chunk vectors; a deleted instance's links both ways). Rows are derived
before the transaction; the transaction then checks that the version it was planned on is still the stored one
(else it plans again), writes, recounts the network's stats and sets a new version — only when something
changed. On PostgreSQL it takes the loads' advisory lock and adjusts ``kn_text_terms`` by the removed and added
rows' tokens. :meth:`StoreChanges.sync` takes a network's desired full state (what a schema file describes),
diffs it against the store (content hash per instance, links by (relation, source, target)) and applies the
difference the same way: a changed schema rewrites the type rows and re-indexes the instances of object types
whose display key or match/knn fields changed; a changed ``network.text`` chunking or embedder cannot be
applied row by row and reloads the network in full (``full_reload`` with a one-line ``note``), as does the
first load of an absent network.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection

from kgrag.data.gc_pause import gc_paused
from kgrag.errors import NetworkNotFound
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link, ObjectType, RelationType, TextConfig
from kgrag.network.store.core import StoreCore
from kgrag.network.store.index import StoreIndex
from kgrag.network.store.load import BATCH, LoadStats, Progress, StoreLoader
from kgrag.network.store.rows import (
    Embeddable,
    check_schema,
    chunk_rows,
    content_hash,
    index_types,
    instance_ids,
    instance_rows,
    link_rows,
    type_rows,
)
from kgrag.network.store.text_rank import fts_terms
from kgrag.rank.embedder_factory import TextEmbedder

__all__ = ["ChangeStats", "NetworkChanges", "ScopeOutdated", "StoreChanges", "SyncScope"]

#: ids per ``IN (…)`` list of a read
IN_BATCH = 500
#: the most instance and link keys a change records in the network's stats (``stats["change"]``: what an
#: in-memory index of the previous version needs to move forward, kgrag.modes.index_delta); larger changes record
#: none and such indexes are rebuilt (the stats are read per question: the record stays small)
CHANGE_RECORD_LIMIT = 5_000
#: times a change is planned again when another writer changed the network between planning and writing
RETRIES = 5

InstanceKey = tuple[str, str]  # (object type id, instance id)
LinkKey = tuple[str, str, str]  # (relation type id, source id, target id)


@dataclass
class NetworkChanges:
    """What to apply to one network (see the module docstring)."""

    upsert_instances: list[Instance] = field(default_factory=list)  # insert, or replace by (object_type_id, id)
    delete_instances: list[tuple[str, str]] = field(default_factory=list)  # (object_type_id, id)
    upsert_links: list[Link] = field(default_factory=list)
    delete_links: list[Link] = field(default_factory=list)


@dataclass(frozen=True)
class SyncScope:
    """The part of a network a desired state covers (:meth:`StoreChanges.sync`): the instances of
    ``object_types`` and the links of ``relation_types``; the rest is as stored (its files did not change) —
    which holds while the network's recorded source fingerprint is still ``fingerprint`` (what the caller
    compared its files with)."""

    object_types: frozenset[str]
    relation_types: frozenset[str]
    fingerprint: str


class ScopeOutdated(ValueError):
    """A scoped sync's network was changed since its caller compared its files (another fingerprint, or none):
    nothing applied; diff the whole state instead."""


@dataclass
class ChangeStats:
    """What one change or sync did; ``version`` is the version after (unchanged when nothing changed)."""

    kn_id: str
    version: str
    instances_inserted: int = 0
    instances_updated: int = 0
    instances_deleted: int = 0
    instances_unchanged: int = 0
    links_inserted: int = 0
    links_deleted: int = 0
    full_reload: bool = False
    note: str = ""
    seconds: float = 0.0
    vectors_filled: int = 0  # deferred instance vectors made after the load (kgrag.network.store.fill)

    @property
    def changed(self) -> bool:
        return self.full_reload or any((self.instances_inserted, self.instances_updated, self.instances_deleted,
                                        self.links_inserted, self.links_deleted, self.vectors_filled))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def counts(self) -> dict[str, int]:
        """The rows it inserted, updated and deleted (what the audit log keeps)."""
        return {k: v for k, v in self.__dict__.items() if k.startswith(("instances_", "links_")) and v}


#: called inside a change's transaction: ``(connection, version before, stats)`` (:meth:`StoreChanges.apply_changes`)
OnWrite = Callable[[Connection, str, ChangeStats], None]


class _Stale(Exception):
    """The network's version moved between planning and writing (another writer): plan again."""


@dataclass
class _Plan:
    """One change, validated and derived, ready for the write transaction."""

    kn_id: str
    base_version: str
    network: KnowledgeNetwork  # the schema after the change (with its text config)
    stats: dict[str, Any]  # the stored stats before
    relations: list[RelationType]  # every relation type before or after (a deleted instance's links)
    schema_changed: bool = False
    rewrite: list[Instance] = field(default_factory=list)  # instance rows (re)written
    remove: list[InstanceKey] = field(default_factory=list)  # stored instances whose rows (and derived rows) go
    deleted: list[InstanceKey] = field(default_factory=list)  # stored instances deleted (their links too)
    new_links: list[LinkKey] = field(default_factory=list)
    gone_links: list[LinkKey] = field(default_factory=list)
    inserted: int = 0
    updated: int = 0
    unchanged: int = 0
    reindexed: int = 0
    source: dict[str, Any] | None = None
    embedder_name: str = ""
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # derived rows (see _derive)

    @property
    def empty(self) -> bool:
        return not (self.schema_changed or self.rewrite or self.remove or self.new_links or self.gone_links)

    def take(self, inst: Instance, stored_hash: str | None) -> bool:
        """Count ``inst`` against its stored content hash (None: not stored) as inserted or updated — its rows
        (re)written, an updated one's old rows removed — or unchanged; True when unchanged."""
        if stored_hash is None:
            self.inserted += 1
        elif stored_hash != content_hash(inst.properties):
            self.updated += 1
            self.remove.append((inst.object_type_id, inst.id))
        else:
            self.unchanged += 1
            return True
        self.rewrite.append(inst)
        return False


def _batches(items: Sequence[Any], size: int = IN_BATCH) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _by_type(keys: Iterable[InstanceKey]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for type_id, item_id in keys:
        out[type_id].append(item_id)
    return out


def _checked_links(network: KnowledgeNetwork, links: list[Link], ids_by_type: dict[str, set[str]]
                   ) -> list[LinkKey]:
    """The distinct ``(relation, source, target)`` of ``links`` in order; ``ValueError`` for an unknown
    relation type or an endpoint of the wrong type (:func:`~kgrag.network.store.rows.link_rows`' checks and
    messages, without building its rows)."""
    ends = {rt.id: (ids_by_type[rt.source_object_type_id], ids_by_type[rt.target_object_type_id])
            for rt in network.relation_types}
    out: dict[LinkKey, None] = {}
    for link in links:
        key = (link.relation_type_id, link.source_id, link.target_id)
        sets = ends.get(key[0])
        if sets is None or key[1] not in sets[0] or key[2] not in sets[1]:
            link_rows(network, [link], ids_by_type)  # raises, naming the link
        out[key] = None
    return list(out)


def _raw_rows(conn: Connection, sql: str, params: list[str], column: str, among: list[str] | None) -> list[Any]:
    """The rows of ``sql`` (its ``{}`` a parameter marker of the driver's style; ``params`` its values), those
    whose ``column`` is one of ``among`` when given, read through the driver's cursor (a million rows: the
    result-row objects cost more than the read)."""
    if among is not None and not among:
        return []
    marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
    sql = sql.format(marker)
    if among is not None:
        sql += f" AND {column} IN ({', '.join([marker] * len(among))})"
        params = [*params, *among]
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql, tuple(params))
        return cursor.fetchall()
    finally:
        cursor.close()


def _check_scope(instances: list[Instance], links: list[Link], scope: SyncScope) -> None:
    """A scoped desired state holds only instances and links of its scope's types (``ValueError`` else)."""
    for inst in instances:
        if inst.object_type_id not in scope.object_types:
            raise ValueError(f"instance {inst.id!r} of {inst.object_type_id!r}: outside the sync's scope")
    for link in links:
        if link.relation_type_id not in scope.relation_types:
            raise ValueError(f"link {link.source_id!r} -{link.relation_type_id}-> {link.target_id!r}: outside the "
                             "sync's scope")


def _index_definition(ot: ObjectType) -> tuple[Any, ...]:
    """What of an object type decides its instances' derived rows: display key, match and knn fields."""
    return (ot.display_key, tuple(p.name for p in ot.data_properties if "match" in p.condition_operations),
            tuple(p.name for p in ot.data_properties if "knn" in p.condition_operations))


class StoreChanges:
    """:meth:`apply_changes` and :meth:`sync` over ``core``'s database (see the module docstring); ``loader``
    makes the vectors and does full loads, ``index`` holds the embedders."""

    def __init__(self, core: StoreCore, index: StoreIndex, loader: StoreLoader) -> None:
        self.core = core
        self.index = index
        self.loader = loader

    # ------------------------------------------------------------------ public
    def apply_changes(self, kn_id: str, changes: NetworkChanges, embedder: TextEmbedder | None = None,
                      on_write: OnWrite | None = None) -> ChangeStats:
        """Apply ``changes`` to network ``kn_id`` in one transaction (see the module docstring). ``on_write(conn,
        version_before, stats)`` runs inside that transaction once a new version is written (the audit entry:
        it commits with the change or not at all)."""
        start = time.perf_counter()
        for _ in range(RETRIES):
            plan = self._plan_changes(kn_id, changes)
            try:
                return self._apply(plan, embedder or self.index.embedder_for(kn_id), start, on_write)
            except _Stale:
                continue
        raise RuntimeError(f"network {kn_id!r} kept changing while this change was prepared; try again")

    def sync(self, network: KnowledgeNetwork, instances: Iterable[Instance], links: Iterable[Link],
             embedder: TextEmbedder | None = None, source: dict[str, Any] | None = None,
             progress: Progress | None = None, defer_vectors: bool = False,
             scope: SyncScope | None = None) -> ChangeStats:
        """Make the stored network ``network.kn_id`` equal to this desired state by applying only the difference
        (an absent network is loaded in full, with ``progress`` — its instance vectors deferred with
        ``defer_vectors``: :meth:`StoreLoader.load`); ``source`` (where it came from) is kept in its stats.
        ``scope``: the state covers only those object and relation types (the others are as stored) — the
        difference is taken within them; a stored link of another relation type whose endpoint the state deletes
        is a ``ValueError`` (it is still in that type's data), as is a scope with a full reload to do, and a
        network whose recorded fingerprint is no longer the scope's is :class:`ScopeOutdated` (nothing applied)."""
        start = time.perf_counter()
        kn_id = network.kn_id
        for _ in range(RETRIES):
            try:
                current = self._current(kn_id)
            except NetworkNotFound:  # the input as given (files read again by a lazy reader: not held whole)
                stats = self.loader.load(network, instances, links, embedder, source, progress, defer_vectors)
                return self._full_stats(stats, start, inserted=stats.instances, links_inserted=stats.links,
                                        note="not stored before: loaded in full")
            instances = instances if isinstance(instances, list) else list(instances)
            links = links if isinstance(links, list) else list(links)
            if scope is not None and (current[2].get("source") or {}).get("fingerprint") != scope.fingerprint:
                raise ScopeOutdated(f"network {kn_id!r} changed since its files were compared")
            model = embedder or self.index.embedder_for(kn_id)
            plan = self._plan_sync(current, network, instances, links, source, scope)
            reason = self._full_reload_reason(current, network, model)
            if reason and scope is not None:
                raise ValueError(f"a sync of part of network {kn_id!r} cannot be applied: {reason}")
            if reason:
                before = current[2]
                stats = self.loader.load(network, instances, links, model,
                                         source if source is not None else before.get("source"), progress,
                                         defer_vectors)
                return self._full_stats(stats, start, inserted=plan.inserted, updated=plan.updated,
                                        deleted=len(plan.deleted), unchanged=plan.unchanged,
                                        links_inserted=len(plan.new_links), links_deleted=len(plan.gone_links),
                                        note=reason)
            try:
                return self._apply(plan, model, start)
            except _Stale:
                continue
        raise RuntimeError(f"network {kn_id!r} kept changing while this sync was prepared; try again")

    # ------------------------------------------------------------------ planning
    def _current(self, kn_id: str) -> tuple[str, KnowledgeNetwork, dict[str, Any]]:
        """``(version, schema with its text config, stats)`` as stored now (no cache)."""
        self.core.forget(kn_id)
        version, network, _ = self.core.schema(kn_id)
        stats = self.core.network_stats(kn_id)
        text_config = stats.get("text")
        network = network.model_copy(update={"text": TextConfig.model_validate(text_config) if text_config
                                             else None})
        return version, network, stats

    def _plan_changes(self, kn_id: str, changes: NetworkChanges) -> _Plan:
        version, network, stats = self._current(kn_id)
        object_types = {ot.id: ot for ot in network.object_types}
        relations = {rt.id: rt for rt in network.relation_types}
        upserts: dict[InstanceKey, Instance] = {}
        for inst in changes.upsert_instances:
            key = (inst.object_type_id, inst.id)
            if inst.object_type_id not in object_types:
                raise ValueError(f"instance {inst.id!r}: unknown object type {inst.object_type_id!r}")
            if key in upserts:
                raise ValueError(f"instance {inst.id!r} of {inst.object_type_id!r} is upserted twice in the change")
            upserts[key] = inst
        deletes: set[InstanceKey] = set()
        for type_id, item_id in changes.delete_instances:
            key = (type_id, item_id)
            if type_id not in object_types:
                raise ValueError(f"delete of instance {item_id!r}: unknown object type {type_id!r}")
            if key in deletes:
                raise ValueError(f"instance {item_id!r} of {type_id!r} is deleted twice in the change")
            if key in upserts:
                raise ValueError(f"instance {item_id!r} of {type_id!r} is both upserted and deleted in the change")
            deletes.add(key)
        new_links: dict[LinkKey, None] = {}
        gone_links: dict[LinkKey, None] = {}
        for kind, given, out in (("upsert", changes.upsert_links, new_links),
                                 ("delete", changes.delete_links, gone_links)):
            for link in given:
                key = (link.relation_type_id, link.source_id, link.target_id)
                if link.relation_type_id not in relations:
                    raise ValueError(f"{kind} of link {link.source_id!r} -> {link.target_id!r}: unknown relation "
                                     f"type {link.relation_type_id!r}")
                if key in out:
                    raise ValueError(f"link {key[1]!r} -{key[0]}-> {key[2]!r} is {kind}d twice in the change")
                out[key] = None
        both = new_links.keys() & gone_links.keys()
        if both:
            rel, src, dst = sorted(both)[0]
            raise ValueError(f"link {src!r} -{rel}-> {dst!r} is both upserted and deleted in the change")

        with self.core.engine.connect() as conn:
            stored = self._stored_hashes(conn, kn_id, list(upserts.keys() | deletes))
            # endpoints of new links: after the change = upserted, or stored and not deleted
            needed: set[InstanceKey] = set()
            for rel, src, dst in new_links:
                rt = relations[rel]
                needed.update(((rt.source_object_type_id, src), (rt.target_object_type_id, dst)))
            lookup = [k for k in needed if k not in upserts and k not in stored]
            present = set(stored) | self._existing(conn, kn_id, lookup)
            for rel, src, dst in new_links:
                rt = relations[rel]
                for end, key in (("source", (rt.source_object_type_id, src)), ("target", (rt.target_object_type_id,
                                                                                            dst))):
                    if key not in upserts and (key not in present or key in deletes):
                        raise ValueError(f"link {src!r} -{rel}-> {dst!r}: {end} {key[1]!r} is not an instance of "
                                         f"{key[0]!r} after the change")
            existing_links = self._existing_links(conn, kn_id, [*new_links, *gone_links])
        plan = _Plan(kn_id=kn_id, base_version=version, network=network, stats=stats,
                     relations=network.relation_types)
        for key, inst in upserts.items():
            plan.take(inst, stored.get(key))
        plan.deleted = sorted(k for k in deletes if k in stored)
        plan.remove += plan.deleted
        plan.new_links = [k for k in new_links if k not in existing_links]
        plan.gone_links = [k for k in gone_links if k in existing_links]
        return plan

    def _plan_sync(self, current: tuple[str, KnowledgeNetwork, dict[str, Any]], network: KnowledgeNetwork,
                   instances: list[Instance], links: list[Link], source: dict[str, Any] | None,
                   scope: SyncScope | None = None) -> _Plan:
        version, stored_network, stats = current
        object_types = check_schema(network)
        ids_by_type = instance_ids(instances, object_types)
        if scope is not None:
            _check_scope(instances, links, scope)
            with self.core.engine.connect() as conn:
                for type_id in {end for rt in network.relation_types if rt.id in scope.relation_types
                                for end in (rt.source_object_type_id, rt.target_object_type_id)}:
                    if type_id not in scope.object_types and type_id in ids_by_type:
                        ids_by_type[type_id] = self._type_ids(conn, network.kn_id, type_id)
        desired_links = _checked_links(network, links, ids_by_type)
        old_types = {ot.id: ot for ot in stored_network.object_types}
        reindex = {ot.id for ot in network.object_types
                   if ot.id in old_types and _index_definition(ot) != _index_definition(old_types[ot.id])}
        names = {rt.id for rt in network.relation_types}
        plan = _Plan(kn_id=network.kn_id, base_version=version, network=network, stats=stats,
                     relations=[*network.relation_types,
                                *(rt for rt in stored_network.relation_types if rt.id not in names)],
                     source=source)
        plan.schema_changed = (type_rows(stored_network) != type_rows(network)
                               or (stored_network.name, stored_network.comment) != (network.name, network.comment))
        with gc_paused():  # a million stored keys read and compared: the cyclic GC would rescan them repeatedly
            with self.core.engine.connect() as conn:
                stored = self._stored_hashes(conn, network.kn_id, None, scope)
                stored_links = self._all_links(conn, network.kn_id, scope)
            if scope is not None:  # the instances of the other types are as stored: unchanged
                plan.unchanged = int(stats.get("instances", 0)) - len(stored)
            for inst in instances:
                key = (inst.object_type_id, inst.id)
                if plan.take(inst, stored.pop(key, None)) and inst.object_type_id in reindex:
                    plan.reindexed += 1
                    plan.rewrite.append(inst)
                    plan.remove.append(key)
        plan.deleted = sorted(stored)
        plan.remove += plan.deleted
        if scope is not None and plan.deleted:
            self._check_kept_links(network, plan.relations, plan.deleted, scope)
        desired = set(desired_links)
        plan.new_links = [k for k in desired_links if k not in stored_links]
        plan.gone_links = sorted(stored_links - desired)
        return plan

    def _full_reload_reason(self, current: tuple[str, KnowledgeNetwork, dict[str, Any]],
                            network: KnowledgeNetwork, embedder: TextEmbedder) -> str:
        """Why the desired state cannot be applied row by row ("" when it can)."""
        _, _, stats = current
        new_text = network.text.model_dump(mode="json") if network.text is not None else None
        if (stats.get("text") or None) != new_text:
            return "the network's text (chunking) configuration changed: every chunk is rebuilt"
        recorded = self.core.recorded_embedder(network.kn_id)
        if recorded and recorded != embedder.model_name:
            return f"the embedder changed ({recorded} -> {embedder.model_name}): every vector is remade"
        return ""

    # ------------------------------------------------------------------ reads
    def _stored_hashes(self, conn: Connection, kn_id: str, keys: list[InstanceKey] | None,
                       scope: SyncScope | None = None) -> dict[InstanceKey, str]:
        """``{(type, id): content hash}`` of the stored instances among ``keys`` (None: all, or those of
        ``scope``'s object types); a row stored without a hash gets it computed from its properties (and written
        back, outside any change's transaction)."""
        i = t.instances
        cols = (i.c.object_type_id, i.c.id, i.c.content_hash)
        if keys is None:  # a whole network's (a million rows): through the driver's cursor, as _all_links
            types = None if scope is None else sorted(scope.object_types)
            out = {(type_id, item_id): digest for type_id, item_id, digest in _raw_rows(
                conn, "SELECT object_type_id, id, content_hash FROM kn_instances WHERE kn_id = {}", [kn_id],
                "object_type_id", types)}
        else:
            rows: list[Any] = []
            for type_id, ids in _by_type(keys).items():
                for chunk in _batches(ids):
                    rows += conn.execute(select(*cols).where(i.c.kn_id == kn_id, i.c.object_type_id == type_id,
                                                             i.c.id.in_(chunk)))
            out = {(r.object_type_id, r.id): r.content_hash for r in rows}
        missing = [k for k, h in out.items() if h is None]
        if missing:
            filled: list[dict[str, Any]] = []
            for type_id, ids in _by_type(missing).items():
                for chunk in _batches(ids):
                    for r in conn.execute(select(i.c.id, i.c.properties).where(
                            i.c.kn_id == kn_id, i.c.object_type_id == type_id, i.c.id.in_(chunk))):
                        digest = content_hash(r.properties)
                        out[(type_id, r.id)] = digest
                        filled.append({"k": kn_id, "t": type_id, "i": r.id, "h": digest})
            self._backfill(filled)
        return out

    def _backfill(self, filled: list[dict[str, Any]]) -> None:
        """Write the hashes of rows stored without one (the hash is a function of the stored properties: no
        version change; a row rewritten meanwhile already has its own)."""
        stmt = text("UPDATE kn_instances SET content_hash = :h WHERE kn_id = :k AND object_type_id = :t "
                    "AND id = :i AND content_hash IS NULL")
        with self.core.engine.begin() as conn:
            for chunk in _batches(filled, BATCH):
                conn.execute(stmt, list(chunk))

    @staticmethod
    def _existing(conn: Connection, kn_id: str, keys: list[InstanceKey]) -> set[InstanceKey]:
        i = t.instances
        out: set[InstanceKey] = set()
        for type_id, ids in _by_type(keys).items():
            for chunk in _batches(ids):
                out.update((type_id, r.id) for r in conn.execute(select(i.c.id).where(
                    i.c.kn_id == kn_id, i.c.object_type_id == type_id, i.c.id.in_(chunk))))
        return out

    @staticmethod
    def _existing_links(conn: Connection, kn_id: str, keys: list[LinkKey]) -> set[LinkKey]:
        """Which of ``keys`` are stored links (read by relation and source id)."""
        lk = t.links
        wanted = set(keys)
        sources: dict[str, list[str]] = defaultdict(list)
        for rel, src, _ in wanted:
            sources[rel].append(src)
        out: set[LinkKey] = set()
        for rel, ids in sources.items():
            for chunk in _batches(sorted(set(ids))):
                for r in conn.execute(select(lk.c.source_id, lk.c.target_id).where(
                        lk.c.kn_id == kn_id, lk.c.relation_type_id == rel, lk.c.source_id.in_(chunk))):
                    key = (rel, r.source_id, r.target_id)
                    if key in wanted:
                        out.add(key)
        return out

    @staticmethod
    def _all_links(conn: Connection, kn_id: str, scope: SyncScope | None = None) -> set[LinkKey]:
        """Every stored link of the network (of ``scope``'s relation types), read through the driver's cursor
        (a quarter million rows: the result-row objects cost more than the read)."""
        if scope is not None and not scope.relation_types:
            return set()
        return set(map(tuple, _raw_rows(conn, "SELECT relation_type_id, source_id, target_id FROM kn_links "
                                        "WHERE kn_id = {}", [kn_id], "relation_type_id",
                                        None if scope is None else sorted(scope.relation_types))))

    @staticmethod
    def _type_ids(conn: Connection, kn_id: str, type_id: str) -> set[str]:
        """The ids of the stored instances of ``type_id``."""
        i = t.instances
        return set(conn.execute(select(i.c.id).where(i.c.kn_id == kn_id, i.c.object_type_id == type_id)).scalars())

    def stored_ids(self, kn_id: str, type_id: str) -> set[str]:
        """The ids of the stored instances of object type ``type_id`` of network ``kn_id``."""
        with self.core.engine.connect() as conn:
            return self._type_ids(conn, kn_id, type_id)

    def _check_kept_links(self, network: KnowledgeNetwork, relations: list[RelationType],
                          deleted: list[InstanceKey], scope: SyncScope) -> None:
        """A scoped sync's deletions against the links it does not cover: such a link is still in its (unchanged)
        data, so one whose endpoint is deleted is a ``ValueError`` naming it (what a whole sync says of it)."""
        lk = t.links
        gone = _by_type(deleted)
        with self.core.engine.connect() as conn:
            for rt in relations:
                if rt.id in scope.relation_types:
                    continue
                for end, type_id, column in (("source", rt.source_object_type_id, lk.c.source_id),
                                             ("target", rt.target_object_type_id, lk.c.target_id)):
                    for chunk in _batches(gone.get(type_id, [])):
                        row = conn.execute(select(lk.c.source_id, lk.c.target_id).where(
                            lk.c.kn_id == network.kn_id, lk.c.relation_type_id == rt.id, column.in_(chunk))
                            .limit(1)).first()
                        if row is not None:
                            ident = row.source_id if end == "source" else row.target_id
                            raise ValueError(f"link {row.source_id!r} -{rt.id}-> {row.target_id!r}: {end} "
                                             f"{ident!r} is not an instance of {type_id!r} after the change")

    # ------------------------------------------------------------------ derived rows
    def _derive(self, plan: _Plan, embedder: TextEmbedder) -> None:
        """The rows the plan writes: instance rows, their text rows, vectors and chunks (and the type rows with
        their text rows and vectors when the schema changed), computed before the transaction."""
        network = plan.network
        text_rows: list[dict[str, Any]] = []
        pending = Embeddable()
        instance_table, _ = instance_rows(network, plan.rewrite, check_schema(network), text_rows, pending)
        types: dict[str, list[dict[str, Any]]] = {"object_types": [], "relation_types": [], "action_types": []}
        if plan.schema_changed:
            index_types(network, text_rows, pending)
            types = type_rows(network)
        chunk_table = chunk_rows(network, plan.rewrite, pending)
        plan.rows = {**types, "instances": instance_table, "text": text_rows,
                     "vectors": self.loader.vector_rows(network.kn_id, pending, embedder), "chunks": chunk_table}
        plan.embedder_name = embedder.model_name

    # ------------------------------------------------------------------ the write
    def _apply(self, plan: _Plan, embedder: TextEmbedder, start: float, on_write: OnWrite | None = None
               ) -> ChangeStats:
        stats = ChangeStats(kn_id=plan.kn_id, version=plan.base_version, instances_inserted=plan.inserted,
                            instances_updated=plan.updated, instances_deleted=len(plan.deleted),
                            instances_unchanged=plan.unchanged, links_inserted=len(plan.new_links))
        if plan.reindexed:
            stats.note = (f"re-indexed {plan.reindexed} unchanged instances (their object type's display key or "
                          "match/knn fields changed)")
        if plan.empty:
            if plan.source is not None and plan.source != plan.stats.get("source"):
                self._record_source(plan)
            stats.seconds = time.perf_counter() - start
            return stats
        self._derive(plan, embedder)
        stats.version = uuid.uuid4().hex
        self._write(plan, stats, on_write)
        self.core.forget(plan.kn_id)  # the index's caches stay: keyed by version, they move forward by the record
        stats.seconds = time.perf_counter() - start
        return stats

    def _record_source(self, plan: _Plan) -> None:
        """Keep where an unchanged network now comes from (its stats only: the data and version stay)."""
        with self.core.engine.begin() as conn:
            row = conn.execute(select(t.networks.c.stats).where(t.networks.c.kn_id == plan.kn_id,
                                                                t.networks.c.version == plan.base_version)).first()
            if row is not None:
                conn.execute(update(t.networks).where(t.networks.c.kn_id == plan.kn_id)
                             .values(stats={**row.stats, "source": plan.source}))

    def _write(self, plan: _Plan, stats: ChangeStats, on_write: OnWrite | None = None) -> None:
        """Write ``plan`` in one transaction under ``stats.version`` (setting ``stats.links_deleted``; then
        ``on_write`` in the same transaction). :class:`_Stale` when the stored version is no longer the one planned
        on."""
        kn_id, version = plan.kn_id, stats.version
        postgres = self.core.dialect == "postgresql"
        with self.core.engine.begin() as conn:
            if postgres:  # the loads' lock: one writer of a network at a time
                conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(kn_id, 0))))
            moved = conn.execute(update(t.networks).where(t.networks.c.kn_id == kn_id,
                                                          t.networks.c.version == plan.base_version)
                                 .values(version=version, loaded_at=time.time()))
            if moved.rowcount != 1:
                raise _Stale(kn_id)
            links_before = conn.execute(select(func.count()).select_from(t.links)
                                        .where(t.links.c.kn_id == kn_id)).scalar_one()
            removed_texts: list[str] = []
            if plan.schema_changed:
                removed_texts += self._replace_types(conn, plan)
            removed_texts += self._remove_instances(conn, kn_id, plan.remove)
            self._remove_links(conn, plan)
            self._insert_rows(conn, plan)
            if postgres:
                self._adjust_terms(conn, kn_id, removed_texts, [r["text"] for r in plan.rows["text"]])
            counts = self._counts(conn, kn_id)
            new_stats = {**plan.stats, **counts}
            for key in ("version", "loaded_at", "embedder"):
                new_stats.pop(key, None)
            if plan.source is not None:
                new_stats["source"] = plan.source
            elif isinstance(new_stats.get("source"), dict) and "fingerprint" in new_stats["source"]:
                # changed otherwise than from its files: it no longer equals the files the hashes name
                new_stats["source"] = {k: v for k, v in new_stats["source"].items()
                                       if k not in ("fingerprint", "files")}
            new_stats["change"] = self._record(plan)
            values: dict[str, Any] = {"stats": new_stats, "name": plan.network.name,
                                      "comment": plan.network.comment}
            if counts["vectors"] and not plan.stats.get("embedder") and plan.rows["vectors"]:
                values["embedder"] = plan.embedder_name
            conn.execute(update(t.networks).where(t.networks.c.kn_id == kn_id).values(**values))
            stats.links_deleted = links_before + len(plan.new_links) - counts["links"]
            if on_write is not None:
                on_write(conn, plan.base_version, stats)

    @staticmethod
    def _record(plan: _Plan) -> dict[str, Any]:
        """What this change touched, for in-memory indexes of the version it was applied to (module constant
        :data:`CHANGE_RECORD_LIMIT`): instances removed or rewritten, links added and removed explicitly (a
        deleted instance's links go with it), and whether the schema changed."""
        touched = sorted({*plan.remove, *((i.object_type_id, i.id) for i in plan.rewrite)})
        record: dict[str, Any] = {"from": plan.base_version, "schema": plan.schema_changed, "instances": None}
        if len(touched) + len(plan.new_links) + len(plan.gone_links) <= CHANGE_RECORD_LIMIT:
            record.update(instances=[list(k) for k in touched], links_added=[list(k) for k in plan.new_links],
                          links_removed=[list(k) for k in plan.gone_links])
        return record

    def _drop_text_rows(self, conn: Connection, kn_id: str, keys: list[dict[str, Any]]) -> list[str]:
        """Remove the text rows of ``keys`` (``{"kind", "type_id", "item_id"}``) — from the FTS5 index first on
        SQLite; returns their texts on PostgreSQL (the term statistics' delta)."""
        if not keys:
            return []
        where = "kn_id = :k AND kind = :kind AND type_id = :type_id AND item_id = :item_id"
        params = [{"k": kn_id, **key} for key in keys]
        texts: list[str] = []
        if self.core.dialect == "sqlite":
            conn.execute(text("INSERT INTO kn_text(kn_text, rowid, text, scope) SELECT 'delete', id, text, scope "
                              f"FROM kn_text_rows WHERE {where}"), params)
        else:
            ti = t.text_index
            groups: dict[tuple[str, str], list[str]] = defaultdict(list)
            for key in keys:
                groups[(key["kind"], key["type_id"])].append(key["item_id"])
            for (kind, type_id), ids in groups.items():
                for chunk in _batches(ids):
                    texts += conn.execute(select(ti.c.text).where(
                        ti.c.kn_id == kn_id, ti.c.kind == kind, ti.c.type_id == type_id,
                        ti.c.item_id.in_(chunk))).scalars()
        conn.execute(text(f"DELETE FROM kn_text_rows WHERE {where}"), params)
        return texts

    @staticmethod
    def _drop_vectors(conn: Connection, kn_id: str, keys: list[dict[str, Any]]) -> None:
        if keys:
            conn.execute(text("DELETE FROM kn_vectors WHERE kn_id = :k AND kind = :kind AND type_id = :type_id "
                              "AND item_id = :item_id"), [{"k": kn_id, **key} for key in keys])

    def _replace_types(self, conn: Connection, plan: _Plan) -> list[str]:
        """Replace the schema rows and the types' text rows and vectors (few rows); returns removed texts."""
        kn_id = plan.kn_id
        keys = [{"kind": kind, "type_id": "", "item_id": r.id}
                for kind, table in (("object_type", t.object_types), ("relation_type", t.relation_types))
                for r in conn.execute(select(table.c.id).where(table.c.kn_id == kn_id))]
        texts = self._drop_text_rows(conn, kn_id, keys)
        self._drop_vectors(conn, kn_id, keys)
        for name in ("object_types", "relation_types", "action_types"):
            table = StoreLoader.TABLES[name]
            conn.execute(table.delete().where(table.c.kn_id == kn_id))
            if plan.rows[name]:
                conn.execute(table.insert(), plan.rows[name])
        return texts

    def _remove_instances(self, conn: Connection, kn_id: str, keys: list[InstanceKey]) -> list[str]:
        """Remove the rows of stored instances ``keys`` and everything derived from them (not their links);
        returns the removed text rows' texts (PostgreSQL)."""
        if not keys:
            return []
        item_keys = [{"kind": "instance", "type_id": type_id, "item_id": item_id} for type_id, item_id in keys]
        texts = self._drop_text_rows(conn, kn_id, item_keys)
        self._drop_vectors(conn, kn_id, item_keys)
        ch = t.chunks
        chunk_ids: list[str] = []
        for type_id, ids in _by_type(keys).items():
            for chunk in _batches(ids):
                chunk_ids += conn.execute(select(ch.c.id).where(ch.c.kn_id == kn_id, ch.c.object_type_id == type_id,
                                                                ch.c.doc_id.in_(chunk))).scalars()
        if chunk_ids:
            self._drop_vectors(conn, kn_id, [{"kind": "chunk", "type_id": "", "item_id": c} for c in chunk_ids])
            conn.execute(text("DELETE FROM kn_chunks WHERE kn_id = :k AND id = :i"),
                         [{"k": kn_id, "i": c} for c in chunk_ids])
        conn.execute(text("DELETE FROM kn_instances WHERE kn_id = :k AND object_type_id = :t AND id = :i"),
                     [{"k": kn_id, "t": type_id, "i": item_id} for type_id, item_id in keys])
        return texts

    @staticmethod
    def _remove_links(conn: Connection, plan: _Plan) -> None:
        """Delete the links of deleted instances (both ways, by every relation type their type takes part in,
        before or after the change) and the links the change deletes."""
        kn_id = plan.kn_id
        for end in ("source", "target"):
            params = [{"k": kn_id, "r": rt.id, "i": item_id}
                      for type_id, item_id in plan.deleted for rt in plan.relations
                      if getattr(rt, f"{end}_object_type_id") == type_id]
            if params:
                conn.execute(text(f"DELETE FROM kn_links WHERE kn_id = :k AND relation_type_id = :r "
                                  f"AND {end}_id = :i"), params)
        if plan.gone_links:
            conn.execute(text("DELETE FROM kn_links WHERE kn_id = :k AND relation_type_id = :r AND source_id = :s "
                              "AND target_id = :d"),
                         [{"k": kn_id, "r": r, "s": s, "d": d} for r, s, d in plan.gone_links])

    def _insert_rows(self, conn: Connection, plan: _Plan) -> None:
        """Insert the plan's new rows (batched; the text rows in scope order); on SQLite index the new text rows in
        FTS5 (their ids follow every stored id: this transaction holds the write lock)."""
        kn_id = plan.kn_id
        sqlite = self.core.dialect == "sqlite"
        first_new = 0
        if sqlite and plan.rows["text"]:
            first_new = t.last_text_row_id(conn)
        # new text rows by scope: a change adds one id run per scope it touches (text_layout)
        plan.rows["text"] = sorted(plan.rows["text"], key=lambda row: row["scope"])
        for name in ("instances", "text", "vectors", "chunks"):
            for chunk in _batches(plan.rows[name], BATCH):
                conn.execute(StoreLoader.TABLES[name].insert(), list(chunk))
        if sqlite and plan.rows["text"]:
            conn.execute(text("INSERT INTO kn_text(rowid, text, scope) SELECT id, text, scope FROM kn_text_rows "
                              "WHERE id > :m"), {"m": first_new})
        link_params = [{"kn_id": kn_id, "relation_type_id": r, "source_id": s, "target_id": d}
                       for r, s, d in plan.new_links]
        for chunk in _batches(link_params, BATCH):
            conn.execute(t.links.insert(), list(chunk))

    @staticmethod
    def _adjust_terms(conn: Connection, kn_id: str, removed: list[str], added: list[str]) -> None:
        """PostgreSQL's ``kn_text_terms``: subtract the removed text rows' tokens, add the new rows' ones."""
        if not removed and not added:
            return
        rows: Counter[str] = Counter()
        total = 0
        for sign, texts in ((-1, removed), (1, added)):
            for value in texts:
                tokens = fts_terms(value)
                total += sign * len(tokens)
                for tok in set(tokens):
                    rows[tok] += sign
        params = [{"token": "", "kn_id": kn_id, "rows": len(added) - len(removed), "tokens": total}]
        params += [{"token": tok, "kn_id": kn_id, "rows": n, "tokens": n} for tok, n in rows.items() if tok and n]
        tt = t.text_terms
        stmt = pg_insert(tt)
        stmt = stmt.on_conflict_do_update(index_elements=[tt.c.token, tt.c.kn_id],
                                          set_={"rows": tt.c.rows + stmt.excluded.rows,
                                                "tokens": tt.c.tokens + stmt.excluded.tokens})
        for chunk in _batches(params, BATCH):
            conn.execute(stmt, list(chunk))
        conn.execute(tt.delete().where(tt.c.kn_id == kn_id, tt.c.token != "", tt.c.rows <= 0))

    @staticmethod
    def _counts(conn: Connection, kn_id: str) -> dict[str, Any]:
        """The network's stored counts (what a load's stats hold), counted in this transaction."""
        def count(table: Any) -> int:
            return conn.execute(select(func.count()).select_from(table).where(table.c.kn_id == kn_id)).scalar_one()

        i = t.instances
        by_type: dict[str, int] = {r[0]: r[1] for r in conn.execute(
            select(i.c.object_type_id, func.count()).where(i.c.kn_id == kn_id).group_by(i.c.object_type_id))}
        types = conn.execute(select(t.object_types.c.id).where(t.object_types.c.kn_id == kn_id)
                             .order_by(t.object_types.c.position)).scalars()
        return {"instances": sum(by_type.values()), "links": count(t.links), "text_rows": count(t.text_index),
                "vectors": count(t.vectors), "chunks": count(t.chunks),
                "instances_by_type": {type_id: by_type.get(type_id, 0) for type_id in types}}

    @staticmethod
    def _full_stats(stats: LoadStats, start: float, *, inserted: int = 0, updated: int = 0, deleted: int = 0,
                    unchanged: int = 0, links_inserted: int = 0, links_deleted: int = 0, note: str) -> ChangeStats:
        return ChangeStats(kn_id=stats.kn_id, version=stats.version, instances_inserted=inserted,
                           instances_updated=updated, instances_deleted=deleted, instances_unchanged=unchanged,
                           links_inserted=links_inserted, links_deleted=links_deleted, full_reload=True, note=note,
                           seconds=time.perf_counter() - start)

