"""``kgrag serve``'s warm-up answers one question on every prepared KG and loaded network before ``/healthz`` says
warm, so the first user question finds the triple graph, its linker, the question encoder, the network's planner
and its other-name indexes already loaded."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from fixtures.library_kn import load_library

from kgrag.api.app import create_app
from kgrag.api.warmup import kn_questions
from kgrag.config import get_settings
from kgrag.network.store import NetworkStore


def test_warm_up_answers_on_every_kg_and_network(demo_untrained_settings, tmp_path, monkeypatch):
    db, _ = load_library(tmp_path)
    monkeypatch.setenv("KGRAG_DATABASE_URL", db)
    get_settings.cache_clear()
    settings = get_settings().model_copy(update={"warm_on_start": True})
    app = create_app(settings)
    with TestClient(app) as client:
        deadline = time.monotonic() + 300
        while client.get("/healthz").json()["warming"]:
            assert time.monotonic() < deadline, "the warm-up never ended"
            time.sleep(0.2)
        report = app.state.warm_report
        agent = report["agent"]
        assert set(agent) == {"kg:demo", "kn:library"}, agent
        assert all("error" not in done and done["question"] for done in agent.values()), agent
        assert report["other_names"]["library"] >= 1  # the types whose display key has an other-name index
        asked = client.post("/agent/ask", json={"question": agent["kg:demo"]["question"], "kg": "demo"})
        assert asked.status_code == 200 and asked.json()["answers"], asked.text


def test_a_network_question_names_an_instance_and_a_relation(tmp_path):
    db, _ = load_library(tmp_path)
    store = NetworkStore(db)
    try:
        question = kn_questions(store, ["library"])["library"]
        names = {name for _, _, name in store.instance_names("library")}
        relations = {r.name for r in store.get_network("library").relation_types}
        assert any(question.startswith(n) for n in names) and any(question.endswith(r) for r in relations), question
    finally:
        store.close()
