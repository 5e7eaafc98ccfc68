"""Plans over rows on a triple KG (issue 49, the triple-KG half): a typed graph viewed as tables (classes, values,
links; entities with two classes, CVTs and class nodes), the same scorer's plans answered on it, a Spider database
written as RDF giving the tables of its network, and the triple agent answering through ``query_plan`` only where
no typed entity is named (``kgrag ask --kg``, ``--strict-confidence``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from query_graph_kg import NAMESPACE, SCIENTISTS_TTL
from typer.testing import CliRunner

from bench.network_rdf import network_turtle, rdf_view
from kgrag.cli import app
from kgrag.config import get_settings
from kgrag.data.triples import read_triple_files
from kgrag.graph.csr import CSRGraph
from kgrag.graph.imported import imported_csr
from kgrag.network.loaders.declarative import load_declarative
from kgrag.reading.answer import answer_on_view
from kgrag.reading.execute import run_plan
from kgrag.reading.graph_tables import GraphView, view_for_graph, view_of_graph
from kgrag.reading.table_plan import Filter, TablePlan
from kgrag.reading.tables import TableView

runner = CliRunner()
#: a person who is also a prize winner's "Laureate" (two classes), and an untyped class-less node of its own
EXTRA_TTL = """
ex:curie a ex:Laureate . ex:Laureate rdfs:label "Laureate" .
ex:mystery ex:bornIn ex:paris .
"""
PETS = get_settings().data_dir / "spider" / "pets_1" / "pets_1.yaml"


def _graph(folder: Path, text: str) -> CSRGraph:
    path = folder / "sci.ttl"
    path.write_text(text, encoding="utf-8")
    return imported_csr(read_triple_files([path], lang="en"), "sci", NAMESPACE, "en")


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> GraphView:
    found = view_of_graph(_graph(tmp_path_factory.mktemp("sci"), SCIENTISTS_TTL + EXTRA_TTL))
    assert found is not None
    return found


def test_classes_are_tables_values_are_properties_and_links_join_classes(view: GraphView) -> None:
    assert sorted(view.types) == ["City", "Country", "Laureate", "Person", "Prize", "University"]
    cities = view.types["City"]
    population = dict(zip(cities.column("name"), cities.column("population"), strict=True))
    assert population["Ulm"] == "126000" and cities.is_numeric("population")
    people = view.types["Person"]
    births = dict(zip(people.column("name"), people.column("birthDate"), strict=True))
    assert births["Albert Einstein"] == "1879" and births["Niels Bohr"] == "1885-10-07T00:00:00"
    assert people.is_orderable("birthDate") and not people.is_numeric("birthDate")
    # Marie Curie is a row of both her classes; the untyped node with triples of its own (and the CVT) is no row
    assert view.types["Laureate"].column("name") == ["Marie Curie"]
    assert "mystery" not in " ".join(people.ids) and sum(len(t) for t in view.types.values()) == 26
    assert {r.name for r in view.network.relation_types} >= {"bornIn", "won", "locatedIn", "spouse"}
    born = next(r for r in view.network.relation_types if r.name == "bornIn" and r.source_object_type_id == "Person")
    src, tgt = view.links[born.id]
    pairs = {(people.column("name")[s], cities.column("name")[t]) for s, t in zip(src, tgt, strict=True)}
    assert ("Marie Curie", "Warsaw") in pairs and len(pairs) == 6
    # a relation joining two pairs of classes is two relation types, each with its own rows
    located = sorted(r.id for r in view.network.relation_types if r.name == "locatedIn")
    assert located == ["locatedIn@City>Country", "locatedIn@University>City"]


def test_plans_run_on_the_graph_view(view: GraphView) -> None:
    before = TablePlan(answer_type="University", filters=(Filter(property="founded", op="<", number=1800),))
    assert sorted(run_plan(before, view).answers) == ["Sorbonne", "University of Copenhagen"]
    won = next(r.id for r in view.network.relation_types if r.name == "won" and r.source_object_type_id == "Person")
    count = TablePlan(answer_type="Person", op="count", start_type="Prize", path=((won, "in"),),
                      filters=(Filter(property="name", op="=", values=("davy medal",), on="start"),))
    assert run_plan(count, view).answers == ["2"]
    found = answer_on_view("Which universities were founded before 1800?", view)
    assert found is not None and sorted(found.answers) == ["Sorbonne", "University of Copenhagen"]
    assert found.confidence > 0.5 and found.unlinked == []


def test_a_graph_without_classes_has_no_view_and_views_are_kept_per_graph(tmp_path: Path) -> None:
    plain = _graph(tmp_path, '@prefix ex: <http://example.org/sci/> .\nex:a ex:knows ex:b .\n')
    assert view_of_graph(plain) is None and view_for_graph(plain) is None
    typed = _graph(tmp_path, SCIENTISTS_TTL)
    assert view_for_graph(typed) is view_for_graph(typed)
    assert view_of_graph(typed, max_rows=10) is None  # more typed rows than allowed: no view


@pytest.mark.skipif(not PETS.is_file(), reason="shared/data/spider is not beside the checkout")
def test_a_database_written_as_rdf_gives_the_tables_of_its_network(tmp_path: Path) -> None:
    network, instances, links = load_declarative(PETS)
    text = network_turtle(network, instances, links)
    assert text.startswith("@prefix ex:") and "rdfs:label" in text
    as_rdf = rdf_view(network, instances, links, tmp_path)
    as_network = TableView.build(network, instances, links)
    assert as_rdf is not None
    assert ({t.type.name: len(t) for t in as_rdf.types.values()}
            == {t.type.name: len(t) for t in as_network.types.values()} == {"pets": 3, "student": 34})
    assert sorted(len(s) for s, _ in as_rdf.links.values()) == sorted(len(s) for s, _ in as_network.links.values())
    question = "What is the maximum weight of pets of type dog?"
    on_rdf, on_network = answer_on_view(question, as_rdf), answer_on_view(question, as_network)
    assert on_rdf is not None and on_network is not None and on_rdf.answers == on_network.answers


def _ask(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["ask", *args, "--json"])
    return result.exit_code, json.loads(result.stdout.strip().splitlines()[0])


def test_the_triple_agent_plans_over_rows_only_where_no_entity_is_named(work_settings, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sci.ttl"
    path.write_text(SCIENTISTS_TTL, encoding="utf-8")
    prepared = runner.invoke(app, ["prepare", "--dataset", "sci", "--triples", str(path)])
    assert prepared.exit_code == 0, prepared.output
    code, state = _ask("Which universities were founded before 1800?", "--kg", "sci", "--strict-confidence")
    assert code == 0 and sorted(state["answers"]) == ["Sorbonne", "University of Copenhagen"]
    assert [c["name"] for c in state["tool_calls"]] == ["query_plan"] and state["table_plan"]["scorer"]
    assert "founded < 1800" in state["answer"] and "rests on 2 rows of University" in state["answer"]
    assert state["evidence"][0]["instance_name"] in state["answers"]
    code, named = _ask("in which city was Marie Curie born?", "--kg", "sci")
    assert code == 0 and named["answers"] == ["Warsaw"] and named["table_plan"] is None
    assert [c["name"] for c in named["tool_calls"]] == ["query_graph"]
    monkeypatch.setenv("KGRAG_AGENT_MIN_CONFIDENCE", "0.99")
    get_settings.cache_clear()
    code, unsure = _ask("Which universities were founded before 1800?", "--kg", "sci", "--strict-confidence")
    assert code == 1 and unsure["answers"] == [] and "I am not sure enough to answer" in unsure["answer"]
    assert "My best guess is University of Copenhagen" in unsure["answer"]
