"""Scoped API keys over the real app (kgrag.access, kgrag.api.security, kgrag.api.access), on SQLite and
PostgreSQL: every network route × {no key, read A, write A, admin, revoked} gives the expected status; a key
learns nothing of a network it may not read (404, the unknown network's message); changes land in the audit log
under the key's name; the legacy KGRAG_API_KEY is an admin key; a key over its rate gets 429 with Retry-After; a
fuzzed Authorization header is 401, never a 5xx; the key routes (/api/keys) answer admin keys only, within what
each covers.

    .venv/bin/python -m pytest -q tests/test_api_scoped_keys.py -k sqlite
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kgrag.access import keys as keys_module
from kgrag.access.audit import AuditLog
from kgrag.access.keys import KeyStore
from kgrag.api.app import create_app
from kgrag.config import Settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.store import NetworkStore
from kgrag.network.store.core import make_engine

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library" / "library.yaml"
A, B = "library", "library_b"
LEGACY = "legacy-admin-key"
RETRIEVAL = "/api/agent-retrieval/in/v1/kn"
BOOK = {"object_type_id": "Book", "id": "b-scoped", "properties": {"title": "Keys and Scopes", "year": 2026}}


def _load_two_networks(db_url: str) -> None:
    network, instances, links = load_declarative(EXAMPLE)
    store = NetworkStore(db_url)
    try:
        store.load(network, instances, links)
        store.load(network.model_copy(update={"kn_id": B}), instances, links)
    finally:
        store.close()


@pytest.fixture(scope="module")
def served(module_db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict]]:
    """The app over two copies of the library network (A, B), with keys read-A, write-A, admin and a revoked one."""
    _load_two_networks(module_db_url)
    engine = make_engine(module_db_url)
    keys = KeyStore(engine)
    tokens = {
        "read_a": keys.create("read-a", "read", kns=[A], kgs=[], created_by="test")[0],
        "write_a": keys.create("write-a", "write", kns=[A], created_by="test")[0],
        "admin": keys.create("admin", "admin", created_by="test")[0],
        "revoked": keys.create("gone", "read", kns=[A], created_by="test")[0],
        "limited": keys.create("limited", "read", kns=[A], rate_per_minute=2, created_by="test")[0],
    }
    keys.revoke("gone")
    engine.dispose()
    work = tmp_path_factory.mktemp("scoped")
    settings = Settings(work_dir=work / "work", database_url=module_db_url, llm_base_url="", sparql_endpoint="",
                        api_key=LEGACY, warm_on_start=False)
    with TestClient(create_app(settings)) as client:
        yield client, tokens


def _headers(tokens: dict, who: str) -> dict[str, str]:
    if who == "none":
        return {}
    if who == "legacy":
        return {"Authorization": f"Bearer {LEGACY}"}
    return {"Authorization": f"Bearer {tokens[who]}"}


def _call(client: TestClient, route: str, kn: str, headers: dict[str, str]) -> Any:
    search = {"kn_id": kn, "query": "Orwell", "only_schema": True}
    calls = {
        "kn_search": lambda: client.post(f"{RETRIEVAL}/kn_search", json=search, headers=headers),
        "context_search": lambda: client.post(f"{RETRIEVAL}/context_search", json=search, headers=headers),
        "query_object_instance": lambda: client.post(
            f"{RETRIEVAL}/query_object_instance", headers=headers,
            json={"kn_id": kn, "object_type": "Book", "limit": 2}),
        "query_plan": lambda: client.post(f"{RETRIEVAL}/query_plan", headers=headers,
                                          json={"kn_id": kn, "question": "how many books are there"}),
        "query_instance_subgraph": lambda: client.post(
            f"{RETRIEVAL}/query_instance_subgraph", headers=headers,
            json={"kn_id": kn, "start": {"object_type": "Author", "ids": ["a:orwell"]},
                  "relation_type_path": ["wrote"], "limit": 2}),
        "query_modes": lambda: client.post("/api/query", headers=headers,
                                           json={"kn_id": kn, "query": "Orwell", "param": {"mode": "naive",
                                                                                          "only_need_context": True}}),
        "agent_ask": lambda: client.post("/agent/ask", headers=headers,
                                         json={"question": "Who wrote 1984?", "kn_id": kn}),
        "show_network": lambda: client.get(f"/api/kn/networks/{kn}", headers=headers),
        "upsert": lambda: client.put(f"/api/kn/{kn}/instances", json={"instances": [BOOK]}, headers=headers),
        "delete": lambda: client.post(f"/api/kn/{kn}/instances/delete", headers=headers,
                                      json={"instances": [{"object_type_id": "Book", "id": "b-none"}]}),
    }
    return calls[route]()


#: routes that answer an unknown network otherwise than 404 (the agent's state; the instance queries' bad input)
NOT_404 = ("agent_ask", "query_object_instance", "query_instance_subgraph")
READS = ("kn_search", "context_search", "query_object_instance", "query_instance_subgraph", "query_plan",
         "query_modes", "agent_ask", "show_network")
WRITES = ("upsert", "delete")

#: (who, network) -> status for a read route / for a change route
EXPECTED = {
    ("none", A): (401, 401), ("none", B): (401, 401),
    ("revoked", A): (401, 401), ("revoked", B): (401, 401),
    ("read_a", A): (200, 403), ("read_a", B): (404, 404),
    ("write_a", A): (200, 200), ("write_a", B): (404, 404),
    ("admin", A): (200, 200), ("admin", B): (200, 200),
    ("legacy", A): (200, 200), ("legacy", B): (200, 200),
}


@pytest.mark.parametrize("route", READS + WRITES)
def test_every_network_route_answers_each_key_as_its_scope_says(served: tuple[TestClient, dict], route: str) -> None:
    client, tokens = served
    for (who, kn), (read_status, write_status) in EXPECTED.items():
        resp = _call(client, route, kn, _headers(tokens, who))
        expected = write_status if route in WRITES else read_status
        hidden = expected == 404
        if hidden:  # what the route answers an admin for a network that does not exist (404; the agent: a 200
            # state saying so; the instance queries: their tools' 400)
            unknown = _call(client, route, "no_such_network", _headers(tokens, "admin"))
            expected = unknown.status_code
            assert expected in (200, 400, 404) and (expected == 404) == (route not in NOT_404), (route, expected)
        assert resp.status_code == expected, (route, who, kn, resp.status_code, resp.text[:300])
        if hidden:  # the same answer as a network that does not exist: nothing leaks
            if route == "agent_ask":
                assert resp.json()["answer"].replace(kn, "X") == unknown.json()["answer"].replace(
                    "no_such_network", "X") and "unknown knowledge network" in resp.json()["answer"]
            else:
                assert resp.text.replace(kn, "X") == unknown.text.replace("no_such_network", "X")


def test_kg_routes_refuse_a_kg_the_key_may_not_read(served: tuple[TestClient, dict], module_db_url: str) -> None:
    client, tokens = served
    body = {"session_id": "s-keys", "kg": "demo", "query": '<kg-query>get_relations("x")</kg-query>'}
    hidden = client.post("/api/kg/query", json=body, headers=_headers(tokens, "read_a"))  # --kn only: no KG
    absent = client.post("/api/kg/query", json=body, headers=_headers(tokens, "admin"))  # not prepared here
    assert hidden.status_code == absent.status_code == 404 and hidden.json() == absent.json()
    assert client.get("/api/datasets", headers=_headers(tokens, "read_a")).json() == {}
    unnamed = client.post("/agent/ask", json={"question": "Who wrote 1984?"}, headers=_headers(tokens, "read_a"))
    assert unnamed.status_code == 400 and "name the kg or kn_id" in unnamed.json()["detail"]
    engine = make_engine(module_db_url)
    try:  # a KG the key may read but that does not exist: the datasets the answer names are the key's alone
        token, _ = KeyStore(engine).create("kg-nowhere", "read", kns=[], kgs=["nowhere"], created_by="test")
    finally:
        engine.dispose()
    missing = client.post("/api/kg/query", json={**body, "kg": "nowhere"}, headers={"Authorization": f"Bearer {token}"})
    assert missing.status_code == 422 and "known datasets are none." in missing.json()["detail"][0]["msg"]
    everything = client.post("/api/kg/query", json={**body, "kg": "nowhere"}, headers=_headers(tokens, "admin"))
    assert "demo" in everything.json()["detail"][0]["msg"]


def test_listings_show_only_what_a_key_may_read(served: tuple[TestClient, dict]) -> None:
    client, tokens = served
    listed = {who: {n["kn_id"] for n in client.get("/api/kn/networks", headers=_headers(tokens, who)).json()}
              for who in ("read_a", "admin")}
    assert listed["read_a"] == {A} and listed["admin"] >= {A, B}
    assert client.get("/api/datasets", headers=_headers(tokens, "read_a")).status_code == 200


def test_changes_are_audited_under_the_key_name(served: tuple[TestClient, dict], module_db_url: str) -> None:
    client, tokens = served
    book = {**BOOK, "id": "b-audited"}
    resp = client.put(f"/api/kn/{A}/instances", json={"instances": [book]}, headers=_headers(tokens, "write_a"))
    assert resp.status_code == 200, resp.text
    engine = make_engine(module_db_url)
    try:
        entries = AuditLog(engine).entries(kind="kn", target=A)
    finally:
        engine.dispose()
    mine = [e for e in entries if e.actor == "write-a" and e.version_after == resp.json()["version"]]
    assert len(mine) == 1 and mine[0].action == "kn.changes" and mine[0].counts == {"instances_inserted": 1}
    assert mine[0].version_before and mine[0].version_before != mine[0].version_after


def test_a_key_over_its_rate_gets_429_with_retry_after(served: tuple[TestClient, dict]) -> None:
    client, tokens = served
    statuses = [client.get("/api/kn/networks", headers=_headers(tokens, "limited")) for _ in range(3)]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert int(statuses[-1].headers["retry-after"]) >= 1 and "rate" in statuses[-1].json()["detail"]


@pytest.mark.parametrize("header", [
    "Bearer ", "Bearer kgr_", "Bearer kgr_000000000000_" + "A" * 43, "bearer " + "x" * 5000, "Basic abc",
    "Bearer kgr_zzzzzzzzzzzz_" + "A" * 43, "Bearer \u00e9\u00e8", "Bearer " + "kgr_0_" * 100, "Token abc",
])
def test_a_fuzzed_authorization_header_is_401_never_5xx(served: tuple[TestClient, dict], header: str) -> None:
    client, _ = served
    resp = client.post(f"{RETRIEVAL}/kn_search", json={"kn_id": A, "query": "x"},
                       headers={"Authorization": header.encode("utf-8")})
    assert resp.status_code == 401, resp.text


def test_verify_runs_the_same_hmac_for_malformed_unknown_and_valid_tokens(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'k.db'}")
    keys = KeyStore(engine)
    token, _ = keys.create("k", "read", created_by="test")
    calls: list[int] = []
    real = keys_module._digest
    monkeypatch.setattr(keys_module, "_digest", lambda salt, t: calls.append(1) or real(salt, t))
    for candidate in ("garbage", token[:-1] + ("B" if token[-1] != "B" else "C"),
                      "kgr_ffffffffffff_" + "A" * 43, token):
        calls.clear()
        keys._verified.clear()
        granted = keys.verify(candidate)
        assert len(calls) == 1, candidate
        assert (granted is not None) == (candidate == token)
    assert keys.verify(token).name == "k" and keys.verify("x" * 10_000) is None
    # from memory alone: a token verified in the last seconds, the legacy key, a malformed header; else MISS
    assert keys.resolve_cached(f"Bearer {token}") is keys_module.MISS  # whether any key exists: not read yet
    assert keys.any_active() and keys.resolve_cached(f"Bearer {token}").name == "k"
    assert keys.resolve_cached("Bearer legacy", legacy_key="legacy").name == "KGRAG_API_KEY"
    assert keys.resolve_cached("Basic abc", legacy_key="legacy") is None
    assert keys.resolve_cached("Bearer kgr_ffffffffffff_" + "A" * 43, legacy_key="legacy") is keys_module.MISS
    engine.dispose()


def test_the_console_shows_a_key_only_its_sources(served: tuple[TestClient, dict]) -> None:
    client, tokens = served
    read_a = _headers(tokens, "read_a")
    sources = client.get("/console/api/sources", headers=read_a).json()
    assert [n["id"] for n in sources["networks"]] == [A] and sources["kgs"] == []  # --kn only: no KG
    hidden = client.get("/console/api/schema", params={"kn": B}, headers=read_a)
    unknown = client.get("/console/api/schema", params={"kn": "no_such_network"}, headers=read_a)
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["detail"].replace(B, "X") == unknown.json()["detail"].replace("no_such_network", "X")
    assert B not in unknown.json()["detail"]  # the loaded networks it names are the key's
    assert client.get("/console/api/schema", params={"kn": A}, headers=read_a).status_code == 200
    assert client.get("/console/api/node", params={"kn": B, "id": "Book:b:hobbit"}, headers=read_a).status_code == 404


def test_only_admin_keys_manage_keys(served: tuple[TestClient, dict], module_db_url: str) -> None:
    client, tokens = served
    body = {"name": "minted", "scope": "read", "kns": [A], "kgs": []}
    for who, status in (("none", 401), ("revoked", 401), ("read_a", 403), ("write_a", 403)):
        headers = _headers(tokens, who)
        assert client.get("/api/keys", headers=headers).status_code == status, who
        assert client.post("/api/keys", json=body, headers=headers).status_code == status, who
        assert client.post("/api/keys/read-a/revoke", headers=headers).status_code == status, who
    admin = _headers(tokens, "admin")
    listed = client.get("/api/keys", headers=admin).json()
    assert {"read-a", "write-a", "admin", "gone"} <= {k["name"] for k in listed}
    assert all("token" not in k and "digest" not in k for k in listed)
    created = client.post("/api/keys", json=body, headers=admin)
    assert created.status_code == 201, created.text
    minted = {"Authorization": f"Bearer {created.json()['token']}"}
    assert created.json()["kns"] == [A] and created.json()["created_by"] == "admin"
    assert client.get(f"/api/kn/networks/{A}", headers=minted).status_code == 200
    assert client.get(f"/api/kn/networks/{B}", headers=minted).status_code == 404
    assert client.post("/api/keys", json=body, headers=admin).status_code == 409  # the name is taken
    bad = client.post("/api/keys", json={**body, "name": "x y", "scope": "owner"}, headers=admin)
    assert bad.status_code == 422 and {e["loc"][-1] for e in bad.json()["detail"]} == {"name", "scope"}
    revoked = client.post("/api/keys/minted/revoke", headers=admin)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert client.get(f"/api/kn/networks/{A}", headers=minted).status_code == 401  # refused at once here
    assert client.post("/api/keys/minted/revoke", headers=admin).status_code == 409  # revoked already
    assert client.post("/api/keys/no-such-key/revoke", headers=admin).status_code == 404
    assert client.post("/api/keys/admin/revoke", headers=admin).status_code == 409  # not itself
    engine = make_engine(module_db_url)
    try:
        entries = AuditLog(engine).entries(kind="key", target="minted")
    finally:
        engine.dispose()
    assert [(e.action, e.actor) for e in entries] == [("key.revoke", "admin"), ("key.create", "admin")]


def test_an_admin_key_hands_out_and_revokes_only_what_it_covers(served: tuple[TestClient, dict],
                                                              module_db_url: str) -> None:
    client, tokens = served
    engine = make_engine(module_db_url)
    try:
        token, _ = KeyStore(engine).create("admin-a", "admin", kns=[A], kgs=[], created_by="test")
        scoped = {"Authorization": f"Bearer {token}"}
        for body in ({"name": "wide", "scope": "read"}, {"name": "wide", "scope": "read", "kns": [B], "kgs": []},
                     {"name": "wide", "scope": "read", "kns": [A]}):  # all networks / B / every KG: beyond its own
            assert client.post("/api/keys", json=body, headers=scoped).status_code == 403, body
        made = client.post("/api/keys", json={"name": "narrow", "scope": "write", "kns": [A], "kgs": []},
                           headers=scoped)
        assert made.status_code == 201, made.text
        names = {k["name"] for k in client.get("/api/keys", headers=scoped).json()}
        assert {"narrow", "read-a", "admin-a"} <= names and not names & {"write-a", "admin"}  # write-a: all KGs
        assert client.post("/api/keys/write-a/revoke", headers=scoped).status_code == 404  # not covered: unseen
        assert client.post("/api/keys/narrow/revoke", headers=scoped).status_code == 200
        entries = AuditLog(engine).entries(kind="key", target="narrow")
        assert [(e.action, e.actor) for e in entries] == [("key.revoke", "admin-a"), ("key.create", "admin-a")]
    finally:
        engine.dispose()


def test_kg_sessions_are_the_keys_own() -> None:
    """A scoped key's KG session ids live in a namespace of their own (another key naming the same id never reaches
    its session); KGRAG_API_KEY and an open server keep the plain id."""
    from starlette.requests import Request

    from kgrag.access.grants import OPEN, Grant
    from kgrag.access.keys import LEGACY_GRANT
    from kgrag.api.kg_tools import _owned

    def request(grant: Grant) -> Request:
        return Request({"type": "http", "method": "GET", "path": "/", "headers": [],
                        "state": {"kgrag_grant": grant}})

    a, b = Grant("a", "read"), Grant("b", "read")
    assert _owned(request(a), "s1") != _owned(request(b), "s1")
    assert _owned(request(OPEN), "s1") == _owned(request(LEGACY_GRANT), "s1") == "s1"
