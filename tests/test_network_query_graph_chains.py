"""Network query graphs beyond the library's shape, on a small opera network written here as a new user would
(YAML + CSV, loaded with ``kgrag kn load``; gold computed from the rows by code): a relational noun that the path
passes and goes on from ("Where was the composer of X born?"), years held as linked **value nodes** (Opera
-premiere-> Year.value, Freebase-style) that comparisons, superlatives and counts read, and "the most <number
property>" ("which opera has the most acts") as an argmax over that property."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.library_kn import ask_network, load_network, settings_on

from kgrag.config import Settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.query_graph.network_executor import linked_value
from kgrag.query_graph.network_planner import NetworkTopic, has_structure, plan_network, relational_noun

SCHEMA = """\
kn_id: operas
name: Operas
comment: Composers, their operas, the houses that staged them and the towns
object_types:
  - id: Composer
    name: composer
    comment: a writer of operas
    display_key: name
    data_properties:
      - {name: name, type: string, condition_operations: [knn, match, "==", prefix]}
  - id: Opera
    name: opera
    comment: a staged musical drama
    display_key: title
    data_properties:
      - {name: title, type: string, condition_operations: [knn, match, "==", prefix]}
      - {name: acts, type: integer, condition_operations: ["==", ">", "<", range]}
  - id: House
    name: opera house
    comment: a theatre where operas are staged
    display_key: name
    data_properties:
      - {name: name, type: string, condition_operations: [knn, match, "=="]}
  - id: Town
    name: town
    comment: a town
    display_key: name
    data_properties:
      - {name: name, type: string, condition_operations: [knn, match, "=="]}
  - id: Year
    name: year
    comment: a calendar year
    display_key: name
    data_properties:
      - {name: name, type: string, condition_operations: ["=="]}
      - {name: value, type: integer, condition_operations: ["==", ">", "<", range]}
relation_types:
  - {id: composed, name: composed, comment: the composer wrote the opera, source_object_type_id: Composer, target_object_type_id: Opera}
  - {id: premiere, name: premiere year, comment: the year the opera premiered, source_object_type_id: Opera, target_object_type_id: Year}
  - {id: hometown, name: birthplace, comment: the town where the composer was born, source_object_type_id: Composer, target_object_type_id: Town}
  - {id: staged_at, name: staged at, comment: the house that staged the opera, source_object_type_id: Opera, target_object_type_id: House}
action_types: []
data:
  instances:
    - {object_type: Composer, file: composers.csv}
    - {object_type: Opera, file: operas.csv}
    - {object_type: House, file: houses.csv}
    - {object_type: Town, file: towns.csv}
    - {object_type: Year, file: years.csv}
  links:
    - {file: links.csv}
"""
COMPOSERS = [("c:marrow", "Ilse Marrow"), ("c:veldt", "Tomas Veldt"), ("c:corvo", "Ana Corvo")]
TOWNS = [("t:harwick", "Harwick"), ("t:osma", "Osma"), ("t:lenz", "Lenz")]
HOUSES = [("h:royal", "Royal Lyric"), ("h:north", "North Stage")]
#: (id, title, acts, premiere year, composer, house)
OPERAS = [("o:salt", "The Salt Queen", 3, 1871, "c:marrow", "h:royal"),
          ("o:glass", "Glass Harbour", 4, 1884, "c:marrow", "h:north"),
          ("o:winter", "Winter Bells", 2, 1893, "c:marrow", "h:royal"),
          ("o:ember", "Ember Song", 5, 1880, "c:veldt", "h:north"),
          ("o:tide", "Low Tide", 3, 1899, "c:veldt", "h:royal"),
          ("o:lark", "The Lark", 1, 1866, "c:corvo", "h:north")]
BORN = {"c:marrow": "t:osma", "c:veldt": "t:harwick", "c:corvo": "t:lenz"}


def _write(path: Path, header: list[str], rows: list[tuple]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def write_operas(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "operas.yaml").write_text(SCHEMA, encoding="utf-8")
    _write(root / "composers.csv", ["id", "name"], COMPOSERS)
    _write(root / "towns.csv", ["id", "name"], TOWNS)
    _write(root / "houses.csv", ["id", "name"], HOUSES)
    _write(root / "operas.csv", ["id", "title", "acts"], [o[:3] for o in OPERAS])
    years = sorted({o[3] for o in OPERAS})
    _write(root / "years.csv", ["id", "name", "value"], [(f"y:{y}", str(y), y) for y in years])
    links = ([("composed", o[4], o[0]) for o in OPERAS] + [("premiere", o[0], f"y:{o[3]}") for o in OPERAS]
             + [("staged_at", o[0], o[5]) for o in OPERAS] + [("hometown", c, t) for c, t in BORN.items()])
    _write(root / "links.csv", ["relation_type_id", "source_id", "target_id"], links)
    return root / "operas.yaml"


TITLES = {o[0]: o[1] for o in OPERAS}
NAMES = dict(COMPOSERS) | dict(TOWNS)


@pytest.fixture(scope="module")
def operas_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("operas")
    return load_network(write_operas(root / "files"), root)[0]


@pytest.fixture
def operas(operas_db: str, work_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    yield from settings_on(operas_db, monkeypatch)


def ask(question: str, **context: Any) -> dict:
    return ask_network("operas", question, **context)


def test_value_nodes_and_relational_nouns_are_read_from_the_schema(tmp_path: Path) -> None:
    network = load_declarative(write_operas(tmp_path))[0]
    assert linked_value(network, "Opera", "premiere", "out") == ("Year", "value")
    assert linked_value(network, "Opera", "staged_at", "out") is None  # a house has no number: no value node
    assert linked_value(network, "Opera", "acts", "out") is None  # its own property, not a link
    with_year = network.model_copy(update={"object_types": [
        ot.model_copy(update={"data_properties": [*ot.data_properties, ot.data_properties[0].model_copy(
            update={"name": "birth_year", "type": "integer"})]}) if ot.id == "Composer" else ot
        for ot in network.object_types]})
    # a composer with a birth year is still a thing (relations start from it), not a value of its operas
    assert linked_value(with_year, "Opera", "composed", "in") is None
    question = "Where was the composer of Glass Harbour born?"
    topic = NetworkTopic("Glass Harbour", "Opera", "o:glass", "Glass Harbour", question.index("Glass"))
    assert relational_noun(question, topic) == "composer"
    possessive = "Which houses staged Tomas Veldt's operas?"
    veldt = NetworkTopic("Tomas Veldt", "Composer", "c:veldt", "Tomas Veldt", possessive.index("Tomas"))
    assert relational_noun(possessive, veldt) == "operas"
    assert has_structure(question, network, [topic], "rel_in:composed")
    assert not has_structure("Who is the composer of Glass Harbour?", network,
                             [NetworkTopic("Glass Harbour", "Opera", "o:glass", "Glass Harbour", 23)], "rel_in:composed")
    best = plan_network(question, network, [topic], [("rel_in:composed", 0.9), ("rel:staged_at", 0.1)])[0]
    assert [(h.relation, h.direction) for h in best.path] == [("composed", "in"), ("hometown", "out")]


@pytest.mark.parametrize("opera", ["o:glass", "o:lark"])
def test_where_was_the_composer_of_x_born(operas: Settings, opera: str) -> None:
    composer = next(o[4] for o in OPERAS if o[0] == opera)
    state = ask(f"Where was the composer of {TITLES[opera]} born?")
    assert state["answers"] == [NAMES[BORN[composer]]], state["answer"]
    assert len(state["query_graph"]["path"]) == 2


@pytest.mark.parametrize(("composer", "word"), [("c:marrow", "first"), ("c:veldt", "last"), ("c:marrow", "latest")])
def test_superlative_over_a_linked_year(operas: Settings, composer: str, word: str) -> None:
    own = [o for o in OPERAS if o[4] == composer]
    pick = min if word == "first" else max
    gold = pick(own, key=lambda o: o[3])
    state = ask(f"What was the {word} opera composed by {NAMES[composer]}?")
    assert state["answers"] == [gold[1]], state["answer"]
    agg = state["query_graph"]["aggregation"]
    assert agg["relation"] == "premiere" and agg["op"] == ("argmin" if word == "first" else "argmax")
    assert str(gold[3]) in state["answer"] and state["unused"] == []
    assert [r["property_value"] for r in state["evidence"]] == [gold[3]]


@pytest.mark.parametrize(("question", "test"), [
    ("Which operas premiered before 1881?", lambda y: y < 1881),
    ("Which operas premiered after 1884?", lambda y: y > 1884),
    ("Which operas premiered between 1880 and 1890?", lambda y: 1880 <= y <= 1890),
])
def test_year_filter_on_a_linked_year_without_a_topic(operas: Settings, question: str, test: Any) -> None:
    state = ask(question)
    assert sorted(state["answers"]) == sorted(o[1] for o in OPERAS if test(o[3])), state["answer"]
    assert state["query_graph"]["literal_constraint"]["relation"] == "premiere" and state["unused"] == []
    names = [c["name"] for c in state["tool_calls"]]
    assert names[:2] == ["query_object_instance", "query_instance_subgraph"]  # the years first, then their operas


def test_year_filter_count_and_youngest_on_a_linked_year(operas: Settings) -> None:
    marrow = ask("Which operas composed by Ilse Marrow premiered after 1875?")
    assert sorted(marrow["answers"]) == sorted(o[1] for o in OPERAS if o[4] == "c:marrow" and o[3] > 1875)
    counted = ask("How many operas premiered after 1879?")
    assert counted["answers"] == [str(sum(o[3] > 1879 for o in OPERAS))], counted["answer"]
    newest = ask("What is the newest opera?")
    assert newest["answers"] == [max(OPERAS, key=lambda o: o[3])[1]], newest["answer"]


def test_the_most_of_a_number_property(operas: Settings) -> None:
    state = ask("Which opera has the most acts?")
    assert state["answers"] == [max(OPERAS, key=lambda o: o[2])[1]], state["answer"]
    agg = state["query_graph"]["aggregation"]
    assert agg["relation"] == "acts" and agg["op"] == "argmax" and not agg["counts"]
    fewest = ask("Which opera has the fewest acts?")
    assert fewest["answers"] == [min(OPERAS, key=lambda o: o[2])[1]], fewest["answer"]


def test_a_chain_must_suit_the_kind_the_wh_word_asks(operas: Settings) -> None:
    # "when" asks a date: the composer's birthplace is no answer (the network holds no birth date)
    state = ask("When was the composer of Glass Harbour born?")
    assert NAMES[BORN["c:marrow"]] not in state["answers"], state["answer"]
    assert state["query_graph"] is None or len(state["query_graph"]["path"]) == 1
