"""Deferred vectors (``kgrag kn load --defer-vectors``, kgrag/network/store/fill.py): a load that leaves its
instances' vectors out commits every other row and says so (``vectors_pending``); the network answers from its
text index and conditions at once and knn answers nothing (no index from a part of the vectors; kn_search's
message says its knn was not used); the fill makes
exactly the vectors an eager load makes, under a new version, then the ANN bases; an interrupted fill resumes; a
change committed while the vectors are pending (even between a chunk's read and its write) keeps its own vectors;
``kn load`` finishes a pending fill, ``kn list`` and ``/healthz`` show how far it is.

    .venv/bin/python -m pytest -q tests/test_kn_deferred_vectors.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from kgrag.api.app import create_app
from kgrag.cli import app
from kgrag.config import get_settings
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.schema import tables as t
from kgrag.network.schema.model import Condition, Instance
from kgrag.network.store import NetworkChanges, NetworkStore
from kgrag.rank.embedder_factory import TextEmbedder
from kgrag.search.kn_models import MSG_VECTORS_PENDING, KnSearchRequest
from kgrag.search.pipeline import kn_search

TEMPLATE = Path(__file__).resolve().parents[1] / "kgrag" / "network" / "examples" / "library"


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(tmp_path / "work"))
    for var in ("KGRAG_DATABASE_URL", "KGRAG_LLM_BASE_URL", "KGRAG_SPARQL_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    get_settings.cache_clear()
    folder = tmp_path / "library"
    shutil.copytree(TEMPLATE, folder)
    yield folder / "library.yaml"
    get_settings.cache_clear()


def _vectors(store: NetworkStore) -> dict[tuple[str, str, str], bytes]:
    with store.core.engine.connect() as conn:
        rows = conn.execute(select(t.vectors.c.type_id, t.vectors.c.item_id, t.vectors.c.field, t.vectors.c.vector)
                            .where(t.vectors.c.kind == "instance")).all()
    return {(r.type_id, r.item_id, r.field): bytes(r.vector) for r in rows}


def _eager(library: Path, tmp_path: Path) -> NetworkStore:
    store = NetworkStore(f"sqlite:///{tmp_path / 'eager.db'}")
    store.load(*load_declarative(library))
    return store


def _stop_after_a_chunk(stage: str, done: int, total: int) -> None:
    """A progress callback that interrupts a fill once its first chunk is written (as Ctrl-C would)."""
    if stage == "vectors" and 0 < done < total:
        raise KeyboardInterrupt


def test_a_deferred_load_answers_from_text_then_fills_the_vectors_an_eager_load_makes(
        library: Path, tmp_path: Path, db_url: str) -> None:
    eager = _eager(library, tmp_path)
    store = NetworkStore(db_url)  # SQLite and PostgreSQL
    stats = store.load(*load_declarative(library), defer_vectors=True)
    instances = eager.network_stats("library")["instances"]
    assert store.vectors_pending("library") == {"done": 0, "total": instances}  # every type has a knn field
    assert _vectors(store) == {} and store.network_stats("library")["embedder"] == eager.network_stats(
        "library")["embedder"]
    assert store.knn_scores("library", "instance", "Book", ["title"], "Nineteen Eighty-Four", 5) == {}
    found = store.query_instances("library", "Book", Condition(operation="match", field="title", value="1984"), 5)
    assert [h.id for h in found] == [h.id for h in eager.query_instances(
        "library", "Book", Condition(operation="match", field="title", value="1984"), 5)] and found
    assert store.all_vectors_pending() == {"library": {"done": 0, "total": instances}}
    answer = kn_search(KnSearchRequest(query="Pride and Prejudice", kn_id="library"), store, reranker=None)
    assert "Pride and Prejudice" in [n.instance_name for n in answer.nodes]  # from the text index
    assert answer.message == MSG_VECTORS_PENDING.format(done=0, total=instances)  # what it did not use
    heard: list[tuple[str, int, int]] = []
    filled = store.fill_vectors("library", lambda stage, done, total: heard.append((stage, done, total)))
    assert filled.filled and filled.instances == instances and filled.version != stats.version
    assert store.vectors_pending("library") is None and store.all_vectors_pending() == {}
    answer = kn_search(KnSearchRequest(query="Pride and Prejudice", kn_id="library"), store, reranker=None)
    assert "Pride and Prejudice" in [n.instance_name for n in answer.nodes] and answer.message == ""
    assert _vectors(store) == _vectors(eager) and filled.vectors == len(_vectors(eager))
    assert store.network_stats("library")["vectors"] == eager.network_stats("library")["vectors"]
    assert heard[0] == ("vectors", 0, instances) and heard[-1] == ("vectors", instances, instances)
    for type_id, field, query in (("Book", "title", "Nineteen Eighty-Four"), ("Author", "name", "Austen")):
        found, expected = (s.knn_scores("library", "instance", type_id, [field], query, 5) for s in (store, eager))
        assert list(found) == list(expected) and found == pytest.approx(expected, abs=1e-6) and found  # the same
        # vectors (a matrix of another row order: the last float bit may differ)
    again = store.fill_vectors("library")  # nothing pending: nothing done
    assert not again.filled and again.version == filled.version
    store.close()
    eager.close()


def test_an_interrupted_fill_resumes_where_the_vectors_stop(library: Path, tmp_path: Path) -> None:
    eager = _eager(library, tmp_path)
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    store.load(*load_declarative(library), defer_vectors=True)
    with pytest.raises(KeyboardInterrupt):
        store.filler.fill("library", _stop_after_a_chunk, chunk=3)
    pending = store.vectors_pending("library")
    assert pending is not None and pending["done"] == 3  # its progress committed with its vectors
    made = len(_vectors(store))
    assert 0 < made < len(_vectors(eager))
    assert store.knn_scores("library", "instance", "Book", ["title"], "1984", 5) == {}  # still pending
    filled = store.filler.fill("library", chunk=3)
    assert filled.filled and _vectors(store) == _vectors(eager)
    assert filled.vectors == len(_vectors(eager)) - made  # the vectors made before are not made again
    store.close()
    eager.close()


class _ChangingEmbedder:
    """The network's embedder that commits a change to the network the first time it is asked to encode: a
    change between a fill chunk's read and its write."""

    def __init__(self, inner: TextEmbedder, change: object) -> None:
        self.inner, self.change, self.model_name = inner, change, inner.model_name

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def encode(self, texts: list[str], batch_size: int = 128) -> np.ndarray:
        change, self.change = self.change, None
        if change is not None:
            change()
        return self.inner.encode(texts, batch_size=batch_size)


def test_a_change_while_vectors_are_pending_keeps_its_own_vectors(library: Path, db_url: str) -> None:
    store = NetworkStore(db_url)
    store.load(*load_declarative(library), defer_vectors=True)
    book = store.query_instances("library", "Book", None, 1)[0]
    renamed = {**book.properties, "title": "A Title Nobody Wrote"}
    upsert = NetworkChanges(upsert_instances=[Instance(object_type_id="Book", id=book.id, properties=renamed)])
    store.apply_changes("library", upsert)  # before the fill: its vector is the change's
    assert store.vectors_pending("library") is not None  # the change keeps the pending entry
    author = store.query_instances("library", "Author", None, 1)[0]
    moved = NetworkChanges(upsert_instances=[Instance(object_type_id="Author", id=author.id,
                                                      properties={**author.properties, "name": "Somebody Else"})])
    embedder = store.embedder_for("library")
    store.index._embedders["library"] = (store.network_version("library"), _ChangingEmbedder(
        embedder, lambda: store.apply_changes("library", moved)))  # committed mid-chunk
    filled = store.filler.fill("library")
    assert filled.filled and store.vectors_pending("library") is None
    vectors = _vectors(store)
    expected = {(k[0], k[1]): embedder.encode([text])[0] for k, text in (
        (("Book", book.id), "A Title Nobody Wrote"), (("Author", author.id), "Somebody Else"))}
    for (type_id, item_id), vector in expected.items():
        field = "title" if type_id == "Book" else "name"
        stored = np.frombuffer(vectors[(type_id, item_id, field)], np.float32)
        assert float(stored @ vector) > 0.9999  # the changed text's vector, not the one read before
    store.close()


def test_kn_load_defers_finishes_and_kn_list_and_healthz_say_how_far(library: Path, tmp_path: Path) -> None:
    db = get_settings().db_url
    runner = CliRunner()
    loaded = runner.invoke(app, ["kn", "load", str(library), "--defer-vectors"])
    assert loaded.exit_code == 0, loaded.output
    said = " ".join(loaded.output.split())
    assert "library answers from its text index and conditions now" in said and "vectors of library:" in said
    listed = runner.invoke(app, ["kn", "list", "--json"])
    assert json.loads(listed.output.splitlines()[0])["vectors_pending"] is None
    store = NetworkStore(db)  # a fill interrupted after one chunk of 4
    store.load(*load_declarative(library), defer_vectors=True, source=store.network_stats("library")["source"])
    with pytest.raises(KeyboardInterrupt):
        store.filler.fill("library", _stop_after_a_chunk, chunk=4)
    total = store.network_stats("library")["instances"]
    listed = runner.invoke(app, ["kn", "list", "--json"])
    assert json.loads(listed.output.splitlines()[0])["vectors_pending"] == {"done": 4, "total": total}
    table = runner.invoke(app, ["kn", "list"])
    assert f"4/{total}" in table.output
    with TestClient(create_app(get_settings())) as client:
        health = client.get("/healthz").json()
        assert health["vectors_pending"] == {"library": {"done": 4, "total": total}}
        again = runner.invoke(app, ["kn", "load", str(library)])  # same files: nothing read, the fill finished
        assert again.exit_code == 0, again.output
        said = " ".join(again.output.split())
        assert "nothing read" in said and f"its vectors follow (4 of {total} instances done)" in said
        assert client.get("/healthz").json()["vectors_pending"] == {}
    assert store.vectors_pending("library") is None
    store.close()


def test_a_big_type_gets_its_ann_bases_after_the_fill_not_before(library: Path, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "5")  # Books (9), Authors (6), Cities (9) … answer from ANN bases
    get_settings.cache_clear()
    store = NetworkStore(f"sqlite:///{tmp_path / 'kn.db'}")
    store.load(*load_declarative(library), defer_vectors=True)
    big = store.index.ann_types("library")
    assert "Book" in big and not store.index.ann_files.root.exists()  # nothing built from no vectors
    assert store.knn_scores("library", "instance", "Book", ["title"], "Pride and Prejudice", 3) == {}
    store.fill_vectors("library")
    assert store.index.ann_files.root.exists()
    found = store.knn_scores("library", "instance", "Book", ["title"], "Pride and Prejudice", 3)
    monkeypatch.setenv("KGRAG_KN_ANN_MIN_ROWS", "0")  # the exact scan, the reference
    get_settings.cache_clear()
    assert found and found == pytest.approx(store.knn_scores("library", "instance", "Book", ["title"],
                                                             "Pride and Prejudice", 3), abs=1e-3)
    store.close()
