"""Data-prep steps without Prefect: idempotency, counts, malformed input, reachability."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from kgrag.graph.csr import CSRGraph
from kgrag.graph.oxigraph_store import OxigraphStore
from kgrag.prep import steps
from kgrag.prep.manifest import state_token
from kgrag.prep.reach import UNREACHABLE, min_answer_hops


def _run_all(dataset, data_dir, out):
    fp = steps.input_fingerprint(dataset, data_dir)
    return fp, steps.build_graph(dataset, data_dir, out, fp), steps.load_store(out, fp), steps.prepare_questions(dataset, data_dir, out, fp)


def test_demo_prep_is_idempotent(tmp_path):
    out = tmp_path / "demo"
    fp, graph, store, questions = _run_all("demo", tmp_path, out)
    assert graph["triples"] > 300 and store["store_triples"] == graph["rdf_triples"]
    assert questions["questions"] > 0 and questions["unreachable_within_3"] == 0
    first_nt = (out / "triples.nt").read_bytes()
    token = state_token(out, "store")
    # second run: no-op, same results, same store size (no duplicates)
    assert _run_all("demo", tmp_path, out)[1:] == (graph, store, questions)
    assert state_token(out, "store") == token
    assert OxigraphStore(out / "oxigraph", read_only=True).count_triples() == store["store_triples"]
    # outputs deleted → the step really runs again and rebuilds the same content
    (out / "triples.nt").unlink()
    again = steps.build_graph("demo", tmp_path, out, fp)
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in graph.items() if k != "seconds"}
    assert (out / "triples.nt").read_bytes() == first_nt


def test_questions_file_has_resolved_ids(tmp_path):
    out = tmp_path / "demo"
    _run_all("demo", tmp_path, out)
    records = steps.read_prepared_questions(out)
    assert records and all(r["topic_ids"] and r["answer_ids"] for r in records)
    assert all(0 <= r["answer_hops"] <= 3 for r in records)
    from kgrag.graph.csr import CSRGraph

    graph = CSRGraph.load(out / "graph.npz")
    for r in records:
        assert [graph.entity_keys[i] for i in r["answer_index"]] == r["answer_ids"]
        assert [graph.entity_ids[i] for i in r["topic_index"]] == r["topic_local_ids"]


def test_malformed_kb_lines_are_counted(tmp_path):
    data = tmp_path / "data"
    (data / "metaqa" / "1-hop").mkdir(parents=True)
    (data / "metaqa" / "kb.txt").write_text("A|directed_by|B\nbroken line\nC|written_by|\nA|directed_by|B\nD|starred_actors|E\n")
    (data / "metaqa" / "1-hop" / "dev.txt").write_text("what did [B] direct\tA\nwho wrote [C]\tZ\n")
    (data / "metaqa" / "1-hop" / "dev_qtype.txt").write_text("director_to_movie\nmovie_to_writer\n")
    for k in (2, 3):
        (data / "metaqa" / f"{k}-hop").mkdir()
        (data / "metaqa" / f"{k}-hop" / "dev.txt").write_text("")
        (data / "metaqa" / f"{k}-hop" / "dev_qtype.txt").write_text("")
    out = tmp_path / "work" / "metaqa"
    _, graph, store, questions = _run_all("metaqa", data, out)
    assert graph["triples"] == 2
    assert graph["malformed_lines"] == 3  # bad field count, empty tail, repeated triple
    assert any(":2:" in e for e in graph["malformed_examples"])
    assert questions["questions"] == 2
    assert questions["unresolved_topic"] == 1  # [C] is not in the graph (its only line was malformed)
    assert questions["unresolved_answers"] == 1


def test_missing_data_dir_names_the_setting(tmp_path):
    from kgrag.errors import DataNotFoundError

    with pytest.raises(DataNotFoundError, match="KGRAG_DATA_DIR"):
        steps.build_graph("metaqa", tmp_path / "nowhere", tmp_path / "out", "fp")


def test_unknown_dataset_is_rejected(tmp_path):
    from kgrag.errors import KgragError

    with pytest.raises(KgragError, match=r"unknown dataset 'wikidata': known datasets are metaqa, demo, medical"):
        steps.input_fingerprint("wikidata", tmp_path)


def test_min_answer_hops_matches_bfs():
    rng = np.random.default_rng(0)
    n = 60
    edges = rng.integers(0, n, size=(90, 2))
    adj = sp.csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    und = (adj + adj.T).tocsr()
    topics = [[int(t)] for t in rng.integers(0, n, size=40)]
    answers = [[int(a) for a in rng.integers(0, n, size=3)] for _ in range(40)]
    names = [f"e{i}" for i in range(n)]
    graph = CSRGraph("toy", "http://x/", names, names, names, ["r"], edges[:, 0].astype(np.int32),
                     np.zeros(len(edges), dtype=np.int32), edges[:, 1].astype(np.int32))
    got = min_answer_hops(graph, topics, answers)  # a bidirectional BFS per question
    nbrs = [set(und.indices[und.indptr[i] : und.indptr[i + 1]].tolist()) for i in range(n)]
    for q, (ts, ans) in enumerate(zip(topics, answers, strict=True)):
        seen, frontier, dist = {ts[0]}, {ts[0]}, {ts[0]: 0}
        for hop in (1, 2, 3):
            frontier = {y for x in frontier for y in nbrs[x]} - seen
            seen |= frontier
            dist.update({y: hop for y in frontier})
        expected = min((dist[a] for a in ans if a in dist), default=UNREACHABLE)
        assert got[q] == expected, (q, got[q], expected)


@pytest.mark.slow
def test_metaqa_prep_counts(shared_data_dir, tmp_path):
    out = tmp_path / "metaqa"
    _, graph, store, questions = _run_all("metaqa", shared_data_dir, out)
    assert graph["triples"] == 133_582 and graph["entities"] == 43_234 and graph["relations"] == 9
    assert store["store_triples"] == graph["rdf_triples"]
    assert questions["questions"] == 9_992 + 14_872 + 14_274
    assert questions["unresolved_topic"] == 0
    summary = json.loads(json.dumps(questions))
    assert set(summary["per_split_hop"]) == {"train", "validation"}


def test_try_next_samples_held_out_questions_one_per_hop(tmp_path) -> None:
    from kgrag.prep.next_steps import try_next

    def record(text: str, split: str, hop: int, answer_hops: int = 1, topic: bool = True) -> dict:
        return {"text": text, "split": split, "hop": hop, "topic_ids": ["t"] if topic else [], "answer_ids": ["a"],
                "answer_hops": answer_hops}

    rows = [record("what films did [Tom Hanks] act in", "train", 1),
            record("who wrote [Dune]", "validation", 1, answer_hops=-1),  # answer beyond 3 hops: not shown
            record("who wrote [Nowhere]", "validation", 1, topic=False),  # unresolved topic: not shown
            record("who directed [Heat]", "validation", 1),
            record("who directed [Up]", "validation", 1),
            record("which genres are the films written by [Alan Smithee's Ghost] in", "validation", 2),
            record("what languages are the films of the writer of [Big] in", "validation", 3)]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert try_next("metaqa", tmp_path) == [
        'kgrag ask "who directed Heat" --kg metaqa',
        'kgrag ask "which genres are the films written by Alan Smithee\'s Ghost in" --kg metaqa',
        'kgrag ask "what languages are the films of the writer of Big in" --kg metaqa']
    assert try_next("metaqa", tmp_path, count=4)[-1] == 'kgrag ask "who directed Up" --kg metaqa'
    assert try_next("metaqa", tmp_path / "unprepared") == []
