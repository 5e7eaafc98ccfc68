"""Network loaders: demo, declarative, synthetic, medical (subset), MetaQA, the registry."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from fixtures.settings import require_shared

from kgrag.errors import KgragError
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.loaders.demo import demo_network
from kgrag.network.loaders.registry import build_named, load_named
from kgrag.network.loaders.synthetic import synthetic_network
from kgrag.network.schema.model import Condition
from kgrag.network.store import NetworkStore
from kgrag.rank.sentence_embedder import Embedder

TINY = Path(__file__).parent / "network_tiny" / "clinic.yaml"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    return Embedder(cache_dir=tmp_path_factory.getbasetemp() / "kn-embeddings")


def test_demo_network_loads_and_answers(embedder: Embedder) -> None:
    network, instances, links = demo_network()
    again = demo_network()
    assert again[0] == network and len(again[1]) == len(instances)  # deterministic
    types = {ot.id for ot in network.object_types}
    assert {"Person", "Film", "Country", "City", "Genre", "Year", "Performance"} <= types
    for rt in network.relation_types:
        assert rt.source_object_type_id in types and rt.target_object_type_id in types
    store = NetworkStore("sqlite://", embedder=embedder)
    stats = load_named("demo", store)
    assert stats.instances == len(instances) and stats.links == len(links)
    films = store.query_instances(
        "demo", "Film", Condition(operation="knn", field="name", value="Neon Rain"), 3
    )
    assert films[0].properties["name"] == "Neon Rain"
    assert store.search_object_types("demo", "sports team", 3)[0][0] == "Team"
    assert store.search_relation_types("demo", "where was he born", 3)[0][0] == "people.person.place_of_birth"
    directed = store.search_relation_types("demo", "who directed the film", 3)
    assert "film.film.directed_by" in [r for r, _ in directed]
    late = store.query_instances("demo", "Year", Condition(operation=">=", field="value", value=2020), 50)
    assert late and all(h.properties["value"] >= 2020 for h in late)
    paths = store.query_path(
        "demo",
        "Film",
        Condition(operation="==", field="name", value="Neon Rain"),
        "film.film.directed_by",
        "Person",
        None,
    )
    assert len(paths) == 1 and paths[0].target.object_type_id == "Person"


def test_declarative_tiny_example(embedder: Embedder) -> None:
    network, instances, links = load_declarative(TINY)
    assert network.kn_id == "clinic" and len(instances) == 4 and len(links) == 3
    flu = next(i for i in instances if i.id == "d:flu")
    assert flu.properties == {"name": "流行性感冒", "cost": 300, "cure_way": ["药物治疗", "支持性治疗"]}
    assert {i.id for i in instances if i.object_type_id == "Symptom"} == {"Symptom:发热", "Symptom:咳嗽"}
    store = NetworkStore("sqlite://", embedder=embedder)
    store.load(network, instances, links)
    cheap = store.query_instances("clinic", "Disease", Condition(operation="<", field="cost", value=1000), 5)
    assert [h.id for h in cheap] == ["d:flu"]
    cough = Condition(operation="match", field="name", value="咳嗽")
    assert {
        p.source.id for p in store.query_path("clinic", "Symptom", cough, "has_symptom", "Disease", None)
    } == {"d:flu", "d:pertussis"}


def test_declarative_errors(tmp_path: Path) -> None:
    with pytest.raises(KgragError, match="not found"):
        load_declarative(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nobject_types:\n  - {id: A, name: A, colour: red}\n", encoding="utf-8")
    with pytest.raises(KgragError, match="invalid network schema"):
        load_declarative(bad)
    csv_bad = tmp_path / "n.yaml"
    csv_bad.write_text(
        "object_types:\n  - id: A\n    name: A\n    data_properties: [{name: n, type: integer}]\n"
        "data:\n  instances: [{object_type: A, file: a.csv}]\n",
        encoding="utf-8",
    )
    (tmp_path / "a.csv").write_text("id,n\nx,notanumber\n", encoding="utf-8")
    with pytest.raises(KgragError, match="cannot read 'notanumber' as integer"):
        load_declarative(csv_bad)


def test_synthetic_has_5000_relation_types_and_meaningful_type_search(embedder: Embedder) -> None:
    network, instances, links = synthetic_network()
    assert len(network.relation_types) >= 5000 and len(network.object_types) >= 1000
    assert len({rt.id for rt in network.relation_types}) == len(network.relation_types)
    assert synthetic_network()[0] == network  # seeded
    assert synthetic_network(seed=1)[0] != network
    # a smaller one loads fast and type search finds the vocabulary
    small = synthetic_network("syn_small", n_object_types=60, n_relation_types=200)
    store = NetworkStore("sqlite://", embedder=embedder)
    store.load(*small)
    wanted = next(ot for ot in small[0].object_types if ot.name.endswith("Invoice"))
    top = [t for t, _ in store.search_object_types("syn_small", wanted.name, 5)]
    assert top[0] == wanted.id


def test_medical_network(embedder: Embedder, tmp_path: Path) -> None:
    require_shared("medical/diseases")
    from kgrag.config import get_settings
    from kgrag.network.loaders.medical import load_medical

    data = load_medical(get_settings().data_dir, limit=150)
    network, instances, links = data
    counts = Counter(i.object_type_id for i in instances)
    assert set(counts) == {"Disease", "Symptom", "Check", "Drug", "Food", "Recipe", "Department"}
    assert {rt.id for rt in network.relation_types} >= {
        "has_symptom",
        "acompany_with",
        "need_check",
        "common_drug",
        "do_eat",
        "no_eat",
        "belongs_to",
    }
    store = NetworkStore(f"sqlite:///{tmp_path / 'med.db'}", embedder=embedder)
    start = time.perf_counter()
    first = store.load(*data)
    second = store.load(*data)
    assert time.perf_counter() - start < 120
    assert (first.instances, first.links, first.vectors) == (second.instances, second.links, second.vectors)
    assert store.count_instances("medical") == len(instances)
    pertussis = store.query_instances(
        "medical", "Disease", Condition(operation="==", field="name", value="百日咳"), 1
    )
    assert pertussis and pertussis[0].properties["cure_lasttime"] == "1-2个月"
    symptoms = store.query_path(
        "medical",
        "Disease",
        Condition(operation="==", field="name", value="百日咳"),
        "has_symptom",
        "Symptom",
        None,
        limit_per_type=50,
    )
    assert symptoms and all(p.target.object_type_id == "Symptom" for p in symptoms)
    rel = store.search_relation_types("medical", "百日咳有什么并发症", 3)
    assert rel[0][0] == "acompany_with"
    assert store.search_relation_types("medical", "百日咳吃什么药", 3)[0][0] == "common_drug"


def test_metaqa_network_ids_and_types(shared_data_dir: Path) -> None:
    network, instances, links = build_named("metaqa", shared_data_dir)
    assert len(network.relation_types) == 9
    assert {(rt.id, rt.source_object_type_id, rt.target_object_type_id) for rt in network.relation_types} >= {
        ("directed_by", "movie", "person"),
        ("has_genre", "movie", "genre"),
        ("release_year", "movie", "year"),
        ("has_imdb_votes", "movie", "votes"),
    }
    assert len(links) == 133_582
    ids = {i.id for i in instances}
    assert all(i.id == f"{i.object_type_id}:{i.properties['name']}" for i in instances[:1000])
    # a name can be both a movie and a person: two instances
    names_by_type: dict[str, set[str]] = {}
    for i in instances:
        names_by_type.setdefault(i.object_type_id, set()).add(i.properties["name"])
    both = names_by_type["movie"] & names_by_type["person"]
    assert both and all(f"movie:{n}" in ids and f"person:{n}" in ids for n in list(both)[:5])


def test_registry_unknown_name() -> None:
    with pytest.raises(KgragError, match="unknown network 'nope'"):
        build_named("nope")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("tab.yaml", "name: x\n\tobject_types: []\n", ":2:1: not valid YAML: found character '\\t'"),
        ("indent.yaml", "name: x\nobject_types:\n  - id: A\n   name: B\n", ":4:4: not valid YAML: "),
        ("bad.json", '{"name": "x",\n "object_types": [}\n', ":2:19: not valid JSON: Expecting value"),
    ],
)
def test_declarative_syntax_errors_name_file_and_line(tmp_path: Path, name: str, text: str, where: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(KgragError) as info:
        load_declarative(path)
    assert str(info.value).startswith(f"{path}{where}") and "\n" not in str(info.value)


def test_declarative_schema_and_data_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nobject_types:\n  - {id: A, name: A, colour: red}\n", encoding="utf-8")
    with pytest.raises(KgragError) as info:
        load_declarative(bad)
    assert str(info.value) == f"{bad}: invalid network schema: object_types.0.colour: Extra inputs are not permitted"
    no_file = tmp_path / "nofile.yaml"
    no_file.write_text("name: x\nobject_types: []\ndata:\n  instances: [{object_type: A}]\n", encoding="utf-8")
    with pytest.raises(KgragError, match="data.instances entry 1 needs a file"):
        load_declarative(no_file)
