"""The agent's run as events (``POST /agent/stream``, :mod:`kgrag.console.agent_events`) and its evidence as a drawable
graph (:mod:`kgrag.console.evidence_graph`): node order, step details, the end event, NDJSON over HTTP, bad input."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from graphs.agent.context import AgentContext
from graphs.agent.graph import graph
from kgrag.api.agent_routes import make_app
from kgrag.console.agent_events import agent_events, call_view
from kgrag.console.evidence_graph import evidence_graph

#: an untrained triple KG plans a query graph: its own step follows the plan that ran it
NODES = ["extract_keywords", "schema_recall", "contextual_recall", "plan", "tools", "plan", "query_graph", "answer"]


def _subgraph_call() -> dict:
    """A two-step path through an unnamed marriage node, as query_instance_subgraph returns it."""
    nodes = {
        "p:ann": {"id": "p:ann", "object_type": "Person", "properties": {"name": "Ann", "born": "1970"}},
        "m:1": {"id": "m:1", "object_type": "Marriage", "properties": {"name": ""}},
        "p:bob": {"id": "p:bob", "object_type": "Person", "properties": {"name": "Bob"}},
    }
    links = [{"source": "p:ann", "relation_type": "spouse_s", "target": "m:1", "step": 0, "forward": True},
             {"source": "m:1", "relation_type": "spouse", "target": "p:bob", "step": 1, "forward": True}]
    return {"id": "call_1", "name": "query_instance_subgraph", "args": {}, "ms": 3.0,
            "result": {"nodes": nodes, "links": links, "start": ["p:ann"], "ends": ["p:bob"], "steps": [{}, {}]}}


def test_network_evidence_graph_has_the_path_topic_and_answers() -> None:
    state = {"kn_id": "k", "topic": {"instance_id": "p:ann", "name": "Ann", "object_type": "Person"},
             "tool_calls": [_subgraph_call(), {"name": "query_object_instance", "error": "bad", "result": None}],
             "evidence": [{"value": "Bob", "value_instance": "p:bob", "instance": "m:1", "instance_name": "m:1",
                           "via": "spouse"},
                          {"value": "1970", "value_instance": None, "instance": "p:ann", "instance_name": "Ann",
                           "via": "born"}]}
    drawn = evidence_graph(state)
    roles = {n["id"]: n["role"] for n in drawn["nodes"]}
    assert roles == {"p:ann": "topic", "p:bob": "answer", "m:1": "node", "p:ann#born=1970": "answer"}
    assert {(e["source"], e["label"], e["target"]) for e in drawn["edges"]} == {
        ("p:ann", "spouse_s", "m:1"), ("m:1", "spouse", "p:bob"), ("p:ann", "born", "p:ann#born=1970")}
    ann = next(n for n in drawn["nodes"] if n["id"] == "p:ann")
    assert ann["properties"]["born"] == "1970" and ann["label"] == "Ann"
    assert drawn["truncated"] == 0


def test_a_large_evidence_graph_keeps_the_topic_and_answers_first() -> None:
    links = [{"source": "t", "relation_type": "r", "target": f"n{i}", "step": 0, "forward": True} for i in range(400)]
    call = {"name": "query_instance_subgraph", "result": {"nodes": {}, "links": links}}
    evidence = [{"value": "n399", "value_instance": "n399", "instance": "t", "instance_name": "t", "via": "r"}]
    drawn = evidence_graph({"kn_id": "k", "topic": {"instance_id": "t", "name": "T"}, "tool_calls": [call],
                            "evidence": evidence}, max_nodes=50)
    assert len(drawn["nodes"]) == 50 and drawn["truncated"] == 351
    assert [n["id"] for n in drawn["nodes"][:2]] == ["t", "n399"]
    kept = {n["id"] for n in drawn["nodes"]}
    assert all(e["source"] in kept and e["target"] in kept for e in drawn["edges"]) and len(drawn["edges"]) == 49


def test_triple_evidence_graph_from_id_triples_and_from_names_only() -> None:
    state = {"kg": "demo", "topic": {"entity_id": "m.1", "name": "Film"},
             "evidence": [{"answer": "Uma", "entity_id": "m.2", "triples": [["Film", "directed_by", "Uma"]],
                           "id_triples": [["m.1", "directed_by", "m.2"]]},
                          {"answer": "Cal", "entity_id": "m.3", "triples": [["Cal", "starred", "Film"]]}]}
    drawn = evidence_graph(state)
    assert {n["id"]: n["role"] for n in drawn["nodes"]} == {"m.1": "topic", "m.2": "answer", "m.3": "answer"}
    assert {(e["source"], e["target"]) for e in drawn["edges"]} == {("m.1", "m.2"), ("m.3", "m.1")}


def test_call_view_reads_results_and_errors() -> None:
    view = call_view(_subgraph_call())
    assert view["result"] == "3 instances, 2 links; reached: Bob" and view["ms"] == 3.0
    assert call_view({"name": "query_object_instance", "error": "unknown type 'X'"})["error"] == "unknown type 'X'"


def test_events_follow_the_nodes_and_end_with_the_evidence(demo_untrained_settings) -> None:
    events = list(agent_events(graph, {"question": "who directed Carnival Lights?", "kg": "demo"}, AgentContext()))
    assert events[0] == {"event": "start", "kind": "kg", "source": "demo", "question": "who directed Carnival Lights?"}
    steps = [e for e in events if e["event"] == "step"]
    assert [e["node"] for e in steps] == NODES and all(e["ms"] is not None for e in steps)
    assert steps[0]["detail"]["keywords"][0]["name"] == "Carnival Lights"
    assert steps[4]["detail"]["calls"][0]["name"] == "query_graph"
    assert steps[6]["node"] == "query_graph" and steps[6]["detail"]["line"].startswith("Carnival Lights -[")
    assert "Uma Halvorsen" in steps[4]["detail"]["calls"][0]["result"]
    end = events[-1]
    assert end["event"] == "end" and end["answers"] == ["Uma Halvorsen"] and end["session_id"]
    assert {n["label"]: n["role"] for n in end["evidence_graph"]["nodes"]} == {"Carnival Lights": "topic",
                                                                               "Uma Halvorsen": "answer"}
    assert end["history"][-1]["question"] == "who directed Carnival Lights?"


def test_the_stream_route_sends_ndjson_and_refuses_bad_input(demo_untrained_settings) -> None:
    with TestClient(make_app(graph, AgentContext)) as client:
        with client.stream("POST", "/agent/stream", json={"question": "who directed Carnival Lights?",
                                                          "kg": "demo"}) as res:
            assert res.status_code == 200 and res.headers["content-type"].startswith("application/x-ndjson")
            events = [json.loads(line) for line in res.iter_lines() if line]
        assert [e["event"] for e in events] == ["start", *["step"] * len(NODES), "end"]
        first = events[-1]
        follow = [json.loads(line) for line in client.post("/agent/stream", json={
            "question": "when was it released?", "kg": "demo", "history": first["history"],
            "session_id": first["session_id"]}).iter_lines() if line]
        assert follow[-1]["topic"]["name"] == "Carnival Lights" and follow[-1]["answers"]
        unknown = [json.loads(line) for line in client.post("/agent/stream", json={
            "question": "who directed Carnival Lights?", "kg": "nope"}).iter_lines() if line]
        assert unknown[-1]["event"] == "end" and not unknown[-1]["answers"]
        assert any("nope" in e for e in unknown[-1]["errors"])
        assert client.post("/agent/stream", json={"question": 3, "kg": "demo"}).status_code == 422
        assert client.post("/agent/stream", json={"question": "q", "cypher": "MATCH (n)"}).status_code == 422


def test_only_answer_values_are_coloured_as_answers_and_named_middles_keep_their_names() -> None:
    state = {"kg": "demo", "topic": {"name": "Ann", "entity_id": "m.ann"}, "answers": ["Film A"],
             "evidence": [{"answer": "Film A", "entity_id": "m.fa", "triples": [["Ann", "starred", "(cvt)"],
                                                                                   ["(cvt)", "film", "Film A"]],
                           "id_triples": [["m.ann", "starred", "m.cvt1"], ["m.cvt1", "film", "m.fa"]]},
                          {"answer": "Bob", "entity_id": "m.bob", "triples": [["Film A", "starring", "Bob"]],
                           "id_triples": [["m.fa", "starring", "m.bob"]]},
                          {"answer": "Film A", "entity_id": "m.fa", "triples": [["Ann", "knows", "(cvt)"]],
                           "id_triples": [["m.ann", "knows", "m.cvt1"]]}]}
    drawn = evidence_graph(state)
    nodes = {n["id"]: n for n in drawn["nodes"]}
    assert nodes["m.fa"]["role"] == "answer" and nodes["m.bob"]["role"] == "node"  # a co-star is not an answer
    assert nodes["m.ann"]["role"] == "topic"
    assert all(n["label"] != "(cvt)" for n in drawn["nodes"])


def test_a_query_graph_is_a_step_of_its_own_with_its_line() -> None:
    from kgrag.console.agent_events import query_graph_step
    from kgrag.terminal.turn_tree import state_tree

    plan = {"topics": [{"name": "Ann", "id": "m.ann"}], "path": [{"relation": "wrote", "direction": "out"}],
            "aggregation": {"op": "count"}, "score": 1.2}
    event = query_graph_step({"query_graph": plan, "query_graph_candidates": [plan], "confidence": 0.7,
                              "unused": ["before 1900"]})
    assert event["node"] == "query_graph" and event["detail"]["line"] == "Ann -[wrote]-> ?answer · count"
    assert event["summary"] == "confidence 0.70; 1 other plans scored; not used: before 1900"
    assert event["detail"]["candidates"][0]["score"] == 1.2 and event["detail"]["unused"] == ["before 1900"]
    assert query_graph_step({"query_graph": {"bad": 1}})["detail"]["line"] == ""
    from rich.console import Console

    console = Console(record=True, width=200)
    console.print(state_tree({"question": "q", "kg": "demo", "query_graph": plan, "confidence": 0.7,
                              "unused": ["before 1900"], "trace": []}))
    text = console.export_text()
    assert "query graph" in text and "Ann -[wrote]-> ?answer · count" in text and "not used: before 1900" in text
