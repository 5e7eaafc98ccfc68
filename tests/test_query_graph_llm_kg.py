"""The triple agent with an LLM: for a count / comparison / superlative question the LLM proposes the query graph
inside the ``query_graph`` tool (over the scripted OpenAI-compatible server), the same SPARQL executor runs it, and
the LLM-free plan answers instead, said in the tool's result, when the proposal does not hold (the demo KG,
prepared, untrained)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fixtures.llm_server import use_llm_server

from kgrag.config import get_settings
from kgrag.data.demo import demo_kg

QUESTION = "how many films did Uma Halvorsen direct?"


def directed_by_uma() -> int:
    kg = demo_kg()
    uma = next(key for key, name in kg.names.items() if name == "Uma Halvorsen")
    return len({t.head for t in kg.triples if t.relation == "film.film.directed_by" and t.tail == uma})


@pytest.fixture
def llm_demo(demo_untrained_settings, llm_server, monkeypatch: pytest.MonkeyPatch):
    use_llm_server(llm_server, monkeypatch, retries=0)
    yield llm_server
    get_settings.cache_clear()


def script(server: Any, relation: str) -> None:
    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        topic = re.search(r"Uma Halvorsen -> (\S+)", prompt)
        assert topic is not None, "the prompt names the linked topic with its id"
        return json.dumps({"topics": [{"name": "Uma", "id": topic.group(1)}],
                           "path": [{"relation": relation, "direction": "in"}], "aggregation": {"op": "count"}})
    server.script(*[reply] * 5)


def ask() -> dict:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    return graph.invoke({"question": QUESTION, "kg": "demo"}, context=AgentContext(use_llm=True))


def test_the_llms_query_graph_runs_as_sparql(llm_demo) -> None:
    script(llm_demo, "film.film.directed_by")
    state = ask()
    assert state["planner"] == "llm" and [c["name"] for c in state["tool_calls"]] == ["query_graph"]
    assert state["query_graph"]["source"] == "llm" and state["answers"] == [str(directed_by_uma())]
    assert "film.film.directed_by" in llm_demo.requests[0].body["messages"][-1]["content"]


def test_an_llm_plan_outside_the_schema_leaves_the_llm_free_plan(llm_demo) -> None:
    script(llm_demo, "film.film.no_such_relation")
    state = ask()
    result = state["tool_calls"][0]["result"]
    assert state["query_graph"]["source"] == "rules" and state["answers"] == [str(directed_by_uma())]
    assert "not a relation of this graph" in result["llm_note"]
