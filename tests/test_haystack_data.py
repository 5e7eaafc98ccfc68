"""bench.haystack_data: MetaQA's kb embedded in N synthetic triples, one deterministic gzipped N-Triples file."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import numpy as np
import pyoxigraph as ox
import pytest

import bench.haystack_data as hd
from kgrag.data.freebase import FREEBASE_NS
from kgrag.graph.imported import relation_local_names
from kgrag.prep.resolve import normalise

KB = [
    ("Ocean's Eleven", "directed_by", "Steven Soderbergh"),
    ("Ocean's Eleven", "starred_actors", "George Clooney"),
    ("Goldfinger", "starred_actors", "Gert Fröbe"),
    ('He Said "Hi"', "written_by", "A\\B Writer"),
    ("100%_Pure", "has_tags", "drama"),
    ("100% Pure", "has_genre", "Drama"),
    ("Goldfinger", "release_year", "1964"),
    ("Goldfinger", "has_genre", "Drama"),
    ("Heat", "has_genre", "Drama"),
]
RELATIONS = [f"test.kind_{i}.prop_{j}" for i in range(10) for j in range(5)] + ["book.book_edition.ISBN"]
N = 20_000


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kb") / "kb.txt"
    path.write_text("".join(f"{h}|{r}|{t}\n" for h, r, t in KB) + "\n# a comment\n", encoding="utf-8")
    return path


def _generate(path: Path, kb: Path, seed: int = 0, n: int = N, **kw) -> hd.HaystackStats:
    return hd.generate(path, n, seed=seed, kb=kb, relations=RELATIONS, **kw)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, kb: Path) -> tuple[hd.HaystackStats, list[ox.Triple]]:
    stats = _generate(tmp_path_factory.mktemp("hay") / "hay.nt.gz", kb)
    with gzip.open(stats.path, "rb") as fh:
        triples = list(ox.parse(fh, format=ox.RdfFormat.N_TRIPLES))  # strict: IRIs and escapes must be valid
    return stats, triples


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path, kb: Path) -> None:
    a = _generate(tmp_path / "a.nt.gz", kb, n=5000)
    b = _generate(tmp_path / "b.nt.gz", kb, n=5000)
    c = _generate(tmp_path / "c.nt.gz", kb, seed=1, n=5000)
    assert (tmp_path / "a.nt.gz").read_bytes() == (tmp_path / "b.nt.gz").read_bytes()
    assert a.sha256 == b.sha256 != c.sha256
    assert (tmp_path / "a.nt.gz").read_bytes() != (tmp_path / "c.nt.gz").read_bytes()
    assert not list(tmp_path.glob("*.part"))


def test_counts_and_every_kb_line(made: tuple[hd.HaystackStats, list[ox.Triple]]) -> None:
    stats, triples = made
    assert len(triples) == stats.triples_total == len(KB) + stats.label_triples + N
    synthetic = [t for t in triples if t.predicate.value.startswith(FREEBASE_NS)]
    assert len(synthetic) == stats.synthetic_triples == N
    got = {(t.subject.value, t.predicate.value, t.object.value) for t in triples}
    for h, r, t in KB:
        assert (hd.metaqa_entity_iri(h), hd.metaqa_relation_iri(r), hd.metaqa_entity_iri(t)) in got
    assert stats.metaqa_entities == len({x for h, _, t in KB for x in (h, t)})
    assert stats.synthetic_entities == N // 4
    assert stats.entities == stats.metaqa_entities + stats.synthetic_entities


def test_labels_exact_and_names_disjoint(made: tuple[hd.HaystackStats, list[ox.Triple]]) -> None:
    stats, triples = made
    labels = {t.subject.value: t.object.value for t in triples if t.predicate.value == hd.LABEL}
    assert len(labels) == stats.label_triples == stats.entities
    for name in {x for h, _, t in KB for x in (h, t)}:
        assert labels[hd.metaqa_entity_iri(name)] == name  # quotes, backslashes, non-ASCII kept
    synthetic = {k: v for k, v in labels.items() if k.startswith(hd.SYNTHETIC_NS)}
    assert len(synthetic) == stats.synthetic_entities
    assert synthetic[hd.synthetic_entity_iri(7)] == hd.synthetic_name(7)
    metaqa_names = {normalise(x) for h, _, t in KB for x in (h, t)}
    assert not metaqa_names & {normalise(v) for v in synthetic.values()}
    assert len(set(synthetic.values())) == len(synthetic)  # the number makes each name unique


def test_degrees_heavy_tailed_and_metaqa_share(made: tuple[hd.HaystackStats, list[ox.Triple]]) -> None:
    stats, triples = made
    synthetic = [t for t in triples if t.predicate.value.startswith(FREEBASE_NS)]
    degree: Counter[str] = Counter()
    attached = 0
    for t in synthetic:
        ends = (t.subject.value, t.object.value)
        attached += sum(e.startswith(hd.METAQA_NS) for e in ends)
        assert sum(e.startswith(hd.SYNTHETIC_NS) for e in ends) >= 1
        degree.update(e for e in ends if e.startswith(hd.SYNTHETIC_NS))
    assert attached == stats.metaqa_attached == round(0.1 * N)
    assert len(degree) == stats.synthetic_entities  # every synthetic entity has an edge
    d = np.array(list(degree.values()))
    assert np.median(d) <= 4 and d.max() >= 50 * np.median(d)
    assert (d <= 3).mean() > 0.4
    # the MetaQA end is drawn in proportion to the kb degree: Drama (3 kb lines) is met more than Heat (1)
    ends = Counter(e for t in synthetic for e in (t.subject.value, t.object.value) if e.startswith(hd.METAQA_NS))
    assert ends[hd.metaqa_entity_iri("Drama")] > ends[hd.metaqa_entity_iri("Heat")]
    triples_set = {(t.subject.value, t.predicate.value, t.object.value) for t in synthetic}
    assert len(triples_set) > 0.99 * N  # duplicates rare


def test_chunks_cover_every_entity(tmp_path: Path, kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hd, "CHUNK", 3001)
    stats = _generate(tmp_path / "c.nt.gz", kb, n=10_000, metaqa_share=0.25, entities_per_triple=0.5)
    with gzip.open(stats.path, "rb") as fh:
        triples = list(ox.parse(fh, format=ox.RdfFormat.N_TRIPLES))
    synthetic = [t for t in triples if t.predicate.value.startswith(FREEBASE_NS)]
    assert len(synthetic) == 10_000 and stats.metaqa_attached == 2500
    used = {e for t in synthetic for e in (t.subject.value, t.object.value) if e.startswith(hd.SYNTHETIC_NS)}
    assert used == {hd.synthetic_entity_iri(i) for i in range(5000)}
    assert sum(t.subject.value.startswith(hd.METAQA_NS) or t.object.value.startswith(hd.METAQA_NS)
               for t in synthetic) == 2500


def test_iris_injective_and_relations_named_as_metaqa() -> None:
    names = ["a b", "a_b", "a%20b", "a%5Fb", "a/b", "a<b>", "Gert Fröbe", "x\ty", "?", "#"]
    iris = [hd.metaqa_entity_iri(x) for x in names]
    assert len(set(iris)) == len(names)
    for iri in iris:
        ox.NamedNode(iri)  # a valid IRI
    assert hd.metaqa_entity_iri("Gert Fröbe").endswith("/m/Gert_Fröbe")
    for name in ["Ocean's Eleven (2001)", "$9.99", "a~b@c", *names]:  # the fast path encodes as the slow one
        assert hd.metaqa_entity_iri(name) == hd.METAQA_NS + "".join(map(hd._iri_char, name))
    metaqa = ["directed_by", "written_by", "starred_actors", "release_year", "in_language", "has_tags",
              "has_genre", "has_imdb_votes", "has_imdb_rating"]
    sources = [hd.metaqa_relation_iri(r) for r in metaqa] + [FREEBASE_NS + r for r in RELATIONS]
    assert relation_local_names(sources) == metaqa + RELATIONS


def test_a_metaqa_name_equal_to_a_synthetic_name_is_refused(tmp_path: Path) -> None:
    kb = tmp_path / "kb.txt"
    kb.write_text(f"Some Film|starred_actors|{hd.synthetic_name(12).upper()}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="would be named like"):
        hd.generate(tmp_path / "x.nt.gz", 1000, kb=kb, relations=RELATIONS)
    hd.generate(tmp_path / "y.nt.gz", 40, kb=kb, relations=RELATIONS)  # entity 12 not made: no clash
