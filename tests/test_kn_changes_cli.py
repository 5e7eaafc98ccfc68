"""``kgrag kn load`` of a changed schema file applies the difference (and ``--full`` replaces); ``kn list`` shows each
network's version and last update (``--json``); ``kn remove`` removes one cleanly, refusing a built-in id and an
unknown one.

    .venv/bin/python -m pytest -q -n 0 tests/test_kn_changes_cli.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kgrag.cli.kn import kn_app
from kgrag.config import Settings
from kgrag.network.store import NetworkStore

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library"


def invoke(*args: str):  # noqa: ANN201
    return CliRunner().invoke(kn_app, list(args))


@pytest.fixture
def library(work_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A copy of examples/library loaded through ``kn load`` (wide console: tables unwrapped)."""
    from rich.console import Console

    import kgrag.cli.kn as cli

    monkeypatch.setattr(cli, "console", Console(width=250))
    folder = tmp_path / "lib"
    shutil.copytree(EXAMPLE, folder)
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    first = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert first.exit_code == 0, first.output
    assert "loaded library (in full)" in first.output and "full reload: not stored before" in first.output
    return folder, db


def version(db: str) -> str:
    """The stored version now (a store of its own: a store trusts its cached version for up to a second)."""
    store = NetworkStore(db)
    try:
        return store.network_version("library")
    finally:
        store.close()


def _figures(output: str) -> list[str]:
    """``kn load``'s figures: instances inserted, updated, deleted, unchanged, links inserted, deleted, the
    version printed."""
    rows = {cells[0]: cells[1:] for line in output.splitlines() if line.startswith("│")
            for cells in [[c.strip() for c in line.strip("│").split("│")]]}
    printed = next(line.split()[1] for line in output.splitlines() if line.startswith("version "))
    return [*rows["instances"][:4], rows["links"][0], rows["links"][2], printed]


def test_load_applies_the_difference(library: tuple[Path, str]) -> None:
    folder, db = library
    store = NetworkStore(db)
    v0 = version(db)
    same = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert same.exit_code == 0 and "loaded library (the difference)" in same.output, same.output
    assert _figures(same.output)[:6] == ["0", "0", "0", "36", "0", "0"]
    assert version(db) == v0
    books = (folder / "books.csv").read_text().replace("b:1984,1984,1949,328", "b:1984,1984,1949,330")
    books = "\n".join(line for line in books.splitlines() if not line.startswith("b:emma,")) + "\n"
    (folder / "books.csv").write_text(books + "b:dune,Dune,1965,412\n")
    links = [line for line in (folder / "links.csv").read_text().splitlines() if "b:emma" not in line]
    (folder / "links.csv").write_text("\n".join([*links, "wrote,a:tolkien,b:dune"]) + "\n")
    changed = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert changed.exit_code == 0, changed.output
    cells = _figures(changed.output)
    assert cells[:4] == ["1", "1", "1", "34"]  # inserted, updated, deleted, unchanged
    assert cells[4] == "1" and int(cells[5]) >= 1  # links inserted / deleted (Emma's went with it)
    v1 = version(db)
    assert v1 != v0 and cells[6] == v1[:12]
    assert [h.properties["pages"] for h in store.get_instances("library", "Book", ["b:1984"])] == [330]
    assert store.get_instances("library", "Book", ["b:emma"]) == []
    full = invoke("load", str(folder / "library.yaml"), "--db", db, "--full")
    assert full.exit_code == 0 and "full reload: --full" in full.output, full.output
    assert version(db) != v1
    stats = store.network_stats("library")
    assert stats["source"] == {"kind": "file", "path": str((folder / "library.yaml").resolve())}
    assert stats["instances"] == 36
    store.close()


def test_a_bad_row_rejects_the_whole_load(library: tuple[Path, str]) -> None:
    folder, db = library
    store = NetworkStore(db)
    v0 = version(db)
    (folder / "books.csv").write_text((folder / "books.csv").read_text() + "b:new,New Book,2020,100\n")
    links = (folder / "links.csv").read_text()
    (folder / "links.csv").write_text(links + "wrote,a:nobody,b:new\n")
    bad = invoke("load", str(folder / "library.yaml"), "--db", db)
    assert bad.exit_code == 1 and "a:nobody" in bad.output, bad.output
    assert version(db) == v0 and store.get_instances("library", "Book", ["b:new"]) == []
    store.close()


def test_list_shows_version_and_update(library: tuple[Path, str]) -> None:
    _, db = library
    store = NetworkStore(db)
    version = store.network_version("library")
    listing = invoke("list", "--db", db)
    assert listing.exit_code == 0 and version[:12] in listing.output, listing.output
    assert "updated" in listing.output
    rows = [json.loads(line) for line in invoke("list", "--db", db, "--json").output.splitlines()]
    assert [(r["kn_id"], r["version"], r["instances"], r["links"]) for r in rows] == [("library", version, 36, 43)]
    assert rows[0]["updated"][:4].isdigit() and "T" in rows[0]["updated"]
    store.close()


def test_remove(library: tuple[Path, str]) -> None:
    _, db = library
    refused = invoke("remove", "demo", "--db", db)
    assert refused.exit_code == 1 and "built-in" in refused.output
    unknown = invoke("remove", "nope", "--db", db)
    assert unknown.exit_code == 1 and "no knowledge network 'nope'" in unknown.output
    removed = invoke("remove", "library", "--db", db)
    assert removed.exit_code == 0 and "removed library: 36 instances, 43 links" in removed.output, removed.output
    store = NetworkStore(db)
    assert store.list_networks() == []
    with store.engine.connect() as conn:
        for table in ("kn_instances", "kn_links", "kn_text_rows", "kn_vectors", "kn_object_types"):
            assert conn.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar() == 0, table  # noqa: S608
        assert conn.exec_driver_sql("SELECT count(*) FROM kn_text WHERE kn_text MATCH 'orwell'").scalar() == 0
    store.close()
    assert "no knowledge networks loaded" in invoke("list", "--db", db).output


def test_a_reload_of_unchanged_files_reads_nothing_until_the_network_changes_otherwise(
        library: tuple[Path, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The first load recorded its files' fingerprint: loading the same files again reads none of them (the
    loader is not called); a change over the API drops the fingerprint, so the next load diffs and puts the
    files' content back; an edited file is diffed as usual."""
    import kgrag.network.loaders.registry as registry
    from kgrag.network.schema.model import Instance
    from kgrag.network.store import NetworkChanges

    folder, db = library
    schema = str(folder / "library.yaml")
    v0 = version(db)
    with monkeypatch.context() as patched:
        patched.setattr(registry, "build_named", lambda *a, **k: pytest.fail("the files were read"))
        same = invoke("load", schema, "--db", db)
    assert same.exit_code == 0 and "same fingerprint" in same.output, same.output
    assert _figures(same.output)[:4] == ["0", "0", "0", "36"] and version(db) == v0
    store = NetworkStore(db)
    hit = store.get_instances("library", "Book", ["b:1984"])[0]
    store.apply_changes("library", NetworkChanges(upsert_instances=[
        Instance(object_type_id="Book", id="b:1984", properties={**hit.properties, "pages": 999})]))
    assert "fingerprint" not in store.network_stats("library")["source"]
    restored = invoke("load", schema, "--db", db)
    assert restored.exit_code == 0 and _figures(restored.output)[:4] == ["0", "1", "0", "35"], restored.output
    assert [h.properties["pages"] for h in store.get_instances("library", "Book", ["b:1984"])] == [328]
    again = invoke("load", schema, "--db", db)
    assert "same fingerprint" in again.output, again.output
    (folder / "books.csv").write_text((folder / "books.csv").read_text() + "b:dune,Dune,1965,412\n")
    edited = invoke("load", schema, "--db", db)
    assert _figures(edited.output)[:4] == ["1", "0", "0", "36"], edited.output
    store.close()
