"""A KG that lives only on a SPARQL server, registered without copying it (``kgrag prepare --dataset NAME --endpoint
URL [--graph IRI]``): the KG tools and the agent work on it, entity linking looks names up by SPARQL (exact, case
variants, Virtuoso's text index). Against the real ``oxigraph serve`` and Virtuoso fixtures (the demo KG)."""

from __future__ import annotations

import json

from fixtures.virtuoso_server import DEMO_GRAPH
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.data.registry import dataset_spec

runner = CliRunner()


def _ask(question: str, kg: str) -> dict:
    result = runner.invoke(app, ["ask", question, "--kg", kg, "--json"])
    return json.loads(result.stdout)


def test_an_oxigraph_served_kg_is_registered_and_answered(oxigraph_server, work_settings) -> None:
    registered = runner.invoke(app, ["prepare", "--dataset", "served-demo", "--endpoint", oxigraph_server.url])
    assert registered.exit_code == 0, registered.output
    spec = dataset_spec("served-demo", work_settings)
    assert spec.reader == "endpoint" and spec.endpoint == oxigraph_server.url
    assert not (work_settings.dataset_dir("served-demo") / "graph.npz").exists()  # nothing copied
    state = _ask("who directed Carnival Lights?", "served-demo")
    assert state["topic"]["name"] == "Carnival Lights" and state["answers"] == ["Uma Halvorsen"]
    lower = _ask("who directed carnival lights?", "served-demo")  # a case variant of the stored name
    assert lower["topic"]["match_type"] == "normalised" and lower["answers"] == ["Uma Halvorsen"]
    tools = runner.invoke(app, ["tools", "--kg", "served-demo", "--question", "who directed it"],
                          input='get_relations("Carnival Lights")\n')
    assert tools.exit_code == 0 and "film.film.directed_by" in tools.output
    rows = [json.loads(line) for line in runner.invoke(app, ["kg", "list", "--json"]).output.splitlines()]
    assert next(r for r in rows if r["name"] == "served-demo")["status"] == "endpoint"


def test_an_endpoint_that_does_not_answer_is_not_registered(work_settings) -> None:
    from harness.servers.ports import free_port

    url = f"http://127.0.0.1:{free_port()}/query"
    result = runner.invoke(app, ["prepare", "--dataset", "gone", "--endpoint", url])
    assert result.exit_code == 1 and "did not answer" in result.output
    assert "unknown dataset 'gone'" in runner.invoke(app, ["tools", "--kg", "gone"], input="").output


def test_a_virtuoso_graph_links_through_its_text_index(virtuoso, work_settings) -> None:
    registered = runner.invoke(app, ["prepare", "--dataset", "vdemo", "--endpoint", virtuoso.url,
                                     "--graph", DEMO_GRAPH])
    assert registered.exit_code == 0, registered.output
    assert _ask("who directed Carnival Lights?", "vdemo")["answers"] == ["Uma Halvorsen"]
    virtuoso.isql("DB.DBA.RDF_OBJ_FT_RULE_ADD (null, null, 'kgrag_test');")
    virtuoso.isql("DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ ();")
    # two spaces: no case variant of the span is a stored name, the text index finds it
    state = _ask("who directed carnival  lights?", "vdemo")
    assert state["topic"]["match_type"] == "text index" and state["answers"] == ["Uma Halvorsen"]
