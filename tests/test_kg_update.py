"""``kgrag kg update`` / ``kg remove`` / versions: a delta reaches the store, the CSR graph, the tools and the agent,
and equals a fresh import of the changed files; bad input changes nothing; a SIGKILL anywhere leaves one whole
version; readers during updates see one version per request; a served process follows without a restart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from fixtures.kg_import import import_kg
from typer.testing import CliRunner

from kgrag.cli import app
from kgrag.data.registry import dataset_spec, register
from kgrag.data.spec import DatasetSpec
from kgrag.errors import KgragError
from kgrag.graph import OxigraphStore
from kgrag.graph.csr import CSRGraph
from kgrag.graph.iri import NAME_PREDICATE, VALUE_PREDICATE
from kgrag.graph.mapped import string_hashes
from kgrag.graph.versions.version_file import VERSIONS_DIR, graph_file, read_version, store_dir, version_token
from kgrag.prep.manifest import step_result
from kgrag.prep.update import update_kg
from kgrag.tools.factory import open_session

runner = CliRunner()
EX = "http://ex.org/"
LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
BASE = f"""<{EX}alice> <{EX}knows> <{EX}bob> .
<{EX}bob> <{EX}knows> <{EX}carol> .
<{EX}carol> <{EX}worksAt> <{EX}acme> .
<{EX}acme> <{EX}founded> "1990"^^<http://www.w3.org/2001/XMLSchema#gYear> .
<{EX}alice> <{LABEL}> "Alice" .
<{EX}bob> <{LABEL}> "Bob" .
<{EX}carol> <{LABEL}> "Carol" .
<{EX}acme> <{LABEL}> "Acme Corp" .
"""
ADD = f"""<{EX}dave> <{EX}knows> <{EX}alice> .
<{EX}dave> <{LABEL}> "Dave" .
<{EX}alice> <{EX}bornIn> <{EX}paris> .
<{EX}paris> <{LABEL}> "Paris" .
<{EX}alice> <{EX}knows> <{EX}bob> .
"""
DELETE = f"""<{EX}carol> <{EX}worksAt> <{EX}acme> .
<{EX}acme> <{EX}founded> "1990"^^<http://www.w3.org/2001/XMLSchema#gYear> .
<{EX}acme> <{LABEL}> "Acme Corp" .
<{EX}nobody> <{EX}knows> <{EX}bob> .
"""


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def tiny(work_settings, tmp_path):
    """KG ``tiny`` imported from BASE; the add / delete files and the changed full state written beside it."""
    files = {"base": BASE, "add": ADD, "delete": DELETE}
    paths = {}
    for name, text in files.items():
        paths[name] = tmp_path / f"{name}.nt"
        paths[name].write_text(text, encoding="utf-8")
    changed = [line for line in _lines(BASE) if line not in _lines(DELETE)]
    changed += [line for line in _lines(ADD) if line not in changed]
    paths["changed"] = tmp_path / "changed.nt"
    paths["changed"].write_text("\n".join(changed) + "\n", encoding="utf-8")
    import_kg(work_settings, "tiny", [paths["base"]])
    return work_settings, paths


def _current(settings, name: str) -> tuple[CSRGraph, OxigraphStore]:
    folder = settings.dataset_dir(name)
    record = read_version(folder)
    return CSRGraph.load(graph_file(folder, record)), OxigraphStore(store_dir(folder, record), read_only=True)


def _named_edges(graph: CSRGraph) -> set[tuple[str, str, str]]:
    """The graph's edges as (head name or key, relation, tail name or key)."""
    def label(row: int) -> str:
        return graph.entity_names[row] or graph.entity_keys[row]

    return {(label(h), graph.relations[r], label(t))
            for h, r, t in zip(graph.head.tolist(), graph.rel.tolist(), graph.tail.tolist(), strict=True)}


def _store_edges(graph: CSRGraph, store: OxigraphStore) -> set[tuple[str, str, str]]:
    """The store's edges (not names or values) in the same form, names read from the store itself."""
    base = graph.iri_base
    rows = store.select(f"""SELECT ?s ?p ?o ?sn ?on WHERE {{ ?s ?p ?o . FILTER(isIRI(?o))
        FILTER(?p NOT IN (<{base}{NAME_PREDICATE}>, <{base}{VALUE_PREDICATE}>))
        OPTIONAL {{ ?s <{base}{NAME_PREDICATE}> ?sn }} OPTIONAL {{ ?o <{base}{NAME_PREDICATE}> ?on }} }}""")
    ids = graph.id_index

    def label(term, name) -> str:
        return name.value if name is not None else graph.entity_keys[ids[term.value[len(base):]]]

    return {(label(r["s"], r.get("sn")), r["p"].value[len(base):], label(r["o"], r.get("on"))) for r in rows}


def _assert_whole(settings, name: str) -> CSRGraph:
    """The committed version opens, and its store holds exactly its graph's edges (one version, never half)."""
    graph, store = _current(settings, name)
    try:
        assert _store_edges(graph, store) == _named_edges(graph)
    finally:
        store.close()
    return graph


def test_update_reaches_store_graph_tools_and_equals_a_fresh_import(tiny) -> None:
    settings, paths = tiny
    before = read_version(settings.dataset_dir("tiny"))
    stats = update_kg(settings, "tiny", [paths["add"]], [paths["delete"]])
    assert (stats.triples_added, stats.triples_deleted, stats.already_present, stats.not_found) == (2, 2, 1, 1)
    assert (stats.entities_new, stats.entities_gone, stats.relations_new) == (2, 2, 1)
    assert stats.changed and stats.version != before["version"]
    graph, store = _current(settings, "tiny")
    base = graph.iri_base
    acme = base + graph.entity_ids[graph.key_index[f"{EX}acme"]]
    try:
        # the store: the new edge is there, the deleted node has no triple left (edge, name, value)
        dave = base + graph.entity_ids[graph.key_index[f"{EX}dave"]]
        assert store.ask(f"ASK {{ <{dave}> <{base}knows> ?x . ?x <{base}{NAME_PREDICATE}> \"Alice\"@en }}")
        assert store.select(f"SELECT * WHERE {{ {{ <{acme}> ?p ?o }} UNION {{ ?s ?p <{acme}> }} }}") == []
        assert not store.select('SELECT ?s WHERE { ?s ?p "Acme Corp"@en }')
    finally:
        store.close()
    # the CSR graph: neighbours and names; the orders and hashes the delta merged equal recomputed ones
    assert graph.in_order.tolist() == np.lexsort((graph.head, graph.rel, graph.tail)).tolist()
    assert graph.key_hashes.tolist() == string_hashes(graph.entity_keys).tolist()
    assert [graph.key_index[k] for k in graph.entity_keys] == list(range(graph.num_entities))
    assert [graph.id_index[k] for k in graph.entity_ids] == list(range(graph.num_entities))
    carol = graph.key_index[f"{EX}carol"]
    assert all("acme" not in h + t for h, _, t in graph.neighbourhood(carol))
    assert graph.entity_names[graph.key_index[f"{EX}acme"]] == ""
    assert graph.entity_names[graph.key_index[f"{EX}dave"]] == "Dave"
    # the tools
    session = open_session(dataset_spec("tiny", settings), settings=settings)
    assert "bornIn" in session.run('get_relations("Alice")')
    assert "Acme" not in session.run('get_relations("Carol")')
    assert "Dave" in session.run('get_triples("Alice", ["knows"])')
    # a fresh import of the changed files says the same
    import_kg(settings, "fresh", [paths["changed"]])
    fresh = _assert_whole(settings, "fresh")
    updated = _assert_whole(settings, "tiny")
    assert _named_edges(updated) == _named_edges(fresh)
    named = {graph.entity_names[i] for i in range(graph.num_entities)} - {""}
    assert named == {fresh.entity_names[i] for i in range(fresh.num_entities)} - {""}
    # the store's size the summary records is exact (counted from the change, not by a scan)
    assert step_result(settings.dataset_dir("tiny"), "store")["store_triples"] == len(_all_triples(settings, "tiny"))
    # kg list: the version and when
    rows = [json.loads(line) for line in runner.invoke(app, ["kg", "list", "--json"]).stdout.splitlines()]
    row = next(r for r in rows if r["name"] == "tiny")
    assert row["version"] == stats.version and row["updated_at"] and row["triples"] == updated.num_triples
    # nothing new: no new version
    again = update_kg(settings, "tiny", [paths["add"]], [])
    assert not again.changed and again.version == stats.version and again.already_present == 3


def _all_triples(settings, name: str) -> set[tuple[str, str, str]]:
    _, store = _current(settings, name)
    try:
        base = settings.dataset_dir(name).name  # the namespace names the dataset: compare past it
        rows = store.select("SELECT ?s ?p ?o WHERE { ?s ?p ?o }")
        return {tuple(term.value.replace(f"/kgrag/{base}/", "/kgrag/X/") if term.kind == "uri" else
                      f"{term.value}|{term.lang}|{term.datatype}" for term in (r["s"], r["p"], r["o"]))
                for r in rows}
    finally:
        store.close()


def test_a_reprepare_with_changed_files_applies_the_difference(tiny, monkeypatch) -> None:
    settings, paths = tiny
    monkeypatch.setenv("KGRAG_PREPARE_DELTA_MIN", "1")  # the tiny graph takes the path a large one takes
    update_kg(settings, "tiny", [paths["add"]], [])  # a re-prepare also follows an update (the files rule)
    before = read_version(settings.dataset_dir("tiny"))["version"]
    result = import_kg(settings, "tiny", [paths["changed"]])
    assert (result["applied_difference"]["edges_added"], result["applied_difference"]["edges_deleted"]) == (0, 2)
    assert not (settings.dataset_dir("tiny") / "triples.nt").exists()  # no full export, no bulk load
    assert read_version(settings.dataset_dir("tiny"))["version"] != before
    monkeypatch.setenv("KGRAG_PREPARE_DELTA_MIN", str(10**9))
    import_kg(settings, "fresh", [paths["changed"]])
    assert (settings.dataset_dir("fresh") / "triples.nt").exists()
    assert step_result(settings.dataset_dir("tiny"), "store")["store_triples"] == len(_all_triples(settings, "tiny"))
    assert _all_triples(settings, "tiny") == _all_triples(settings, "fresh")  # every triple, names and values too
    ours, theirs = (CSRGraph.load(graph_file(settings.dataset_dir(n))) for n in ("tiny", "fresh"))
    for field in ("head", "rel", "tail"):
        assert getattr(ours, field).tolist() == getattr(theirs, field).tolist()
    assert list(ours.entity_names) == list(theirs.entity_names)
    # and back: the base files again, now with triples to add
    monkeypatch.setenv("KGRAG_PREPARE_DELTA_MIN", "1")
    back = import_kg(settings, "tiny", [paths["base"]])
    assert back["applied_difference"]["edges_added"] == 2 and back["applied_difference"]["edges_deleted"] == 2
    monkeypatch.setenv("KGRAG_PREPARE_DELTA_MIN", str(10**9))
    import_kg(settings, "fresh", [paths["base"]])
    assert _all_triples(settings, "tiny") == _all_triples(settings, "fresh")


def test_bad_input_rejects_the_whole_update(tiny, tmp_path) -> None:
    settings, paths = tiny
    folder = settings.dataset_dir("tiny")
    graph_bytes, record = (folder / "graph.npz").read_bytes(), read_version(folder)
    bad = tmp_path / "bad.nt"
    bad.write_text(f"<{EX}eve> <{EX}knows> <{EX}bob> .\nthis is not a triple\n", encoding="utf-8")
    with pytest.raises(KgragError, match=r"bad\.nt:2: .*nothing applied"):
        update_kg(settings, "tiny", [paths["add"], bad], [])
    open_quote = tmp_path / "open_quote.nt"  # the string opened on line 2 closes on line 3, where the error is
    open_quote.write_text(f'<{EX}eve> <{EX}knows> <{EX}bob> .\n<{EX}eve> <{EX}name> "Eve .\n'
                          f'<{EX}bob> <{EX}name> "Bob" .\n', encoding="utf-8")
    with pytest.raises(KgragError, match=r"open_quote\.nt:3: .*string opened on line 2.*nothing applied"):
        update_kg(settings, "tiny", [open_quote], [])
    bad_tsv = tmp_path / "bad.tsv"
    bad_tsv.write_text("a\tb\tc\nonly two\tfields\n", encoding="utf-8")
    result = runner.invoke(app, ["kg", "update", "tiny", "--delete", str(bad_tsv)])
    assert result.exit_code == 1
    result = runner.invoke(app, ["kg", "update", "tiny", "--add", str(tmp_path / "missing.nt")])
    assert result.exit_code == 1 and "missing.nt: file not found" in result.output
    assert (folder / "graph.npz").read_bytes() == graph_bytes and read_version(folder) == record
    assert not (folder / VERSIONS_DIR).exists()


def test_cli_table_endpoint_only_kg_and_remove(tiny) -> None:
    settings, paths = tiny
    result = runner.invoke(app, ["kg", "update", "tiny", "--add", str(paths["add"]), "--delete", str(paths["delete"])])
    assert result.exit_code == 0, result.output
    for item in ("triples added", "triples deleted", "to delete, not found", "to add, already present",
                 "entities new", "entities gone", "version", "seconds"):
        assert item in result.output
    register(DatasetSpec(name="remote", reader="endpoint", endpoint="http://127.0.0.1:9/sparql"), settings)
    result = runner.invoke(app, ["kg", "update", "remote", "--add", str(paths["add"])])
    assert result.exit_code == 1 and "nothing to update here" in result.output
    rows = {json.loads(line)["name"]: json.loads(line) for line in
            runner.invoke(app, ["kg", "list", "--json"]).stdout.splitlines()}
    assert "endpoint" in rows["remote"]["updates"]
    # remove: built-ins refused, unknown rc 1, an import gone everywhere
    for name, message in (("demo", "built-in"), ("nosuch", "unknown KG")):
        result = runner.invoke(app, ["kg", "remove", name])
        assert result.exit_code == 1 and message in result.output
    result = runner.invoke(app, ["kg", "remove", "tiny"])
    assert result.exit_code == 0, result.output
    assert not settings.dataset_dir("tiny").exists()
    assert "tiny" not in runner.invoke(app, ["kg", "list", "--json"]).stdout
    assert runner.invoke(app, ["kg", "update", "tiny", "--add", str(paths["add"])]).exit_code == 1


def _update_child(settings, paths, env_extra: dict[str, str]) -> subprocess.Popen:
    env = {**os.environ, "KGRAG_WORK_DIR": str(settings.work_dir), **env_extra}
    return subprocess.Popen([sys.executable, "-m", "kgrag.cli", "kg", "update", "tiny", "--add", str(paths["add"]),
                             "--delete", str(paths["delete"])], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("point", ["after-backup", "after-store", "after-graph", "before-commit", "after-commit"])
def test_sigkill_at_each_point_leaves_one_whole_version(tiny, tmp_path, point) -> None:
    settings, paths = tiny
    before = read_version(settings.dataset_dir("tiny"))["version"]
    mark = tmp_path / "mark"
    child = _update_child(settings, paths, {"KGRAG_UPDATE_PAUSE": f"{point}:120", "KGRAG_UPDATE_PAUSE_MARK": str(mark)})
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert child.poll() is None, "the update ended before reaching its pause point"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    graph = _assert_whole(settings, "tiny")
    committed = read_version(settings.dataset_dir("tiny"))["version"] != before
    assert committed == (point == "after-commit")
    assert (f"{EX}dave" in graph.key_index) == committed
    # the next update finishes the job (or finds nothing to do) and leaves no half-built folder
    stats = update_kg(settings, "tiny", [paths["add"]], [paths["delete"]])
    assert stats.changed != committed
    _assert_whole(settings, "tiny")
    folder = settings.dataset_dir("tiny")  # the top-level graph (what older readers map) is the current one
    assert os.path.samefile(folder / "graph.npz", graph_file(folder))
    assert not list((settings.dataset_dir("tiny") / VERSIONS_DIR).glob("*.building"))


def test_sigkill_after_random_delays(tiny) -> None:
    settings, paths = tiny
    for delay in (0.4, 1.5, 3.0):
        child = _update_child(settings, paths, {})
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        _assert_whole(settings, "tiny")
        graph = _assert_whole(settings, "tiny")
        if f"{EX}dave" in graph.key_index and graph.entity_names[graph.key_index[f"{EX}dave"]]:  # it got through:
            update_kg(settings, "tiny", [paths["delete"]], [paths["add"]])  # back to the start for the next try
        _assert_whole(settings, "tiny")


def test_concurrent_readers_see_one_version_per_request(tiny, tmp_path) -> None:
    from kgrag.agent.kg.resources import TripleResources

    settings, _ = tiny
    batch = tmp_path / "batch.nt"
    batch.write_text("".join(f"<{EX}p{i}> <{EX}knows> <{EX}p{i + 1}> .\n" for i in range(50)), encoding="utf-8")
    resources = TripleResources(settings)
    stop = threading.Event()
    seen: list[tuple[int, int]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                kg = resources.triple_kg("tiny")  # one request: one version of graph and store
                base = kg.graph.iri_base
                stored = kg.store.select(f"SELECT (COUNT(*) AS ?n) WHERE {{ ?s <{base}knows> ?o }}")
                in_graph = int((kg.graph.rel == kg.graph.relation_index["knows"]).sum())
                seen.append((int(stored[0]["n"].value), in_graph))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for i in range(6):
            update_kg(settings, "tiny", [batch] if i % 2 == 0 else [], [] if i % 2 == 0 else [batch])
            time.sleep(0.2)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        resources.close()
    assert not errors, errors
    assert seen and all(stored == in_graph for stored, in_graph in seen)
    assert {in_graph for _, in_graph in seen} <= {2, 52}
    assert len(list((settings.dataset_dir("tiny") / VERSIONS_DIR).iterdir())) == 2  # current + previous only
    assert version_token(settings.dataset_dir("tiny")) is not None


# -- the demo KG served: the agent, the KG tools route and the console follow an update without a restart -----------


@pytest.fixture
def served_demo(work_settings):
    from kgrag.prep import steps

    out = work_settings.dataset_dir("demo")
    fingerprint = steps.input_fingerprint("demo", work_settings.data_dir)
    steps.build_graph("demo", work_settings.data_dir, out, fingerprint)
    steps.load_store(out, fingerprint)
    return work_settings


def test_a_served_process_answers_from_the_new_version(served_demo, tmp_path) -> None:
    from fastapi.testclient import TestClient

    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph as agent
    from kgrag.api.app import create_app
    from kgrag.console.data import kg_schema

    settings = served_demo
    demo = CSRGraph.load(graph_file(settings.dataset_dir("demo")))
    base = demo.iri_base
    film = next(i for i in range(demo.num_entities) if demo.entity_names[i] == "Carnival Lights")
    director = next(t for h, r, t in zip(demo.head.tolist(), demo.rel.tolist(), demo.tail.tolist(), strict=True)
                    if h == film and demo.relations[r] == "film.film.directed_by")
    film_iri, old_iri = base + demo.entity_ids[film], base + demo.entity_ids[director]
    delete = tmp_path / "delete.nt"
    delete.write_text(f"<{film_iri}> <{base}film.film.directed_by> <{old_iri}> .\n", encoding="utf-8")
    add = tmp_path / "add.nt"
    add.write_text(f"<{film_iri}> <{base}film.film.directed_by> <{base}m.0newdirector> .\n"
                   f"<{base}m.0newdirector> <{base}type.object.name> \"Zora Quill\"@en .\n", encoding="utf-8")

    def ask() -> dict:
        return agent.invoke({"question": "who directed Carnival Lights?", "kg": "demo"},
                            context=AgentContext(query_graphs=False))

    query = {"session_id": "s1", "kg": "demo", "query": 'get_triples("Carnival Lights", ["film.film.directed_by"])'}
    with TestClient(create_app(settings)) as client:
        assert "Uma Halvorsen" in client.post("/api/kg/query", json=query).json()["text"]
        triples_before = kg_schema(settings, "demo")["triples"]
        assert ask()["answers"] == ["Uma Halvorsen"]
        stats = update_kg(settings, "demo", [add], [delete])
        assert stats.triples_added == 1 and stats.triples_deleted == 1
        text = client.post("/api/kg/query", json=query).json()["text"]  # the same session, the new version
        assert "Zora Quill" in text and "Uma Halvorsen" not in text
        state = ask()
        assert state["answers"] == ["Zora Quill"], state.get("answer")
        assert kg_schema(settings, "demo")["triples"] == triples_before


def test_a_random_delta_on_a_larger_graph_equals_a_fresh_import(work_settings, tmp_path) -> None:
    """Seeded random edges over 400 nodes; a delta of mixed adds (some to new nodes) and deletes (some absent):
    the merged arrays, the (tail, relation, head) order, both lookups and the store equal a fresh import's."""
    rng = np.random.default_rng(7)
    edges = {tuple(e) for e in rng.integers(0, [400, 6, 400], size=(3000, 3)).tolist()}
    base = sorted(edges)
    deleted = [base[i] for i in rng.choice(len(base), 150, replace=False)] + [(401, 0, 402)]
    added = [tuple(e) for e in rng.integers(0, [440, 8, 400], size=(150, 3)).tolist()]

    def write(name: str, rows, names) -> Path:
        path = tmp_path / name
        path.write_text("".join(f"<{EX}n{h}> <{EX}r{r}> <{EX}n{t}> .\n" for h, r, t in rows)
                        + "".join(f'<{EX}n{n}> <{LABEL}> "Node {n}" .\n' for n in names), encoding="utf-8")
        return path

    nodes = range(440)
    import_kg(work_settings, "big", [write("base.nt", base, range(400))])
    update_kg(work_settings, "big", [write("add.nt", added, range(400, 440))], [write("del.nt", deleted, [])])
    changed = sorted((edges - set(deleted)) | set(added))
    import_kg(work_settings, "again", [write("changed.nt", changed, nodes)])
    graph = _assert_whole(work_settings, "big")
    fresh = _assert_whole(work_settings, "again")
    assert _named_edges(graph) == _named_edges(fresh) and graph.num_triples == len(changed)
    assert graph.in_order.tolist() == np.lexsort((graph.head, graph.rel, graph.tail)).tolist()
    assert [graph.key_index[k] for k in graph.entity_keys] == list(range(graph.num_entities))
    assert [graph.id_index[k] for k in graph.entity_ids] == list(range(graph.num_entities))
    assert _all_triples(work_settings, "big") == _all_triples(work_settings, "again")


def test_trained_checkpoints_load_and_answer_after_an_update(demo_trained_work, tmp_path, monkeypatch) -> None:
    """The demo with its tiny trained retriever + policy, copied (the session's copy stays as it was), takes a
    delta with a relation the model never saw: entity and relation ids stay (the old rows keep theirs), the
    reasoner reloads for the new version and still answers; the new relation is answered through the tools."""
    import shutil

    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph as agent
    from kgrag.config import get_settings

    work = tmp_path / "work"
    shutil.copytree(demo_trained_work, work, symlinks=True)
    monkeypatch.setenv("KGRAG_WORK_DIR", str(work))
    for var in ("KGRAG_SPARQL_ENDPOINT", "KGRAG_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    get_settings.cache_clear()
    settings = get_settings()
    before = CSRGraph.load(graph_file(settings.dataset_dir("demo")))
    base = before.iri_base
    film = next(i for i in range(before.num_entities) if before.entity_names[i] == "Carnival Lights")
    add = tmp_path / "add.nt"
    add.write_text(f"<{base}{before.entity_ids[film]}> <{base}film.film.sequel> <{base}m.0sequel> .\n"
                   f"<{base}m.0sequel> <{base}type.object.name> \"Carnival Lights Returns\"@en .\n", encoding="utf-8")
    stats = update_kg(settings, "demo", [add], [])
    assert stats.relations_new == 1 and stats.entities_new == 1
    after = CSRGraph.load(graph_file(settings.dataset_dir("demo")))
    assert list(after.relations[: before.num_relations]) == list(before.relations)  # ids stable
    assert [after.entity_ids[i] for i in range(before.num_entities)] == list(before.entity_ids)
    state = agent.invoke({"question": "who directed Carnival Lights?", "kg": "demo"}, context=AgentContext())
    assert state["answers"] == ["Uma Halvorsen"], state.get("answer")
    session = open_session(dataset_spec("demo", settings), settings=settings)
    assert "Carnival Lights Returns" in session.run('get_triples("Carnival Lights", ["film.film.sequel"])')
    get_settings.cache_clear()


def test_kgrag_prepare_twice_through_the_flow_applies_the_difference(prefect_harness, tiny, monkeypatch) -> None:
    """The prepare flow itself (``kgrag prepare``) hands the previous import to the graph step: changed files of a
    large graph (the threshold lowered here) update a checkpoint of the store; every prepare is a new version."""
    settings, paths = tiny
    monkeypatch.setenv("KGRAG_PREPARE_DELTA_MIN", "1")
    first = read_version(settings.dataset_dir("tiny"))["version"]
    result = runner.invoke(app, ["prepare", "--dataset", "tiny", "--triples", str(paths["changed"])])
    assert result.exit_code == 0, result.output
    folder = settings.dataset_dir("tiny")
    applied = step_result(folder, "store").get("applied_difference")
    assert applied and applied["edges_deleted"] == 2 and applied["edges_added"] == 2 and applied["from_version"] == first
    second = read_version(folder)["version"]
    assert second != first
    again = runner.invoke(app, ["prepare", "--dataset", "tiny", "--triples", str(paths["changed"])])
    assert again.exit_code == 0 and read_version(folder)["version"] == second  # nothing changed: no new version
    graph = _assert_whole(settings, "tiny")
    assert f"{EX}dave" in graph.key_index and f"{EX}acme" not in graph.key_index  # as a fresh import of the files


def test_every_worker_of_kgrag_serve_follows_an_update(tiny, tmp_path) -> None:
    """``kgrag serve --workers 2`` (two processes, each with its own stores) answers a KG tools query from the new
    version after ``kgrag kg update`` in another process — no restart; each query lands on either worker."""
    import httpx

    from harness.servers.ports import free_port
    from harness.servers.process import server_process

    settings, paths = tiny
    port = free_port()
    env = {**os.environ, "KGRAG_WORK_DIR": str(settings.work_dir), "HF_HUB_OFFLINE": "1",
           "KGRAG_DATABASE_URL": f"sqlite:///{tmp_path / 'kn.db'}"}
    env.pop("KGRAG_API_KEY", None)
    command = [str(Path(sys.executable).with_name("kgrag")), "serve", "--host", "127.0.0.1", "--port", str(port),
               "--workers", "2", "--no-warm"]
    url = f"http://127.0.0.1:{port}"

    def ask(i: int) -> str:
        body = {"session_id": f"s{i}", "kg": "tiny", "query": 'get_triples("Alice", ["knows"])'}
        response = httpx.post(f"{url}/api/kg/query", json=body, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["text"]

    with server_process(command, env, tmp_path / "serve.log", f"{url}/healthz", "kgrag serve", 180):
        assert all("Dave" not in ask(i) for i in range(8))
        done = subprocess.run([sys.executable, "-m", "kgrag.cli", "kg", "update", "tiny", "--add", str(paths["add"])],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert all("Dave" in ask(i) for i in range(8, 24))  # new sessions, both workers
        assert "Dave" in ask(0)  # a session opened before the update follows too
