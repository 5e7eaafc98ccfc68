"""A KG's name is resolved once, at the edge (issue 50 §1): a CLI command, an HTTP route, an MCP tool turns the
name into its :class:`~kgrag.data.spec.DatasetSpec` one time and passes the spec down (the stores, the KG tools,
the agent's KG loader take a spec). Counted by wrapping the registry's resolver
(:func:`kgrag.data.registry.dataset_spec`) in every module that bound it — the commands themselves run whole, in
process, on the demo KG prepared in a temporary work dir; an unknown name is still one clear error.

    .venv/bin/python -m pytest -q tests/test_dataset_resolution.py
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from kgrag.agent.kg import triple_kg
from kgrag.api.app import create_app
from kgrag.cli import app
from kgrag.config import Settings
from kgrag.data import registry
from kgrag.prep import steps

runner = CliRunner()


@pytest.fixture
def prepared_demo(work_settings: Settings) -> Settings:
    """The demo KG's graph and embedded store in a fresh work dir (no training)."""
    out = work_settings.dataset_dir("demo")
    fp = steps.input_fingerprint("demo", work_settings.data_dir)
    steps.build_graph("demo", work_settings.data_dir, out, fp)
    steps.load_store(out, fp)
    return work_settings


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """``{name: times resolved}`` from now on: the registry's resolver, wrapped in the registry and in every
    module that imported it (a module imported later binds the wrapper)."""
    real = registry.dataset_spec
    counts: Counter[str] = Counter()

    def counting(name: str, settings: Settings):
        counts[name] += 1
        return real(name, settings)

    for module in list(sys.modules.values()):
        if getattr(module, "dataset_spec", None) is real:
            monkeypatch.setattr(module, "dataset_spec", counting)
    return counts


def test_the_counter_sees_every_binding(prepared_demo: Settings, resolutions: Counter[str]) -> None:
    """The seam itself: a module that bound the resolver before the wrap is counted, as is the registry."""
    registry.dataset_spec("demo", prepared_demo)
    triple_kg.dataset_spec("metaqa", prepared_demo)
    assert resolutions == Counter({"demo": 1, "metaqa": 1})


def test_kgrag_tools_resolves_its_kg_once(prepared_demo: Settings, resolutions: Counter[str]) -> None:
    res = runner.invoke(app, ["tools", "--kg", "demo", "--question", "who was born in Toronto"],
                        input='get_relations("Toronto")\n')
    assert res.exit_code == 0, res.output
    assert "people.person.place_of_birth" in res.output.splitlines()
    assert resolutions == Counter({"demo": 1})


def test_kgrag_sparql_resolves_its_kg_once(prepared_demo: Settings, resolutions: Counter[str]) -> None:
    res = runner.invoke(app, ["sparql", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }", "--dataset", "demo"])
    assert res.exit_code == 0, res.output
    assert int(res.output.splitlines()[0].removeprefix("n=")) > 100
    assert resolutions == Counter({"demo": 1})


@pytest.mark.parametrize("command", [["tools", "--kg", "atlantis"],
                                     ["sparql", "SELECT * {}", "--dataset", "atlantis"],
                                     ["retriever-eval", "--dataset", "atlantis"]])
def test_an_unknown_name_is_one_error_line(prepared_demo: Settings, resolutions: Counter[str],
                                           command: list[str]) -> None:
    res = runner.invoke(app, command, input="")
    assert res.exit_code == 1
    assert "unknown dataset 'atlantis': known datasets are metaqa, demo, medical, freebase" in res.output
    assert "Traceback" not in res.output
    assert resolutions == Counter({"atlantis": 1})


def test_agent_eval_on_a_kg_resolves_it_once(prepared_demo: Settings, resolutions: Counter[str],
                                             tmp_path: Path) -> None:
    """The command opens the KG through the agent's own loader (its one resolution); the agent's steps then find
    it open, question after question."""
    questions = tmp_path / "q.txt"
    questions.write_text("who directed [Carnival Lights]?\tUma Halvorsen\n"
                         "in which country was [Ines Kamau] born?\tCanada\n", encoding="utf-8")
    res = runner.invoke(app, ["agent-eval", "--kg", "demo", "--questions", str(questions), "--json"])
    assert res.exit_code == 0, res.output
    figures = json.loads(res.output.strip().splitlines()[-1])
    assert figures["n"] == 2 and figures["hit"] == 1.0
    assert resolutions == Counter({"demo": 1})


def test_agent_eval_on_an_unknown_kg_is_one_error_line(prepared_demo: Settings, tmp_path: Path) -> None:
    questions = tmp_path / "q.txt"
    questions.write_text("who directed [Carnival Lights]?\tUma Halvorsen\n", encoding="utf-8")
    res = runner.invoke(app, ["agent-eval", "--kg", "atlantis", "--questions", str(questions)])
    assert res.exit_code == 1 and "unknown dataset 'atlantis'" in res.output and "Traceback" not in res.output


def test_the_kg_query_route_resolves_once_per_request(prepared_demo: Settings, resolutions: Counter[str]) -> None:
    with TestClient(create_app(prepared_demo)) as client:
        resolutions.clear()  # the app's start lists the prepared KGs; the requests are counted
        queries = ['get_relations("Toronto")', 'get_triples("Toronto", ["people.person.place_of_birth"])']
        for n, query in enumerate(queries):
            resp = client.post("/api/kg/query", json={"session_id": "s1", "kg": "demo", "query": query})
            assert resp.status_code == 200, resp.text
            assert resp.json()["created"] == (n == 0)
            assert resolutions == Counter({"demo": n + 1})
        unknown = client.post("/api/kg/query", json={"session_id": "s2", "kg": "atlantis", "query": "x"})
        assert unknown.status_code == 422
        (error,) = unknown.json()["detail"]
        assert error["loc"] == ["body", "kg"] and "unknown dataset 'atlantis'" in error["msg"]
        assert resolutions["atlantis"] == 1


def test_the_mcp_kg_tools_resolve_once_per_call(prepared_demo: Settings, resolutions: Counter[str]) -> None:
    from kgrag.mcp.tools import (
        CallScope,
        GetRelationsArgs,
        GetTriplesArgs,
        ToolContext,
        _get_relations,
        _get_triples,
    )

    ctx = ToolContext(prepared_demo)
    scope = CallScope(mcp_session="m1")
    first = _get_relations(ctx, GetRelationsArgs(kg="demo", entity="Toronto"), scope)
    assert first["created"] and "people.person.place_of_birth" in first["text"].splitlines()
    resolutions.clear()  # opening the prepared stores listed the registry once: calls are counted from here
    second = _get_triples(ctx, GetTriplesArgs(kg="demo", entity="Toronto",
                                              relations=["people.person.place_of_birth"]), scope)
    assert not second["created"] and second["text"].endswith(", Toronto]")
    assert resolutions == Counter({"demo": 1})
    with pytest.raises(ValueError, match="unknown dataset 'atlantis'"):
        _get_relations(ctx, GetRelationsArgs(kg="atlantis", entity="x"), scope)


@pytest.mark.parametrize("name", ["bad\x00name", "../demo", "Demo", "demo\n", ""])
def test_a_name_no_dataset_can_have_is_unknown(prepared_demo: Settings, name: str) -> None:
    """schemathesis sent a NUL byte: it reached the registry's file lookup (a 500); such a name is simply unknown."""
    from kgrag.errors import KgragError

    with pytest.raises(KgragError, match="unknown dataset"):
        registry.dataset_spec(name, prepared_demo)
    with TestClient(create_app(prepared_demo)) as client:
        resp = client.post("/api/kg/query", json={"session_id": "s", "kg": name, "query": "x"})
        assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "kg"]
