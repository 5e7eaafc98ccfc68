"""A generated network for the change-safety tests, and a large change of it (made by code, the same for a seed):
``big_network(n)`` holds ``n`` items in a chain of ``next`` links; ``big_change(n)`` deletes, updates and inserts
a fifth of them each, with their links. Also runnable: ``python tests/kn_change_network.py DB_URL N`` applies the
change to ``DB_URL`` after printing ``go`` (the SIGKILL test kills it at chosen moments).

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


if __name__ == "__main__":
    from kgrag.network.store import NetworkStore

    url, size = sys.argv[1], int(sys.argv[2])
    store = NetworkStore(url)
    store.embedder_for(KN).encode(["warm"])  # the model loaded before the clock starts
    change = big_change(size)
    print("go", flush=True)
    stats = store.apply_changes(KN, change)
    print("done", stats.version, flush=True)
