"""`kgrag tools` (stdin → one session → results separated by ---) and POST /api/kg/query."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from fastapi.testclient import TestClient

from kgrag.api.app import create_app
from kgrag.prep import steps


@pytest.fixture
def prepared_demo(work_settings):
    out = work_settings.dataset_dir("demo")
    fp = steps.input_fingerprint("demo", work_settings.data_dir)
    steps.build_graph("demo", work_settings.data_dir, out, fp)
    steps.load_store(out, fp)
    return work_settings


def run_tools(settings, stdin: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KGRAG_WORK_DIR": str(settings.work_dir)}
    return subprocess.run([sys.executable, "-m", "kgrag.cli", "tools", "--kg", "demo", *args], input=stdin,
                          capture_output=True, text=True, env=env, timeout=120)


def test_tools_cli_runs_one_session_and_writes_the_trace(prepared_demo, tmp_path):
    stdin = ('get_relations("Dmitri Kamau")\n'
             '<kg-query>get_triples("Dmitri Kamau", ["people.person.spouse_s"])</kg-query>\n'
             "\n"
             'get_triples("Dmitri Kamau", ["film.film.genre"])\n'
             "nonsense\n")
    trace = tmp_path / "trace.json"
    proc = run_tools(prepared_demo, stdin, "--question", "who is Dmitri Kamau's spouse", "--topic", "Dmitri Kamau",
                     "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    blocks = proc.stdout.rstrip("\n").split("\n---\n")
    assert len(blocks) == 4
    assert "people.person.spouse_s" in blocks[0].splitlines()
    assert "[Dmitri Kamau, person.spouse_s.people.marriage.spouse_1, Dmitri Quintero]" in blocks[1].splitlines()
    assert blocks[2].startswith("The relation 'film.film.genre' is not in the latest predicate list.")
    assert blocks[3] == "[Could not parse query: nonsense]"
    records = json.loads(trace.read_text())
    assert [r["call_number"] for r in records if r["type"] == "information"] == [1, 2, 3, 4]
    assert any("cvt_info" in r for r in records if r["type"] == "tool_call")


def test_tools_cli_without_prepared_store_is_one_clear_line(work_settings):
    proc = run_tools(work_settings, 'get_relations("x")\n')
    assert proc.returncode == 1
    assert "kgrag prepare" in proc.stderr and "Traceback" not in proc.stderr


def test_api_kg_query_sessions(prepared_demo):
    with TestClient(create_app(prepared_demo)) as client:
        first = client.post("/api/kg/query", json={"session_id": "s1", "kg": "demo", "query":
                                                    '<kg-query>get_relations("Toronto")</kg-query>'})
        assert first.status_code == 200, first.text
        body = first.json()
        assert body["created"] and body["call_number"] == 1
        assert "people.person.place_of_birth" in body["text"].splitlines()
        assert [r["type"] for r in body["trace"]] == ["kg_query", "tool_call", "information"]
        second = client.post("/api/kg/query", json={"session_id": "s1", "kg": "demo", "query":
                                                     'get_triples("Toronto", ["people.person.place_of_birth"])'})
        assert second.json()["call_number"] == 2 and not second.json()["created"]
        assert second.json()["text"].endswith(", Toronto]")
        other = client.post("/api/kg/query", json={"session_id": "s2", "kg": "demo", "query":
                                                    'get_triples("Toronto", ["film.film.genre"])'})
        assert other.json()["created"]  # a fresh session: nothing seen yet, any relation may be asked
        full = client.get("/api/kg/sessions/s1/trace").json()
        assert full["calls"] == 2 and len(full["trace"]) == 6
        assert client.post("/api/kg/query", json={"session_id": "s1", "kg": "metaqa", "query": "x"}).status_code == 404
        assert client.delete("/api/kg/sessions/s1").json()["dropped"]
        assert client.get("/api/kg/sessions/s1/trace").status_code == 404


def test_api_rejects_bad_input(prepared_demo):
    with TestClient(create_app(prepared_demo)) as client:
        bad_id = client.post("/api/kg/query", json={"session_id": "a b}", "kg": "demo", "query": "x"})
        assert bad_id.status_code == 422
        unknown = client.post("/api/kg/query", json={"session_id": "s", "kg": "wikidata", "query": "x"})
        assert unknown.status_code == 422 and "wikidata" in unknown.text
        too_long = client.post("/api/kg/query", json={"session_id": "s", "kg": "demo", "query": "x" * 20_001})
        assert too_long.status_code == 422


def test_session_store_expiry_and_conflict():
    from kgrag.tools.session_store import SessionConflict, SessionStore

    now = [0.0]
    store = SessionStore(ttl=10, clock=lambda: now[0])
    made = []

    def factory():
        made.append(1)
        return object()

    store.get_or_create("a", "demo", factory)
    store.get_or_create("a", "demo", factory)
    assert len(made) == 1
    with pytest.raises(SessionConflict):
        store.get_or_create("a", "metaqa", factory)
    now[0] = 11
    assert store.get("a") is None
    store.get_or_create("a", "metaqa", factory)
    assert len(made) == 2
