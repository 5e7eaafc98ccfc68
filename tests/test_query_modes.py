"""Query modes (spec query-modes.md) on the demo network: sources per mode, budgets, special modes, prompt, LLM
answer and fallback over the scripted server, the HTTP route and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from fixtures.llm_server import Error, ScriptedLLMServer
from typer.testing import CliRunner

from kgrag.config import Settings
from kgrag.llm.client import ChatClient
from kgrag.modes.context import row_tokens, truncate
from kgrag.modes.index import ModeIndex
from kgrag.modes.params import ChatMessage, QueryParam
from kgrag.modes.query import FAIL_RESPONSE, kg_query
from kgrag.modes.search import SIMILARITY_BAND
from kgrag.network.loaders.demo import demo_network
from kgrag.network.store import NetworkStore
from kgrag.network.text.chunking import chunk_text
from kgrag.rank.token_count import TokenCounter

QUESTION = "Which films did Mariana Pereira direct?"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, NetworkStore]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('modes') / 'kn.db'}"
    store = NetworkStore(url)
    stats = store.load(*demo_network())
    assert stats.chunks > 0
    yield url, store
    store.close()


@pytest.fixture()
def store(demo_db: tuple[str, NetworkStore]) -> NetworkStore:
    return demo_db[1]


def ctx(store: NetworkStore, mode: str, **kw) -> dict:
    result = kg_query(QUESTION, store, "demo", QueryParam(mode=mode, only_need_context=True, **kw))
    assert result.response == ""
    return result.raw_data


def test_the_demo_network_has_chunks_linked_to_instances(store: NetworkStore) -> None:
    index = ModeIndex.for_store(store, "demo")
    assert len(index.chunk_ids) > 0 and (index.chunk_docs >= 0).all()
    assert index.chunk_has_vector.all() and index.has_vector.any()
    assert all(str(c).startswith("chunk-") for c in index.chunk_ids)
    # stable ids: a reload of the same data gives the same chunk ids
    again = NetworkStore("sqlite://")
    again.load(*demo_network())
    assert set(ModeIndex.build(again, "demo").chunk_ids) == set(index.chunk_ids)


@pytest.mark.parametrize(
    ("mode", "entities", "relations", "entity_chunks", "vector_chunks"),
    [
        ("local", True, False, True, False),
        ("global", True, True, False, False),
        ("hybrid", True, True, True, False),
        ("naive", False, False, False, True),
        ("mix", True, True, True, True),
    ],
)
def test_each_mode_searches_its_sources_only(
    store: NetworkStore, mode: str, entities: bool, relations: bool, entity_chunks: bool, vector_chunks: bool
) -> None:
    raw = ctx(store, mode)
    assert raw["searched"] == {"entities": entities, "relations": relations,
                               "chunks_via_entities": entity_chunks, "chunks_by_vector": vector_chunks}
    assert bool(raw["entities"]) == entities
    assert bool(raw["relations"]) == relations
    assert bool(raw["chunks"]) == (entity_chunks or vector_chunks)
    if entity_chunks and not vector_chunks:  # every chunk comes from a retrieved entity
        names = {e["instance_id"] for e in raw["entities"]}
        index = ModeIndex.for_store(store, "demo")
        docs = {str(index.entity_ids[index.chunk_docs[list(index.chunk_ids).index(c["chunk_id"])]])
                for c in raw["chunks"]}
        assert docs <= names


def test_mix_merges_both_chunk_routes(store: NetworkStore) -> None:
    naive = {c["chunk_id"] for c in ctx(store, "naive", chunk_top_k=5)["chunks"]}
    hybrid = {c["chunk_id"] for c in ctx(store, "hybrid", chunk_top_k=5)["chunks"]}
    mix = [c["chunk_id"] for c in ctx(store, "mix", chunk_top_k=5)["chunks"]]
    assert len(mix) == len(set(mix))  # deduplicated
    assert set(mix) == naive | hybrid


def test_entities_are_ordered_by_degree_and_edges_by_weight_then_degree(store: NetworkStore) -> None:
    index = ModeIndex.for_store(store, "demo")
    raw = ctx(store, "global", top_k=10)
    ids = [e["instance_id"] for e in raw["entities"]]
    row = {str(i): n for n, i in enumerate(index.entity_ids)}
    sims = [float(s) for s in ModeIndex_scores(store, raw)]
    bands = [int(np.floor(s / SIMILARITY_BAND + 1e-6)) for s in sims]
    assert bands == sorted(bands, reverse=True)  # by similarity band first …
    for band in set(bands):  # … then by degree within a band
        degrees = [int(index.degree[row[i]]) for i, b in zip(ids, bands, strict=True) if b == band]
        assert degrees == sorted(degrees, reverse=True)
    assert raw["keywords"]["high_level"]  # "direct" names a relation: its edges come first
    first = raw["relations"][0]["relation"]
    assert "directed_by" in first or "film" in first


def ModeIndex_scores(store: NetworkStore, raw: dict) -> list[float]:  # noqa: N802
    """The similarity of each kept entity to its best keyword (what search_entities ranked by)."""
    index = ModeIndex.for_store(store, "demo")
    words = [*raw["keywords"]["low_level"], *raw["keywords"]["high_level"]]
    vectors = np.stack([index.embedder.encode_query(w) for w in words])
    row = {str(i): n for n, i in enumerate(index.entity_ids)}
    return [float((index.entity_vectors[row[e["instance_id"]]] @ vectors.T).max()) for e in raw["entities"]]


def test_entity_budget_truncates_at_the_boundary(store: NetworkStore) -> None:
    index = ModeIndex.for_store(store, "demo")
    full = ctx(store, "local")
    rows = full["entities"]
    assert len(rows) > 4
    items = [int(np.flatnonzero(index.entity_ids == r["instance_id"])[0]) for r in rows]
    counts = row_tokens(index, "entity", items, rows, TokenCounter.default(), "id")
    exact = int(counts[:3].sum())
    kept = ctx(store, "local", max_entity_tokens=exact)
    assert len(kept["entities"]) == 3 and kept["tokens"]["entities"] == exact
    assert len(ctx(store, "local", max_entity_tokens=exact - 1)["entities"]) == 2
    assert ctx(store, "local", max_entity_tokens=0)["entities"] == []


def test_chunks_get_what_is_left_of_the_total(store: NetworkStore) -> None:
    raw = ctx(store, "mix")
    tokens = raw["tokens"]
    assert tokens["chunk_budget"] == (30000 - tokens["prompt_fixed"] - tokens["entities"] - tokens["relations"])
    assert tokens["chunks"] <= tokens["chunk_budget"]
    small = ctx(store, "mix", max_total_tokens=tokens["prompt_fixed"] + tokens["entities"] + tokens["relations"])
    assert small["chunks"] == [] and small["tokens"]["chunk_budget"] == 0


def test_truncate_keeps_the_longest_prefix_that_fits() -> None:
    rows = [{"n": i} for i in range(4)]
    assert truncate(rows, 10, np.array([3, 3, 4, 1])) == (rows[:3], 10)
    assert truncate(rows, 9, np.array([3, 3, 4, 1])) == (rows[:2], 6)
    assert truncate(rows, 2, np.array([3, 1, 1, 1])) == ([], 0)


def test_bypass_returns_the_failure_at_once_without_searching() -> None:
    closed = NetworkStore("sqlite://")  # has no network at all: any search would raise NetworkNotFound
    result = kg_query("anything", closed, "no-such-network", QueryParam(mode="bypass"))
    assert result.response == FAIL_RESPONSE and result.context == ""
    assert not any(result.raw_data["searched"].values()) and "keywords" not in result.raw_data


def test_preset_keywords_skip_extraction(store: NetworkStore) -> None:
    raw = ctx(store, "local", ll_keywords=["Neon Rain"], hl_keywords=["genre"])
    assert raw["keywords"] == {"high_level": ["genre"], "low_level": ["Neon Rain"], "source": "preset"}
    assert "Neon Rain" in [e["entity"] for e in raw["entities"][:40]]


def test_only_need_prompt_returns_the_prompt_with_history_and_user_prompt(store: NetworkStore) -> None:
    param = QueryParam(mode="hybrid", only_need_prompt=True, user_prompt="Answer in one sentence.",
                       response_type="Bullet Points",
                       conversation_history=[ChatMessage(role="user", content="Tell me about Neon Rain"),
                                             ChatMessage(role="assistant", content="Neon Rain is a 2005 film.")])
    result = kg_query(QUESTION, store, "demo", param)
    assert result.response == ""
    prompt = result.context
    assert "user: Tell me about Neon Rain" in prompt and "assistant: Neon Rain is a 2005 film." in prompt
    assert "Answer in one sentence." in prompt and "Bullet Points" in prompt
    assert "Knowledge Graph Data (Entity)" in prompt and "Reference Document List" in prompt
    assert prompt.rstrip().endswith(QUESTION)


def test_only_need_context_returns_context_and_raw_data(store: NetworkStore) -> None:
    result = kg_query(QUESTION, store, "demo", QueryParam(mode="mix", only_need_context=True))
    raw = result.raw_data
    assert result.response == "" and "Document Chunks" in result.context
    refs = {r["reference_id"] for r in raw["references"]}
    assert refs == {c["reference_id"] for c in raw["chunks"]} == set(range(1, len(refs) + 1))
    for chunk in raw["chunks"]:
        assert chunk["content"] in result.context
    assert set(raw["timings_ms"]) >= {"keywords", "search", "context"}


def test_without_llm_the_response_says_so_and_returns_the_context(store: NetworkStore) -> None:
    result = kg_query(QUESTION, store, "demo", QueryParam(mode="hybrid"))
    assert "No LLM is configured" in result.response and result.context
    assert result.raw_data["llm"] == "none"


def test_llm_answers_with_the_context_and_falls_back_when_it_fails(
    store: NetworkStore, llm_server: ScriptedLLMServer, llm_settings: Settings
) -> None:
    llm_server.script('{"high_level_keywords": ["directed"], "low_level_keywords": ["Mariana Pereira"]}',
                      "Mariana Pereira directed Neon Rain [1].")
    with ChatClient.from_settings(llm_settings) as client:
        history = [ChatMessage(role="user", content="earlier question")]
        result = kg_query(QUESTION, store, "demo", QueryParam(mode="hybrid", conversation_history=history), client)
        assert result.response == "Mariana Pereira directed Neon Rain [1]."
        assert result.raw_data["llm"] == "answered" and result.raw_data["keywords"]["source"] == "llm"
        system = llm_server.requests[1].messages[0]["content"]
        assert "user: earlier question" in system and "Knowledge Graph Data (Relationship)" in system
        assert llm_server.requests[1].messages[-1] == {"role": "user", "content": QUESTION}
        # every later call fails: keywords fall back to the rules, the answer to the context
        llm_server.script(*[Error(500, "down")] * 20)
        failed = kg_query(QUESTION, store, "demo", QueryParam(mode="hybrid"), client)
    assert failed.raw_data["keywords"]["source"] == "rules"
    assert failed.raw_data["llm"] == "failed" and "failed" in failed.response and failed.context
    assert any("keyword" in e for e in failed.raw_data["errors"])


def test_query_param_is_validated() -> None:
    with pytest.raises(ValueError, match="mode"):
        QueryParam(mode="sideways")
    with pytest.raises(ValueError, match="max_relation_tokens"):
        QueryParam(max_relation_tokens=-5)
    with pytest.raises(ValueError, match="extra"):
        QueryParam(top_k=3, unknown=1)
    assert QueryParam().fingerprint() == QueryParam().fingerprint() != QueryParam(top_k=5).fingerprint()


def test_http_route_answers_and_names_bad_fields(demo_db: tuple[str, NetworkStore], tmp_path: Path) -> None:
    from kgrag.api.app import create_app

    settings = Settings(database_url=demo_db[0], work_dir=tmp_path, llm_base_url="")
    with TestClient(create_app(settings)) as client:
        ok = client.post("/api/query", json={"query": QUESTION, "kn_id": "demo",
                                             "param": {"mode": "local", "only_need_context": True}})
        assert ok.status_code == 200 and set(ok.json()) == {"response", "context", "raw_data"}
        assert ok.json()["raw_data"]["mode"] == "local"
        for param, field in (({"mode": "weird"}, "param.mode"), ({"max_total_tokens": -1}, "param.max_total_tokens"),
                             ({"top_k": 0}, "param.top_k"), ({"bogus": 1}, "param.bogus")):
            bad = client.post("/api/query", json={"query": QUESTION, "kn_id": "demo", "param": param})
            assert bad.status_code == 400 and bad.json()["field"] == field, bad.json()
        assert client.post("/api/query", json={"query": "", "kn_id": "demo"}).status_code == 400
        assert client.post("/api/query", json={"query": "x", "kn_id": "nope"}).status_code == 404
        bypass = client.post("/api/query", json={"query": "x", "kn_id": "demo", "param": {"mode": "bypass"}})
        assert bypass.json()["response"] == FAIL_RESPONSE


def test_cli_query_json(demo_db: tuple[str, NetworkStore], monkeypatch: pytest.MonkeyPatch) -> None:
    from kgrag.cli import app
    from kgrag.config import get_settings

    monkeypatch.setenv("KGRAG_DATABASE_URL", demo_db[0])
    monkeypatch.delenv("KGRAG_LLM_BASE_URL", raising=False)
    get_settings.cache_clear()
    try:
        out = CliRunner().invoke(app, ["query", QUESTION, "--kn", "demo", "--mode", "naive", "--only-need-context",
                                       "--json"])
        assert out.exit_code == 0, out.output
        body = json.loads(out.output.strip().splitlines()[-1])
        assert body["response"] == "" and body["raw_data"]["mode"] == "naive" and body["raw_data"]["chunks"]
        tree = CliRunner().invoke(app, ["query", QUESTION, "--kn", "demo", "--mode", "local"])
        assert tree.exit_code == 0 and "mode local" in tree.output
        missing = CliRunner().invoke(app, ["query", "x", "--kn", "nope"])
        assert missing.exit_code != 0 and "not found" in missing.output
    finally:
        get_settings.cache_clear()


def test_chunker_packs_sentences_with_overlap() -> None:
    counter = TokenCounter.default()
    text = "".join(f"第{i}句话讲的是一种疾病的表现。" for i in range(40))
    pieces = chunk_text(text, counter, chunk_tokens=40, overlap_tokens=16)
    assert len(pieces) > 5
    assert all(n <= 40 and counter.count_one(p) == n for p, n in pieces)
    assert pieces[1][0].startswith(pieces[0][0].split("。")[-2][-8:]) or pieces[0][0].split("。")[-2] in pieces[1][0]
    joined = "".join(p for p, _ in pieces)
    assert all(f"第{i}句" in joined for i in range(40))
    long = "无标点" * 100
    assert all(n <= 40 for _, n in chunk_text(long, counter, 40, 8))


def test_a_recorded_alias_finds_its_entity() -> None:
    from kgrag.network.schema.model import DataProperty, Instance, KnowledgeNetwork, ObjectType, TextConfig

    ops = ["knn", "match", "==", "contain"]
    disease = ObjectType(id="Disease", name="Disease", display_key="name", data_properties=[
        DataProperty(name="name", type="string", condition_operations=ops),
        DataProperty(name="aliases", type="string[]", condition_operations=["contain"]),
        DataProperty(name="desc", type="text", condition_operations=["contain"])])
    network = KnowledgeNetwork(kn_id="tiny", name="tiny", object_types=[disease],
                               text=TextConfig(sections={"Disease": ["desc"]}, descriptions={"Disease": "desc"}))
    names = ["Myocardial infarction", "Migraine", "Measles", "Mumps", "Malaria"]
    instances = [Instance(object_type_id="Disease", id=f"d{i}", properties={
        "name": n, "aliases": ["kx-17 syndrome"] if i == 0 else [], "desc": f"{n} is a disease."})
        for i, n in enumerate(names)]
    store = NetworkStore("sqlite://")
    store.load(network, instances, [])
    raw = kg_query("what helps with kx-17 syndrome", store, "tiny",
                   QueryParam(mode="local", only_need_context=True, ll_keywords=["kx-17 syndrome"], top_k=3)).raw_data
    assert raw["entities"][0]["entity"] == "Myocardial infarction"
    assert raw["chunks"][0]["content"] == "Myocardial infarction is a disease."
