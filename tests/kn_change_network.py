"""A generated network for the change-safety tests, and a large change of it (made by code, the same for a seed):
``big_network(n)`` holds ``n`` items in a chain of ``next`` links; ``big_change(n)`` deletes, updates and inserts
a fifth of them each, with their links. Also runnable: ``python tests/kn_change_network.py DB_URL N [K]`` applies the
change to ``DB_URL`` after printing ``go``; with ``K`` it prints ``paused`` and waits just before the change's K-th
write statement (-1: just before its commit), where the SIGKILL test kills it.

    network, instances, links = big_network(2000); changes = big_change(2000)
"""

from __future__ import annotations

import sys

from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkChanges

KN = "big"


def big_network(n: int) -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    network = KnowledgeNetwork(
        kn_id=KN, name="Big", comment="generated items in a chain",
        object_types=[ObjectType(id="Item", name="item", data_properties=[
            DataProperty(name="name", condition_operations=["match", "=="]),
            DataProperty(name="note", condition_operations=["match"]),
            DataProperty(name="rank", type="integer", condition_operations=["==", ">", "<"])])],
        relation_types=[RelationType(id="next", name="next", source_object_type_id="Item",
                                     target_object_type_id="Item")])
    instances = [Instance(object_type_id="Item", id=f"i{k}",
                          properties={"name": f"item {k}", "note": f"note number {k} alpha{k % 97}", "rank": k})
                 for k in range(n)]
    links = [Link(relation_type_id="next", source_id=f"i{k}", target_id=f"i{k + 1}") for k in range(n - 1)]
    return network, instances, links


def big_change(n: int) -> NetworkChanges:
    """Delete items 0 … n/5, update the next fifth (a new note), insert n/5 new items linked to survivors."""
    fifth = n // 5
    return NetworkChanges(
        delete_instances=[("Item", f"i{k}") for k in range(fifth)],
        upsert_instances=[Instance(object_type_id="Item", id=f"i{k}",
                                   properties={"name": f"item {k}", "note": f"changed note {k} beta", "rank": k})
                          for k in range(fifth, 2 * fifth)]
        + [Instance(object_type_id="Item", id=f"new{k}",
                    properties={"name": f"new item {k}", "note": f"fresh {k} gamma", "rank": n + k})
           for k in range(fifth)],
        upsert_links=[Link(relation_type_id="next", source_id=f"new{k}", target_id=f"i{n - 1 - k}")
                      for k in range(fifth)],
    )


#: write statements (INSERT / UPDATE / DELETE) the running change has sent so far
WRITES = [0]


def _pause_in_transaction(engine: object, pause_at: int) -> None:
    """Stop (print ``paused``, then sleep until killed) just before the ``pause_at``-th write statement of the
    change, or just before its commit when ``pause_at`` is -1; counts the writes in :data:`WRITES`."""
    import time

    from sqlalchemy import event

    def pause() -> None:
        print("paused", flush=True)
        time.sleep(600)

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn, cursor, statement, parameters, context, executemany) -> None:  # noqa: ANN001, ARG001
        if statement.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE")):
            WRITES[0] += 1
            if WRITES[0] == pause_at:
                pause()

    @event.listens_for(engine, "commit")
    def _commit(conn) -> None:  # noqa: ANN001, ARG001
        if pause_at == -1 and WRITES[0]:
            pause()


if __name__ == "__main__":
    from kgrag.network.store import NetworkStore

    url, size = sys.argv[1], int(sys.argv[2])
    pause_at = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # 0: run to the end and report the write statements
    store = NetworkStore(url)
    store.embedder_for(KN).encode(["warm"])  # the model loaded before the clock starts
    change = big_change(size)
    _pause_in_transaction(store.engine, pause_at)
    print("go", flush=True)
    stats = store.apply_changes(KN, change)
    print("done", stats.version, WRITES[0], flush=True)
