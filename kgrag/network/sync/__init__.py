"""Keeping a stored knowledge network in step with where it came from: ``kgrag kn sync`` and the daily
``knowledge-network-daily`` deployment (:mod:`flows.kn_refresh`) run these modules. The change they write is the
store's own (:meth:`kgrag.network.store.NetworkStore.apply_changes` / ``sync``, :mod:`kgrag.network.store.changes`:
one transaction, a new network version).

    report = sync_network(store, "school")   # kgrag.network.sync.source: SyncReport(mode="incremental", …)

- :mod:`~kgrag.network.sync.source` — sync one network from its recorded source (a schema file, its tables, or a
  built-in: nothing to do): ``sync_network``.
- :mod:`~kgrag.network.sync.table` — a network bound to database tables: incremental by each table's watermark,
  deletions by tombstones or a full scan at a slower cadence (``sync_table_network``, ``SyncReport``).
- :mod:`~kgrag.network.sync.state` — each table's watermark and the runs since the last full scan
  (``SyncState``, table ``kn_sync_state``).
"""
