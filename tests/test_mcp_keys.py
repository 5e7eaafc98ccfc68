"""``kgrag mcp --transport http`` behind scoped keys (kgrag/mcp/server.py with kgrag.api.security): a real server
process on a free loopback port over a database with the demo network, the prepared demo KG and two keys; the
official MCP client sends each key. A tool call naming a network or KG its key may not read gets the error of one
that is not served (no listing of the others); without a key the server answers 401; /healthz stays open.

    .venv/bin/python -m pytest -q tests/test_mcp_keys.py
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.demo_sources import load_demo_sources
from harness.servers.kgrag_mcp import kgrag_mcp_http
from kgrag.access.keys import KeyStore
from kgrag.config import Settings
from kgrag.network.store.core import make_engine

KGRAG = Path(sys.executable).parent / "kgrag"


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    root = tmp_path_factory.mktemp("mcp-keys")
    url = f"sqlite:///{root / 'kn.db'}"
    settings = Settings(work_dir=root / "work", database_url=url)
    load_demo_sources(settings)
    engine = make_engine(url)
    keys = KeyStore(engine)
    tokens = {"demo": keys.create("demo-reader", "read", kns=["demo"], kgs=["demo"], created_by="test")[0],
              "other": keys.create("other-reader", "read", kns=["other"], kgs=[], created_by="test")[0]}
    engine.dispose()
    env = {k: v for k, v in os.environ.items() if k not in ("KGRAG_LLM_BASE_URL", "KGRAG_SPARQL_ENDPOINT",
                                                            "KGRAG_API_KEY")}
    env.update(KGRAG_WORK_DIR=str(settings.work_dir), KGRAG_DATABASE_URL=url, HF_HUB_OFFLINE="1")
    with kgrag_mcp_http(env, root / "server.log") as base:
        yield base, tokens


def _calls(base: str, token: str, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    """``(is_error, text)`` of each tool call over one connection carrying ``token``."""
    out: list[tuple[bool, str]] = []

    async def main() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
        with anyio.fail_after(180):
            async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http),
                                    read_timeout_seconds=120) as client:
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    out.append((bool(result.is_error), result.content[0].text))

    anyio.run(main)
    return out


SEARCH_DEMO = ("kn_search", {"query": "Which films did Mariana Pereira direct?", "kn_id": "demo"})
SEARCH_NONE = ("kn_search", {"query": "Which films did Mariana Pereira direct?", "kn_id": "no_such_kn"})
RELATIONS_DEMO = ("get_relations", {"kg": "demo", "entity": "Dmitri Kamau", "session_id": "keys-1"})


def test_a_key_reads_its_graphs_and_nothing_of_the_others(keyed_server: tuple[str, dict[str, str]]) -> None:
    base, tokens = keyed_server
    (ok_search, _), (ok_relations, _) = _calls(base, tokens["demo"], [SEARCH_DEMO, RELATIONS_DEMO])
    assert not ok_search and not ok_relations  # is_error False: both answered
    (search_err, refused), (unknown_err, unknown), (kg_err, kg_refused) = _calls(
        base, tokens["other"], [SEARCH_DEMO, SEARCH_NONE, RELATIONS_DEMO])
    assert search_err and unknown_err and kg_err
    assert refused.replace("'demo'", "X") == unknown.replace("'no_such_kn'", "X")  # the same as a missing network
    assert "unknown dataset 'demo'" in kg_refused and "known datasets are none." in kg_refused
    (ask_err, asked), (_, asked_unknown) = _calls(base, tokens["other"], [
        ("ask", {"question": "Which films did Mariana Pereira direct?", "kn": "demo"}),
        ("ask", {"question": "Which films did Mariana Pereira direct?", "kn": "no_such_kn"})])
    answer, answer_unknown = json.loads(asked)["answer"], json.loads(asked_unknown)["answer"]
    assert not ask_err and "unknown knowledge network 'demo'" in answer  # the agent: as a network not there
    assert answer.replace("'demo'", "X") == answer_unknown.replace("'no_such_kn'", "X")


def test_without_a_key_the_server_answers_401_but_healthz(keyed_server: tuple[str, dict[str, str]]) -> None:
    base, _ = keyed_server
    assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
    resp = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                      headers={"Accept": "application/json, text/event-stream"}, timeout=5)
    assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
    bad = httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                     headers={"Authorization": "Bearer kgr_000000000000_" + "A" * 43}, timeout=5)
    assert bad.status_code == 401
