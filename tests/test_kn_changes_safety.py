"""Nothing lost, nothing half-done, on SQLite and PostgreSQL: readers during updates see one version; a SIGKILL at
any moment of a large change's write transaction (before its first, a middle and its last write statement, and just
before its commit) leaves the previous version whole and usable.

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_changes_safety.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kn_change_network import KN, big_network
from sqlalchemy import select

from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance
from kgrag.network.store import NetworkChanges, NetworkStore

SIZE = 5_000  # a change of 1,000 deletes, updates and inserts each
SCRIPT = Path(__file__).with_name("kn_change_network.py")
ROOT = Path(__file__).resolve().parents[1]


def snapshot(store: NetworkStore) -> dict[str, Any]:
    """The network's rows (row ids left out), stats and version."""
    out: dict[str, Any] = {}
    with store.engine.connect() as conn:
        for name, table, cols in (("instances", t.instances, ("object_type_id", "id", "name", "content_hash")),
                                  ("links", t.links, ("relation_type_id", "source_id", "target_id")),
                                  ("text", t.text_index, ("text", "scope", "item_id", "field")),
                                  ("vectors", t.vectors, ("kind", "item_id", "field"))):
            out[name] = sorted(tuple(r) for r in conn.execute(
                select(*(table.c[c] for c in cols)).where(table.c.kn_id == KN)))
    stats = store.network_stats(KN)
    out["version"] = stats["version"]
    out["counts"] = {k: stats[k] for k in ("instances", "links", "text_rows", "vectors")}
    return out


def check_usable(store: NetworkStore, state: dict[str, Any]) -> None:
    """The stored network is ``state`` exactly, its counts are right and it answers queries."""
    now = snapshot(store)
    assert now == state
    assert now["counts"] == {"instances": len(now["instances"]), "links": len(now["links"]),
                             "text_rows": len(now["text"]), "vectors": len(now["vectors"])}
    assert len(store.query_instances(KN, "Item", None, 5, False)) == 5
    assert len(store.match_scores(KN, "instance", "Item", ["name"], "item", 5)) == 5
    if store.dialect == "sqlite":
        with store.engine.begin() as conn:  # raises when the FTS index and its rows disagree
            conn.exec_driver_sql("INSERT INTO kn_text(kn_text) VALUES('integrity-check')")


@pytest.fixture
def big(db_url: str) -> NetworkStore:
    store = NetworkStore(db_url)
    store.load(*big_network(SIZE))
    yield store
    store.close()


def test_readers_see_one_version(db_url: str) -> None:
    """Writers set every item's rank to one round number (and add or drop a marker item) per change; readers
    query all items in the meantime: each answer holds one round's ranks and that round's marker, never a mix."""
    network, instances, _ = big_network(300)
    big = NetworkStore(db_url)
    big.load(network, [Instance(object_type_id="Item", id=i.id, properties={**i.properties, "rank": 0})
                       for i in instances], [])
    rounds = 6
    seen: list[tuple[int, ...]] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        reader: NetworkStore | None = None
        try:
            reader = NetworkStore(big.db_url)
            while not stop.is_set():
                hits = reader.query_instances(KN, "Item", None, 1000, False)
                ranks = {h.properties["rank"] for h in hits if h.id != "marker"}
                marker = any(h.id == "marker" for h in hits)
                seen.append((len(ranks), *sorted(ranks)[:1], int(marker)))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            if reader is not None:
                reader.close()

    threads = [threading.Thread(target=read) for _ in range(3)]
    for th in threads:
        th.start()
    try:
        for k in range(1, rounds + 1):
            change = NetworkChanges(upsert_instances=[
                Instance(object_type_id="Item", id=i.id, properties={**i.properties, "rank": 1000 * k})
                for i in instances])
            marker = ("Item", "marker")
            if k % 2:
                change.upsert_instances.append(Instance(object_type_id="Item", id="marker",
                                                        properties={"name": "marker", "rank": 1000 * k}))
            else:
                change.delete_instances.append(marker)
            big.apply_changes(KN, change)
            time.sleep(0.05)
    finally:
        stop.set()
        for th in threads:
            th.join()
        big.close()
    assert not errors, errors
    assert len(seen) > rounds
    for n_ranks, *rest in seen:
        assert n_ranks == 1, seen  # one round's ranks only
        rank, marker = rest
        assert marker == (rank // 1000) % 2, (rank, marker)  # that round's marker


def _child(db_url: str, pause_at: int = 0) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    return subprocess.Popen([sys.executable, str(SCRIPT), db_url, str(SIZE), str(pause_at)], stdout=subprocess.PIPE,
                            text=True, env=env)


def _line(child: subprocess.Popen[str]) -> str:
    return (child.stdout.readline() if child.stdout else "").strip()


def test_sigkill_leaves_a_whole_version(big: NetworkStore) -> None:
    """The change once to its end (its state and its number of write statements), then killed inside its write
    transaction: before its first write, before a third, two thirds and the last of them, and just before its
    commit — each time the previous version is there whole and usable."""
    before = snapshot(big)
    child = _child(big.db_url)
    assert _line(child) == "go"
    done = _line(child).split()
    child.wait(timeout=300)
    assert child.returncode == 0 and done[0] == "done", done
    writes = int(done[2])
    assert writes >= 4, done  # deletes, inserts and the network row at least
    after = snapshot(big)
    assert after["version"] != before["version"] and after["counts"]["instances"] == SIZE
    big.sync(*big_network(SIZE))  # back to the first state
    base = snapshot(big)
    assert {k: v for k, v in base.items() if k != "version"} == {k: v for k, v in before.items() if k != "version"}
    for pause_at in (1, max(2, writes // 3), max(3, 2 * writes // 3), writes, -1):
        child = _child(big.db_url, pause_at)
        assert _line(child) == "go"
        assert _line(child) == "paused", pause_at
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
        check_usable(big, base)
