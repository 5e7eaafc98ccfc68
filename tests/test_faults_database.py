"""Database faults, what the HTTP user sees (issue 21 §4): the knowledge-network database unreachable when the app
starts, and PostgreSQL stopped while the app runs then started again.

Contract checked: kn_search / context_search answer 503 with ``{"error": "... database unavailable (...)"}``
within the connect timeout, ``/healthz`` still answers 200, the app keeps serving, and once the database is back
the next request answers 200 with the same result as before the outage (nothing lost: same counts, same hits).
Real parts only: a throwaway PostgreSQL cluster (harness.servers.postgres) and the real app (kgrag.api.app).

    .venv/bin/python -m pytest -q tests/test_faults_database.py
"""

from __future__ import annotations

import time
from pathlib import Path

from fastapi.testclient import TestClient
from fixtures.postgres import postgres_missing

from harness.servers.ports import free_port
from harness.servers.postgres import PostgresUnavailable, throwaway_postgres
from kgrag.api.app import create_app
from kgrag.config import Settings
from kgrag.network.schema.model import (
    DataProperty,
    Instance,
    KnowledgeNetwork,
    Link,
    ObjectType,
    RelationType,
)
from kgrag.network.store import NetworkStore

SEARCH_URL = "/api/agent-retrieval/in/v1/kn/kn_search"
CONTEXT_URL = "/api/agent-retrieval/in/v1/kn/context_search"
OPS = ["match", "==", "contain"]


def small_network() -> tuple[KnowledgeNetwork, list[Instance], list[Link]]:
    net = KnowledgeNetwork(
        kn_id="faults", name="fault test network",
        object_types=[
            ObjectType(id="disease", name="疾病", comment="疾病实体", data_properties=[
                DataProperty(name="name", type="string", comment="疾病名称", condition_operations=OPS)]),
            ObjectType(id="symptom", name="症状", comment="症状实体", data_properties=[
                DataProperty(name="name", type="string", comment="症状名称", condition_operations=OPS)]),
        ],
        relation_types=[RelationType(id="has_symptom", name="症状", comment="疾病的症状",
                                     source_object_type_id="disease", target_object_type_id="symptom")],
    )
    diseases = ["百日咳", "流行性感冒", "糖尿病", "骨折"]
    symptoms = ["咳嗽", "发热", "多饮多尿"]
    instances = [Instance(object_type_id="disease", id=f"d{i}", properties={"name": n}) for i, n in enumerate(diseases)]
    instances += [Instance(object_type_id="symptom", id=f"s{i}", properties={"name": n}) for i, n in enumerate(symptoms)]
    links = [Link(relation_type_id="has_symptom", source_id=s, target_id=t)
             for s, t in [("d0", "s0"), ("d1", "s0"), ("d1", "s1"), ("d2", "s2")]]
    return net, instances, links


def _unavailable(resp, name: str, keyed: bool = False) -> None:  # noqa: ANN001
    """503 with the route's message; ``keyed``: or the security middleware's, when it cannot read the key store
    (no KGRAG_API_KEY: whether a key is needed lives in that database, and the server fails closed)."""
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert body["error"].startswith(f"{name} failed: database unavailable (") or (
        keyed and body["error"].startswith("database unavailable (") and "key store" in body["error"]), body
    assert "Traceback" not in resp.text


def test_database_unreachable_at_start(tmp_path: Path) -> None:
    """Nothing listens on the database's port: the app starts, health answers, the kn routes say 503 fast (without
    KGRAG_API_KEY the key store, in the same database, cannot be read: closed, 503 for every keyed request);
    with KGRAG_API_KEY the routes answer the key's requests themselves: bad input is still a 400."""
    url = f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/kn"
    with TestClient(create_app(Settings(work_dir=tmp_path / "work", database_url=url))) as client:
        assert client.get("/healthz").status_code == 200
        start = time.perf_counter()
        _unavailable(client.post(SEARCH_URL, json={"query": "百日咳", "kn_id": "faults"}), "kn_search", keyed=True)
        _unavailable(client.post(CONTEXT_URL, json={"query": "百日咳有哪些症状", "kn_id": "faults"}), "context_search",
                     keyed=True)
        assert time.perf_counter() - start < 10
        assert client.get("/healthz").status_code == 200  # still serving
    keyed = Settings(work_dir=tmp_path / "work", database_url=url, api_key="k")
    with TestClient(create_app(keyed)) as client:
        auth = {"Authorization": "Bearer k"}
        _unavailable(client.post(SEARCH_URL, json={"query": "百日咳", "kn_id": "faults"}, headers=auth), "kn_search")
        # bad input is still a 400, not masked by the outage
        assert client.post(SEARCH_URL, json={"kn_id": "faults"}, headers=auth).status_code == 400


def test_postgres_stopped_mid_run_then_back(tmp_path: Path) -> None:
    try:
        cluster_cm = throwaway_postgres()
        cluster = cluster_cm.__enter__()
    except PostgresUnavailable as exc:
        postgres_missing(exc)
    try:
        url = cluster.create_database("faults")
        loader = NetworkStore(url)
        stats = loader.load(*small_network())
        loader.close()
        settings = Settings(work_dir=tmp_path / "work", database_url=url, kn_search_cache_size=0)
        with TestClient(create_app(settings)) as client:
            before = client.post(SEARCH_URL, json={"query": "百日咳", "kn_id": "faults"})
            assert before.status_code == 200 and before.json()["nodes"], before.text
            context_before = client.post(CONTEXT_URL, json={"query": "流行性感冒有哪些症状", "kn_id": "faults"})
            assert context_before.status_code == 200

            cluster.stop("immediate")  # what a crash looks like to the app's pooled connections
            start = time.perf_counter()
            _unavailable(client.post(SEARCH_URL, json={"query": "骨折", "kn_id": "faults"}), "kn_search")
            _unavailable(client.post(CONTEXT_URL, json={"query": "糖尿病有哪些症状", "kn_id": "faults"}),
                         "context_search")
            assert time.perf_counter() - start < 10
            assert client.get("/healthz").status_code == 200

            cluster.start()
            after = client.post(SEARCH_URL, json={"query": "百日咳", "kn_id": "faults"})
            assert after.status_code == 200, after.text
            assert after.json() == before.json()  # the same answer: nothing lost
            context_after = client.post(CONTEXT_URL, json={"query": "流行性感冒有哪些症状", "kn_id": "faults"})
            assert context_after.status_code == 200 and context_after.json() == context_before.json()
        check = NetworkStore(url)
        assert check.count_instances("faults") == stats.instances and check.count_links("faults") == stats.links
        check.close()
    finally:
        cluster_cm.__exit__(None, None, None)
