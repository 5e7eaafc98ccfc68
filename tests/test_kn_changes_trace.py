"""A deleted instance leaves no trace, an inserted one is served — in every place a served process reads, with
the caches a running process holds: examples/library loaded through ``kgrag kn load``; a "served" store answers
(warming every per-version cache), another store (another process, as far as the served one can tell) deletes
The Hobbit and inserts The Silmarillion; the served store then answers from the new version in each place.

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_changes_trace.py
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fixtures.library_kn import load_library
from sqlalchemy import select

from kgrag.config import get_settings
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Instance, Link
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.network.store.core import StoreCore

KN = "library"
GONE, NEW = "b:hobbit", "b:silmarillion"
CHANGE = NetworkChanges(
    upsert_instances=[Instance(object_type_id="Book", id=NEW,
                               properties={"title": "The Silmarillion", "year": 1977, "pages": 365})],
    delete_instances=[("Book", GONE)],
    upsert_links=[Link(relation_type_id="wrote", source_id="a:tolkien", target_id=NEW)],
)


def kn_search_view(store: NetworkStore, query: str) -> str:
    from kgrag.search.kn_models import KnSearchRequest
    from kgrag.search.pipeline import kn_search

    return kn_search(KnSearchRequest(query=query, kn_id=KN), store, reranker=None).model_dump_json()


def context_search_view(store: NetworkStore, query: str) -> str:
    from kgrag.search.kn_models import KnSearchRequest
    from kgrag.search.pipeline import context_search

    return context_search(KnSearchRequest(query=query, kn_id=KN), store, use_llm=False,
                          reranker=None).model_dump_json()


def modes_view(store: NetworkStore, query: str) -> str:
    from kgrag.modes.params import QueryParam
    from kgrag.modes.query import kg_query

    return "\n".join(kg_query(query, store, KN, QueryParam(mode=mode, only_need_context=True)).context
                     for mode in ("local", "global", "hybrid", "mix"))


def ask(question: str) -> dict[str, Any]:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    return graph.invoke({"question": question, "kn_id": KN}, context=AgentContext())


def fts_items(store: NetworkStore, token: str) -> set[str]:
    """Item ids whose text rows the FTS5 index finds for ``token`` (SQLite), read from the index itself."""
    with store.engine.connect() as conn:
        rows = conn.exec_driver_sql("SELECT r.item_id FROM kn_text JOIN kn_text_rows AS r ON r.id = kn_text.rowid "
                                    "WHERE kn_text MATCH ?", (f'text : "{token}"',)).all()
    return {r[0] for r in rows}


def vector_items(store: NetworkStore) -> set[str]:
    with store.engine.connect() as conn:
        return set(conn.execute(select(t.vectors.c.item_id).where(t.vectors.c.kn_id == KN)).scalars())


def views(store: NetworkStore) -> dict[str, Any]:
    """What every place serves about The Hobbit and The Silmarillion."""
    from kgrag.console.data import network_schema

    return {
        "kn_search": kn_search_view(store, "The Hobbit") + kn_search_view(store, "The Silmarillion"),
        "context_search": context_search_view(store, "Who wrote The Hobbit?")
        + context_search_view(store, "Who wrote The Silmarillion?"),
        "modes": modes_view(store, "The Hobbit by Tolkien") + modes_view(store, "The Silmarillion by Tolkien"),
        "agent": (ask("How many pages does The Hobbit have?"), ask("How many pages does The Silmarillion have?")),
        "console": network_schema(store, KN),
        "fts": fts_items(store, "hobbit") | fts_items(store, "silmarillion"),
        "vectors": vector_items(store),
        "knn": store.knn_scores(KN, "instance", "Book", ["title"], "The Hobbit", 20)
        | store.knn_scores(KN, "instance", "Book", ["title"], "The Silmarillion", 20),
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], dict[str, Any], str]]:
    """``(views before, views after, the served store's version after)``: the served store answers before and
    after another store applies :data:`CHANGE`."""
    root = tmp_path_factory.mktemp("trace")
    db, _ = load_library(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KGRAG_WORK_DIR", str(root / "work"))
        mp.setenv("KGRAG_DATABASE_URL", db)
        for var in ("KGRAG_LLM_BASE_URL", "KGRAG_SPARQL_ENDPOINT"):
            mp.delenv(var, raising=False)
        # a running process trusts its cached version for up to a second: make that now
        mp.setattr(StoreCore, "SCHEMA_RECHECK_SECONDS", 0.0)
        get_settings.cache_clear()
        from kgrag.agent.resources import resources_for

        store = resources_for(get_settings()).networks.store  # the agent's own store: one served process
        try:
            before = views(store)
            writer = NetworkStore(db)
            stats = writer.apply_changes(KN, CHANGE)
            writer.close()
            assert (stats.instances_inserted, stats.instances_deleted) == (1, 1)
            yield before, views(store), store.network_version(KN)
        finally:
            get_settings.cache_clear()


def test_kn_search(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert GONE in before["kn_search"] and NEW not in before["kn_search"]
    assert GONE not in after["kn_search"] and "The Hobbit" not in after["kn_search"]
    assert NEW in after["kn_search"]


def test_context_search(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert "The Hobbit" in before["context_search"]
    assert "The Hobbit" not in after["context_search"] and GONE not in after["context_search"]
    assert "The Silmarillion" in after["context_search"]


def test_query_modes(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert "The Hobbit" in before["modes"] and "The Silmarillion" not in before["modes"]
    assert "The Hobbit" not in after["modes"] and "The Silmarillion" in after["modes"]


def test_agent_answer(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert before["agent"][0]["answers"] == ["310"] and before["agent"][1]["answers"] != ["365"]
    # the question may now link to another book (a fuzzy match), never to the deleted one
    assert "310" not in after["agent"][0]["answers"] and GONE not in str(after["agent"][0])
    assert (after["agent"][0].get("topic") or {}).get("name") != "The Hobbit"
    assert after["agent"][1]["answers"] == ["365"]


def test_console_schema_counts(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    books = {side: next(ot for ot in view["console"]["object_types"] if ot["id"] == "Book")
             for side, view in (("before", before), ("after", after))}
    assert books["after"]["instances"] == books["before"]["instances"]  # one gone, one new
    wrote = {side: next(rt for rt in view["console"]["relation_types"] if rt["id"] == "wrote")["links"]
             for side, view in (("before", before), ("after", after))}
    assert wrote["after"] == wrote["before"]  # Tolkien wrote The Hobbit before, The Silmarillion after
    genre = {side: next(rt for rt in view["console"]["relation_types"] if rt["id"] == "genre")["links"]
             for side, view in (("before", before), ("after", after))}
    assert genre["after"] == genre["before"] - 1  # The Hobbit's genre link went with it


def test_console_node(served: tuple[dict, dict, str]) -> None:
    from kgrag.agent.resources import resources_for
    from kgrag.console.data import NodeNotFound, network_node

    store = resources_for(get_settings()).networks.store
    assert network_node(store, KN, NEW)["name"] == "The Silmarillion"
    with pytest.raises(NodeNotFound):
        network_node(store, KN, GONE)


def test_fts_index(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert before["fts"] == {GONE}
    assert after["fts"] == {NEW}


def test_vectors(served: tuple[dict, dict, str]) -> None:
    before, after, _ = served
    assert GONE in before["vectors"] and GONE in before["knn"]
    assert GONE not in after["vectors"] and GONE not in after["knn"]
    assert NEW in after["vectors"] and NEW in after["knn"]
