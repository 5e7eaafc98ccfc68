"""The evaluation question sets in ``bench/questions/``: they parse, their gold answers are what the network's
links give (recomputed here), dev and holdout share no wording, the counts hold, and the files are what the
generators write now."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from bench.questions import make_demo_questions as demo_q
from bench.questions import make_synthetic_questions as synth_q
from kgrag.network.loaders.demo import demo_network
from kgrag.network.loaders.synthetic import synthetic_network

DIR = Path(demo_q.__file__).resolve().parent
FIELDS = {"question", "answers", "topic", "kind", "relation", "direction"}


def _rows(name: str) -> list[dict]:
    lines = (DIR / name).read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows:
        assert set(row) == FIELDS, row
        assert isinstance(row["question"], str) and row["question"].strip()
        assert isinstance(row["answers"], list) and row["answers"], row
        assert all(isinstance(a, str) for a in row["answers"])
        assert row["direction"] in ("out", "in")
    return rows


def _check_gold(rows: list[dict], data) -> None:  # noqa: ANN001
    """Every row's answers are exactly the names of the instances its topic reaches by its relation."""
    network, instances, links = data
    relation_types = {rt.id: rt for rt in network.relation_types}
    by_name: dict[tuple[str, str], list[str]] = defaultdict(list)
    names = {}
    for i in instances:
        by_name[(i.object_type_id, str(i.properties["name"]))].append(i.id)
        names[i.id] = str(i.properties["name"])
    reached: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for link in links:
        reached[(link.relation_type_id, "out", link.source_id)].add(names[link.target_id])
        reached[(link.relation_type_id, "in", link.target_id)].add(names[link.source_id])
    for row in rows:
        rt = relation_types[row["relation"]]
        topic_type = rt.source_object_type_id if row["direction"] == "out" else rt.target_object_type_id
        ids = by_name[(topic_type, row["topic"])]
        assert len(ids) == 1, f"topic {row['topic']!r} names {len(ids)} {topic_type} instances"
        gold = reached[(row["relation"], row["direction"], ids[0])]
        assert sorted(gold) == row["answers"], row


@pytest.fixture(scope="module")
def demo_data():
    return demo_network()


def test_demo_files_parse_and_count():
    dev, holdout = _rows("demo_dev.jsonl"), _rows("demo_holdout.jsonl")
    assert len(dev) >= 100 and len(holdout) >= 100
    for rows in (dev, holdout):
        assert len({r["question"] for r in rows}) == len(rows)
        # every kind is asked in both files
        assert {r["kind"] for r in rows} == {k.name for k in demo_q.KINDS}


def test_demo_gold_from_links(demo_data):
    _check_gold(_rows("demo_dev.jsonl") + _rows("demo_holdout.jsonl"), demo_data)


def test_demo_dev_and_holdout_share_no_wording():
    dev = {w for k in demo_q.KINDS for w in k.dev}
    holdout = {w for k in demo_q.KINDS for w in k.holdout}
    assert not dev & holdout
    for kind in demo_q.KINDS:
        assert len(kind.dev) + len(kind.holdout) >= 6, kind.name
        assert len(set(kind.dev)) == len(kind.dev) and len(set(kind.holdout)) == len(kind.holdout)
    kinds = {k.name: k for k in demo_q.KINDS}
    # each question comes from a wording of its own split, and no question text is in both files
    for name, split in (("demo_dev.jsonl", "dev"), ("demo_holdout.jsonl", "holdout")):
        for row in _rows(name):
            kind = kinds[row["kind"]]
            assert (kind.relation, kind.direction) == (row["relation"], row["direction"])
            assert row["question"] in {demo_q.render(w, row["topic"]) for w in getattr(kind, split)}, row
    questions = [{r["question"] for r in _rows(n)} for n in ("demo_dev.jsonl", "demo_holdout.jsonl")]
    assert not questions[0] & questions[1]


def test_demo_files_are_what_the_generator_writes():
    sets = demo_q.build()
    assert (DIR / "demo_dev.jsonl").read_text(encoding="utf-8") == demo_q.dumps(sets["dev"])
    assert (DIR / "demo_holdout.jsonl").read_text(encoding="utf-8") == demo_q.dumps(sets["holdout"])


def test_synthetic_questions():
    rows = _rows("synthetic.jsonl")
    assert len(rows) == 200
    assert len({r["question"] for r in rows}) == 200
    assert len({r["relation"] for r in rows}) == 200
    assert set(Counter(r["direction"] for r in rows)) == {"out", "in"}
    data = synthetic_network()
    _check_gold(rows, data)
    assert (DIR / "synthetic.jsonl").read_text(encoding="utf-8") == synth_q.dumps(synth_q.build())
