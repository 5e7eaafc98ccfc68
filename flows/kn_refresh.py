"""Knowledge-network refresh (deployed as ``knowledge-network-daily``): load the built-in network ``kn_id`` when it is
missing (a first load of a Chinese network trains its domain vectors), sync **every** network in the store from its
source, then train the medical intent ranker (reused when its config and data are unchanged).

The sync of one network (:func:`kgrag.network.sync.source.sync_network`): a schema file naming only files is
re-read and its difference applied; one bound to database tables syncs incrementally by each table's
incremental key, with deletions by its tombstone column or by a full scan every ``full_scan_every`` runs (or when
``full_scan`` is set; :mod:`kgrag.network.sync.table`); a built-in network has nothing to sync. Each network's
inserted / updated / deleted counts are published as a keyed markdown artifact (``kn-sync-<kn_id>``); a network
whose sync fails leaves the others syncing and fails the run at the end, naming it.

Run: ``python -m flows.kn_refresh --kn-id medical`` (``--kn-id ''``: no built-in network; ``--full-scan``).
"""

from __future__ import annotations

import argparse
import json

from prefect import flow, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from flows.artifact_keys import artifact_key
from flows.train_intent import train_intent
from kgrag.config import get_settings
from kgrag.errors import NetworkNotFound
from kgrag.network.loaders.registry import ensure_network
from kgrag.network.store import NetworkStore
from kgrag.network.sync.source import sync_network
from kgrag.network.sync.table import FULL_SCAN_EVERY, SyncReport

#: the counts an artifact's table shows, in order
COUNTS = ("instances_inserted", "instances_updated", "instances_deleted", "instances_unchanged", "links_inserted",
          "links_deleted")


@task(name="load-network", cache_policy=NO_CACHE)
def load_network(kn_id: str) -> dict:
    settings = get_settings()
    store = NetworkStore(settings.db_url)
    try:
        loaded = ensure_network(store, kn_id, settings.data_dir)
        return {"kn_id": kn_id, "loaded_now": loaded, "instances": store.count_instances(kn_id),
                "links": store.count_links(kn_id)}
    finally:
        store.close()


@task(name="list-networks", cache_policy=NO_CACHE)
def list_networks() -> list[str]:
    store = NetworkStore(get_settings().db_url)
    try:
        return [kn_id for kn_id, _ in store.list_networks()]
    finally:
        store.close()


def sync_markdown(report: SyncReport) -> str:
    """The artifact of one network's sync: its counts as a table, then the whole report."""
    counts = report.counts()
    stats = report.stats or {}
    rows = "\n".join(f"| {name.replace('_', ' ')} | {counts[name]} |" for name in COUNTS)
    return (f"# Knowledge network {report.kn_id}: {report.mode}\n\n"
            f"{report.reason or ''}{' — ' + stats['note'] if stats.get('note') else ''}\n\n"
            f"| count | rows |\n|---|---|\n{rows}\n\n"
            f"```json\n{json.dumps(report.as_dict(), indent=1, ensure_ascii=False, default=str)}\n```\n")


@task(name="sync-network", cache_policy=NO_CACHE)
def sync_one(kn_id: str, full_scan: bool = False, full_scan_every: int = FULL_SCAN_EVERY) -> dict:
    """Sync ``kn_id`` from its source and publish its counts (artifact ``kn-sync-<kn_id>``)."""
    store = NetworkStore(get_settings().db_url)
    try:
        report = sync_network(store, kn_id, full_scan=full_scan, full_scan_every=full_scan_every)
    except NetworkNotFound:  # removed since the list was read
        report = SyncReport(kn_id=kn_id, source="", mode="skipped", reason="removed before its sync")
    finally:
        store.close()
    create_markdown_artifact(key=artifact_key("kn-sync", kn_id), markdown=sync_markdown(report),
                             description=f"Sync of knowledge network {kn_id}: {report.mode}")
    print(f"{kn_id}: {report.mode} ({report.reason or 'as scheduled'}): "
          + ", ".join(f"{name} {value}" for name, value in report.counts().items()))
    return {**report.as_dict(), "counts": report.counts()}


@flow(name="kn-refresh", log_prints=True)
def kn_refresh(kn_id: str | None = "medical", full_scan: bool = False,
               full_scan_every: int = FULL_SCAN_EVERY) -> dict:
    """The built-in network ``kn_id`` in the store (None / "": none), every network synced from its source,
    then (medical) the intent ranker."""
    network = load_network(kn_id) if kn_id else None
    synced: dict[str, dict] = {}
    failed: dict[str, str] = {}
    for name in list_networks():
        state = sync_one(name, full_scan=full_scan, full_scan_every=full_scan_every, return_state=True)
        if state.is_completed():
            synced[name] = state.result()
        else:
            failed[name] = str(state.message or state.name)
    intent = None
    if kn_id == "medical":
        result = train_intent()
        intent = {"accuracy@1": result["validation"]["accuracy@1"], "n": result["validation"]["n"]}
    if kn_id:
        create_markdown_artifact(key=artifact_key("kn-refresh", kn_id), description=f"Knowledge network {kn_id}",
                                 markdown=f"# Knowledge network {kn_id}\n\n```json\n"
                                          f"{json.dumps({'network': network, 'intent': intent}, indent=1)}\n```\n")
    if failed:
        raise RuntimeError("sync failed for " + "; ".join(f"{name}: {why}" for name, why in sorted(failed.items())))
    return {"network": network, "intent": intent, "synced": synced}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Load a built-in knowledge network when missing, sync every "
                                                 "network from its source, train the intent ranker (medical).")
    parser.add_argument("--kn-id", default="medical", help="the built-in network to load when missing ('' none)")
    parser.add_argument("--full-scan", action="store_true",
                        help="read every row of table-bound networks (sees deletions without a tombstone column)")
    parser.add_argument("--full-scan-every", type=int, default=FULL_SCAN_EVERY,
                        help="a full scan of a table-bound network every N runs (0: only when asked or needed)")
    args = parser.parse_args(argv)
    print(json.dumps(kn_refresh(kn_id=args.kn_id or None, full_scan=args.full_scan,
                                full_scan_every=args.full_scan_every), default=str))


if __name__ == "__main__":
    from flows import run_main

    run_main(main)
