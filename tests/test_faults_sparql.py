"""Fault: the SPARQL endpoint is killed in the middle of a KG-tools session, then comes back.

Real servers, real signals: ``oxigraph serve-read-only`` and Virtuoso 7 are SIGKILLed between two calls of one
:class:`KGSession` (on :class:`RemoteStore`), or SIGSTOPped (alive but silent). What the user sees:

- while the endpoint is down, the tool call answers ``[KG query failed: cannot reach SPARQL endpoint … after N
  attempts: …]`` (connection errors are retried with exponential backoff, ``KGRAG_SPARQL_RETRIES``); while it
  hangs, ``[KG query failed: SPARQL query to … timed out after Ts]`` (every query has a timeout, spec
  kg-tools.md §6 ``timeout``; a timeout is not retried). An error trace record says the same;
- the session is not lost: its seen relations, entity registry and call count survive, so once the server is
  restarted on the same port and data, the same session's next call answers without repeating get_relations;
- over HTTP (``POST /api/kg/query``, the real app): a call in a live session is a 200 whose ``text`` is the error
  (the model reads it, spec §4.5), the session's trace stays readable, a call that must query the store
  outside a session (a new session resolving its topic names, ``/api/datasets``) is a 502 whose ``detail`` is
  the :class:`~kgrag.errors.KgragError` message; after the restart the same session answers again.

Run: ``.venv/bin/python -m pytest tests/test_faults_sparql.py -q``
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from fixtures.virtuoso_server import DEMO_GRAPH, require_virtuoso

from harness.servers.oxigraph_server import load_into, serve_read_only
from harness.servers.ports import free_port
from harness.servers.virtuoso import bulk_load, start_virtuoso
from kgrag.api.app import create_app
from kgrag.config import Settings
from kgrag.graph.remote_store import RemoteStore
from kgrag.prep import steps
from kgrag.tools import KGClient, KGSession, KGToolsConfig

FRANCE = "m.0v2j_"
RELATIONS = '<kg-query>get_relations("France")</kg-query>'
TRIPLES = '<kg-query>get_triples("France", ["location.location.contains"])</kg-query>'
PARIS = "[France, location.location.contains, Paris]"


@dataclass
class Endpoint:
    """A SPARQL server this test may kill, pause and restart on the same port and data."""

    kind: str
    url: str
    graph: str | None
    _kill: object
    _restart: object
    _pid: object

    def kill(self) -> None:
        self._kill()  # type: ignore[operator]

    def restart(self) -> None:
        self._restart()  # type: ignore[operator]

    def signal(self, sig: int) -> None:
        pid = self._pid()  # type: ignore[operator]
        os.kill(pid, sig)
        if sig == signal.SIGSTOP:  # delivery is asynchronous: wait until every thread is stopped (state T)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and not _stopped(pid):
                time.sleep(0.01)


def _stopped(pid: int) -> bool:
    """Whether every thread of ``pid`` is stopped (Linux /proc; True where /proc is absent)."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return True
    states = []
    for stat in tasks.glob("*/stat"):
        try:
            states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        except (OSError, IndexError):
            continue
    return bool(states) and all(state in ("T", "t") for state in states)


def _oxigraph(ntriples: Path, root: Path) -> Iterator[Endpoint]:
    location = root / "store"
    load_into(location, ntriples)
    port = free_port()
    box = {"server": serve_read_only(location, port=port)}

    def kill() -> None:
        box["server"].process.kill()
        box["server"].process.wait(timeout=10)

    def restart() -> None:
        box["server"] = serve_read_only(location, port=port)

    try:
        yield Endpoint("oxigraph", box["server"].url, None, kill, restart, lambda: box["server"].process.pid)
    finally:
        box["server"].stop()


def _virtuoso(ntriples: Path, root: Path) -> Iterator[Endpoint]:
    require_virtuoso()
    db = root / "virtuoso-db"
    box = {"server": start_virtuoso(db, dirs_allowed=[ntriples.parent])}
    bulk_load(box["server"], ntriples.parent, graph=DEMO_GRAPH, pattern=ntriples.name)
    ports = box["server"].isql_port, box["server"].http_port

    def restart() -> None:  # same database directory and ports: the loaded graph comes back
        box["server"] = start_virtuoso(db, isql_port=ports[0], http_port=ports[1], dirs_allowed=[ntriples.parent])

    try:
        yield Endpoint("virtuoso", box["server"].url, DEMO_GRAPH, lambda: box["server"].kill(), restart,
                       lambda: box["server"].process.pid)
    finally:
        box["server"].stop()


@pytest.fixture(scope="module", params=["oxigraph", "virtuoso"])
def endpoint(request, demo_ntriples, tmp_path_factory) -> Iterator[Endpoint]:
    """One server per kind for the module: each test leaves it running (restarted or resumed)."""
    path, _ = demo_ntriples
    yield from (_oxigraph if request.param == "oxigraph" else _virtuoso)(path, tmp_path_factory.mktemp("fault"))


def _session(endpoint: Endpoint, timeout: float = 5.0) -> KGSession:
    store = RemoteStore(endpoint.url, timeout=timeout, retries=2, backoff=0.05, graph=endpoint.graph)
    return KGSession(KGClient(store, timeout=timeout), config=KGToolsConfig(timeout=timeout))


def test_endpoint_killed_mid_session_then_back(endpoint: Endpoint) -> None:
    session = _session(endpoint)
    assert "location.location.contains" in session.run(RELATIONS).splitlines()
    registry = dict(session._entity_registry)

    endpoint.kill()
    start = time.monotonic()
    failed = session.run(TRIPLES)
    assert failed.startswith(f"[KG query failed: cannot reach SPARQL endpoint {endpoint.url} after 3 attempts: ")
    assert time.monotonic() - start < 5  # two retries with a short backoff, not a hang
    assert session.trace[-2] == {"type": "error", "content": failed}
    assert session.calls == 2 and session._entity_registry == registry  # the session is intact

    endpoint.restart()
    answer = session.run(TRIPLES)  # no new get_relations: the seen relations survived the outage
    assert PARIS in answer.splitlines()
    assert session.calls == 3 and session.trace[-1]["content"] == answer


def test_endpoint_hung_times_out_then_resumes(endpoint: Endpoint) -> None:
    session = _session(endpoint, timeout=1.0)
    assert "location.location.contains" in session.run(RELATIONS).splitlines()
    endpoint.signal(signal.SIGSTOP)
    try:
        start = time.monotonic()
        failed = session.run(TRIPLES)
        elapsed = time.monotonic() - start
    finally:
        endpoint.signal(signal.SIGCONT)
    assert failed == f"[KG query failed: SPARQL query to {endpoint.url} timed out after 1s]"
    assert elapsed < 3  # one timeout, no retry
    assert PARIS in session.run(TRIPLES).splitlines()


@pytest.fixture
def oxigraph_endpoint(demo_ntriples, tmp_path) -> Iterator[Endpoint]:
    path, _ = demo_ntriples
    yield from _oxigraph(path, tmp_path)


def test_http_session_survives_the_endpoint_going_away(oxigraph_endpoint: Endpoint, work_settings: Settings) -> None:
    out = work_settings.dataset_dir("demo")  # graph.npz + vocabularies; the triples live on the endpoint
    steps.build_graph("demo", work_settings.data_dir, out, steps.input_fingerprint("demo", work_settings.data_dir))
    settings = work_settings.model_copy(update={"sparql_endpoint": oxigraph_endpoint.url, "sparql_retries": 1,
                                                "sparql_timeout": 5.0})
    with TestClient(create_app(settings)) as client:
        def ask(query: str, sid: str = "s1", **extra: object):
            return client.post("/api/kg/query", json={"session_id": sid, "kg": "demo", "query": query, **extra})

        first = ask(RELATIONS)
        assert first.status_code == 200 and "location.location.contains" in first.json()["text"].splitlines()

        oxigraph_endpoint.kill()
        down = ask(TRIPLES)
        assert down.status_code == 200, down.text
        body = down.json()
        assert body["text"].startswith(f"[KG query failed: cannot reach SPARQL endpoint {oxigraph_endpoint.url}")
        assert body["call_number"] == 2 and {"type": "error", "content": body["text"]} in body["trace"]
        new = ask(RELATIONS, sid="s2", topics=["France"])  # a new session resolves its topic: no session to hold it
        assert new.status_code == 502 and "cannot reach SPARQL endpoint" in new.json()["detail"]
        datasets = client.get("/api/datasets")
        assert datasets.status_code == 502 and "cannot reach SPARQL endpoint" in datasets.json()["detail"]
        trace = client.get("/api/kg/sessions/s1/trace")
        assert trace.status_code == 200 and trace.json()["calls"] == 2

        oxigraph_endpoint.restart()
        back = ask(TRIPLES)
        assert back.status_code == 200 and PARIS in back.json()["text"].splitlines()
        assert back.json()["call_number"] == 3 and not back.json()["created"]
        assert ask(RELATIONS, sid="s2", topics=["France"]).status_code == 200
        assert client.get("/api/datasets").json()["demo"]["triples"] == 754
