"""A bad row rejects the whole load or update with ``file:line: reason`` before any store is touched (issue 45 §4):
a malformed CSV line, a duplicate id, a link of an unknown relation type or to a missing instance; a network whose
object type lacks its display column is an error, not a load that answers with other columns. The built-in
networks and the template pass the same checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fixtures.settings import require_shared
from typer.testing import CliRunner

from kgrag.cli.kn import kn_app
from kgrag.config import Settings
from kgrag.errors import KgragError
from kgrag.network.loaders.declarative import load_declarative
from kgrag.network.loaders.registry import build_named
from kgrag.network.store import NetworkStore

runner = CliRunner()
TEMPLATE = Path(__file__).resolve().parents[1] / "kgrag" / "network" / "examples" / "library"


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """A writable copy of the template network (library.yaml and its data files)."""
    folder = tmp_path / "library"
    shutil.copytree(TEMPLATE, folder)
    return folder / "library.yaml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _append(path: Path, line: str) -> int:
    """Append ``line``; returns its line number."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text.rstrip("\n") + "\n" + line + "\n", encoding="utf-8")
    return text.rstrip("\n").count("\n") + 2


def _error(schema: Path) -> str:
    """The one-line error of reading ``schema`` — the same whether the files are read whole or checked in one pass
    and read again later (``lazy``, what ``kn load`` does)."""
    messages = []
    for lazy in (False, True):
        with pytest.raises(KgragError) as info:
            load_declarative(schema, lazy=lazy)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    assert "\n" not in messages[0]
    return messages[0]


def test_the_template_loads_as_it_is(library: Path) -> None:
    network, instances, links = load_declarative(library)
    assert len(instances) == 36 and len(links) == 43


def test_a_link_to_a_missing_instance_names_file_and_line(library: Path) -> None:
    links = library.parent / "links.csv"
    line = _append(links, "wrote,a:orwell,b:nosuchbook")
    assert _error(library) == f"{links}:{line}: wrote link's target 'b:nosuchbook' is no instance of 'Book'"


def test_a_link_to_an_instance_of_another_type_says_which(library: Path) -> None:
    links = library.parent / "links.csv"
    line = _append(links, "wrote,b:1984,a:orwell")
    assert _error(library) == f"{links}:{line}: wrote link's source 'b:1984' is an instance of 'Book', not of 'Author'"


def test_an_unknown_relation_type_names_file_and_line(library: Path) -> None:
    links = library.parent / "links.csv"
    line = _append(links, "translated,a:orwell,b:1984")
    message = _error(library)
    assert message.startswith(f"{links}:{line}: unknown relation type 'translated' (the network's: wrote, genre")


def test_a_data_entry_of_an_unknown_type_is_one_line(library: Path) -> None:
    _edit(library, "- {object_type: Genre, file: genres.csv}", "- {object_type: Genres, file: genres.csv}")
    assert _error(library) == (f"{library}: data.instances names unknown object type 'Genres' (the network's: "
                               "Author, Book, Genre, Publisher, City)")


@pytest.mark.parametrize(("row", "reason"), [
    ("g:x,too,many", "3 cells, the header has 2 (id, name)"),
    ("g:x", "1 cells, the header has 2 (id, name)"),
    ('g:x,"never closed', "malformed CSV: unexpected end of data (an unterminated quote?)"),
    ('g:x,"a"b', "malformed CSV: ',' expected after '\"'"),
])
def test_a_malformed_csv_line_names_file_and_line(library: Path, row: str, reason: str) -> None:
    genres = library.parent / "genres.csv"
    line = _append(genres, row)
    assert _error(library) == f"{genres}:{line}: {reason}"


def test_a_duplicate_id_names_both_lines(library: Path) -> None:
    genres = library.parent / "genres.csv"
    line = _append(genres, "g:satire,satire again")
    assert _error(library) == f"{genres}:{line}: duplicate id 'g:satire' of object type 'Genre' (first on {genres}:3)"


def test_a_missing_display_column_is_an_error_naming_file_type_and_columns(library: Path) -> None:
    books = library.parent / "books.csv"
    _edit(books, "id,title,year,pages", "id,heading,year,pages")
    assert _error(library) == (f"{books}: object type 'Book' has no display column 'title' (its display_key); the "
                               "file's columns: id, heading, year, pages — add the column or set display_key to one "
                               "of them")
    cities = library.parent / "cities.jsonl"  # JSONL: no record has the field
    cities.write_text(cities.read_text(encoding="utf-8").replace('"name"', '"label"'), encoding="utf-8")
    _edit(books, "id,heading,year,pages", "id,title,year,pages")
    assert _error(library) == (f"{cities}: object type 'City' has no display column 'name' (its display_key); the "
                               "file's columns: id, label, country — add the column or set display_key to one of "
                               "them")


def test_a_declared_display_key_must_be_a_data_property(library: Path) -> None:
    _edit(library, "display_key: title", "display_key: heading")
    assert _error(library) == (f"{library}: object type 'Book': display_key 'heading' is not one of its "
                               "data_properties (title, year, pages)")


def test_the_id_column_as_display_key_is_kept_as_the_name(library: Path) -> None:
    """A type that declares no data properties takes its columns as they come; its id column, named as the display
    key, stays a property (the instance's name), not dropped as the id."""
    _edit(library, '    comment: a literary genre\n    data_properties:\n      - {name: name, type: string, '
          'condition_operations: [knn, match, "=="]}\n', "    comment: a literary genre\n    display_key: id\n")
    _, instances, _ = load_declarative(library)
    genre = next(i for i in instances if i.object_type_id == "Genre")
    assert genre.properties["id"] == genre.id and genre.properties["name"]


def test_a_bad_update_through_kn_load_changes_nothing(library: Path, work_settings: Settings,
                                                      tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    loaded = runner.invoke(kn_app, ["load", str(library), "--db", db])
    assert loaded.exit_code == 0, loaded.output
    store = NetworkStore(db)
    version, stats = store.network_version("library"), store.network_stats("library")
    store.close()
    _append(library.parent / "authors.csv", "a:new,A New Author,1990")  # a good row and a bad one: all or nothing
    links = library.parent / "links.csv"
    line = _append(links, "wrote,a:new,b:missing")
    failed = runner.invoke(kn_app, ["load", str(library), "--db", db])
    assert failed.exit_code == 1
    assert f"{links}:{line}: wrote link's target 'b:missing' is no instance of 'Book'" in " ".join(
        failed.output.split())
    store = NetworkStore(db)
    assert store.network_version("library") == version and store.network_stats("library") == stats
    store.close()


@pytest.mark.parametrize(("name", "data"), [("demo", ""), ("synthetic", ""), ("metaqa", "metaqa/kb.txt"),
                                            ("medical", "medical/diseases")])
def test_the_built_in_networks_name_their_instances_by_a_declared_display_key(name: str, data: str) -> None:
    if data:
        require_shared(data)  # medical and metaqa read the shared data dir (skip without it)
    network, instances, _ = build_named(name)
    display = {ot.id: ot.display_key for ot in network.object_types}
    for ot in network.object_types:
        assert not ot.data_properties or ot.display_key in {p.name for p in ot.data_properties}, ot.id
    assert all(i.properties.get(display[i.object_type_id]) not in (None, "") for i in instances)
