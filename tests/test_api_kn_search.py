"""kn_search over HTTP: contract, status codes, headers, and schemathesis against a running uvicorn server."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
import schemathesis
import uvicorn
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from harness.servers.ports import free_port
from kgrag.api.app import create_app
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore
from kgrag.search.kn_models import KnSearchRequest, KnSearchResponse

URL = "/api/agent-retrieval/in/v1/kn/kn_search"
NAME_OPS = ["knn", "match", "==", "prefix", "contain"]


def tiny_medical() -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    network = KnowledgeNetwork(
        kn_id="tiny", name="tiny medical",
        object_types=[
            ObjectType(id="disease", name="疾病", comment="疾病实体", primary_keys=["name"], data_properties=[
                DataProperty(name="name", type="string", comment="疾病名称", condition_operations=NAME_OPS),
                DataProperty(name="desc", type="text", comment="疾病描述", condition_operations=["match"]),
                DataProperty(name="cure_prob", type="string", comment="治愈率", condition_operations=["=="])]),
            ObjectType(id="symptom", name="症状", comment="症状实体", primary_keys=["name"], data_properties=[
                DataProperty(name="name", type="string", comment="症状名称", condition_operations=NAME_OPS)]),
            ObjectType(id="drug", name="药品", comment="药品实体", primary_keys=["name"], data_properties=[
                DataProperty(name="name", type="string", comment="药品名称", condition_operations=NAME_OPS)]),
        ],
        relation_types=[
            RelationType(id="has_symptom", name="症状", comment="疾病的症状", source_object_type_id="disease",
                         target_object_type_id="symptom"),
            RelationType(id="common_drug", name="常用药物", comment="疾病的常用药品", source_object_type_id="disease",
                         target_object_type_id="drug"),
        ],
    )
    instances = [
        Instance(object_type_id="disease", id="上、下气道梗阻", properties={"name": "上、下气道梗阻", "desc": "气道梗阻引起呼吸困难", "cure_prob": "60%"}),
        Instance(object_type_id="disease", id="百日咳", properties={"name": "百日咳", "desc": "急性呼吸道传染病", "cure_prob": "98%"}),
        Instance(object_type_id="symptom", id="呼吸困难", properties={"name": "呼吸困难"}),
        Instance(object_type_id="symptom", id="咳嗽", properties={"name": "咳嗽"}),
        Instance(object_type_id="drug", id="布地奈德", properties={"name": "布地奈德"}),
    ]
    links = [Link(relation_type_id="has_symptom", source_id="上、下气道梗阻", target_id="呼吸困难"),
             Link(relation_type_id="has_symptom", source_id="百日咳", target_id="咳嗽"),
             Link(relation_type_id="common_drug", source_id="上、下气道梗阻", target_id="布地奈德")]
    return network, instances, links


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    store = NetworkStore(f"sqlite:///{tmp_path_factory.mktemp('kn') / 'kn.db'}")
    store.load(*tiny_medical())
    application = create_app()
    application.state.network_store = store
    return application


def test_search_returns_concepts_and_instances(app):
    with TestClient(app) as client:
        resp = client.post(URL, json={"query": "上气道梗阻 常用药物", "kn_id": "tiny", "session_id": "s-1"},
                           headers={"x-account-id": "u1", "x-account-type": "user"})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert {r["concept_id"] for r in body["relation_types"]} == {"has_symptom", "common_drug"}
        assert {o["concept_id"] for o in body["object_types"]} == {"disease", "symptom", "drug"}
        assert body["session_id"] == "s-1"
        names = [n["instance_name"] for n in body["nodes"]]
        assert "上、下气道梗阻" in names, body


def test_only_schema_returns_no_nodes(app):
    with TestClient(app) as client:
        body = client.post(URL, json={"query": "症状", "kn_id": "tiny", "only_schema": True}).json()
        assert body["nodes"] == [] and body["object_types"] and body["message"] == ""


@pytest.mark.parametrize(("payload", "field"), [
    ({"kn_id": "tiny"}, "query"),
    ({"query": "", "kn_id": "tiny"}, "query"),
    ({"query": "   ", "kn_id": "tiny"}, "query"),
    ({"query": "x"}, "kn_id"),
    ({"query": "x", "kn_id": ""}, "kn_id"),
])
def test_missing_or_blank_fields_are_400_naming_the_field(app, payload, field):
    with TestClient(app) as client:
        resp = client.post(URL, json=payload)
        assert resp.status_code == 400
        assert resp.json()["field"] == field and field in resp.json()["error"]


def test_malformed_json_unknown_kn_and_bad_account_type(app):
    with TestClient(app) as client:
        bad = client.post(URL, content=b'{"query": "x", "kn_id":', headers={"content-type": "application/json"})
        assert bad.status_code == 400 and "malformed JSON" in bad.json()["error"]
        assert client.post(URL, json={"query": "x", "kn_id": "nope"}).status_code == 404
        acct = client.post(URL, json={"query": "x", "kn_id": "tiny"}, headers={"x-account-type": "root"})
        assert acct.status_code == 400 and "x-account-type" in acct.json()["field"]
        for ok in ("user", "app", "anonymous"):
            assert client.post(URL, json={"query": "x", "kn_id": "tiny"}, headers={"x-account-type": ok}).status_code == 200


def test_admin_routes(app):
    with TestClient(app) as client:
        assert {"kn_id": "tiny", "name": "tiny medical"} in client.get("/api/kn/networks").json()
        detail = client.get("/api/kn/networks/tiny").json()
        assert [o["id"] for o in detail["object_types"]] == ["disease", "symptom", "drug"]
        assert detail["relation_types"] == 2
        assert client.get("/api/kn/networks/nope").status_code == 404


def test_repeated_search_is_served_from_the_cache_until_the_network_is_reloaded(tmp_path):
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    store.load(*tiny_medical())
    application = create_app()
    application.state.network_store = store
    cache = application.state.kn_search_cache
    payload = {"query": "上气道梗阻 常用药物", "kn_id": "tiny"}
    with TestClient(application) as client:
        first = client.post(URL, json={**payload, "session_id": "a"}).json()
        second = client.post(URL, json={**payload, "session_id": "b"}).json()
        assert (cache.misses, cache.hits) == (1, 1)
        assert second["session_id"] == "b" and first["session_id"] == "a"
        assert {**second, "session_id": "a"} == first
        client.post(URL, json={**payload, "only_schema": True})  # another request: another entry
        assert (cache.misses, cache.hits) == (2, 1)
        network, instances, links = tiny_medical()
        store.load(network, instances[:1], [])  # reload: new version, fewer instances
        third = client.post(URL, json=payload).json()
        assert (cache.misses, cache.hits) == (3, 1)
        assert {n["instance_name"] for n in third["nodes"]} <= {"上、下气道梗阻"}


def test_the_routes_write_the_pipelines_answer_as_their_response_model_would(tmp_path):
    """The routes write their answer with one pydantic dump (kgrag.api.kn_search.as_json), not FastAPI's
    response-model round trip: the same JSON — the pipeline's answer without its None fields — and the type."""
    from fastapi.routing import serialize_response
    from fastapi.utils import create_model_field
    from starlette.responses import JSONResponse

    from kgrag.search.pipeline import context_search, kn_search

    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    store.load(*tiny_medical())
    application = create_app()
    application.state.network_store = store
    field = create_model_field(name="Response", type_=KnSearchResponse, mode="serialization")

    async def fastapis_own(response: KnSearchResponse) -> bytes:
        content = await serialize_response(field=field, response_content=response, exclude_none=True)
        return bytes(JSONResponse(content).body)

    payload = {"query": "上气道梗阻 常用药物", "kn_id": "tiny", "session_id": "s1"}
    with TestClient(application) as client:
        for url, search in ((URL, kn_search), (URL.replace("kn_search", "context_search"), context_search)):
            for _ in range(2):  # a computed answer, then (kn_search) the cache's
                sent = client.post(url, json=payload)
                assert sent.status_code == 200 and sent.headers["content-type"] == "application/json"
                expected = search(KnSearchRequest(**payload), store)
                assert sent.json() == json.loads(asyncio.run(fastapis_own(expected)))
                assert sent.json() == expected.model_dump(mode="json", exclude_none=True)
                assert sent.json()["nodes"] and "null" not in sent.text


def test_cache_size_zero_turns_it_off():
    from kgrag.search.cache import KnSearchCache

    cache = KnSearchCache(0)
    calls = []
    request = KnSearchRequest(query="x", kn_id="tiny")
    for _ in range(2):
        cache.get_or_compute(request, "v1", lambda: calls.append(1) or KnSearchResponse())
    assert len(calls) == 2 and cache.hits == 0


@pytest.fixture(scope="module")
def running_server(app):
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def fuzz_operation(operation, failures: list) -> None:
    """Up to 60 generated requests for one operation; any 5xx is recorded."""

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy())
    def run(case) -> None:
        response = case.call()
        if response.status_code >= 500:
            failures.append((operation.path, case.body, response.status_code, response.text[:200]))

    run()


def test_schemathesis_no_server_errors(running_server):
    schema = schemathesis.openapi.from_url(f"{running_server}/openapi.json").include(path_regex="^/api/(agent-retrieval|kn/)")
    operations = [op.ok() for op in schema.get_all_operations()]
    assert {op.path for op in operations} >= {URL, "/api/kn/networks", "/api/kn/networks/{kn_id}"}
    failures: list = []
    for operation in operations:
        fuzz_operation(operation, failures)
    assert failures == []
