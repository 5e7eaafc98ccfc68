"""The console's data (kgrag.console.data) on real stores: the demo KG's graph as `kgrag prepare --dataset demo`
builds it (its graph step) and examples/library loaded through `kgrag kn load`; expected values come from the
source files and the demo's own triple records, not from the functions under test."""

from __future__ import annotations

import csv
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.fake_embedder import HashEmbedder
from fixtures.library_kn import load_library

from kgrag.config import Settings, get_settings
from kgrag.console import data
from kgrag.console.data import NodeNotFound, kg_node, kg_schema, network_node, network_schema, sources
from kgrag.data.demo import demo_kg
from kgrag.data.registry import register, registered_specs
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError, NetworkNotFound
from kgrag.graph.iri import local_id
from kgrag.network.schema.model import DataProperty, Instance, KnowledgeNetwork, ObjectType
from kgrag.network.store import NetworkStore
from kgrag.prep import steps

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library"
LIBRARY_TYPES = {"Author": "authors.csv", "Book": "books.csv", "Genre": "genres.csv", "Publisher": "publishers.csv",
                 "City": "cities.jsonl"}


def _rows(file: str) -> list[dict]:
    path = EXAMPLE / file
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def demo_work(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A work dir with the demo's graph.npz written by prepare's graph step; and that step's counts."""
    work = tmp_path_factory.mktemp("console-demo") / "work"
    data_dir = get_settings().data_dir
    counts = steps.build_graph("demo", data_dir, work / "demo", steps.input_fingerprint("demo", data_dir))
    return work, counts


@pytest.fixture
def settings(demo_work: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("KGRAG_WORK_DIR", str(demo_work[0]))
    for var in ("KGRAG_SPARQL_ENDPOINT", "KGRAG_LLM_BASE_URL", "KGRAG_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetworkStore]:
    """examples/library loaded as ``library`` through ``kgrag kn load``."""
    db, _ = load_library(tmp_path_factory.mktemp("console-library"))
    opened = NetworkStore(db)
    yield opened
    opened.close()


# ---------------------------------------------------------------------------------------------- sources
def test_sources(settings: Settings, store: NetworkStore, demo_work: tuple[Path, dict]) -> None:
    out = sources(settings, store)
    assert out["networks"] == [{"id": "library", "name": "Library"}]
    kgs = {kg["id"]: kg for kg in out["kgs"]}
    assert [kg["id"] for kg in out["kgs"]] == sorted(registered_specs(settings))
    assert {"demo", "metaqa"} <= set(kgs)
    assert kgs["demo"] == {"id": "demo", "name": "demo", "prepared": True, "triples": demo_work[1]["triples"]}
    assert kgs["metaqa"]["prepared"] is False and kgs["metaqa"]["triples"] is None
    for name, spec in registered_specs(settings).items():  # an endpoint-only KG is served without a local graph
        if spec.reader == "endpoint":
            assert kgs[name]["prepared"] is True and kgs[name]["triples"] is None


def test_sources_lists_registered_kgs(work_settings: Settings) -> None:
    register(DatasetSpec(name="remote", reader="endpoint", endpoint="http://127.0.0.1:9/sparql"), work_settings)
    register(DatasetSpec(name="mine", reader="triples", triples=("/nowhere/kg.nt",)), work_settings)
    empty = NetworkStore("sqlite://")
    try:
        out = sources(work_settings, empty)
    finally:
        empty.close()
    kgs = {kg["id"]: kg for kg in out["kgs"]}
    assert out["networks"] == []
    assert kgs["remote"] == {"id": "remote", "name": "remote", "prepared": True, "triples": None}
    assert kgs["mine"] == {"id": "mine", "name": "mine", "prepared": False, "triples": None}
    assert kgs["demo"]["prepared"] is False  # a fresh work dir: nothing prepared
    assert [kg["id"] for kg in out["kgs"]] == sorted(kgs)


# ---------------------------------------------------------------------------------------------- networks
def test_network_schema_counts(store: NetworkStore) -> None:
    schema = network_schema(store, "library")
    assert (schema["kind"], schema["id"], schema["name"]) == ("kn", "library", "Library")
    types = {ot["id"]: ot for ot in schema["object_types"]}
    assert list(types) == list(LIBRARY_TYPES)  # declaration order
    assert types["Book"]["display_key"] == "title" and types["Author"]["display_key"] == "name"
    for type_id, file in LIBRARY_TYPES.items():
        rows = _rows(file)
        assert types[type_id]["instances"] == len(rows), type_id
        for prop in types[type_id]["properties"]:
            filled = sum(1 for r in rows if r.get(prop["name"]) not in (None, ""))
            assert prop["count"] == filled, (type_id, prop)
    assert [(p["name"], p["type"]) for p in types["Book"]["properties"]] == [
        ("title", "string"), ("year", "integer"), ("pages", "integer")]
    links = Counter(r["relation_type_id"] for r in _rows("links.csv"))
    assert {rt["id"]: rt["links"] for rt in schema["relation_types"]} == dict(links)
    wrote = next(rt for rt in schema["relation_types"] if rt["id"] == "wrote")
    assert (wrote["source"], wrote["target"], wrote["name"]) == ("Author", "Book", "wrote")


def test_empty_values_are_not_counted(db_url: str) -> None:
    """On both backends: missing, null, "" and [] are no value; numbers, lists and text are."""
    net = KnowledgeNetwork(kn_id="tiny", name="Tiny", object_types=[ObjectType(
        id="T", name="t", data_properties=[DataProperty(name="name"), DataProperty(name="note"),
                                           DataProperty(name="tags", type="list<string>"),
                                           DataProperty(name="size", type="integer")])])
    rows = [{"name": "a", "note": "x", "tags": ["p"], "size": 0}, {"name": "b", "note": "", "tags": [], "size": 2},
            {"name": "c", "note": None}, {"name": "d"}]
    tiny = NetworkStore(db_url, embedder=HashEmbedder("fake:console"))
    try:
        tiny.load(net, [Instance(object_type_id="T", id=r["name"], properties=r) for r in rows], [])
        (ot,) = network_schema(tiny, "tiny")["object_types"]
        node = network_node(tiny, "tiny", "b")
    finally:
        tiny.close()
    assert ot["instances"] == 4
    assert {p["name"]: p["count"] for p in ot["properties"]} == {"name": 4, "note": 1, "tags": 1, "size": 2}
    assert node == {"id": "b", "name": "b", "object_type": "T", "properties": rows[1]}


def test_network_node(store: NetworkStore) -> None:
    book = network_node(store, "library", "b:1984")
    assert book["id"] == "b:1984" and book["object_type"] == "Book" and book["name"] == "1984"
    assert book["properties"]["title"] == "1984" and book["properties"]["year"] == 1949
    author = network_node(store, "library", "a:orwell")
    assert (author["object_type"], author["name"]) == ("Author", "George Orwell")
    with pytest.raises(NodeNotFound, match="no instance 'b:nope' in network 'library'") as info:
        network_node(store, "library", "b:nope")
    assert isinstance(info.value, KgragError) and isinstance(info.value, LookupError)


def test_unknown_network(store: NetworkStore) -> None:
    for call in (lambda: network_schema(store, "nope"), lambda: network_node(store, "nope", "b:1984")):
        with pytest.raises(NetworkNotFound, match="unknown network 'nope': loaded networks are library"):
            call()


# ---------------------------------------------------------------------------------------------- triple KGs
def test_kg_schema(settings: Settings, demo_work: tuple[Path, dict]) -> None:
    schema = kg_schema(settings, "demo")
    counts = demo_work[1]
    assert (schema["kind"], schema["id"]) == ("kg", "demo")
    assert schema["triples"] == counts["triples"] and schema["entities"] == counts["entities"]
    per = [r["triples"] for r in schema["relations"]]
    assert sum(per) == schema["triples"] and per == sorted(per, reverse=True) and min(per) > 0
    assert len(per) == counts["relations"]
    distinct = {(t.head, t.relation, t.tail) for t in demo_kg().triples}
    expected = Counter(r for _, r, _ in distinct)
    assert {r["id"]: r["triples"] for r in schema["relations"]} == dict(expected)
    assert "film.film.directed_by" in {r["id"] for r in schema["relations"]}


def test_unknown_or_unprepared_kg(settings: Settings) -> None:
    with pytest.raises(KgragError, match="unknown dataset 'nope'"):
        kg_schema(settings, "nope")
    with pytest.raises(KgragError, match=r"KG 'metaqa' is not prepared: run `kgrag prepare --dataset metaqa`"):
        kg_schema(settings, "metaqa")
    with pytest.raises(KgragError, match="is not prepared"):
        kg_node(settings, "metaqa", "m.0yr8s")


def _demo_neighbourhood(entity_name: str) -> tuple[str, set[tuple[str, str, str]], int]:
    """(id, every [subject, relation, object] triple around it with unnamed ends by id, outgoing count) from the
    demo's own records."""
    kg = demo_kg()
    key = next(k for k, n in kg.names.items() if n == entity_name)

    def label(k: str) -> str:
        return kg.names.get(k) or local_id(k, kg.id_style)

    distinct = {(t.head, t.relation, t.tail) for t in kg.triples}
    around = {(label(h), r, label(t)) for h, r, t in distinct if key in (h, t)}
    return local_id(key, kg.id_style), around, sum(1 for h, _, _ in distinct if h == key)


def test_kg_node(settings: Settings) -> None:
    entity_id, around, outgoing = _demo_neighbourhood("Carnival Lights")
    node = kg_node(settings, "demo", entity_id)
    assert node["id"] == entity_id and node["name"] == "Carnival Lights"
    assert len(around) <= 50 and node["more"] is False
    assert {tuple(t) for t in node["triples"]} == around and len(node["triples"]) == len(around)
    assert ["Carnival Lights", "film.film.directed_by", "Uma Halvorsen"] in node["triples"]
    # outgoing first, then incoming
    assert all(t[0] == "Carnival Lights" for t in node["triples"][:outgoing])
    assert all(t[2] == "Carnival Lights" for t in node["triples"][outgoing:])

    short = kg_node(settings, "demo", entity_id, limit=3)
    assert short["triples"] == node["triples"][:3] and short["more"] is True
    assert kg_node(settings, "demo", entity_id, limit=0) == {**node, "triples": [], "more": True}
    assert kg_node(settings, "demo", entity_id, limit=len(around))["more"] is False

    with pytest.raises(NodeNotFound, match="no entity 'm.nope' in KG 'demo'"):
        kg_node(settings, "demo", "m.nope")


def test_the_graph_is_loaded_once_per_file_version(settings: Settings) -> None:
    path = settings.dataset_dir("demo") / "graph.npz"
    first = data._graph(path)
    assert data._graph(path) is first
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    try:
        assert data._graph(path) is not first
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
