"""The memory-mapped graph: round trip, lookups without a dict, two processes sharing one map, lazy name vectors,
and the streaming import under a memory cap far below what holding the file's triples as Python objects takes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

from kgrag.data.demo import demo_kg
from kgrag.graph.csr import CSRGraph
from kgrag.graph.mapped import SortedIndex, StringColumn
from kgrag.hrag.retrieval.entity_vectors import EntityVectors


def test_a_saved_graph_maps_back_equal(tmp_path: Path) -> None:
    graph = CSRGraph.from_dataset(demo_kg())
    path = graph.save(tmp_path / "graph.npz")
    mapped = CSRGraph.load(path)
    assert isinstance(mapped.entity_names, StringColumn) and isinstance(mapped.key_index, SortedIndex)
    assert isinstance(mapped.head.base, np.memmap) or isinstance(mapped.head.base.base, np.memmap)
    for name in ("head", "rel", "tail", "in_order", "in_ptr", "out_ptr"):
        assert np.array_equal(getattr(mapped, name), getattr(graph, name)), name
    assert list(mapped.entity_names) == graph.entity_names and mapped.entity_ids == graph.entity_ids
    assert mapped.relations == graph.relations and mapped.names_fingerprint == graph.names_fingerprint
    for row in (0, 5, graph.num_entities - 1):
        assert mapped.key_index[graph.entity_keys[row]] == row and mapped.id_index[graph.entity_ids[row]] == row
    assert "no such key" not in mapped.key_index and mapped.key_index.get("no such key") is None
    for node in (0, 3, 11):  # the incidence from the stored adjacency equals a scan of every triple
        owner, triples, other = mapped.edges_of(np.array([node]))
        scan = np.flatnonzero((graph.head == node) | (graph.tail == node))
        assert sorted(triples.tolist()) == sorted(scan.tolist())
    assert mapped.neighbourhood(3) == graph.neighbourhood(3)


def test_ids_out_of_key_order_are_found_by_their_stored_order(tmp_path: Path) -> None:
    keys = ["a", "b", "c", "d"]
    ids = ["zeta", "alpha", "mu", "beta"]  # not sorted: the save stores their order
    graph = CSRGraph.from_arrays("t", "http://t/", keys, ids, ["A", "", "C", "D"], ["r"], np.array([0, 1, 2]),
                                 np.zeros(3, np.int32), np.array([1, 2, 3]))
    mapped = CSRGraph.load(graph.save(tmp_path / "g.npz"))
    assert [mapped.id_index[i] for i in ids] == [0, 1, 2, 3] and "omega" not in mapped.id_index


def test_two_processes_share_one_map(tmp_path: Path) -> None:
    path = CSRGraph.from_dataset(demo_kg()).save(tmp_path / "graph.npz")
    child = textwrap.dedent(f"""
        import json, numpy as np
        from kgrag.graph.csr import CSRGraph
        g = CSRGraph.load({str(path)!r})
        total = int(g.head.sum() + g.tail.sum())
        maps = [line for line in open("/proc/self/maps") if {str(path)!r} in line]
        print(json.dumps({{"total": total, "name": g.entity_names[7], "mapped_regions": len(maps)}}))
    """)
    runs = [subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=120)[0]) for p in runs]
    assert outs[0] == outs[1] and outs[0]["mapped_regions"] >= 3  # the arrays are pages of the file, not copies


def test_entity_vectors_are_computed_on_first_use_and_shared(tmp_path: Path) -> None:
    graph = CSRGraph.from_dataset(demo_kg())
    calls: list[list[str]] = []

    def encode(names: list[str]) -> np.ndarray:
        calls.append(names)
        return np.array([[len(n), 1.0, 0.0] for n in names], dtype=np.float32)

    vectors = EntityVectors(graph, tmp_path, "toy-model", 3, encode)
    assert vectors.computed() == 0
    rows = np.array([[2, 4], [4, 9]])
    first = vectors[rows]
    assert first.shape == (2, 2, 3) and sorted(sum(calls, [])) == sorted(graph.entity_names[i] for i in (2, 4, 9))
    again = EntityVectors(graph, tmp_path, "toy-model", 3, encode)  # another reader of the same map
    calls.clear()
    assert np.array_equal(again[rows], first) and calls == []  # read, not re-encoded
    assert EntityVectors(graph, tmp_path, "other-model", 3, encode).path != vectors.path


def test_streaming_import_fits_a_memory_cap(tmp_path: Path) -> None:
    """1M synthetic triples (+ 250k labels) imported by a child process whose address space is capped at what it
    holds after its imports + 200 MB: the file's statements as Python string tuples alone take ~440 MB (87 MB
    measured per 250k), so only an import that streams them into int arrays passes."""
    from bench.haystack_data import generate

    kb = tmp_path / "kb.txt"
    kb.write_text("Film A|directed_by|Person B\nFilm A|release_year|1999\n", encoding="utf-8")
    triples = tmp_path / "hay.nt.gz"
    stats = generate(triples, 1_000_000, kb=kb)
    child = textwrap.dedent(f"""
        import json, resource
        from pathlib import Path
        from kgrag.data.triples import read_triple_files
        from kgrag.graph.imported import imported_csr
        from kgrag.graph.csr import CSRGraph
        def vm():
            return int(next(l for l in open("/proc/self/status") if l.startswith("VmSize")).split()[1]) * 1024
        cap = vm() + 200 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        arrays = read_triple_files([{str(triples)!r}])
        graph = imported_csr(arrays, "hay", "http://example.org/kgrag/hay/ns/", "en")
        graph.save(Path({str(tmp_path / "graph.npz")!r}))
        peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmPeak")).split()[1]) * 1024
        print(json.dumps({{"triples": graph.num_triples, "entities": graph.num_entities, "headroom": cap - peak}}))
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["triples"] >= stats.synthetic_triples * 0.99 and result["headroom"] >= 0
    mapped = CSRGraph.load(tmp_path / "graph.npz")
    assert mapped.num_triples == result["triples"] and mapped.entity_names[mapped.key_index[
        "http://example.org/haystack/s/17"]]


def test_a_column_finds_the_rows_of_a_few_strings_without_decoding_them_all() -> None:
    """``find``: every row of each wanted string (shared first 8 bytes and lengths, multi-byte text, 30-byte
    strings, a string that is a prefix of another), none for a string no row holds or for the empty string."""
    from kgrag.graph.mapped import StringColumn

    strings = ["", "Tom Hanks", "Tom Hanks Jr", "ab", "Léon: The Professional", "Tom Hanks", "x" * 30, "Tom Hanks ",
               "x" * 29 + "y"]
    column = StringColumn.pack(strings)
    wanted = ["Tom Hanks", "ab", "Léon: The Professional", "x" * 30, "zz", ""]
    assert column.find(wanted) == {"Tom Hanks": [1, 5], "ab": [3], "Léon: The Professional": [4], "x" * 30: [6]}
    assert column.find(wanted, chunk=2) == column.find(wanted)  # the same across chunk edges
    assert column.find(["nothing"]) == {} and StringColumn.pack([]).find(["a"]) == {}
