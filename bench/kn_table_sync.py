"""A network bound to PostgreSQL tables: the scheduled sync's wall time beside a full load of the same tables.

In one run, on a throwaway PostgreSQL cluster (harness.servers.postgres; the network store in a second database of
it): generated tables — ``items`` (``--rows``, default 20,000: name, category, score; an integer ``version``
incremental key and a ``deleted`` tombstone), ``categories`` (50) and ``item_category`` links (one per item) —
bound to a network by a schema file (kgrag/network/loaders/table_source.py). Figures:

- ``full_load_s`` (the baseline): the first sync, every row read and loaded (what ``kgrag kn load`` does);
- ``scheduled_sync_s``: after ``--changed`` (1,000) rows are updated and ``--deleted`` (100) tombstoned, the
  sync the daily flow's task runs (kgrag.network.sync.source.sync_network: incremental, rows past the watermark);
- ``full_scan_s``: after another ``--deleted`` rows are deleted outright (no tombstone), the full scan that sees
  them (every row read, the content-hashed difference applied);
- ``quiet_sync_s``: an incremental sync when nothing changed.

The counts of each sync are checked (the bench fails if a change is missed). Properties are searched by ``match``
and ``==`` (no ``knn``): the figures measure reading, diffing and writing, not the embedder (embedding scales with
the rows written, which only makes the incremental sync's share smaller). Ratio: scheduled sync / full load.

    .venv/bin/python -m bench.kn_table_sync [--rows 20000 --changed 1000 --deleted 100]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import sqlalchemy as sa

from bench.common import write_result
from harness.servers.postgres import throwaway_postgres
from kgrag.network.store import NetworkStore
from kgrag.network.sync.source import sync_network
from kgrag.network.sync.table import sync_table_network

SCHEMA = """
kn_id: catalogue
name: Catalogue
object_types:
  - id: Item
    name: item
    data_properties:
      - {name: name, type: string, condition_operations: [match, "=="]}
      - {name: score, type: integer, condition_operations: ["==", ">", "<"]}
  - id: Category
    name: category
    data_properties:
      - {name: name, type: string, condition_operations: [match, "=="]}
relation_types:
  - {id: in_category, name: in category, source_object_type_id: Item, target_object_type_id: Category}
data:
  instances:
    - {object_type: Item, table: items, url_env: BENCH_SOURCE_URL, incremental_column: version,
       deleted_column: deleted}
    - {object_type: Category, table: categories, url_env: BENCH_SOURCE_URL}
  links:
    - {relation_type: in_category, table: item_category, url_env: BENCH_SOURCE_URL, source_column: item_id,
       target_column: category_id, incremental_column: version, deleted_column: deleted}
"""
WORDS = ("amber", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kestrel",
         "lumen", "meadow", "nectar", "onyx", "prairie", "quartz", "raven", "saffron", "tundra")


def progress(message: str) -> None:
    print(f"[bench.kn_table_sync] {message}", file=sys.stderr, flush=True)


def make_tables(url: str, rows: int, rng: random.Random) -> tuple[sa.Engine, sa.Table, sa.Table]:
    engine = sa.create_engine(url)
    md = sa.MetaData()
    items = sa.Table("items", md, sa.Column("id", sa.Integer, primary_key=True), sa.Column("name", sa.Text),
                     sa.Column("score", sa.Integer), sa.Column("version", sa.BigInteger, index=True),
                     sa.Column("deleted", sa.Boolean, nullable=False))
    categories = sa.Table("categories", md, sa.Column("id", sa.Text, primary_key=True), sa.Column("name", sa.Text))
    links = sa.Table("item_category", md, sa.Column("item_id", sa.Integer), sa.Column("category_id", sa.Text),
                     sa.Column("version", sa.BigInteger, index=True), sa.Column("deleted", sa.Boolean, nullable=False))
    md.create_all(engine)
    with engine.begin() as conn:
        conn.execute(categories.insert(), [{"id": f"k{i}", "name": f"{WORDS[i % 20]} shelf {i}"} for i in range(50)])
        conn.execute(items.insert(), [
            {"id": i, "name": f"{rng.choice(WORDS)} {rng.choice(WORDS)} {i}", "score": rng.randrange(1000),
             "version": i, "deleted": False} for i in range(rows)])
        conn.execute(links.insert(), [{"item_id": i, "category_id": f"k{i % 50}", "version": i, "deleted": False}
                                      for i in range(rows)])
    return engine, items, links


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--changed", type=int, default=1_000)
    parser.add_argument("--deleted", type=int, default=100)
    args = parser.parse_args(argv)
    rng = random.Random(45)
    with throwaway_postgres() as cluster, tempfile.TemporaryDirectory() as tmp:
        source_url = cluster.create_database("bench_source")
        store_url = cluster.create_database("bench_store")
        os.environ["BENCH_SOURCE_URL"] = source_url
        schema = Path(tmp) / "catalogue.yaml"
        schema.write_text(SCHEMA, encoding="utf-8")
        progress(f"generating {args.rows} items, 50 categories, {args.rows} links")
        engine, items, links = make_tables(source_url, args.rows, rng)
        store = NetworkStore(store_url)
        try:
            progress("full load (the first sync)")
            t = time.perf_counter()
            first = sync_table_network(store, schema)
            full_load = time.perf_counter() - t
            assert first.counts()["instances_inserted"] == args.rows + 50, first

            changed = rng.sample(range(args.rows), args.changed + args.deleted)
            updated, tombstoned = changed[:args.changed], changed[args.changed:]
            top = args.rows
            with engine.begin() as conn:
                conn.execute(items.update().where(items.c.id == sa.bindparam("key"))
                             .values(name=sa.bindparam("new_name"), version=sa.bindparam("v")),
                             [{"key": i, "new_name": f"renamed {i}", "v": top + n} for n, i in enumerate(updated)])
                conn.execute(items.update().where(items.c.id == sa.bindparam("key"))
                             .values(deleted=True, version=sa.bindparam("v")),
                             [{"key": i, "v": top + args.changed + n} for n, i in enumerate(tombstoned)])
            progress(f"scheduled sync: {args.changed} updated, {args.deleted} tombstoned")
            t = time.perf_counter()
            day = sync_network(store, "catalogue")
            scheduled = time.perf_counter() - t
            counts = day.counts()
            assert day.mode == "incremental", day
            assert (counts["instances_updated"], counts["instances_deleted"]) == (args.changed, args.deleted), counts

            t = time.perf_counter()
            quiet = sync_network(store, "catalogue")
            quiet_s = time.perf_counter() - t
            assert quiet.mode == "incremental" and quiet.stats and quiet.stats["version"] == day.stats["version"]

            alive = sorted(set(range(args.rows)) - set(tombstoned))
            gone = rng.sample(alive, args.deleted)
            with engine.begin() as conn:
                conn.execute(links.delete().where(links.c.item_id.in_(gone)))
                conn.execute(items.delete().where(items.c.id.in_(gone)))
            progress(f"full scan: {args.deleted} rows deleted outright")
            t = time.perf_counter()
            scan = sync_network(store, "catalogue", full_scan=True)
            full_scan = time.perf_counter() - t
            assert scan.mode == "full scan" and scan.counts()["instances_deleted"] == args.deleted, scan
            remaining = store.count_instances("catalogue", "Item")
            assert remaining == args.rows - 2 * args.deleted, remaining
        finally:
            store.close()
            engine.dispose()
    figures = {
        "scheduled_sync_s": round(scheduled, 3), "scheduled_rows_read": day.rows_read,
        "scheduled_counts": counts, "quiet_sync_s": round(quiet_s, 3), "quiet_rows_read": quiet.rows_read,
        "full_scan_s": round(full_scan, 3), "full_scan_rows_read": scan.rows_read,
        "full_scan_counts": scan.counts(),
    }
    baseline = {"full_load_s": round(full_load, 3), "full_load_rows_read": first.rows_read}
    ratio = {"scheduled_sync / full_load": round(scheduled / full_load, 4),
             "full_scan / full_load": round(full_scan / full_load, 4)}
    print(f"\n{'step':<34}{'seconds':>10}{'rows read':>12}")
    for label, seconds, read in (("full load (baseline)", full_load, first.rows_read),
                                 (f"scheduled sync ({args.changed} upd, {args.deleted} del)", scheduled,
                                  day.rows_read),
                                 ("quiet sync (nothing changed)", quiet_s, quiet.rows_read),
                                 (f"full scan ({args.deleted} deleted outright)", full_scan, scan.rows_read)):
        print(f"{label:<34}{seconds:>10.3f}{read:>12}")
    write_result("kn_table_sync", figures, baseline, ratio, split="generated PostgreSQL tables",
                 n=args.rows)


if __name__ == "__main__":
    main()
