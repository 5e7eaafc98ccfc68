"""Keep a network bound to database tables in step with them: an incremental sync by each table's incremental key
(KWeaver's incremental jobs), deletions by a tombstone column or a full scan at a slower cadence.

    report = sync_table_network(store, "school.yaml")                 # incremental when it can be
    report = sync_table_network(store, "school.yaml", full_scan=True) # every row, every deletion

The schema file names its tables in its ``data`` section (:mod:`kgrag.network.loaders.table_source`). A sync is

- a **full scan** — every live row of every table and every file of the schema read, and the whole desired
  state handed to :meth:`NetworkStore.sync` (a content-hashed diff: only what differs is written; a network not
  yet stored is loaded in full) — on the first run, when asked (``full_scan=True``, ``--full-scan``), every
  ``full_scan_every``-th run, when a table has no watermark yet (a new entry), or when the schema file's network
  (types, properties) differs from the stored one. A full scan sees every deletion, tombstoned or
  not, and every row an incremental read could miss (a row committed late with a key below the watermark);
- else **incremental** — from each table only the rows whose incremental key is ``>=`` its stored watermark:
  live rows become upserts (an unchanged row is a no-op: the store compares content hashes), tombstoned rows
  deletions (of the instances / links that are stored), all applied by :meth:`NetworkStore.apply_changes` in one
  transaction. A table without an ``incremental_column`` (a small lookup table) is read whole, its rows upserted
  the same way. The schema's file entries are re-read on full scans only. A live link row whose endpoint is
  tombstoned in its instance table is left out (soft deletes leave link rows behind; the instance's links go
  with it); an endpoint that is neither live nor tombstoned rejects the sync.

Deletions: a table with a ``deleted_column`` has them applied on the next incremental run; one without has them
applied by the next full scan (``full_scan_every`` runs, default :data:`FULL_SCAN_EVERY`: a week of daily runs).
A full id scan needs the whole table read either way, so it is the full content diff (also catching missed
updates) rather than an id-only pass.

Watermarks (:mod:`kgrag.network.sync.state`) are advanced right **after** the change commits, never
before: a crash in between leaves the old watermark, so the next run reads the same rows again, and applying
them again changes nothing (unchanged content is a no-op, already-deleted ids are skipped) — no row is lost and
none is applied twice. The new watermark is the largest key the read saw (never below the previous one);
a table's ``lookback`` re-reads a window below it for rows committed late (kgrag.network.loaders.table_source). A change the store rejects (a link to
an instance that is not there, an unknown type, a duplicate id) is a :class:`KgragError` naming it; nothing is
applied and the watermarks stay where they were.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kgrag.config import get_settings
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.network.loaders.declarative import read_file_entries, read_schema, table_sources
from kgrag.network.loaders.registry import network_source
from kgrag.network.loaders.table_source import TableReader, TableSource, watermark_text, watermark_value
from kgrag.network.schema.model import Instance, KnowledgeNetwork, Link
from kgrag.network.store import NetworkStore
from kgrag.network.store.changes import ChangeStats, NetworkChanges
from kgrag.network.sync.state import Progress, SyncState
from kgrag.network.text.embedding import network_embedder
from kgrag.rank.tokenize import tokenize_cache

__all__ = ["FULL_SCAN_EVERY", "SyncReport", "full_scan_reason", "sync_table_network"]

#: a full scan every this many syncs (the daily deployment: weekly); 0 = only when asked or needed
FULL_SCAN_EVERY = 7


@dataclass
class SyncReport:
    """What one sync of a network did: how (``mode``: ``full scan``, ``incremental``, ``file``, ``skipped``),
    why (``reason``), the store's counts (``stats``: :meth:`ChangeStats.as_dict`, None when nothing ran), the
    rows read from tables, the watermarks now stored and the seconds taken."""

    kn_id: str
    source: str
    mode: str
    reason: str = ""
    stats: dict[str, Any] | None = None
    rows_read: int = 0
    watermarks: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def counts(self) -> dict[str, int]:
        """Inserted / updated / deleted instances and links (zeros when nothing ran)."""
        stats = self.stats or {}
        return {name: int(stats.get(name, 0)) for name in (
            "instances_inserted", "instances_updated", "instances_deleted", "instances_unchanged",
            "links_inserted", "links_deleted")}


def _shown(text: str | None) -> Any:
    """A stored watermark as a JSON value for reports (timestamps and dates as ISO text)."""
    value = None if text is None else watermark_value(text)
    return value if value is None or isinstance(value, int | float | str) else str(value)


def _stored_network(store: NetworkStore, kn_id: str) -> KnowledgeNetwork | None:
    try:
        return store.get_network(kn_id)
    except NetworkNotFound:
        return None


def full_scan_reason(network: KnowledgeNetwork, stored: KnowledgeNetwork | None, sources: list[TableSource],
                     progress: Progress, full_scan: bool, full_scan_every: int) -> str:
    """Why this sync must be a full scan ("" when an incremental one will do)."""
    if full_scan:
        return "asked"
    if stored is None:
        return "first load"
    if not progress.recorded:
        return "no sync recorded yet"
    if stored.model_dump(exclude={"text"}) != network.model_dump(exclude={"text"}):
        return "the schema changed"
    for source in sources:
        if source.key not in progress.watermarks:
            return f"{source.key} has no watermark yet"
    if full_scan_every > 0 and progress.runs_since_full_scan + 1 >= full_scan_every:
        return f"every {full_scan_every} runs"
    return ""


def _without_dead_ends(network: KnowledgeNetwork, links: list[Link], dead: set[tuple[str, str]]) -> list[Link]:
    """``links`` but those with an end in ``dead`` (``(object type, id)`` pairs)."""
    if not dead:
        return links
    ends = {rt.id: (rt.source_object_type_id, rt.target_object_type_id) for rt in network.relation_types}
    return [link for link in links
            if (ends.get(link.relation_type_id, ("", ""))[0], link.source_id) not in dead
            and (ends.get(link.relation_type_id, ("", ""))[1], link.target_id) not in dead]


def _live_links(network: KnowledgeNetwork, tables: list[tuple[str, TableSource]], links: list[Link],
                deleted: set[tuple[str, str]]) -> list[Link]:
    """``links`` but those with an endpoint tombstoned in its instance table (in ``deleted``, or marked deleted in
    the table now): a soft-deleted row's link rows usually stay behind, and its links go with it. An endpoint
    that is neither live nor tombstoned stays, and the store rejects the change naming it."""
    ends = {rt.id: (rt.source_object_type_id, rt.target_object_type_id) for rt in network.relation_types}
    wanted: dict[str, set[str]] = {}
    for link in links:
        source_type, target_type = ends[link.relation_type_id]
        wanted.setdefault(source_type, set()).add(link.source_id)
        wanted.setdefault(target_type, set()).add(link.target_id)
    dead = set(deleted)
    for where, source in tables:
        ids = wanted.get(source.object_type or "") if not source.is_links and source.deleted_column else None
        if ids:
            with TableReader(source, where) as reader:
                dead.update((source.object_type or "", i) for i in reader.tombstoned(sorted(ids)))
    return _without_dead_ends(network, links, dead)


def _full_scan(store: NetworkStore, path: Path, network: KnowledgeNetwork, data: Any,
               tables: list[tuple[str, TableSource]], stored: KnowledgeNetwork | None,
               report: SyncReport) -> dict[str, str | None]:
    instances, links = read_file_entries(path, network, data)
    watermarks: dict[str, str | None] = {}
    dead: set[tuple[str, str]] = set()
    for where, source in tables:
        with TableReader(source, where) as reader:
            batch = reader.read(network)
        instances.extend(batch.instances)
        links.extend(batch.links)
        dead.update((source.object_type or "", i) for i in batch.deleted_ids)
        report.rows_read += batch.rows
        watermarks[source.key] = None if batch.high_water is None else watermark_text(batch.high_water)
    links = _without_dead_ends(network, links, dead)  # links of tombstoned rows go with them (see _live_links)
    with tokenize_cache():
        embedder = network_embedder(network, instances, get_settings()) if stored is None else None
        stats: ChangeStats = store.sync(network, instances, links, embedder=embedder, source=network_source(str(path)))
    report.stats = stats.as_dict()
    return watermarks


def _incremental(store: NetworkStore, network: KnowledgeNetwork, tables: list[tuple[str, TableSource]],
                 progress: Progress, report: SyncReport) -> dict[str, str | None]:
    upserts: dict[tuple[str, str], Instance] = {}
    deletes: dict[tuple[str, str], None] = {}
    new_links: dict[tuple[str, str, str], Link] = {}
    gone_links: dict[tuple[str, str, str], Link] = {}
    watermarks: dict[str, str | None] = {}
    for where, source in tables:
        previous = progress.watermarks.get(source.key)
        since = None if previous is None else watermark_value(previous)  # None: the table was empty
        with TableReader(source, where) as reader:
            batch = reader.read(network, since)
        report.rows_read += batch.rows
        # never backwards (a lookback read may see only keys below the last watermark)
        high = batch.high_water if since is None or batch.high_water is None else max(batch.high_water, since)
        watermarks[source.key] = previous if high is None else watermark_text(high)
        for inst in batch.instances:
            key = (inst.object_type_id, inst.id)
            if key in upserts:
                raise KgragError(f"{where}: table {source.table!r} holds id {inst.id!r} twice")
            upserts[key] = inst
        deletes.update(((source.object_type or "", i), None) for i in batch.deleted_ids)
        new_links.update(((lk.relation_type_id, lk.source_id, lk.target_id), lk) for lk in batch.links)
        gone_links.update(((lk.relation_type_id, lk.source_id, lk.target_id), lk) for lk in batch.deleted_links)
    # a key both live and tombstoned (two rows, two tables): the live row wins; deleting what is not stored is
    # a no-op in the store
    deleted = {k for k in deletes if k not in upserts}
    links = _live_links(network, tables, list(new_links.values()), deleted)
    changes = NetworkChanges(upsert_instances=list(upserts.values()), delete_instances=sorted(deleted),
                             upsert_links=links,
                             delete_links=[lk for k, lk in gone_links.items() if k not in new_links])
    with tokenize_cache():
        stats = store.apply_changes(network.kn_id, changes)
    report.stats = stats.as_dict()
    return watermarks


def sync_table_network(store: NetworkStore, schema_path: str | Path, kn_id: str | None = None,
                       full_scan: bool = False, full_scan_every: int = FULL_SCAN_EVERY) -> SyncReport:
    """Sync the network of ``schema_path`` (as ``kn_id`` when given) from its tables (see the module docstring).
    Raises :class:`KgragError` for a bad schema file or table entry, an unreachable table, or a change the store
    rejects (nothing applied, watermarks unchanged)."""
    start = time.perf_counter()
    path = Path(schema_path)
    network, data = read_schema(path, kn_id)
    tables = table_sources(path, network, data)
    if not tables:
        raise KgragError(f"{path}: names no table in its data section (a file-only network: kgrag kn load it)")
    state = SyncState(store.engine)
    kn = network.kn_id
    stored = _stored_network(store, kn)
    if stored is None:
        state.forget(kn)  # a network removed and loaded again starts over
    progress = state.read(kn)
    reason = full_scan_reason(network, stored, [s for _, s in tables], progress, full_scan, full_scan_every)
    report = SyncReport(kn_id=kn, source=f"table: {path}", mode="full scan" if reason else "incremental",
                        reason=reason)
    try:
        if reason:
            watermarks = _full_scan(store, path, network, data, tables, stored, report)
        else:
            watermarks = _incremental(store, network, tables, progress, report)
    except ValueError as exc:  # the store rejected the change: nothing applied
        raise KgragError(f"{path}: sync of network {kn!r} rejected, nothing applied: {exc}") from None
    # after the commit, not in it: a crash before this line re-reads the same rows next time (a no-op to apply)
    state.record(kn, watermarks, full_scan=bool(reason))
    report.watermarks = {key: _shown(text) for key, text in watermarks.items()}
    report.seconds = time.perf_counter() - start
    return report
