"""Network changes over HTTP (kgrag/api/kn_changes.py) on the library network, SQLite and PostgreSQL: upserts and
deletes of instances and links behind the API key, one transaction per call, gone from kn_search and
query_object_instance after a delete, bad rows rejected whole (400 naming them), bounded batches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag.api.app import create_app
from kgrag.api.kn_changes import MAX_BATCH
from kgrag.config import Settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.store import NetworkStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
KEY = "changes-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
QUERY = "/api/agent-retrieval/in/v1/kn/query_object_instance"
SEARCH = "/api/agent-retrieval/in/v1/kn/kn_search"
NEW_BOOK = {"object_type_id": "Book", "id": "b-new", "properties": {"title": "Quietude of Lanterns", "year": 2031}}


@pytest.fixture
def client(db_url: str, tmp_path: Path) -> Iterator[TestClient]:
    """The app, bearer auth on, over a database holding the library network."""
    store = NetworkStore(db_url)
    try:
        store.load(*load_declarative(EXAMPLE))
    finally:
        store.close()
    settings = Settings(work_dir=tmp_path / "work", database_url=db_url, llm_base_url="", sparql_endpoint="",
                        api_key=KEY, warm_on_start=False)
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _version(client: TestClient) -> str:
    return client.app.state.network_store.network_version("library")  # type: ignore[attr-defined]


def _book(client: TestClient, title: str) -> list[dict]:
    resp = client.post(QUERY, headers=AUTH, json={"kn_id": "library", "object_type": "Book", "limit": 5,
                                                  "condition": {"operation": "==", "field": "title", "value": title}})
    assert resp.status_code == 200, resp.text
    return [row["properties"] for row in resp.json()["instances"]]


def _searched_names(client: TestClient, query: str) -> set[str]:
    resp = client.post(SEARCH, headers=AUTH, json={"kn_id": "library", "query": query, "only_schema": False})
    assert resp.status_code == 200, resp.text
    nodes = resp.json().get("nodes") or []
    return {node["instance_name"] for node in nodes if node["object_type_id"] == "Book"}


def test_upsert_then_delete_is_seen_by_the_queries(client: TestClient) -> None:
    client.post(QUERY, headers=AUTH, json={"kn_id": "library", "object_type": "Book", "limit": 1})  # open the store
    before = _version(client)
    resp = client.put("/api/kn/library/instances", headers=AUTH, json={"instances": [NEW_BOOK]})
    assert resp.status_code == 200, resp.text
    stats = resp.json()
    assert stats["instances_inserted"] == 1 and stats["instances_updated"] == 0 and stats["version"] != before
    assert [row["title"] for row in _book(client, "Quietude of Lanterns")] == ["Quietude of Lanterns"]
    assert "Quietude of Lanterns" in _searched_names(client, "Quietude of Lanterns")

    author_id = client.app.state.network_store.query_instances(  # type: ignore[attr-defined]
        "library", "Author", None, 1, sort_by_score=False)[0].id
    link = {"relation_type_id": "wrote", "source_id": author_id, "target_id": "b-new"}
    resp = client.put("/api/kn/library/links", headers=AUTH, json={"links": [link]})
    assert resp.status_code == 200 and resp.json()["links_inserted"] == 1, resp.text

    same = client.put("/api/kn/library/instances", headers=AUTH, json={"instances": [NEW_BOOK]}).json()
    assert same["instances_unchanged"] == 1 and same["version"] == resp.json()["version"]  # nothing changed: no bump
    renamed = {**NEW_BOOK, "properties": {"title": "Quietude of Lamps", "year": 2031}}
    updated = client.put("/api/kn/library/instances", headers=AUTH, json={"instances": [renamed]}).json()
    assert updated["instances_updated"] == 1
    assert _book(client, "Quietude of Lanterns") == [] and len(_book(client, "Quietude of Lamps")) == 1

    resp = client.post("/api/kn/library/instances/delete", headers=AUTH,
                       json={"instances": [{"object_type_id": "Book", "id": "b-new"}]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["instances_deleted"] == 1
    assert _book(client, "Quietude of Lamps") == []
    assert "Quietude of Lamps" not in _searched_names(client, "Quietude of Lamps")
    store = client.app.state.network_store  # type: ignore[attr-defined]
    assert ("b-new",) not in {(far,) for _, far in store.linked_ids("library", "wrote", [author_id], True)}


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_changes_in_one_call_and_the_error_contract(client: TestClient) -> None:
    assert client.put("/api/kn/library/instances", json={"instances": [NEW_BOOK]}).status_code == 401
    assert client.put("/api/kn/nowhere/instances", headers=AUTH, json={"instances": [NEW_BOOK]}).status_code == 404
    store = client.app.state.network_store  # type: ignore[attr-defined]
    before = store.network_version("library")
    count = store.count_instances("library")

    bad_type = {**NEW_BOOK, "object_type_id": "Spaceship"}
    resp = client.put("/api/kn/library/instances", headers=AUTH, json={"instances": [NEW_BOOK, bad_type]})
    assert resp.status_code == 400 and "Spaceship" in resp.json()["detail"], resp.text
    dangling = {"relation_type_id": "wrote", "source_id": "no-such-author", "target_id": "b-new"}
    resp = client.post("/api/kn/library/changes", headers=AUTH,
                       json={"upsert_instances": [NEW_BOOK], "upsert_links": [dangling]})
    assert resp.status_code == 400 and "no-such-author" in resp.json()["detail"], resp.text
    assert store.network_version("library") == before and store.count_instances("library") == count  # nothing applied

    resp = client.put("/api/kn/library/instances", headers=AUTH, json={"instances": [{**NEW_BOOK, "id": ""}]})
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"][-1] == "id"
    too_many = [{"object_type_id": "Book", "id": f"x{i}"} for i in range(MAX_BATCH + 1)]
    resp = client.post("/api/kn/library/instances/delete", headers=AUTH, json={"instances": too_many})
    assert resp.status_code in (413, 422), resp.text

    author_id = store.query_instances("library", "Author", None, 1, sort_by_score=False)[0].id
    link = {"relation_type_id": "wrote", "source_id": author_id, "target_id": "b-new"}
    resp = client.post("/api/kn/library/changes", headers=AUTH,
                       json={"upsert_instances": [NEW_BOOK], "upsert_links": [link]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["instances_inserted"] == 1 and resp.json()["links_inserted"] == 1
    assert store.count_instances("library") == count + 1
    resp = client.post("/api/kn/library/links/delete", headers=AUTH, json={"links": [link]})
    assert resp.status_code == 200 and resp.json()["links_deleted"] == 1, resp.text

    spec = client.get("/openapi.json", headers=AUTH).json()
    for path in ("/api/kn/{kn_id}/instances", "/api/kn/{kn_id}/instances/delete", "/api/kn/{kn_id}/links",
                 "/api/kn/{kn_id}/links/delete", "/api/kn/{kn_id}/changes"):
        assert path in spec["paths"], path
    assert spec["security"] == [{"HTTPBearer": []}]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_schemathesis_over_the_change_routes(client: TestClient) -> None:
    """Every change operation fuzzed (positive and negative cases, real ids 3 times in 4): never a 5xx, and
    positive answers conform to the declared schema (tests/test_api_schemathesis.py covers the whole app)."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import response_schema_conformance

    real = {"kn_id": ["library"], "object_type_id": ["Book", "Author"], "relation_type_id": ["wrote"],
            "source_id": ["a1"], "target_id": ["b1"]}
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app, headers=AUTH)
    schema.config.generation.update(with_security_parameters=False)
    statuses: dict[int, int] = {}

    def realistic(value: object, draw: st.DrawFn) -> None:
        if isinstance(value, dict):
            for key, choices in real.items():
                if key in value and draw(st.integers(0, 3)) > 0:
                    value[key] = draw(st.sampled_from(choices))
            for inner in value.values():
                realistic(inner, draw)
        elif isinstance(value, list):
            for inner in value:
                realistic(inner, draw)

    def fuzz(operation: Any, mode: GenerationMode, examples: int) -> None:
        checks = [not_a_server_error, response_schema_conformance] if mode == GenerationMode.POSITIVE \
            else [not_a_server_error]

        @st.composite
        def cases(draw: st.DrawFn) -> Any:
            case = draw(operation.as_strategy(generation_mode=mode))
            realistic(case.body, draw)
            realistic(case.path_parameters, draw)
            return case

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(case=cases())
        def run(case: Any) -> None:
            response = case.call(headers=AUTH)
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            case.validate_response(response, checks=checks)

        try:
            run()
        except Unsatisfiable:  # schemathesis found no way to make this body invalid within the budget
            assert mode == GenerationMode.NEGATIVE, operation.path

    operations = [r.ok() for r in schema.get_all_operations() if r.ok().path.startswith("/api/kn/{kn_id}/")]
    assert len(operations) == 5
    for operation in operations:
        fuzz(operation, GenerationMode.POSITIVE, 10)
        fuzz(operation, GenerationMode.NEGATIVE, 5)
    assert statuses.get(200, 0) > 0 and not any(code >= 500 for code in statuses), statuses
