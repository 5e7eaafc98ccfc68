"""Bring your own network: ``kgrag kn init`` / ``kn load PATH --kn-id``, their one-line errors, the packaged template
equal to ``examples/library/``, and the LLM-free agent on it (answers name instances by their display property;
the could-not-link message names the network's own types)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.library_kn import load_library
from typer.testing import CliRunner

from kgrag.cli.kn import TEMPLATE_QUESTIONS, kn_app, template_files
from kgrag.config import Settings

runner = CliRunner()
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "library"


def invoke(*args: str):  # noqa: ANN201
    return runner.invoke(kn_app, list(args))


def one_error_line(result, says: str) -> None:  # noqa: ANN001
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert says in lines[0], result.output
    assert "Traceback" not in result.output


def test_example_is_the_packaged_template() -> None:
    files = template_files()
    assert set(files) == {p.name for p in EXAMPLE.iterdir() if p.is_file()}
    for name, content in files.items():
        assert (EXAMPLE / name).read_bytes() == content, f"examples/library/{name} differs from the package's"


@pytest.fixture(scope="module")
def library_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database holding examples/library/library.yaml as ``library`` (loaded through ``kgrag kn load``)."""
    db, output = load_library(tmp_path_factory.mktemp("library"))
    assert "loaded library" in output
    yield db


def test_load_with_kn_id(work_settings: Settings, tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    result = invoke("load", str(EXAMPLE / "library.yaml"), "--kn-id", "books", "--db", db)
    assert result.exit_code == 0 and "loaded books" in result.output, result.output
    listing = invoke("list", "--db", db)
    assert "books" in listing.output and "library" not in listing.output.replace("Library", "")
    cond = json.dumps({"operation": "==", "field": "title", "value": "Animal Farm"})
    hits = invoke("query", "books", "Book", "--condition", cond, "--db", db)
    assert hits.exit_code == 0, hits.output
    assert [json.loads(line)["id"] for line in hits.output.splitlines() if line.strip()] == ["b:animalfarm"]


@pytest.mark.parametrize("kn_id", ["", "  ", "a b", "../x", "_hidden", "x" * 65, "semi;colon"])
def test_load_refuses_a_bad_kn_id(work_settings: Settings, tmp_path: Path, kn_id: str) -> None:
    result = invoke("load", str(EXAMPLE / "library.yaml"), "--kn-id", kn_id, "--db", f"sqlite:///{tmp_path / 'kn.db'}")
    one_error_line(result, "--kn-id")


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "net"
    shutil.copytree(EXAMPLE, folder)
    return folder


@pytest.mark.parametrize(("edit", "says"), [
    (lambda d: (d / "library.yaml").unlink(), "network schema file not found"),
    (lambda d: (d / "library.yaml").write_text("kn_id: library\nobject_types: [\n  - id: Book\n"),
     "library.yaml:3:3: not valid YAML"),
    (lambda d: (d / "library.yaml").write_text(
        (d / "library.yaml").read_text().replace("display_key: title", "display_key: title\n    colour: red")),
     "invalid network schema: object_types.1.colour"),
    (lambda d: (d / "books.csv").write_text(
        (d / "books.csv").read_text().replace("The Hobbit,1937,310", "The Hobbit,1937,three hundred")),
     "books.csv:7 column 'pages': cannot read 'three hundred' as integer"),
    (lambda d: (d / "cities.jsonl").unlink(), "data file not found"),
    (lambda d: (d / "cities.jsonl").write_text('{"id": "c:x", "name": "X"}\n{"id": "c:y", name}\n'),
     "cities.jsonl:2:15: not valid JSON"),
    (lambda d: (d / "links.csv").write_text("relation_type_id,source_id,target_id\nwrote,a:orwell,\n"),
     "links.csv:2: a link needs relation_type, source_id and target_id"),
])
def test_load_errors_are_one_red_line(work_settings: Settings, tmp_path: Path, edit, says: str) -> None:  # noqa: ANN001
    folder = _copy(tmp_path)
    edit(folder)
    one_error_line(invoke("load", str(folder / "library.yaml"), "--db", f"sqlite:///{tmp_path / 'kn.db'}"), says)


def test_init_writes_a_loadable_network(work_settings: Settings, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    import kgrag.cli.kn as cli

    monkeypatch.setattr(cli, "console", Console(width=250))
    target = tmp_path / "team" / "shelf"
    result = invoke("init", str(target))
    assert result.exit_code == 0, result.output
    schema = target / "shelf.yaml"
    assert schema.is_file() and "kn_id: \"shelf\"" in schema.read_text()
    assert "\nname: \"Shelf\"\n" in schema.read_text() and "Library" not in schema.read_text().split("object_types")[0]
    for step in (f"kgrag kn load {schema}", f'kgrag ask "{TEMPLATE_QUESTIONS[0]}" --kn shelf', "kgrag serve",
                 "curl"):
        assert step in result.output, step
    db = f"sqlite:///{tmp_path / 'kn.db'}"
    loaded = invoke("load", str(schema), "--db", db)
    assert loaded.exit_code == 0 and "loaded shelf" in loaded.output, loaded.output
    cond = json.dumps({"operation": "==", "field": "title", "value": "1984"})
    hits = invoke("query", "shelf", "Book", "--condition", cond, "--db", db)
    rows = [json.loads(line) for line in hits.output.splitlines() if line.strip()]
    assert [(r["id"], r["properties"]["year"], r["properties"]["pages"]) for r in rows] == [("b:1984", 1949, 328)]

    # never overwrites; an id from --kn-id names the schema file
    one_error_line(invoke("init", str(target)), "already exists; not overwriting it")
    other = invoke("init", str(tmp_path / "x"), "--kn-id", "2024")
    assert other.exit_code == 0 and 'kn_id: "2024"' in (tmp_path / "x" / "2024.yaml").read_text()
    garden = invoke("init", str(tmp_path / "g"), "--kn-id", "my_garden")
    assert garden.exit_code == 0 and '\nname: "My Garden"\n' in (tmp_path / "g" / "my_garden.yaml").read_text()
    one_error_line(invoke("init", str(tmp_path / "bad name")), "pass --kn-id")
    one_error_line(invoke("init", str(tmp_path / "y"), "--kn-id", "a/b"), "not a valid network id")


def ask(question: str) -> dict:
    from graphs.agent.context import AgentContext
    from graphs.agent.graph import graph

    return graph.invoke({"question": question, "kn_id": "library"}, context=AgentContext())


def test_answers_name_instances_by_their_display_property(library_settings: Settings) -> None:
    state = ask("Which books did Jane Austen write?")
    assert state["answer"] == "Jane Austen — wrote: Emma；Pride and Prejudice"
    assert state["answers"] == ["Emma", "Pride and Prejudice"]
    assert {r["value_instance"] for r in state["evidence"]} == {"b:emma", "b:pride"}
    state = ask("Who wrote 1984?")
    assert state["answers"] == ["George Orwell"] and state["topic"]["name"] == "1984"
    # a property question: the title names the book, it is not one of the values
    state = ask("How many pages does The Hobbit have?")
    assert state["answers"] == ["310"] and state["answer"] == "The Hobbit — pages: 310"


def test_could_not_link_names_the_networks_own_types(library_settings: Settings) -> None:
    state = ask("Who wrote zzqx?")
    assert not state["answers"] and "could not link" in state["answer"]
    assert "disease" not in state["answer"].lower() and "symptom" not in state["answer"].lower()
    said = state["answer"].split("; name the ", 1)[1]
    assert any(name in said for name in ("author", "book", "genre", "publisher", "city")), state["answer"]


def test_kgrag_ask_on_the_library(library_settings: Settings) -> None:
    from kgrag.cli import app

    res = CliRunner().invoke(app, ["ask", TEMPLATE_QUESTIONS[1], "--kn", "library", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["answers"] == ["Emma", "Pride and Prejudice"]


def test_help_describes_paths_and_init() -> None:
    load = invoke("load", "--help")
    assert load.exit_code == 0 and "--kn-id" in load.output and "examples/library/library.yaml" in load.output
    init = invoke("init", "--help")
    assert init.exit_code == 0 and "--kn-id" in init.output and "overwritten" in init.output
    assert "init" in invoke("--help").output
