"""The knowledge-network query tools on the real medical network: in Python, through the agent's registry and
over HTTP (400s naming the culprit, capped limits, hostile strings bound, never pasted into SQL)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from kgrag.agent.kn.instance_queries import (
    MAX_LIMIT,
    InstanceSubgraphQuery,
    ObjectInstanceQuery,
    ToolInputError,
    query_instance_subgraph,
    query_object_instance,
)
from kgrag.agent.kn.tools import openai_tools, run_tool
from kgrag.network.store import NetworkStore

NAME = {"operation": "==", "field": "name", "value": "百日咳"}
BASE = "/api/agent-retrieval/in/v1/kn"


@pytest.fixture(scope="module")
def store(medical_db: str) -> NetworkStore:
    s = NetworkStore(medical_db)
    yield s
    s.close()


def test_object_instance_by_stored_name_with_a_projection(store: NetworkStore) -> None:
    out = query_object_instance(store, ObjectInstanceQuery(kn_id="medical", object_type="Disease", condition=NAME,
                                                           properties=["name", "cure_way"], limit=1))
    assert out["count"] == 1
    inst = out["instances"][0]
    assert inst["id"] == "Disease:百日咳" and set(inst["properties"]) == {"name", "cure_way"}
    assert isinstance(inst["properties"]["cure_way"], list) and inst["properties"]["cure_way"]


def test_subgraph_out_and_in(store: NetworkStore) -> None:
    out = query_instance_subgraph(store, InstanceSubgraphQuery(
        kn_id="medical", start={"object_type": "Disease", "condition": NAME}, relation_type_path=["has_symptom"]))
    assert out["start"] == ["Disease:百日咳"] and out["steps"][0]["direction"] == "out"
    names = {out["nodes"][i]["properties"]["name"] for i in out["ends"]}
    assert "痉挛性咳嗽" in names
    assert all(link["source"] == "Disease:百日咳" for link in out["links"])
    # the same relation walked backwards: the diseases that have a symptom
    back = query_instance_subgraph(store, InstanceSubgraphQuery(
        kn_id="medical", start={"object_type": "Symptom", "ids": ["Symptom:痉挛性咳嗽"]},
        relation_type_path=[{"relation_type": "has_symptom", "direction": "in"}], limit=500))
    assert "Disease:百日咳" in back["ends"] and back["limit"] == MAX_LIMIT
    assert all(link["target"] == "Symptom:痉挛性咳嗽" for link in back["links"])


def test_two_step_path_and_truncation(store: NetworkStore) -> None:
    out = query_instance_subgraph(store, InstanceSubgraphQuery(
        kn_id="medical", start={"object_type": "Disease", "condition": NAME},
        relation_type_path=["has_symptom", {"relation_type": "has_symptom", "direction": "in"}], limit=3))
    assert [s["object_type"] for s in out["steps"]] == ["Symptom", "Disease"]
    assert len(out["steps"][0]["ids"]) <= 3 and len(out["ends"]) <= 3 and out["truncated"]
    # the evidence of a path that walks one relation twice comes from its last step only, read the way it went
    from kgrag.agent.kn.answers import evidence_from

    assert {link["step"] for link in out["links"]} == {0, 1}
    rows = evidence_from({"name": "query_instance_subgraph", "result": out})
    assert rows and all(r["instance"].startswith("Symptom:") and r["value_instance"] in out["ends"] for r in rows)


@pytest.mark.parametrize(("query", "named"), [
    (ObjectInstanceQuery(kn_id="nope", object_type="Disease"), "'nope'"),
    (ObjectInstanceQuery(kn_id="medical", object_type="Planet"), "'Planet'"),
    (ObjectInstanceQuery(kn_id="medical", object_type="Disease",
                         condition={"operation": "==", "field": "colour", "value": "x"}), "'colour'"),
    (ObjectInstanceQuery(kn_id="medical", object_type="Disease", properties=["colour"]), "colour"),
    (InstanceSubgraphQuery(kn_id="medical", start={"object_type": "Disease", "condition": NAME},
                           relation_type_path=["orbits"]), "'orbits'"),
    (InstanceSubgraphQuery(kn_id="medical", start={"object_type": "Drug", "condition": NAME},
                           relation_type_path=["has_symptom"]), "cannot be walked"),
])
def test_unknown_names_are_errors_naming_them(store: NetworkStore, query, named: str) -> None:
    fn = query_object_instance if isinstance(query, ObjectInstanceQuery) else query_instance_subgraph
    with pytest.raises(ToolInputError, match=named):
        fn(store, query)


def test_hostile_values_are_bound_parameters(store: NetworkStore) -> None:
    hostile = "百日咳' OR '1'='1'; DROP TABLE kn_instances; --"
    out = query_object_instance(store, ObjectInstanceQuery(
        kn_id="medical", object_type="Disease", condition={"operation": "==", "field": "name", "value": hostile}))
    assert out["count"] == 0
    assert store.count_instances("medical", "Disease") > 8000  # the table is still there


def test_registry_fixes_kn_id_and_reports_bad_arguments(store: NetworkStore) -> None:
    ok = run_tool(store, {"name": "query_object_instance",
                          "args": {"object_type": "Disease", "condition": NAME, "limit": 1}}, "medical")
    assert ok["result"]["count"] == 1 and "error" not in ok
    other = run_tool(store, {"name": "query_object_instance", "args": {"kn_id": "x", "object_type": "Disease"}},
                     "medical")
    assert other["result"] is None and "fixed to 'medical'" in other["error"]
    for args, says in (("{not json", "must be a JSON object"), ({"object_type": 3}, "object_type"),
                       ({"object_type": "Disease", "limit": 0}, "limit")):
        bad = run_tool(store, {"name": "query_object_instance", "args": args}, "medical")
        assert bad["result"] is None and says in bad["error"]
    unknown = run_tool(store, {"name": "drop_tables", "args": {}}, "medical")
    assert "unknown tool 'drop_tables'" in unknown["error"]
    names = [t["function"]["name"] for t in openai_tools()]
    assert names == ["kn_search", "context_search", "query_object_instance", "query_instance_subgraph", "query_modes",
                     "query_plan"]
    assert all("kn_id" not in t["function"]["parameters"].get("properties", {}) for t in openai_tools())


@pytest.fixture(scope="module")
def client(medical_db: str) -> TestClient:
    from kgrag.api.app import create_app
    from kgrag.config import Settings

    with TestClient(create_app(Settings(database_url=medical_db))) as c:
        yield c


def test_http_routes(client: TestClient) -> None:
    r = client.post(f"{BASE}/query_object_instance",
                    json={"kn_id": "medical", "ot_id": "Disease", "condition": NAME, "limit": 10_000})
    assert r.status_code == 200 and r.json()["limit"] == MAX_LIMIT and r.json()["count"] == 1
    r = client.post(f"{BASE}/query_instance_subgraph", json={
        "kn_id": "medical", "start": {"object_type": "Disease", "condition": NAME},
        "relation_type_path": ["common_drug"]})
    assert r.status_code == 200 and r.json()["ends"]
    for body, named in (({"kn_id": "nope", "object_type": "Disease"}, "nope"),
                        ({"kn_id": "medical", "object_type": "Planet"}, "Planet"),
                        ({"kn_id": "medical", "object_type": "Disease",
                          "condition": {"operation": "~~", "field": "name", "value": 1}}, "operation"),
                        ({"kn_id": "medical"}, "object_type")):
        r = client.post(f"{BASE}/query_object_instance", json=body)
        assert r.status_code == 400 and named in r.json()["error"], (body, r.json())
    r = client.post(f"{BASE}/query_instance_subgraph", json={
        "kn_id": "medical", "start": {"object_type": "Disease"}, "relation_type_path": ["orbits"]})
    assert r.status_code == 400 and "orbits" in r.json()["error"]
    r = client.post(f"{BASE}/query_instance_subgraph", json={
        "kn_id": "medical", "start": {"object_type": "Disease"}, "relation_type_path": ["has_symptom"] * 9})
    assert r.status_code == 400 and "relation_type_path" in r.json()["error"]
