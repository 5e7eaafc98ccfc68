"""A relation whose property label has no ASCII letter keeps its id (``P19``) and its label (``出生地``) in the
graph's meta; the places that show or embed relation words say the label: the kg-tools ``get_relations`` text (and
``get_triples`` takes the id back as shown or by its label), the zero-shot ranker's chain words, the console's
schema and node views. On a small Wikidata-style Turtle file written here, prepared through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from kgrag.agent.kg.zero_shot import chain_words, end_words
from kgrag.cli import app
from kgrag.data.triples import read_triple_files
from kgrag.graph.csr import CSRGraph
from kgrag.graph.imported import imported_csr, opaque_relation_labels
from kgrag.tools.session import format_relations

runner = CliRunner()

# P19 and P69 have labels with no ASCII letter (they keep their ids), P166 an English one (renamed by it), P800 none
ZH = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wdt:P19 rdfs:label "出生地"@en .
wdt:P69 rdfs:label "教育机构"@en .
wdt:P166 rdfs:label "award received"@en .
wd:Q1 rdfs:label "Albert Einstein"@en ; wdt:P19 wd:Q2 ; wdt:P69 wd:Q3 ; wdt:P166 wd:Q4 ; wdt:P800 wd:Q5 .
wd:Q2 rdfs:label "Ulm"@en .
wd:Q3 rdfs:label "ETH Zurich"@en .
wd:Q4 rdfs:label "Nobel Prize in Physics"@en .
wd:Q5 rdfs:label "general relativity"@en .
wd:Q6 rdfs:label "Marie Curie"@en ; wdt:P19 wd:Q7 .
wd:Q7 rdfs:label "Warsaw"@en .
"""
LABELS = {"P19": "出生地", "P69": "教育机构"}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_only_opaque_ids_with_a_label_are_labelled(tmp_path) -> None:
    graph = imported_csr(read_triple_files([_write(tmp_path, "zh.ttl", ZH)]), "zh", "http://x/ns/", "en")
    assert graph.relations == ["P19", "P69", "P800", "award_received"]
    assert opaque_relation_labels(graph) == LABELS  # a readable name and an unlabelled id are not
    ends = [np.array([k]) for k in (0, 0, 1)]
    demo = CSRGraph.from_arrays("plain", "http://x/", ["a", "b"], ["a", "b"], ["A", "B"], ["r"], *ends)
    assert opaque_relation_labels(demo) == {}


def test_relation_words_say_the_label() -> None:
    assert format_relations(["P19", "award_received"], LABELS) == "P19 (出生地)\naward_received"
    assert format_relations(["P19"]) == "P19" and format_relations([], LABELS) == "No relations found."
    assert chain_words(["P19"], LABELS) == "出生地" and chain_words(["P19"]) == "p19"
    assert chain_words(["P69", "award_received"], LABELS) == "教育机构 award received"
    assert end_words("P19", "out", LABELS) == "出生地" and end_words("award_received", "in", LABELS) == "award received"


@pytest.fixture
def zh_kg(work_settings, tmp_path) -> Path:
    kg = _write(tmp_path, "zh.ttl", ZH)
    questions = _write(tmp_path, "q.jsonl", json.dumps({"question": "where was Albert Einstein born",
                                                        "topic_entities": ["Albert Einstein"],
                                                        "answers": ["Ulm"]}) + "\n")
    result = runner.invoke(app, ["prepare", "--dataset", "zh", "--triples", str(kg), "--questions", str(questions)])
    assert result.exit_code == 0, result.output
    return work_settings.dataset_dir("zh")


def test_tools_ranker_and_console_show_the_labels(zh_kg, work_settings) -> None:
    from kgrag.agent.kg.triple_kg import TripleKG
    from kgrag.console.data import kg_node, kg_schema
    from kgrag.data.registry import dataset_spec
    from kgrag.tools.factory import open_session

    session = open_session(dataset_spec("zh", work_settings), question="出生地 of Albert Einstein", settings=work_settings)
    relations = session.run('get_relations("Albert Einstein")').splitlines()
    assert "P19 (出生地)" in relations and "P69 (教育机构)" in relations
    assert "award_received" in relations and "P800" in relations  # a readable name / no label: as they are
    assert relations[0] == "P19 (出生地)"  # ranked by its label's words: the question says 出生地
    for written in ("P19 (出生地)", "出生地", "P19"):  # the line as shown, its label, the id
        assert "Ulm" in session.run(f'get_triples("Albert Einstein", ["{written}"])'), written
    assert "not in the latest predicate list" in session.run('get_triples("Albert Einstein", ["P19 (出身)"])')

    kg = TripleKG.open(work_settings, "zh")
    try:
        assert kg.relation_labels == LABELS and kg.zero_shot.relation_labels == LABELS  # what the ranker embeds
        with kg.session("s1", "t1", "where was Albert Einstein born") as kg_session:
            assert "P19 (出生地)" in kg_session.run('get_relations("Albert Einstein")')
    finally:
        kg.close()

    schema = kg_schema(work_settings, "zh")
    by_id = {r["id"]: r for r in schema["relations"]}
    assert by_id["P19"] == {"id": "P19", "triples": 2, "label": "出生地"}
    assert by_id["award_received"]["label"] == "award_received" and by_id["P800"]["label"] == "P800"
    graph = CSRGraph.load(zh_kg / "graph.npz")
    node = kg_node(work_settings, "zh", graph.entity_ids[graph.entity_names.index("Albert Einstein")])
    assert ["Albert Einstein", "P19 (出生地)", "Ulm"] in node["triples"]
    assert ["Albert Einstein", "award_received", "Nobel Prize in Physics"] in node["triples"]
