"""The query modes' index after an incremental change (kgrag.modes.index_delta): moved forward from the previous
version's index by the change record, it equals a full build of the new version — entities, vectors,
descriptions, facts, other names, edges, chunks and their vectors — on the demo network (it has chunks).

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_changes_modes.py
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kgrag.modes.index import ModeIndex
from kgrag.modes.index_delta import current_index
from kgrag.network.loaders.demo import demo_network
from kgrag.network.schema.model import Instance, Link
from kgrag.network.store import NetworkChanges, NetworkStore

KN = "demo"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[NetworkStore]:
    s = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    s.load(*demo_network())
    yield s
    s.close()


def view(index: ModeIndex) -> dict[str, Any]:
    """Everything an index holds, keyed by ids (row order aside)."""
    ids = [str(i) for i in index.entity_ids]
    chunk_ids = [str(c) for c in index.chunk_ids]
    return {
        "entities": {ids[r]: (str(index.entity_names[r]), index.type_ids[index.entity_types[r]],
                              str(index.entity_descriptions[r]), tuple(index.entity_facts[r]), int(index.degree[r]),
                              bool(index.has_vector[r]), index.entity_vectors[r].tobytes())
                     for r in range(len(ids))},
        "edges": sorted((index.relation_ids[int(r)], ids[int(s)], ids[int(d)])
                        for s, d, r in zip(index.edge_src, index.edge_tgt, index.edge_rel, strict=True)),
        "incidence": {ids[r]: sorted((index.relation_ids[int(index.edge_rel[e])], ids[int(index.edge_src[e])],
                                      ids[int(index.edge_tgt[e])])
                                     for e in index.incidence_edges[index.incidence_offsets[r]:
                                                                    index.incidence_offsets[r + 1]])
                      for r in range(len(ids))},
        "chunks": {chunk_ids[c]: (ids[int(index.chunk_docs[c])] if index.chunk_docs[c] >= 0 else None,
                                  str(index.chunk_sections[c]), str(index.chunk_texts[c]), int(index.chunk_tokens[c]),
                                  bool(index.chunk_has_vector[c]), index.chunk_vectors[c].tobytes())
                   for c in range(len(chunk_ids))},
        "sources": {ids[r]: [chunk_ids[int(c)] for c in index.source_chunks[index.source_offsets[r]:
                                                                              index.source_offsets[r + 1]]]
                    for r in range(len(ids))},
        "aliases": {alias: sorted(ids[r] for r in rows) for alias, rows in index.alias_rows.items()},
    }


def test_a_change_moves_the_index_forward(store: NetworkStore, monkeypatch: pytest.MonkeyPatch) -> None:
    before = current_index(store, KN)
    network, instances, links = demo_network()
    described = [i for i in instances if i.properties.get("description")]
    gone, edited, model = described[0], described[1], described[2]
    link = next(lk for lk in links if gone.id not in (lk.source_id, lk.target_id)
                and edited.id not in (lk.source_id, lk.target_id))
    new = Instance(object_type_id=model.object_type_id, id="new-entity",
                   properties={**model.properties, "name": "Zorblax Quint",
                               "description": "Zorblax Quint is a new entity. It arrived in the change."})
    change = NetworkChanges(
        upsert_instances=[new, Instance(object_type_id=edited.object_type_id, id=edited.id,
                                        properties={**edited.properties,
                                                    "description": "A rewritten description. Nothing else."})],
        delete_instances=[(gone.object_type_id, gone.id)],
        upsert_links=[Link(relation_type_id=lk.relation_type_id, source_id="new-entity", target_id=lk.target_id)
                      for lk in links if lk.source_id == model.id][:3],
        delete_links=[link],
    )
    stats = store.apply_changes(KN, change)
    assert (stats.instances_inserted, stats.instances_updated, stats.instances_deleted) == (1, 1, 1)

    def no_full_build(*_args: object) -> ModeIndex:
        raise AssertionError("rebuilt in full")

    monkeypatch.setattr(ModeIndex, "build", no_full_build)
    moved = current_index(store, KN)
    monkeypatch.undo()
    assert moved.version == stats.version != before.version
    fresh = ModeIndex.build(store, KN)
    got, want = view(moved), view(fresh)
    for key in want:
        assert got[key] == want[key], key
    assert gone.id not in got["entities"] and "new-entity" in got["entities"]
    assert any("Zorblax" in c[2] for c in got["chunks"].values())
    assert np.all(moved.degree >= 0)


def test_a_schema_change_or_a_gap_builds_in_full(store: NetworkStore) -> None:
    current_index(store, KN)
    network, instances, links = demo_network()
    first = instances[0]
    for k in range(2):  # two versions past the cached index: its record follows the one in between
        store.apply_changes(KN, NetworkChanges(upsert_instances=[Instance(
            object_type_id=first.object_type_id, id=first.id, properties={**first.properties, "name": f"n{k}"})]))
    index = current_index(store, KN)
    assert view(index) == view(ModeIndex.build(store, KN))
