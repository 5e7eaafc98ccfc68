"""``kgrag mcp`` with the official MCP client (the ``mcp`` SDK), on real data: the demo knowledge network in SQLite
and the demo KG prepared in a work dir.

- stdio (the client spawns ``.venv/bin/kgrag mcp``) and streamable HTTP (one ``kgrag mcp --transport http`` on a
  free loopback port for the module, always stopped): every tool listed with the object schema of its pydantic
  model, every tool called;
- get_relations then get_triples share one KG session per MCP session (the seen-relation check proves it); a
  second MCP session has its own; an HTTP session's KG sessions are dropped when the client ends it; a stateless
  connection names ``session_id``;
- bad arguments, unknown tools/networks/KGs, oversized arguments: ``isError`` results, and the server answers the
  next call; the per-call timeout and the result size limit (in process, same server code).

    .venv/bin/pytest tests/test_mcp.py --durations=0
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from harness.demo_sources import load_demo_sources
from harness.servers.kgrag_mcp import kgrag_mcp_http
from kgrag.config import Settings
from kgrag.mcp.server import MAX_ARGUMENT_CHARS, McpConfig, build_server
from kgrag.mcp.tools import TOOLS, ToolContext

KGRAG = Path(sys.executable).parent / "kgrag"
TOOL_NAMES = {"kn_search", "context_search", "query_object_instance", "query_instance_subgraph", "query_modes",
              "query_plan", "get_relations", "get_triples", "ask"}
MARIANA = {"operation": "==", "field": "name", "value": "Mariana Pereira"}
SPOUSE_QUESTION = "who is Dmitri Kamau's spouse"
SPOUSE_TRIPLE = "[Dmitri Kamau, person.spouse_s.people.marriage.spouse_1, Dmitri Quintero]"


@pytest.fixture(scope="module")
def mcp_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Settings, dict[str, str]]:
    """Settings and the environment of a server on the demo network (``kn_id`` demo) and the prepared demo KG,
    LLM-free (nothing is loaded yet: see ``mcp_env``)."""
    root = tmp_path_factory.mktemp("mcp")
    url = f"sqlite:///{root / 'kn.db'}"
    settings = Settings(work_dir=root / "work", database_url=url)
    env = {k: v for k, v in os.environ.items() if k not in ("KGRAG_LLM_BASE_URL", "KGRAG_SPARQL_ENDPOINT")}
    return settings, {**env, "KGRAG_WORK_DIR": str(settings.work_dir), "KGRAG_DATABASE_URL": url,
                      "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def mcp_env(mcp_paths: tuple[Settings, dict[str, str]]) -> dict[str, str]:
    """``mcp_paths``' environment, with the demo network loaded and the demo KG prepared."""
    settings, env = mcp_paths
    load_demo_sources(settings)
    return env


@pytest.fixture(scope="module")
def http_server(mcp_paths: tuple[Settings, dict[str, str]], request: pytest.FixtureRequest,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``kgrag mcp --transport http`` on a free loopback port, then the data loaded (it opens the stores on first
    use); its base URL (``/mcp``, ``/healthz``)."""
    with kgrag_mcp_http(mcp_paths[1], tmp_path_factory.mktemp("mcp-http") / "server.log") as base:
        request.getfixturevalue("mcp_env")  # the server opens the stores on first use
        yield base


def run(target: Any, body: Callable[[Client], Awaitable[None]], mode: str = "auto") -> None:
    """Connect the official client to ``target`` (a URL, stdio parameters or an in-process server), run ``body``."""

    async def main() -> None:
        with anyio.fail_after(180):
            async with Client(target, mode=mode, read_timeout_seconds=120) as client:
                await body(client)

    anyio.run(main)


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A successful call's JSON (``structuredContent``, which the text repeats)."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text
    assert not result.is_error, f"{name}: {text}"
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def tool_error(client: Client, name: str, arguments: dict[str, Any]) -> str:
    """A failed call's message (an ``isError`` result, not a protocol error)."""
    result = await client.call_tool(name, arguments)
    assert result.is_error, f"{name}({arguments}) should fail: {result.content}"
    return result.content[0].text


async def check_tools_listed(client: Client) -> None:
    listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == TOOL_NAMES
    for spec in TOOLS:
        assert listed[spec.name].input_schema["type"] == "object"
        assert listed[spec.name].input_schema == spec.model.model_json_schema(), spec.name
        assert listed[spec.name].description


async def check_network_tools(client: Client) -> None:
    """kn_search, context_search, the two query tools, the query modes and the agent on the demo network."""
    found = await call(client, "kn_search", {"query": "Which films did Mariana Pereira direct?", "kn_id": "demo"})
    assert {"Person", "Film"} <= {t["concept_id"] for t in found["object_types"]}
    context = await call(client, "context_search", {"query": "Which films did Mariana Pereira direct?",
                                                     "kn_id": "demo"})
    mapping = context["contextual_knowledge"]["keyword_mappings"][0]
    assert mapping["keyword"] == "Mariana Pereira" and mapping["object_type_id"] == "Person"
    person = await call(client, "query_object_instance", {"kn_id": "demo", "object_type": "Person",
                                                          "condition": MARIANA, "limit": 1})
    assert person["count"] == 1 and person["instances"][0]["id"] == "m.0254wf"
    films = await call(client, "query_instance_subgraph", {
        "kn_id": "demo", "start": {"object_type": "Person", "condition": MARIANA},
        "relation_type_path": ["film.director.film"]})
    assert {films["nodes"][i]["properties"]["name"] for i in films["ends"]} == {"Neon Rain", "The Glass Orchard"}
    films_n = await call(client, "query_object_instance", {"kn_id": "demo", "object_type": "Film", "count_only": True})
    planned = await call(client, "query_plan", {"kn_id": "demo", "question": "How many films are there?"})
    assert planned["answers"] == [str(films_n["count"])] and planned["plan"]["op"] == "count"
    assert 0 < planned["confidence"] <= 1 and planned["min_confidence"] > 0 and planned["unlinked"] == []
    ran = await call(client, "query_plan", {"kn_id": "demo", "plan": planned["plan"]})
    assert ran["answers"] == planned["answers"] and "confidence" not in ran
    modes = await call(client, "query_modes", {"query": "Which films did Mariana Pereira direct?", "kn_id": "demo",
                                         "param": {"mode": "hybrid", "only_need_context": True}})
    assert modes["response"] == "" and "Mariana Pereira" in modes["context"]
    assert modes["raw_data"]["mode"] == "hybrid"
    state = await call(client, "ask", {"question": "Which films did Mariana Pereira direct?", "kn": "demo"})
    assert state["topic"]["name"] == "Mariana Pereira"
    assert {"Neon Rain", "The Glass Orchard"} <= set(state["answers"])


async def check_kg_session(client: Client, **extra: Any) -> str:
    """get_relations then get_triples in one KG session: the triples of a returned relation, then a relation
    get_relations did not return is refused (the session remembers what it showed). The session's name."""
    first = await call(client, "get_relations", {"kg": "demo", "entity": "Dmitri Kamau", "question": SPOUSE_QUESTION,
                                                 "topics": ["Dmitri Kamau"], **extra})
    assert first["created"] and first["call_number"] == 1
    assert "people.person.spouse_s" in first["text"].splitlines()
    triples = await call(client, "get_triples", {"kg": "demo", "entity": "Dmitri Kamau",
                                                 "relations": ["people.person.spouse_s"], **extra})
    assert not triples["created"] and triples["call_number"] == 2
    assert SPOUSE_TRIPLE in triples["text"].splitlines()
    assert triples["session_id"] == first["session_id"]
    refused = await call(client, "get_triples", {"kg": "demo", "entity": "Dmitri Kamau",
                                                 "relations": ["film.film.genre"], **extra})
    assert refused["call_number"] == 3
    assert refused["text"].startswith("The relation 'film.film.genre' is not in the latest predicate list.")
    return first["session_id"]


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("kn_search", {}, "query: Field required"),
    ("kn_search", {"query": "   ", "kn_id": "demo"}, "query: Value error, must not be blank"),
    ("kn_search", {"query": "films", "kn_id": "no-such-network"}, "'no-such-network' not found"),
    ("context_search", {"query": ["not", "a", "string"], "kn_id": "demo"}, "query: Input should be a valid string"),
    ("query_object_instance", {"kn_id": "demo", "object_type": "Person", "limit": "many"}, "limit:"),
    ("query_object_instance", {"kn_id": "demo", "object_type": "Spaceship"}, "Spaceship"),
    ("query_object_instance", {"kn_id": "demo", "object_type": "Person", "surprise": 1}, "surprise: Extra inputs"),
    ("query_instance_subgraph", {"kn_id": "demo", "start": {"object_type": "Person"}, "relation_type_path": []},
     "relation_type_path: List should have at least 1 item"),
    ("query_modes", {"query": "films", "kn_id": "demo", "param": {"mode": "telepathy"}}, "param.mode:"),
    ("query_plan", {"kn_id": "demo"}, "give exactly one of question (to plan) and plan (to run)"),
    ("query_plan", {"kn_id": "demo", "plan": {"answer_type": "Spaceship"}}, "Spaceship"),
    ("get_relations", {"kg": "atlantis", "entity": "x", "session_id": "s"}, "unknown dataset 'atlantis'"),
    ("get_triples", {"kg": "demo", "entity": "Dmitri Kamau", "relations": "people.person.spouse_s"},
     "relations: Input should be a valid list"),
    ("ask", {"question": ""}, "question: String should have at least 1 character"),
    ("ask", {"question": "Which films?", "kn": "demo", "thread": "../../etc"}, "invalid thread id"),
    ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ("kn_search", {"query": "x" * (MAX_ARGUMENT_CHARS + 1), "kn_id": "demo"}, "too large"),
]


async def check_bad_arguments(client: Client) -> None:
    """Each bad call is an isError result naming the problem, and the next good call still answers."""
    for name, arguments, expected in BAD_CALLS:
        message = await tool_error(client, name, arguments)
        assert expected in message, (name, message)
        person = await call(client, "query_object_instance", {"kn_id": "demo", "object_type": "Person",
                                                              "condition": MARIANA, "limit": 1})
        assert person["count"] == 1


def test_http_session_every_tool_and_kg_session_per_mcp_session(http_server: str) -> None:
    """Over streamable HTTP with an MCP session (the handshake era): every tool; a second MCP session gets its
    own KG session; ending the MCP sessions drops their KG sessions."""
    names: list[str] = []

    def live_kg_sessions() -> int:
        return httpx.get(f"{http_server}/healthz", timeout=5).json()["kg_sessions"]

    before = live_kg_sessions()

    async def body(client: Client) -> None:
        await check_tools_listed(client)
        await check_network_tools(client)
        names.append(await check_kg_session(client))
        assert live_kg_sessions() == before + 1

    run(f"{http_server}/mcp", body, mode="legacy")
    assert live_kg_sessions() == before  # the client's DELETE ended the MCP session and its KG session
    run(f"{http_server}/mcp", lambda c: check_kg_session(c), mode="legacy")  # a fresh session starts at call 1
    assert names[0].startswith("mcp:")
    assert live_kg_sessions() == before


def test_http_stateless_needs_session_id_and_shares_it(http_server: str) -> None:
    """The 2026-07-28 protocol (the client's default) has no MCP session: get_relations says to pass session_id;
    with one, calls from two connections share that KG session."""

    async def first(client: Client) -> None:
        assert client.session.protocol_version == "2026-07-28"
        message = await tool_error(client, "get_relations", {"kg": "demo", "entity": "Dmitri Kamau"})
        assert "pass session_id" in message
        await check_kg_session(client, session_id="stateless-1")

    async def again(client: Client) -> None:
        more = await call(client, "get_triples", {"kg": "demo", "entity": "Dmitri Kamau",
                                                  "relations": ["people.person.spouse_s"],
                                                  "session_id": "stateless-1"})
        assert not more["created"] and more["call_number"] == 4 and more["session_id"] == "stateless-1"

    run(f"{http_server}/mcp", first)
    run(f"{http_server}/mcp", again)


def test_http_bad_arguments_are_tool_errors(http_server: str) -> None:
    run(f"{http_server}/mcp", check_bad_arguments)


def test_stdio_every_tool_one_kg_session_and_tool_errors(mcp_env: dict[str, str]) -> None:
    async def body(client: Client) -> None:
        await check_tools_listed(client)
        assert await check_kg_session(client) == "stdio"  # the process serves one client: one MCP session
        await check_bad_arguments(client)
        await check_network_tools(client)  # last: meanwhile the server loads the embedder in the background

    run(StdioServerParameters(command=str(KGRAG), args=["mcp"], env=mcp_env), body)


def test_timeout_and_result_limit(mcp_env: dict[str, str]) -> None:
    """In process (the same server code, the SDK's in-process transport): a call over the time limit and a result
    over the size limit come back as results, and the server goes on answering."""
    settings = Settings(work_dir=Path(mcp_env["KGRAG_WORK_DIR"]), database_url=mcp_env["KGRAG_DATABASE_URL"])

    async def slow(client: Client) -> None:
        message = await tool_error(client, "context_search", {"query": "Which films did Mariana Pereira direct?",
                                                              "kn_id": "demo"})
        assert "timed out after 0.001 s" in message

    run(build_server(McpConfig(tool_timeout=0.001, warm=False), context=ToolContext(settings)), slow)

    async def big(client: Client) -> None:
        result = await client.call_tool("query_object_instance", {"kn_id": "demo", "object_type": "Film",
                                                                  "limit": 20})
        text = result.content[0].text
        assert not result.is_error and result.structured_content is None
        assert len(text) < 1_200 and "[truncated: 1000 of" in text
        person = await call(client, "query_object_instance", {"kn_id": "demo", "object_type": "Person",
                                                              "condition": MARIANA, "limit": 1,
                                                              "properties": ["name"]})
        assert person["instances"][0]["properties"] == {"name": "Mariana Pereira"}

    run(build_server(McpConfig(max_result_chars=1_000, warm=False), context=ToolContext(settings)), big)
