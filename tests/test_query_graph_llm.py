"""The LLM proposes a query graph over the scripted OpenAI-compatible server; invalid proposals are reasons."""

from __future__ import annotations

import json

from kgrag.llm.client import ChatClient
from kgrag.query_graph.llm_proposal import parse_proposal, propose_query_graph
from kgrag.query_graph.plan import Topic

TOPICS = [Topic(name="George Orwell", id="a:orwell"), Topic(name="Secker & Warburg", id="p:secker")]
RELATIONS = {"wrote": "wrote", "year": "publication year", "published_by": "published by"}


def test_a_valid_proposal_is_a_plan_checked_against_the_schema(llm_server, llm_settings) -> None:
    plan = {"topics": [{"name": "Orwell", "id": "a:orwell"}], "path": [{"relation": "wrote"}],
            "literal_constraint": {"relation": "year", "op": "<", "value": 1946, "kind": "year"},
            "aggregation": {"op": "count"}}
    llm_server.script("Here it is:\n```json\n" + json.dumps(plan) + "\n```")
    with ChatClient.from_settings(llm_settings) as client:
        found, why = propose_query_graph(client, "how many books did Orwell write before 1946", TOPICS, RELATIONS)
    assert why == "" and found is not None and found.source == "llm"
    assert found.topics[0].name == "George Orwell"  # the stored name, not the model's spelling
    assert found.path[0].label == "wrote" and found.aggregation.op == "count"
    sent = llm_server.requests[0].body["messages"][0]["content"]
    assert "a:orwell" in sent and "published_by: published by" in sent


def test_bad_proposals_give_reasons() -> None:
    assert parse_proposal("no json here", TOPICS, RELATIONS)[1] == "the LLM's reply holds no JSON object"
    assert "does not parse" in parse_proposal("{not json}", TOPICS, RELATIONS)[1]
    unknown_topic = {"topics": [{"name": "X", "id": "a:x"}], "path": [{"relation": "wrote"}]}
    assert "not one of the linked topics" in parse_proposal(json.dumps(unknown_topic), TOPICS, RELATIONS)[1]
    unknown_rel = {"topics": [{"name": "X", "id": "a:orwell"}], "path": [{"relation": "DROP TABLE"}]}
    assert "not a relation of this graph" in parse_proposal(json.dumps(unknown_rel), TOPICS, RELATIONS)[1]
    invalid = {"topics": [{"name": "X", "id": "a:orwell"}], "path": []}
    assert "not a valid query graph" in parse_proposal(json.dumps(invalid), TOPICS, RELATIONS)[1]
    bad_op = {"topics": [{"name": "X", "id": "a:orwell"}], "path": [{"relation": "wrote"}], "aggregation": {"op": "sum"}}
    assert "(aggregation.op:" in parse_proposal(json.dumps(bad_op), TOPICS, RELATIONS)[1]


def test_a_failing_llm_is_a_reason_not_an_exception(llm_server, llm_settings) -> None:
    from fixtures.llm_server import Error

    llm_server.script(Error(400, "bad request"))
    with ChatClient.from_settings(llm_settings) as client:
        found, why = propose_query_graph(client, "q", TOPICS, RELATIONS)
    assert found is None and why.startswith("the LLM failed")
    assert propose_query_graph(client, "q", [], RELATIONS) == (None, "no linked topic to start a plan from")


def test_a_topic_less_proposal_over_an_answer_type_is_a_plan() -> None:
    plan = {"topics": [], "path": [], "answer_type": "Book",
            "aggregation": {"op": "argmin", "relation": "year", "kind": "year"}}
    found, why = parse_proposal(json.dumps(plan), TOPICS, RELATIONS)
    assert why == "" and found is not None and found.topics == [] and found.aggregation.relation == "year"
