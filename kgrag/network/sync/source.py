"""Sync one stored network from the source it was loaded from (``network_stats(kn_id)["source"]``), what the daily
``knowledge-network-daily`` deployment runs for every network in the store.

    report = sync_network(store, "school")      # -> SyncReport(mode="incremental", stats={…}, …)

By the recorded source's kind:

- ``file`` — a schema file: when its ``data`` section names a table, the table sync of
  :mod:`kgrag.network.sync.table` (incremental, or a full scan); else
  :func:`kgrag.network.loaders.registry.sync_named`: files unchanged since the network was made from them are
  not read at all, only the types with a changed file are (``note`` says which), and only the difference is
  written (nothing changed = no new version).
- ``builtin`` — a built-in network (medical, metaqa, demo, synthetic): nothing to do (as before: the flow loads
  its built-in network when it is missing).
- no source recorded (a network loaded before sources were recorded) — skipped, saying how to record one.

A schema file that is gone, unreadable or invalid, an unreachable table or a change the store rejects is a
:class:`KgragError` naming it; nothing of that network is changed.
"""

from __future__ import annotations

import time
from pathlib import Path

from kgrag.errors import KgragError
from kgrag.network.loaders.declarative import read_schema, table_sources
from kgrag.network.loaders.registry import sync_named
from kgrag.network.store import NetworkStore
from kgrag.network.sync.table import FULL_SCAN_EVERY, SyncReport, sync_table_network

__all__ = ["sync_network"]


def _sync_file(store: NetworkStore, kn_id: str, path: Path) -> SyncReport:
    start = time.perf_counter()
    try:
        stats = sync_named(str(path), store, kn_id=kn_id, fill=False)  # a pending fill is its load's to finish
    except ValueError as exc:
        raise KgragError(f"{path}: sync of network {kn_id!r} rejected, nothing applied: {exc}") from None
    return SyncReport(kn_id=kn_id, source=f"file: {path}", mode="file", reason=stats.note or "files re-read",
                      stats=stats.as_dict(), seconds=time.perf_counter() - start)


def sync_network(store: NetworkStore, kn_id: str, full_scan: bool = False,
                 full_scan_every: int = FULL_SCAN_EVERY) -> SyncReport:
    """Sync ``kn_id`` from its recorded source (see the module docstring); raises ``NetworkNotFound`` for an
    unknown network."""
    source = store.network_stats(kn_id).get("source") or {}
    kind = source.get("kind")
    if kind == "file":
        path = Path(source.get("path") or "")
        if not path.is_file():
            raise KgragError(f"network {kn_id!r}: its schema file {str(path)!r} is gone (kgrag kn load a new one)")
        network, data = read_schema(path, kn_id)
        if table_sources(path, network, data):
            return sync_table_network(store, path, kn_id, full_scan=full_scan, full_scan_every=full_scan_every)
        return _sync_file(store, kn_id, path)
    if kind == "builtin":
        return SyncReport(kn_id=kn_id, source=f"builtin: {source.get('name', kn_id)}", mode="skipped",
                          reason="a built-in network: nothing to sync")
    return SyncReport(kn_id=kn_id, source="unknown", mode="skipped",
                      reason="no source recorded (loaded before sources were recorded): `kgrag kn load` it once")
