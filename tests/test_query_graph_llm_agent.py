"""With an LLM configured, the agent asks it for the query graph (over the scripted OpenAI-compatible server); the
plan is checked against the network's schema and run by the same executor as the LLM-free plan, which answers
instead, said, when the LLM's plan does not hold (examples/library, loaded through ``kgrag kn load``)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.library_kn import load_library
from fixtures.llm_server import use_llm_server

from kgrag.config import Settings, get_settings

LIBRARY = Path(__file__).resolve().parent.parent / "examples" / "library"
KEYWORDS = json.dumps({"entities": [{"text": "George Orwell", "confidence": 0.9}], "attribute_values": [],
                       "relation_words": [{"text": "write", "confidence": 0.6}]})


def orwell_books() -> int:
    with (LIBRARY / "links.csv").open(encoding="utf-8") as fh:
        return sum(1 for row in csv.DictReader(fh) if row["relation_type_id"] == "wrote"
                   and row["source_id"] == "a:orwell")


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return load_library(tmp_path_factory.mktemp("library-llm-qg"))[0]


@pytest.fixture
def llm_library(library_db: str, work_settings: Settings, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("KGRAG_DATABASE_URL", library_db)
    use_llm_server(llm_server, monkeypatch, retries=0)
    yield llm_server
    get_settings.cache_clear()


def script(server: Any, proposal: dict[str, Any]) -> None:
    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if "query graph" in prompt:
            return "```json\n" + json.dumps(proposal) + "\n```"
        return KEYWORDS if "tools" not in body else "I could not answer."
    server.script(*[reply] * 10)


def ask(question: str) -> dict:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    return graph.invoke({"question": question, "kn_id": "library"}, context=AgentContext(use_llm=True))


def test_the_llms_query_graph_is_run_by_the_executor(llm_library) -> None:
    script(llm_library, {"topics": [{"name": "Orwell", "id": "Author:a:orwell"}], "path": [{"relation": "wrote"}],
                         "aggregation": {"op": "count"}})
    state = ask("how many books did George Orwell write")
    assert state["query_graph"]["source"] == "llm" and state["query_graph"]["topics"][0]["name"] == "George Orwell"
    assert state["answers"] == [str(orwell_books())]
    assert any("query graph (LLM)" in e["summary"] for e in state["trace"] if e["node"] == "plan")


def test_an_llm_plan_outside_the_schema_falls_back_to_the_llm_free_plan(llm_library) -> None:
    script(llm_library, {"topics": [{"name": "Orwell", "id": "Author:a:orwell"}],
                         "path": [{"relation": "authored_by_someone"}], "aggregation": {"op": "count"}})
    state = ask("how many books did George Orwell write")
    assert state["query_graph"]["source"] == "rules" and state["answers"] == [str(orwell_books())]
    assert any("LLM query graph not used" in e and "authored_by_someone" in e for e in state["errors"])
