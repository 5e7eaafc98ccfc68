"""A user's own triple graph: import in every format, names, literals, CVTs, questions in every format, the
registry (kg list, no-op re-run, a failed import leaving the previous state), and the commands and routes that take
the registered NAME. MetaQA through the generic TSV path equals the built-in reader."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from fixtures.settings import require_shared
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.data.question_files import question_format, read_question_files
from kgrag.data.registry import dataset_spec
from kgrag.data.triples import read_triple_files
from kgrag.errors import KgragError
from kgrag.graph.csr import CSRGraph
from kgrag.graph.imported import imported_csr

runner = CliRunner()

TURTLE = """@prefix ex: <http://example.org/> .
@prefix fb: <http://rdf.freebase.com/ns/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix schema: <http://schema.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:adams rdfs:label "Douglas Adams (fr)"@fr, "Douglas Adams"@en ; ex:birthPlace ex:cambridge ;
  ex:birthDate "1952-03-11"^^xsd:date ; ex:notableWork ex:hhgttg .
ex:cambridge schema:name "Cambridge" ; ex:country ex:uk .
ex:uk skos:prefLabel "United Kingdom"@en .
ex:hhgttg fb:type.object.name "The Hitchhiker's Guide to the Galaxy"@en ; ex:award ex:cvt1 .
ex:cvt1 ex:awardName ex:hugo ; ex:year "1979"^^xsd:gYear .
ex:hugo rdfs:label "Hugo Award" .
"""
# the same graph, as N-Triples lines (what the Turtle says)
NTRIPLES = """<http://example.org/adams> <http://www.w3.org/2000/01/rdf-schema#label> "Douglas Adams (fr)"@fr .
<http://example.org/adams> <http://www.w3.org/2000/01/rdf-schema#label> "Douglas Adams"@en .
<http://example.org/adams> <http://example.org/birthPlace> <http://example.org/cambridge> .
<http://example.org/adams> <http://example.org/birthDate> "1952-03-11"^^<http://www.w3.org/2001/XMLSchema#date> .
<http://example.org/adams> <http://example.org/notableWork> <http://example.org/hhgttg> .
<http://example.org/cambridge> <http://schema.org/name> "Cambridge" .
<http://example.org/cambridge> <http://example.org/country> <http://example.org/uk> .
<http://example.org/uk> <http://www.w3.org/2004/02/skos/core#prefLabel> "United Kingdom"@en .
<http://example.org/hhgttg> <http://rdf.freebase.com/ns/type.object.name> "The Hitchhiker's Guide to the Galaxy"@en .
<http://example.org/hhgttg> <http://example.org/award> <http://example.org/cvt1> .
<http://example.org/cvt1> <http://example.org/awardName> <http://example.org/hugo> .
<http://example.org/cvt1> <http://example.org/year> "1979"^^<http://www.w3.org/2001/XMLSchema#gYear> .
<http://example.org/hugo> <http://www.w3.org/2000/01/rdf-schema#label> "Hugo Award" .
"""
QUESTIONS = [
    {"question": "where was Douglas Adams born", "topic_entities": ["Douglas Adams"], "answers": ["Cambridge"]},
    {"question": "what country is cambridge in", "topic_entities": ["http://example.org/cambridge"],
     "answers": ["united kingdom"], "split": "test", "source": "ignored"},
    {"question": "what award did the guide win", "topic_entities": ["the hitchhiker's guide to the galaxy"],
     "answers": ["Hugo Award"]},
    {"question": "who is Nobody", "topic_entities": ["Nobody Here"], "answers": ["Cambridge", "Atlantis"]},
]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    elif name.endswith(".bz2"):
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _graph(path: Path) -> CSRGraph:
    return imported_csr(read_triple_files([path]), "mini", "http://example.org/kgrag/mini/ns/", "en")


def _edges(graph: CSRGraph) -> set[tuple[str, str, str]]:
    keys, rels = graph.entity_keys, graph.relations
    return {(keys[h], rels[r], keys[t]) for h, r, t in zip(graph.head.tolist(), graph.rel.tolist(),
                                                           graph.tail.tolist(), strict=True)}


@pytest.mark.parametrize("name,text", [("kg.ttl", TURTLE), ("kg.nt", NTRIPLES), ("kg.nt.gz", NTRIPLES),
                                       ("kg.ttl.bz2", TURTLE), ("kg.nq", NTRIPLES)])
def test_every_rdf_format_gives_the_same_graph(tmp_path, name, text) -> None:
    graph = _graph(_write(tmp_path, name, text))
    names = dict(zip(graph.entity_keys, graph.entity_names, strict=True))
    # a name predicate gives a name, not an edge; the configured language wins over @fr
    assert names["http://example.org/adams"] == "Douglas Adams"
    assert names["http://example.org/cambridge"] == "Cambridge"  # schema:name
    assert names["http://example.org/uk"] == "United Kingdom"  # skos:prefLabel
    assert names["http://example.org/hhgttg"] == "The Hitchhiker's Guide to the Galaxy"  # type.object.name
    assert names["http://example.org/cvt1"] == ""  # no name: a mediator (CVT) node
    assert graph.relations == ["award", "awardName", "birthDate", "birthPlace", "country", "notableWork", "year"]
    assert graph.num_triples == 7 and graph.num_entities == 8
    ids = dict(zip(graph.entity_keys, graph.entity_ids, strict=True))
    assert ids["http://example.org/adams"].startswith("e.adams_")
    # literals stay literals: a node named by its value, keyed by its typed form
    assert ('http://example.org/adams', 'birthDate',
            '"1952-03-11"^^<http://www.w3.org/2001/XMLSchema#date>') in _edges(graph)


def test_tsv_and_pipe_lines_and_freebase_ids(tmp_path) -> None:
    tsv = _write(tmp_path, "kb.tsv", "Blade Runner\tdirected_by\tRidley Scott\nBlade Runner\trelease year\t1982\n"
                 "Alien|directed_by|Ridley Scott\n")
    graph = _graph(tsv)
    assert graph.entity_names == graph.entity_keys  # a TSV node's name is its own text
    assert graph.relations == ["directed_by", "release_year"]
    fb = _write(tmp_path, "fb.nt", "<http://rdf.freebase.com/ns/m.0abc> <http://rdf.freebase.com/ns/people.person."
                "spouse_s> <http://rdf.freebase.com/ns/m.0cvt> .\n")
    g = _graph(fb)
    assert g.relations == ["people.person.spouse_s"] and set(g.entity_ids) == {"m.0abc", "m.0cvt"}


def test_malformed_lines_are_reported_with_file_and_line_then_stop(tmp_path) -> None:
    bad = _write(tmp_path, "bad.nt", NTRIPLES + "<http://example.org/x> <http://example.org/p> oops .\n"
                 + "<http://example.org/x> <http://example.org/p> <http://example.org/y> .\n")
    arrays = read_triple_files([bad])
    assert arrays.bad_lines == 1 and str(arrays.issues[0]).startswith(f"{bad}:14:")
    assert int(len(arrays.head)) == 8  # the line after the bad one is read
    tsv = _write(tmp_path, "bad.tsv", "a\tr\tb\nonly two\tfields\n\tr\tb\n")
    issues = read_triple_files([tsv]).issues
    assert [(i.line, i.reason) for i in issues] == [(2, "expected 3 tab- or '|'-separated fields, got 2"),
                                                     (3, "empty head, relation or tail")]
    with pytest.raises(KgragError, match=r"bad.tsv:3: .*more than 1 malformed lines, the import stops"):
        read_triple_files([tsv], max_bad_lines=1)


@pytest.mark.parametrize("content,name,message", [
    ("", "empty.nt", "no triples read from"),
    ("a\tb\tc\n", "kg.csv", "unknown format of"),
    (None, "missing.nt", "triple file not found"),
])
def test_bad_inputs_are_one_line_errors(tmp_path, content, name, message) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(KgragError, match=message):
        read_triple_files([path])


def test_every_question_format_is_read(tmp_path) -> None:
    jsonl = _write(tmp_path, "q.jsonl", "\n".join(json.dumps(q) for q in QUESTIONS) + "\nnot json\n")
    metaqa = tmp_path / "2-hop" / "dev.txt"
    metaqa.parent.mkdir()
    metaqa.write_text("who directed [Alien]\tRidley Scott\nno tab here\n")
    read = read_question_files([jsonl, metaqa], "mini")
    assert [q.qid for q in read.records] == ["q-1", "q-2", "q-3", "q-4", "2-hop/dev-1"]
    assert read.records[1].split == "test" and read.records[4].hop == 2
    assert [(i.line, i.reason) for i in read.issues] == [(5, "not valid JSON: Expecting value"),
                                                         (2, "no tab between question and answers")]
    webqsp = require_shared("freebase/webqsp_100.json")
    cwq = require_shared("freebase/cwq_300.json")
    assert (question_format(webqsp), question_format(cwq), question_format(jsonl)) == ("webqsp", "cwq", "jsonl")
    official = read_question_files([webqsp, cwq], "fb").records
    assert len(official) == 400 and official[0].topic_ids[0].startswith("m.") and official[0].dataset == "fb"


@pytest.fixture
def mini_kg(work_settings, tmp_path) -> tuple[Path, Path]:
    kg = _write(tmp_path, "kg.ttl", TURTLE)
    questions = _write(tmp_path, "q.jsonl", "\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    result = runner.invoke(app, ["prepare", "--dataset", "mini", "--triples", str(kg), "--questions",
                                 str(questions)])
    assert result.exit_code == 0, result.output
    return kg, questions


def test_import_registers_and_kg_list_counts(mini_kg, work_settings) -> None:
    rows = [json.loads(line) for line in runner.invoke(app, ["kg", "list", "--json"]).output.splitlines()]
    mini = next(r for r in rows if r["name"] == "mini")
    assert (mini["triples"], mini["entities"], mini["relations"], mini["questions"]) == (7, 8, 7, 4)
    assert mini["status"] == "prepared" and {r["name"] for r in rows} >= {"metaqa", "demo", "medical", "mini"}
    summary = json.loads((work_settings.dataset_dir("mini") / "summary.json").read_text())["questions"]
    # every reference resolved by its own route; what did not resolve is counted per reason, the question kept
    assert summary["resolved_by"] == {"topic: exact name": 1, "topic: key": 1, "topic: normalised name": 1,
                                      "answer: exact name": 3, "answer: normalised name": 1}
    assert summary["unresolved_by"] == {"topic: unknown name": 1, "answer: unknown name": 1}
    assert summary["unresolved_topic"] == 1 and summary["questions"] == 4
    records = [json.loads(line) for line in (work_settings.dataset_dir("mini") / "questions.jsonl").open()]
    assert {r["split"] for r in records} <= {"train", "validation", "test"}
    assert next(r for r in records if r["qid"] == "q-3")["answer_hops"] == 2  # through the unnamed CVT


def test_a_name_with_an_underscore_is_prepared_end_to_end(prefect_harness, work_settings, tmp_path) -> None:
    """Any name the registry accepts works through the prepare flow: its Prefect artifact keys are slugs of it
    (``data-prep-my-kg``), never the name itself (``my_kg`` would fail Prefect's key validation)."""
    kg = _write(tmp_path, "kg.tsv", "Blade Runner\tdirected_by\tRidley Scott\nRidley Scott\tborn_in\tSouth Shields\n")
    questions = _write(tmp_path, "q.jsonl", json.dumps({"question": "who directed Blade Runner",
                                                         "topic_entities": ["Blade Runner"],
                                                         "answers": ["Ridley Scott"]}) + "\n")
    result = runner.invoke(app, ["prepare", "--dataset", "my_kg", "--triples", str(kg), "--questions",
                                 str(questions)])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "Artifact key" not in result.output
    assert dataset_spec("my_kg", work_settings).reader == "triples"
    rows = [json.loads(line) for line in runner.invoke(app, ["kg", "list", "--json"]).output.splitlines()]
    mine = next(r for r in rows if r["name"] == "my_kg")
    assert mine["status"] == "prepared" and (mine["triples"], mine["questions"]) == (2, 1)


def test_rerun_is_a_noop_and_a_failed_import_keeps_the_previous_state(mini_kg, work_settings, tmp_path) -> None:
    kg, questions = mini_kg
    graph_file = work_settings.dataset_dir("mini") / "graph.npz"
    before = graph_file.stat().st_mtime_ns
    spec = dataset_spec("mini", work_settings)
    again = runner.invoke(app, ["prepare", "--dataset", "mini", "--triples", str(kg), "--questions", str(questions)])
    assert again.exit_code == 0 and graph_file.stat().st_mtime_ns == before
    broken = _write(tmp_path, "broken.nt", "<a> <b> .\n" * 5)
    failed = runner.invoke(app, ["prepare", "--dataset", "mini", "--triples", str(broken), "--max-bad-lines", "2"])
    assert failed.exit_code == 1 and "the import stops" in failed.output
    assert dataset_spec("mini", work_settings) == spec and graph_file.stat().st_mtime_ns == before
    assert not list((work_settings.work_dir / ".staging").iterdir())
    strangers = _write(tmp_path, "strangers.jsonl", json.dumps({"question": "who?", "topic_entities": ["Nobody"],
                                                                "answers": ["x"]}) + "\n")
    unknown = runner.invoke(app, ["prepare", "--dataset", "mini", "--triples", str(kg), "--questions", str(strangers)])
    assert unknown.exit_code == 1 and "names a node of the graph (1 answer: unknown name, 1 topic: unknown name)" in unknown.output
    assert dataset_spec("mini", work_settings) == spec and graph_file.stat().st_mtime_ns == before
    builtin = runner.invoke(app, ["prepare", "--dataset", "metaqa", "--triples", str(kg)])
    assert builtin.exit_code == 1 and "built-in dataset" in builtin.output
    bad_name = runner.invoke(app, ["prepare", "--dataset", "My KG", "--triples", str(kg)])
    assert bad_name.exit_code == 1 and "invalid name 'My KG'" in bad_name.output


def test_kg_tools_flatten_cvts_and_commands_take_the_name(mini_kg, work_settings) -> None:
    from kgrag.tools.factory import open_session

    session = open_session(dataset_spec("mini", work_settings), question="what award did the guide win", settings=work_settings)
    text = session.run('get_triples("The Hitchhiker\'s Guide to the Galaxy", ["award"])')
    assert "Hugo Award" in text and "e.cvt1" not in text  # the unnamed node is flattened away
    sparql = runner.invoke(app, ["sparql", "--dataset", "mini", "--json", "SELECT ?v WHERE { ?s "
                                 "<http://example.org/kgrag/mini/ns/kgrag.value> ?v }"])
    assert '"1979"' in sparql.output and '"1952-03-11"' in sparql.output  # literals stay typed values
    unknown = runner.invoke(app, ["tools", "--kg", "nope"], input="")
    assert unknown.exit_code == 1 and "unknown dataset 'nope'" in unknown.output


def test_the_agent_and_the_routes_answer_on_the_imported_kg(mini_kg, work_settings) -> None:
    from fastapi.testclient import TestClient

    from kgrag.api.app import create_app
    from kgrag.api.langgraph_http import app as agent_app

    asked = runner.invoke(app, ["ask", "what country is cambridge in", "--kg", "mini", "--json"])
    state = json.loads(asked.stdout)
    assert state["kg"] == "mini" and state["answers"] == ["United Kingdom"]
    with TestClient(agent_app) as http:  # the served graph's input {"question", "kg": NAME}
        res = http.post("/agent/ask", json={"question": "what country is cambridge in", "kg": "mini"})
        assert res.status_code == 200 and res.json()["answers"] == ["United Kingdom"]
    with TestClient(create_app(work_settings)) as http:
        query = http.post("/api/kg/query", json={"session_id": "s1", "kg": "mini",
                                                 "query": '<kg-query>get_relations("Cambridge")</kg-query>'})
        assert query.status_code == 200 and "country" in query.json()["text"]
        unknown = http.post("/api/kg/query", json={"session_id": "s2", "kg": "nope", "query": "get_relations(\"x\")"})
        assert unknown.status_code == 422 and "unknown dataset 'nope'" in unknown.text


def test_metaqa_through_the_tsv_path_equals_the_builtin_reader(tmp_path) -> None:
    from kgrag.data import load_kg, load_questions
    from kgrag.data.metaqa import split_train_validation
    from kgrag.data.spec import BUILTIN_SPECS

    kb = require_shared("metaqa/kb.txt")
    generic = imported_csr(read_triple_files([kb]), "metaqa-tsv", "http://x/", "en")
    builtin = CSRGraph.from_dataset(load_kg(BUILTIN_SPECS["metaqa"]))
    assert generic.entity_keys == builtin.entity_keys and generic.entity_ids == builtin.entity_ids
    assert generic.relations == builtin.relations
    assert all(np.array_equal(getattr(generic, a), getattr(builtin, a)) for a in ("head", "rel", "tail"))
    # the same questions land in the same splits (qids differ only in their prefix)
    files = [kb.parent / f"{k}-hop" / "dev.txt" for k in (1, 2, 3)]
    ours = split_train_validation(read_question_files(files, "metaqa-tsv").records, seed=0)
    theirs = split_train_validation(load_questions(BUILTIN_SPECS["metaqa"]).records, seed=0)
    assert [q.text for q in ours["validation"]] == [q.text for q in theirs["validation"]]


def test_kgrags_own_export_round_trips(tmp_path) -> None:
    """The demo KG written as N-Triples by the prep flow, imported back: the same edges, names and CVTs."""
    from kgrag.data import load_kg
    from kgrag.data.spec import BUILTIN_SPECS
    from kgrag.graph.rdf import write_ntriples

    kg = load_kg(BUILTIN_SPECS["demo"])
    original = CSRGraph.from_dataset(kg)
    write_ntriples(original, kg, tmp_path / "demo.nt")
    again = _graph(tmp_path / "demo.nt")
    assert again.entity_ids == original.entity_ids and again.relations == original.relations
    assert again.entity_names == original.entity_names  # unnamed CVTs stay unnamed; kgrag.value is not an edge
    assert _edges(again) == {(f"http://rdf.freebase.com/ns/{h}", r, f"http://rdf.freebase.com/ns/{t}")
                             for h, r, t in _edges(CSRGraph.from_arrays(
                                 "d", "", original.entity_ids, original.entity_ids, original.entity_names,
                                 original.relations, original.head, original.rel, original.tail))}


def test_hrag_question_files_in_any_format(mini_kg, work_settings) -> None:
    """``kgrag eval --questions`` / ``retriever-eval --questions`` read canonical JSONL too: topics resolved, the
    stored name bracketed in the text for the reasoner, unresolved topics and bad lines counted."""
    from kgrag.hrag.retrieval.questions import read_question_file

    _, questions = mini_kg
    graph = CSRGraph.load(work_settings.dataset_dir("mini") / "graph.npz")
    read = read_question_file(questions, graph)
    texts = [q.text for q in read.questions]
    assert texts[:2] == ["where was [Douglas Adams] born", "what country is [cambridge] in"]
    assert read.unresolved_topic == ["q-4"] and len(read.questions) == 3


def test_unlabelled_iris_are_named_by_their_last_segment(tmp_path) -> None:
    """A graph with no label at all: readable IRI segments are names, opaque ids stay unnamed (mediators); in a
    labelled graph only the classes (rdf:type objects) are named that way."""
    bare = _write(tmp_path, "bare.ttl", "@prefix ex: <http://example.org/> .\n"
                  "ex:Douglas_Adams ex:wrote ex:The_Restaurant_at_the_End_of_the_Universe ; ex:award ex:m.0cvt .\n"
                  "ex:m.0cvt ex:prize ex:Hugo_Award .\n")
    names = dict(zip(*(lambda g: (g.entity_keys, g.entity_names))(_graph(bare)), strict=True))
    assert names["http://example.org/Douglas_Adams"] == "Douglas Adams"
    assert names["http://example.org/The_Restaurant_at_the_End_of_the_Universe"].startswith("The Restaurant")
    assert names["http://example.org/m.0cvt"] == ""
    typed = _write(tmp_path, "typed.ttl", TURTLE + "ex:adams a <http://schema.org/Person> .\n")
    names = dict(zip(*(lambda g: (g.entity_keys, g.entity_names))(_graph(typed)), strict=True))
    assert names["http://schema.org/Person"] == "Person" and names["http://example.org/cvt1"] == ""


@pytest.mark.parametrize("suffix,fmt", [(".rdf", "RDF_XML"), (".trig", "TRIG"), (".jsonld", "JSON_LD")])
def test_other_rdf_syntaxes_give_the_same_graph(tmp_path, suffix, fmt) -> None:
    import pyoxigraph as ox

    quads = list(ox.parse(TURTLE.encode(), format=ox.RdfFormat.TURTLE))
    statements = [q.triple for q in quads] if fmt == "RDF_XML" else quads  # RDF/XML holds triples only
    path = tmp_path / f"kg{suffix}"
    path.write_bytes(ox.serialize(statements, format=getattr(ox.RdfFormat, fmt)))
    ours, reference = _graph(path), _graph(_write(tmp_path, "kg.ttl", TURTLE))
    assert _edges(ours) == _edges(reference) and ours.entity_names == reference.entity_names


def test_a_graph_without_questions_gets_an_ask_line_that_answers(work_settings, tmp_path) -> None:
    kg = _write(tmp_path, "kg.ttl", TURTLE)
    result = runner.invoke(app, ["kg", "import", "noq", str(kg)])  # = prepare --dataset noq --triples kg.ttl
    assert result.exit_code == 0, result.output
    assert "Try next" in result.output and "legend" not in result.output and "Warning" not in result.output
    line = next(x.strip() for x in result.output.splitlines() if x.strip().startswith("kgrag ask"))
    assert line.endswith("--kg noq") and "what is the" in line
    question = line[len("kgrag ask "):-len(" --kg noq")].strip('"')
    asked = runner.invoke(app, ["ask", question, "--kg", "noq", "--json"])
    assert asked.exit_code == 0 and json.loads(asked.stdout)["answers"], asked.output
    again = runner.invoke(app, ["kg", "import", "noq", str(kg)])
    assert again.exit_code == 0 and "inputs are unchanged: nothing to redo" in again.output
