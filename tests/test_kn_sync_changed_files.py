"""A stored network synced from its files reads only the files that changed since it was made from them
(``kgrag kn load`` / ``kgrag kn sync``: kgrag.network.loaders.registry, ``changed_types``): the object types with a
changed file, the links only when a link file changed — and ends exactly where a diff of the whole state ends,
rejecting what that diff rejects.

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_sync_changed_files.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import kgrag.network.loaders.declarative as declarative
from kgrag.cli.kn import kn_app
from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.network.loaders.declarative import changed_types, files_fingerprint, load_declarative, read_schema
from kgrag.network.store import NetworkStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library"


def invoke(*args: str):  # noqa: ANN201
    return CliRunner().invoke(kn_app, list(args))


@pytest.fixture
def library(work_settings: Settings, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[Path, str]:
    """A copy of examples/library loaded through ``kn load`` (wide console), on each backend."""
    from rich.console import Console

    import kgrag.cli.kn as cli

    monkeypatch.setattr(cli, "console", Console(width=250))
    folder = tmp_path / "lib"
    shutil.copytree(EXAMPLE, folder)
    first = invoke("load", str(folder / "library.yaml"), "--db", db_url)
    assert first.exit_code == 0, first.output
    return folder, db_url


def files_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The data files the loader reads from now on (their names, in order)."""
    seen: list[str] = []
    real = declarative.iter_located_records

    def recording(path: Path):  # noqa: ANN202
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(declarative, "iter_located_records", recording)
    return seen


def state(db: str) -> dict[str, Any]:
    """Everything stored of the library network but its version: instances with their hashes, links, text rows,
    vectors (bytes) and chunks."""
    store = NetworkStore(db)
    try:
        with store.engine.connect() as conn:
            def rows(sql: str) -> list[tuple[Any, ...]]:  # JSON as canonical text, bytes as bytes: any backend
                return sorted(tuple(json.dumps(json.loads(v) if isinstance(v, str) and v[:1] == "{" else v,
                                               sort_keys=True) if isinstance(v, dict | str) else bytes(v)
                                    if isinstance(v, memoryview) else v for v in r)
                              for r in conn.exec_driver_sql(sql))

            return {
                "instances": rows("SELECT object_type_id, id, name, properties, content_hash FROM kn_instances"),
                "links": rows("SELECT relation_type_id, source_id, target_id FROM kn_links"),
                "text": rows("SELECT kind, type_id, item_id, field, text FROM kn_text_rows"),
                "vectors": rows("SELECT kind, type_id, item_id, field, vector FROM kn_vectors"),
                "chunks": rows("SELECT object_type_id, doc_id, section, position, text FROM kn_chunks"),
                "counts": {k: v for k, v in store.network_stats("library").items()
                           if k in ("instances", "links", "vectors", "chunks")},
            }
    finally:
        store.close()


def whole_diff(folder: Path, tmp_path: Path) -> str:
    """A second database: the original files loaded, then the edited ones applied by a diff of the whole state
    (:meth:`NetworkStore.sync` with every instance and link) — the reference."""
    db = f"sqlite:///{tmp_path / 'reference.db'}"
    store = NetworkStore(db)
    try:
        store.load(*load_declarative(EXAMPLE / "library.yaml"))
        stats = store.sync(*load_declarative(folder / "library.yaml"))
        assert not stats.full_reload
    finally:
        store.close()
    return db


def edit(file: Path, old: str, new: str) -> None:
    text = file.read_text()
    assert old in text
    file.write_text(text.replace(old, new))


def test_an_edited_instance_file_is_the_only_file_read_and_the_result_is_the_whole_diffs(
        library: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, db = library
    edit(folder / "books.csv", "b:1984,1984,1949,328", "b:1984,Nineteen Eighty-Four,1949,328")
    (folder / "books.csv").write_text((folder / "books.csv").read_text() + "b:dune,Dune,1965,412\n")
    read = files_read(monkeypatch)
    out = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert out.exit_code == 0, out.output
    assert read == ["books.csv"], read
    assert "files changed: read Book, the rest as stored" in out.output
    monkeypatch.undo()
    reference = whole_diff(folder, tmp_path)
    assert state(db) == state(reference)
    mine = NetworkStore(db)
    stats = mine.network_stats("library")
    mine.close()
    assert stats["instances"] == 37 and stats["source"]["files"]["instances/books.csv"] == \
        files_fingerprint(folder / "library.yaml").parts["instances/books.csv"]  # type: ignore[union-attr]


def test_an_edited_link_file_reads_the_links_and_checks_them_against_the_stored_instances(
        library: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, db = library
    links = folder / "links.csv"
    edit(links, "wrote,a:orwell,b:animalfarm\n", "")
    read = files_read(monkeypatch)
    out = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert out.exit_code == 0, out.output
    assert read == ["links.csv"], read  # no instance file: their ids come from the store
    monkeypatch.undo()
    assert state(db) == state(whole_diff(folder, tmp_path))
    before = state(db)
    links.write_text(links.read_text() + "wrote,a:orwell,b:nosuchbook\n")
    bad = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert bad.exit_code != 0
    assert "links.csv:" in bad.output and "'b:nosuchbook' is no instance of 'Book'" in bad.output, bad.output
    assert state(db) == before


def test_a_deleted_instance_an_unchanged_link_file_still_names_is_rejected_as_the_whole_diff_rejects_it(
        library: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    folder, db = library
    before = state(db)
    edit(folder / "books.csv", "b:animalfarm,Animal Farm,1945,112\n", "")
    store = NetworkStore(f"sqlite:///{folder / 'other.db'}")
    try:
        store.load(*load_declarative(EXAMPLE / "library.yaml"))
        with pytest.raises(KgragError, match="b:animalfarm"):  # the whole state's read says no
            store.sync(*load_declarative(folder / "library.yaml"))
    finally:
        store.close()
    read = files_read(monkeypatch)
    out = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert read == ["books.csv"], read
    assert out.exit_code != 0 and "b:animalfarm" in out.output and "is not an instance of 'Book'" in out.output, \
        out.output
    assert state(db) == before  # nothing applied
    links = folder / "links.csv"  # its links gone too: accepted
    links.write_text("".join(line for line in links.read_text().splitlines(keepends=True)
                             if "b:animalfarm" not in line))
    monkeypatch.undo()
    ok = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert ok.exit_code == 0, ok.output
    assert state(db)["counts"]["instances"] == before["counts"]["instances"] - 1


def test_a_changed_schema_file_or_a_change_made_otherwise_reads_every_file(
        library: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    folder, db = library
    schema = folder / "library.yaml"
    every = {"authors.csv", "books.csv", "genres.csv", "publishers.csv", "cities.jsonl", "links.csv"}
    edit(schema, "data:", "# a comment\ndata:")
    read = files_read(monkeypatch)
    assert invoke("load", str(schema), "--db", db).exit_code == 0
    assert set(read) == every
    store = NetworkStore(db)
    from kgrag.network.store import NetworkChanges

    store.apply_changes("library", NetworkChanges(delete_links=[
        *(lk for lk in load_declarative(schema)[2] if lk.target_id == "b:1984")]))
    assert "files" not in store.network_stats("library")["source"]  # the files no longer say what is stored
    store.close()
    edit(folder / "books.csv", "b:1984,1984,1949,328", "b:1984,1984,1949,329")
    read.clear()
    out = invoke("load", str(schema), "--db", db)
    assert out.exit_code == 0 and set(read) == every, (read, out.output)


def test_changed_types_says_what_to_read_and_when_it_cannot_know(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    shutil.copytree(EXAMPLE, folder)
    schema = folder / "library.yaml"
    network, data = read_schema(schema)
    before = files_fingerprint(schema)
    assert before is not None
    assert changed_types(network, data, before.parts, before.parts) == (set(), set())
    assert changed_types(network, data, None, before.parts) is None
    edit(folder / "cities.jsonl", "}", ', "x": 1}')
    edit(folder / "links.csv", "wrote,a:orwell,b:1984\n", "")
    now = files_fingerprint(schema)
    assert now is not None and now.fingerprint != before.fingerprint
    types, relations = changed_types(network, data, before.parts, now.parts) or (None, None)
    assert types == {"City"} and relations == {rt.id for rt in network.relation_types}
    edit(schema, "data:", "# more\ndata:")
    moved = files_fingerprint(schema)
    assert moved is not None and changed_types(network, data, before.parts, moved.parts) is None
    assert json.dumps(moved.parts)  # what the store records: JSON


def test_a_scoped_sync_of_a_network_changed_since_its_files_were_compared_applies_nothing(
        library: tuple[Path, str]) -> None:
    """The scope holds only while the recorded fingerprint is the one the files were compared with: another
    one (a change made meanwhile) is ScopeOutdated, nothing applied — the caller then diffs the whole state."""
    from kgrag.network.store import ScopeOutdated, SyncScope

    folder, db = library
    before = state(db)
    network, instances, links = load_declarative(folder / "library.yaml")
    books = [i.model_copy(update={"properties": {**i.properties, "pages": 1}}) for i in instances
             if i.object_type_id == "Book"]
    store = NetworkStore(db)
    try:
        recorded = store.network_stats("library")["source"]["fingerprint"]
        with pytest.raises(ScopeOutdated):
            store.sync(network, books, [], scope=SyncScope(frozenset({"Book"}), frozenset(), recorded + "x"))
        assert state(db) == before
        stats = store.sync(network, books, [], scope=SyncScope(frozenset({"Book"}), frozenset(), recorded))
        assert stats.instances_updated == len(books) and not stats.instances_deleted
    finally:
        store.close()
