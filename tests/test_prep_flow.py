"""The data-prep Prefect flow end-to-end on the demo KG (Prefect test harness), and the CLI around it."""

from __future__ import annotations

import asyncio
import shlex

from typer.testing import CliRunner

from flows.prepare_data import prepare_data
from kgrag.cli import app


def _artifact_keys() -> set[str]:
    from prefect.client.orchestration import get_client

    async def read() -> set[str]:
        async with get_client() as client:
            return {a.key for a in await client.read_artifacts() if a.key}

    return asyncio.run(read())


def test_flow_on_demo_builds_everything_and_publishes_artifacts(prefect_harness, work_settings):
    result = prepare_data(dataset="demo")
    out = work_settings.work_dir / "demo"
    for name in ("graph.npz", "triples.nt", "oxigraph", "questions.jsonl", "summary.md", "summary.json", "manifest.json"):
        assert (out / name).exists(), name
    assert result["graph"]["triples"] == 530
    assert result["store"]["store_triples"] == result["graph"]["rdf_triples"]
    assert "questions whose answers are unreachable within 3 hops | 0 / 18" in result["markdown"]
    assert {"data-prep-demo", "data-prep-demo-table", "data-prep-demo-chart"} <= _artifact_keys()
    again = prepare_data(dataset="demo")  # idempotent: same counts, no duplicate triples
    assert again["store"] == result["store"] and again["graph"] == result["graph"]


def test_cli_prepare_and_run_on_demo(prefect_harness, work_settings, monkeypatch, tmp_path):
    monkeypatch.setenv("KGRAG_DATA_DIR", str(tmp_path / "no-shared-data"))
    from kgrag.config import get_settings

    get_settings.cache_clear()
    runner = CliRunner()
    res = runner.invoke(app, ["prepare", "--dataset", "demo"])
    assert res.exit_code == 0, res.output
    assert "530" in res.output
    res = runner.invoke(app, ["run"])
    assert res.exit_code == 0, res.output
    assert "dataset demo" in res.output and "SPARQL" in res.output and "Match: yes" in res.output
    assert "Retriever recall@K" in res.output and "test_g_agent.pt" in res.output  # the H-RAG retrieval stage
    assert "Answers without an LLM" in res.output and "Hits@1" in res.output  # the GFlowNet stage
    assert res.output.count("Question (") >= 1 and "path p=" in res.output  # the g_agent example
    # two questions answered in memory, typed without brackets: the linker's [topic], answers, paths, the set
    assert "H-RAG online" in res.output and res.output.count("Question: ") == 2
    assert res.output.count("answer set (") == 2
    assert "make run:" in res.output and "s wall" in res.output and "query modes" in res.output  # stage times
    path_lines = [line for line in res.output.splitlines() if "path p=" in line]
    assert all("]->" in line or "<-[" in line for line in path_lines), path_lines  # relations shown, not markup
    # the agent stage: the demo knowledge network (no medical data here), two questions answered as step trees
    assert "The agent on the triple graph" in res.output and "reason_paths" in res.output and "kg demo" in res.output
    # the kg tree, two on the demo network and two on the library example (the label-free stage)
    assert "knowledge network demo" in res.output and res.output.count("contextual_recall") == 5
    assert res.output.count("answer:") == 5 and "langgraph dev --no-browser" in res.output
    assert "Agent without labelled questions" in res.output and "intents self" in res.output
    res = runner.invoke(app, ["sparql", "--dataset", "demo", "--limit", "3",
                              "SELECT ?s WHERE { ?s ?p ?o } LIMIT 5"])
    assert res.exit_code == 0 and "5 row(s)" in res.output
    res = runner.invoke(app, ["sparql", "--dataset", "demo", "SELECT nonsense {"])
    assert res.exit_code == 1 and "invalid SPARQL query" in res.output and "Traceback" not in res.output


def test_flow_rebuilds_outputs_deleted_after_a_cached_run(prefect_harness, work_settings):
    import shutil

    first = prepare_data(dataset="demo")
    prepare_data(dataset="demo")
    prepare_data(dataset="demo")  # by now every task result is in Prefect's cache
    out = work_settings.work_dir / "demo"
    shutil.rmtree(out / "oxigraph")
    (out / "graph.npz").unlink()
    again = prepare_data(dataset="demo")
    assert (out / "graph.npz").exists() and (out / "oxigraph").is_dir()
    assert again["store"]["store_triples"] == first["store"]["store_triples"]


def test_cli_prepare_prints_questions_to_ask_and_they_answer(prefect_harness, work_settings):
    runner = CliRunner()
    res = runner.invoke(app, ["prepare", "--dataset", "demo"])
    assert res.exit_code == 0, res.output
    commands = [line.strip() for line in res.output.splitlines() if line.strip().startswith("kgrag ask ")]
    # three questions of the prepared test split, one per hop, brackets-free, each as the exact command
    assert commands == ['kgrag ask "who directed Carnival Lights?" --kg demo',
                        'kgrag ask "in which country was Ines Kamau born?" --kg demo',
                        'kgrag ask "in which cities are the teams of Uma Oyelaran based?" --kg demo']
    assert "no trained path reasoner yet" in res.output and "kgrag serve" in res.output
    first = shlex.split(commands[0])[1:]  # as the shell passes it
    answered = runner.invoke(app, first)
    assert answered.exit_code == 0 and "answer: Uma Halvorsen." in answered.output
    literal = runner.invoke(app, ["sparql", "--dataset", "demo", 'SELECT ("[knn,match]" AS ?v) WHERE {}'])
    assert literal.exit_code == 0 and "v=[knn,match]" in literal.output  # values print as they are, no markup
