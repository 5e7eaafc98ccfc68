"""``langgraph dev`` behind the scoped keys (langgraph.json's ``auth``: kgrag/api/langgraph_auth.py) over a copy
of the medical network with two keys: without a key the API and the mounted routes answer 401; a key's threads are
its own (another key gets 404); a run on a network its key may not read is refused before the graph runs; store
items and crons are the key's own; the agent routes mounted beside check the same keys.

    .venv/bin/python -m pytest -q tests/test_langgraph_keys.py
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import httpx
import pytest
from langgraph_sdk import get_sync_client

from harness.servers.langgraph_dev import langgraph_dev
from kgrag.access.keys import KeyStore
from kgrag.errors import KgragError
from kgrag.network.store.core import make_engine


@pytest.fixture(scope="module")
def keyed_langgraph(medical_db: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    work = tmp_path_factory.mktemp("langgraph-keys")
    copy = work / "kn.db"  # keys turn auth on: not in the session's shared medical database
    with sqlite3.connect(medical_db.removeprefix("sqlite:///")) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    url = f"sqlite:///{copy}"
    engine = make_engine(url)
    keys = KeyStore(engine)
    tokens = {"medical": keys.create("medical-reader", "read", kns=["medical"], created_by="test")[0],
              "other": keys.create("other-reader", "read", kns=["other"], created_by="test")[0]}
    engine.dispose()
    env = {"KGRAG_DATABASE_URL": url, "KGRAG_WORK_DIR": str(work / "work"), "KGRAG_LLM_BASE_URL": "",
           "KGRAG_API_KEY": ""}
    try:
        with langgraph_dev(env=env, log_path=work / "langgraph.log") as base:
            yield base, tokens
    except KgragError as exc:
        pytest.fail(str(exc))


def _client(base: str, token: str):  # noqa: ANN202
    return get_sync_client(url=base, headers={"Authorization": f"Bearer {token}"})


def test_threads_and_runs_answer_only_to_their_key(keyed_langgraph: tuple[str, dict]) -> None:
    base, tokens = keyed_langgraph
    assert httpx.post(f"{base}/threads", json={}, timeout=30).status_code == 401
    assert httpx.post(f"{base}/threads", json={}, headers={"Authorization": "Bearer kgr_000000000000_" + "A" * 43},
                      timeout=30).status_code == 401
    mine, theirs = _client(base, tokens["medical"]), _client(base, tokens["other"])
    thread = mine.threads.create()
    assert mine.threads.get(thread["thread_id"])["metadata"]["owner"] == "medical-reader"
    final = mine.runs.wait(thread["thread_id"], "agent", input={"question": "百日咳吃什么药", "kn_id": "medical"})
    assert final["topic"]["name"] == "百日咳"
    other = httpx.get(f"{base}/threads/{thread['thread_id']}", timeout=30,
                      headers={"Authorization": f"Bearer {tokens['other']}"})
    assert other.status_code == 404  # another key's thread: as if it did not exist
    assert thread["thread_id"] not in {t["thread_id"] for t in theirs.threads.search()}
    refused = theirs.runs.wait(None, "agent", input={"question": "百日咳吃什么药", "kn_id": "medical"})
    unknown = theirs.runs.wait(None, "agent", input={"question": "百日咳吃什么药", "kn_id": "nope"})
    assert "unknown knowledge network 'medical'" in refused["answer"]  # as for a network that is not there
    assert refused["answer"].replace("medical", "X") == unknown["answer"].replace("nope", "X")
    forged = theirs.runs.wait(None, "agent", input={"question": "百日咳吃什么药", "kn_id": "medical"},
                              context={"readable_kns": ["medical"]})  # a caller's context does not widen its key
    assert "unknown knowledge network 'medical'" in forged["answer"]
    unnamed = httpx.post(f"{base}/runs/wait", timeout=60, headers={"Authorization": f"Bearer {tokens['other']}"},
                         json={"assistant_id": "agent", "input": {"question": "百日咳吃什么药"}})
    assert unnamed.status_code == 400


def test_store_items_and_crons_are_the_keys_own(keyed_langgraph: tuple[str, dict]) -> None:
    base, tokens = keyed_langgraph
    mine, theirs = _client(base, tokens["medical"]), _client(base, tokens["other"])
    mine.store.put_item(["notes"], "k1", {"text": "mine"})
    theirs.store.put_item(["notes"], "k1", {"text": "theirs"})  # the same namespace and key: a different item
    assert mine.store.get_item(["notes"], "k1")["value"] == {"text": "mine"}
    assert [i["value"] for i in theirs.store.search_items(["notes"])["items"]] == [{"text": "theirs"}]
    assert theirs.store.search_items(["medical-reader"])["items"] == []  # naming the other key's space: its own
    thread = mine.threads.create()
    cron = mine.crons.create_for_thread(thread["thread_id"], "agent", schedule="0 0 1 1 *",
                                        input={"question": "百日咳吃什么药", "kn_id": "medical"})
    assert cron["cron_id"] in {c["cron_id"] for c in mine.crons.search()}
    assert cron["cron_id"] not in {c["cron_id"] for c in theirs.crons.search()}


def test_the_mounted_routes_check_the_same_keys(keyed_langgraph: tuple[str, dict]) -> None:
    base, tokens = keyed_langgraph
    search = {"query": "百日咳", "kn_id": "medical"}
    path = f"{base}/api/agent-retrieval/in/v1/kn/kn_search"
    assert httpx.post(path, json=search, timeout=120).status_code == 401
    assert httpx.post(path, json=search, timeout=120,
                      headers={"Authorization": f"Bearer {tokens['medical']}"}).status_code == 200
    assert httpx.post(path, json=search, timeout=120,
                      headers={"Authorization": f"Bearer {tokens['other']}"}).status_code == 404
    assert httpx.get(f"{base}/", timeout=30).status_code == 200  # the page itself holds no data
